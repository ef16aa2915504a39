"""OSR-Bench: everything the package reads of it, in ``BENCHMARK``.

The Hub release (two QA tables and one panorama per scene) is converted on first use by
``tasks/osr_bench/convert.py``; configs ``standard`` and ``negative`` are two folders
of the same layout.
"""

from lmms_spatial.benchmark import Benchmark


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


BENCHMARK = Benchmark(
    key="osr_bench",
    hub_id="UUUserna/OSR-Bench",
    env_var="LMMS_SPATIAL_OSR_PATH",
    hub_is_normalised=False,
    # the two QA tables and one panorama per scene; not the per-scene JSON, depth or layouts
    allow_patterns=("qa.csv", "qa_with_negative.csv", "data/*/rgb.png", "README.md"),
    features=features,
    convert="convert",
    needs="adapter:TASK_NEEDS",
    report="report",
    demo="demo",
    answers="answers",
    view="view",
)
