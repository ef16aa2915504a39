"""Thin lmms-eval glue for OSR-Bench: everything lives in lmms_spatial.tasks.osr_bench.adapter."""

from lmms_spatial.data.sources import dataset_source
from lmms_spatial.tasks.osr_bench.adapter import (  # noqa: F401
    PROCESSORS,
    aggregate_failures,
    aggregate_judged,
    aggregate_mean,
    aggregate_overall,
    aggregate_score,
    doc_to_messages,
    doc_to_target,
    doc_to_text,
    doc_to_visual,
    one_per_image,
    process_results_cogmap,
    undecoded_images,
)

_SOURCE = dataset_source("osr_bench")
DATASET_PATH = _SOURCE.path
# the two configs are two folders of the normalised layout: <root>/standard and <root>/negative
DATASET_KWARGS_STANDARD = {**_SOURCE.kwargs, "data_dir": "standard"}
DATASET_KWARGS_NEGATIVE = {**_SOURCE.kwargs, "data_dir": "negative"}

# process_results_<qa|qa_cogmap>_<config>_<mode> for the YAMLs
for _name, _fn in PROCESSORS.items():
    globals()[f"process_results_{_name}"] = _fn
