"""Thin lmms-eval glue for OSR-Bench: everything lives in lmms_spatial.tasks.osr_bench.adapter."""

# the YAMLs name a placeholder: the data is found when lmms-eval loads it (lmms_spatial.data.loading)
from lmms_spatial.data.loading import DATASET_PATH, PLACEHOLDER_KWARGS  # noqa: F401
from lmms_spatial.tasks.osr_bench.adapter import (  # noqa: F401
    aggregate_failures,
    aggregate_judged,
    aggregate_mean,
    aggregate_overall,
    aggregate_score,
    aggregate_sum,
    aggregate_unparsed,
    doc_to_messages,
    doc_to_target,
    doc_to_text,
    doc_to_visual,
    one_per_image_negative,
    one_per_image_standard,
    process_results_cogmap,
    process_results_qa_cogmap_negative_think,
    process_results_qa_cogmap_negative_vanilla,
    process_results_qa_cogmap_standard_think,
    process_results_qa_cogmap_standard_vanilla,
    process_results_qa_negative_think,
    process_results_qa_negative_vanilla,
    process_results_qa_standard_think,
    process_results_qa_standard_vanilla,
    undecoded_images_negative,
    undecoded_images_standard,
)

DATASET_KWARGS = PLACEHOLDER_KWARGS
