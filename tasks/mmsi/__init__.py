"""MMSI-Bench: everything the package reads of it, in ``BENCHMARK``.

The official parquet already is the layout the tasks read (``hub_cards/mmsi/README.md``), so
there is no converter: the tasks read the Hub release as published, at a pinned commit.
"""

from lmms_spatial.benchmark import Benchmark

# RunsenXu/MMSI-Bench's commit holding MMSI_Bench.parquet (1,000 rows), as pinned by several third-party
# evaluation code bases (one checked it against the Hub API, one checks the file's SHA-256; see
# hub_cards/mmsi/README.md). DORI, ODI-Bench, OSR-Bench: no commit could be checked, so "main".
MMSI_REVISION = "ec7c92bfaf7728fcca1d61e3e224e190af309436"


def features():
    """``datasets`` features of the official parquet: the one schema source (card, fixture)."""
    import datasets

    return datasets.Features(
        {
            "id": datasets.Value("int64"),
            "images": datasets.Sequence(datasets.Image()),
            "question_type": datasets.Value("string"),
            "question": datasets.Value("string"),
            "answer": datasets.Value("string"),
            "thought": datasets.Value("string"),
            # also in the release (MMSI_Bench.parquet, per independent loaders); not read by the tasks
            "mean_normed_duration_seconds": datasets.Value("float64"),
            "difficulty": datasets.Value("string"),
        }
    )


BENCHMARK = Benchmark(
    key="mmsi",
    hub_id="RunsenXu/MMSI-Bench",
    env_var="LMMS_SPATIAL_MMSI_PATH",
    revision=MMSI_REVISION,
    features=features,
    needs="adapter:TASK_NEEDS",
    report="report",
    demo="demo",
    answers="answers",
    judge_analyses_flag=(
        "--diagnose-mmsi",
        "also diagnose MMSI-Bench replies with the LLM judge (failure modes, reasoning accuracy; cached)",
    ),
)
