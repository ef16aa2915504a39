"""ODI-Bench: everything the package reads of it, in ``BENCHMARK``.

The Hub release (an imagefolder plus per-task QA files) is converted on first use by
``tasks/odi_bench/convert.py``.
"""

from lmms_spatial.benchmark import Benchmark, RunOption


def features():
    """One row per question on an ERP image; ``options`` empty for yes/no questions."""
    import datasets

    return datasets.Features(
        {
            "id": datasets.Value("string"),
            "image": datasets.Image(),
            "task": datasets.Value("string"),
            "question": datasets.Value("string"),
            "options": datasets.Sequence(datasets.Value("string")),
            "answer": datasets.Value("string"),
            "answer_text": datasets.Value("string"),
        }
    )


BENCHMARK = Benchmark(
    key="odi_bench",
    hub_id="LiuYang66/ODI-Bench",
    env_var="LMMS_SPATIAL_ODI_PATH",
    hub_is_normalised=False,
    features=features,
    run_options=(
        RunOption("LMMS_SPATIAL_ODI_PROMPT", "prompt", "prompt prefix variant (Table 13)"),
        RunOption("LMMS_SPATIAL_ODI_MAX_PIXELS", "images", "pixel cap of the ERP sent to the model"),
        RunOption("LMMS_SPATIAL_ODI_RESIZE", "images", "exact ERP size HEIGHTxWIDTH (Table 11)"),
        RunOption("LMMS_SPATIAL_ODI_API_IMAGES", "images", "API provider rule that sized the ERP"),
    ),
    convert="convert",
    needs="adapter:TASK_NEEDS",
    report="report",
    demo="demo",
)
