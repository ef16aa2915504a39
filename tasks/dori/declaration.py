"""DORI: where its data comes from and what its rows hold.

The Hub release is not the layout the tasks read: ``tasks/dori/convert.py`` converts
it on first use (``hub_is_normalised=False``).
"""

from lmms_spatial.data.benchmark import Benchmark

# LMMS_SPATIAL_DORI_SEED (the option order, App. K) is a seed: runs of several option seeds pool in a report
BENCHMARK = Benchmark(
    "dori",
    "appledora/DORI-Benchmark",
    "LMMS_SPATIAL_DORI_PATH",
    False,
    "dori",
    seed_options=("LMMS_SPATIAL_DORI_SEED",),
)


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
