"""Thin lmms-eval glue for MMPerspective: everything lives in lmms_spatial.tasks.mmperspective.adapter."""

# the YAMLs name a placeholder: the data is found when lmms-eval loads it (lmms_spatial.data.loading)
from lmms_spatial.data.loading import DATASET_PATH, PLACEHOLDER_KWARGS  # noqa: F401
from lmms_spatial.tasks.mmperspective.adapter import (  # noqa: F401
    aggregate_accuracy,
    aggregate_binary,
    aggregate_complete,
    aggregate_graded,
    aggregate_incomplete,
    aggregate_mean,
    aggregate_variant_crop,
    aggregate_variant_flip,
    aggregate_variant_mask,
    aggregate_variant_original,
    aggregate_variant_rotate,
    doc_to_messages,
    doc_to_target,
    doc_to_text,
    doc_to_visual,
    process_docs_clp,
    process_docs_ldp,
    process_docs_lrr,
    process_docs_ovr,
    process_docs_ptr,
    process_docs_pts,
    process_docs_robust,
    process_docs_vap,
    process_docs_vpc,
    process_docs_vpp,
    process_results,
    process_results_cot,
    process_results_robust,
    process_results_robust_cot,
)

DATASET_KWARGS = PLACEHOLDER_KWARGS
