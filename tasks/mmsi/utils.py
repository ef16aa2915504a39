"""Thin lmms-eval glue for MMSI-Bench: everything lives in lmms_spatial.tasks.mmsi.adapter."""

# the YAMLs name a placeholder: the data is found when lmms-eval loads it (lmms_spatial.data.loading)
from lmms_spatial.data.loading import DATASET_PATH, PLACEHOLDER_KWARGS  # noqa: F401
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

DATASET_KWARGS = PLACEHOLDER_KWARGS
