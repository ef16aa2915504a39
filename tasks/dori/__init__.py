"""DORI: everything the package reads of it, in ``BENCHMARK``.

The Hub release is not the layout the tasks read: ``tasks/dori/convert.py`` converts
it on first use (``hub_is_normalised=False``).
"""

from lmms_spatial.benchmark import Benchmark, RunOption


def features():
    """``datasets`` features of the normalised layout (SPEC section 4): the one schema source."""
    import datasets

    return datasets.Features(
        {
            "id": datasets.Value("string"),
            "images": datasets.Sequence(datasets.Image()),
            "task": datasets.Value("string"),
            "granularity": datasets.Value("string"),
            "question": datasets.Value("string"),
            "context": datasets.Value("string"),
            "instructions": datasets.Sequence(datasets.Value("string")),
            "examples": datasets.Sequence(datasets.Value("string")),
            "options": datasets.Sequence(datasets.Value("string")),
            "answer": datasets.Value("string"),
            "source": datasets.Value("string"),
            "category": datasets.Value("string"),
            "data_type": datasets.Value("string"),
        }
    )


def old_run_options(record):
    """The run options of a score record written before records carried ``run_options``: DORI's held only
    ``option_seed`` (None: not such a record)."""
    seed = record.get("option_seed")
    if seed is None or "granularity" not in record:
        return None
    return {} if str(seed) == "original" else {"LMMS_SPATIAL_DORI_SEED": str(seed)}


BENCHMARK = Benchmark(
    key="dori",
    hub_id="appledora/DORI-Benchmark",
    env_var="LMMS_SPATIAL_DORI_PATH",
    hub_is_normalised=False,
    features=features,
    run_options=(RunOption("LMMS_SPATIAL_DORI_SEED", "documents", "option order seed (App. K)"),),
    # the option order (App. K) is a seed: runs of several option seeds pool in a report
    seed_options=("LMMS_SPATIAL_DORI_SEED",),
    old_run_options=old_run_options,
    convert="convert",
    needs="adapter:TASK_NEEDS",
    report="report",
    demo="demo",
    commands="commands",
)
