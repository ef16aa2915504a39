"""Thin lmms-eval glue for MMPerspective: everything lives in lmms_spatial.tasks.mmperspective.adapter."""

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
    dataset_location,
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

_SOURCE = dataset_location()  # raises a clear error when no local copy is set (no public data yet)
DATASET_PATH = _SOURCE.path
DATASET_KWARGS = _SOURCE.kwargs
