"""Thin lmms-eval glue for MMSI-Bench: everything lives in lmms_spatial.tasks.mmsi.adapter."""

from lmms_spatial.data.sources import dataset_source
from lmms_spatial.tasks.mmsi.adapter import (  # noqa: F401
    aggregate_accuracy,
    aggregate_circular,
    aggregate_count,
    aggregate_incomplete,
    aggregate_mean,
    aggregate_vanilla,
    doc_to_messages,
    doc_to_target,
    doc_to_text,
    doc_to_visual,
    process_docs,
    process_docs_circular,
    process_results,
    process_results_circular,
    process_results_cot,
)

_SOURCE = dataset_source("mmsi")
DATASET_PATH = _SOURCE.path
DATASET_KWARGS = _SOURCE.kwargs
