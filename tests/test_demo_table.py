"""The table ``lmms-spatial demo`` prints (``cli.format_results``): a task's headline metrics, its unparsed rate,
and the chance level only where it is the chance of that metric, as the report's tables say per column."""

from lmms_spatial.cli import format_results


def _results() -> dict:
    return {
        "results": {
            "mmsi_circular": {
                "alias": "mmsi_circular",
                "circular_accuracy,none": 0.125,
                "circular_accuracy_stderr,none": 0.05,
                "vanilla_accuracy,none": 0.5,
                "unparsed_rate,none": 0.25,
                "chance_level,none": 0.25,
            },
            "mmperspective_robust": {
                "binary_robustness,none": 0.0,
                "complete_robust_groups,none": 3,
                "incomplete_robust_groups,none": 0,
                "variant_flip,none": 0.75,
                "unparsed_rate,none": 0.0,
                "chance_level,none": 0.25,
            },
        },
        "n-samples": {"mmsi_circular": {"effective": 48}, "mmperspective_robust": {"effective": 15}},
    }


def test_chance_is_shown_only_beside_the_metrics_it_is_the_chance_of():
    lines = format_results(_results()).splitlines()
    # widths: task column 20 ("mmperspective_robust"), metric column 24 ("incomplete_robust_groups")
    assert lines == [
        "task                 metric                     value  unparsed   chance  n",
        "mmperspective_robust binary_robustness          0.000     0.000        -  15",
        "mmperspective_robust complete_robust_groups     3.000     0.000        -  15",
        "mmperspective_robust incomplete_robust_groups   0.000     0.000        -  15",
        "mmperspective_robust variant_flip               0.750     0.000    0.250  15",
        # circular: a uniform guess passes all four option orders with (1/4)^4, not 0.25
        "mmsi_circular        circular_accuracy          0.125     0.250        -  48",
        "mmsi_circular        vanilla_accuracy           0.500     0.250    0.250  48",
    ]


def test_unparsed_rate_and_chance_level_are_columns_not_rows():
    table = format_results(_results())
    assert " unparsed_rate " not in table and " chance_level " not in table
