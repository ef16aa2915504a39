"""Thin lmms-eval glue for DORI: everything lives in lmms_spatial.tasks.dori.adapter."""

# the YAMLs name a placeholder: the data is found when lmms-eval loads it (lmms_spatial.data.loading)
from lmms_spatial.data.loading import DATASET_PATH, PLACEHOLDER_KWARGS  # noqa: F401
from lmms_spatial.metrics.dori import GRANULARITIES, TASKS
from lmms_spatial.tasks.dori.adapter import (  # noqa: F401
    TASK_NEEDS,
    aggregate_accuracy,
    aggregate_mean,
    aggregate_soft_accuracy,
    doc_to_messages,
    doc_to_target,
    doc_to_text,
    doc_to_visual,
    docs_for,
    process_results,
    process_results_unstructured,
)

# process_docs per question type, named docs_<task>_<granularity> for the YAMLs
for _task in TASKS:
    for _granularity in GRANULARITIES:
        globals()[f"docs_{_task}_{_granularity}"] = docs_for(_task, _granularity)

DATASET_KWARGS = PLACEHOLDER_KWARGS
