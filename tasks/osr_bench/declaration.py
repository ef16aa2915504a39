"""OSR-Bench: where its data comes from and what its rows hold.

The Hub release (two QA tables and one panorama per scene) is converted on first use by
``tasks/osr_bench/convert.py``; configs ``standard`` and ``negative`` are two folders
of the same layout.
"""

from lmms_spatial.data.benchmark import Benchmark

BENCHMARK = Benchmark(
    "osr_bench",
    "UUUserna/OSR-Bench",
    "LMMS_SPATIAL_OSR_PATH",
    False,
    "osr_bench",
    # the two QA tables and one panorama per scene; not the per-scene JSON, depth or layouts
    allow_patterns=("qa.csv", "qa_with_negative.csv", "data/*/rgb.png", "README.md"),
)


def features():
    """One row per question (both configs)."""
    import datasets

    return datasets.Features(
        {
            "id": datasets.Value("string"),
            "image": datasets.Image(),
            "scene_id": datasets.Value("string"),
            "turn_id": datasets.Value("int64"),
            "skill": datasets.Value("string"),
            "question": datasets.Value("string"),
            "answer": datasets.Value("string"),
            "object_pool": datasets.Sequence(datasets.Value("string")),
            "cogmap": datasets.Value("string"),
        }
    )
