"""ODI-Bench: where its data comes from and what its rows hold.

The Hub release (an imagefolder plus per-task QA files) is converted on first use by
``tasks/odi_bench/convert.py``.
"""

from lmms_spatial.data.benchmark import Benchmark

BENCHMARK = Benchmark("odi_bench", "LiuYang66/ODI-Bench", "LMMS_SPATIAL_ODI_PATH", False, "odi_bench")


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
