"""MMPerspective: everything the package reads of it, in ``BENCHMARK``.

No public release yet: a local copy only (``lmms-spatial convert mmperspective``). The row checks
of the layout (robust groups, perturbations) are in ``lmms_spatial.tasks.mmperspective.schema``.
"""

from lmms_spatial.benchmark import Benchmark


def features():
    """``datasets`` features of the layout (images as ``Image()`` so the Hub viewer shows them)."""
    import datasets

    return datasets.Features(
        {
            "id": datasets.Value("string"),
            "images": datasets.Sequence(datasets.Image()),
            "task": datasets.Value("string"),
            "question": datasets.Value("string"),
            "options": datasets.Sequence(datasets.Value("string")),
            "answer": datasets.Value("string"),
            "robust_group": datasets.Value("string"),
            "perturbation": datasets.Value("string"),
        }
    )


BENCHMARK = Benchmark(
    key="mmperspective",
    hub_id="",
    env_var="LMMS_SPATIAL_MMPERSPECTIVE_PATH",
    features=features,
    convert="convert",
    needs="adapter:TASK_NEEDS",
    report="report",
    demo="demo",
)
