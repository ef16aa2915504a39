"""Thin lmms-eval glue for DORI: everything lives in lmms_spatial.tasks.dori.adapter."""

# the YAMLs name a placeholder: the data is found when lmms-eval loads it (lmms_spatial.data.loading)
from lmms_spatial.data.loading import DATASET_PATH, PLACEHOLDER_KWARGS  # noqa: F401
from lmms_spatial.tasks.dori.adapter import (  # noqa: F401
    aggregate_accuracy,
    aggregate_mean,
    aggregate_soft_accuracy,
    doc_to_messages,
    doc_to_target,
    doc_to_text,
    doc_to_visual,
    docs_canonical_orientation_coarse,
    docs_canonical_orientation_granular,
    docs_compound_rotation_coarse,
    docs_compound_rotation_granular,
    docs_directional_facing_coarse,
    docs_directional_facing_granular,
    docs_for,
    docs_inter_object_direction_coarse,
    docs_inter_object_direction_granular,
    docs_single_axis_rotation_coarse,
    docs_single_axis_rotation_granular,
    docs_view_parallelism_coarse,
    docs_view_parallelism_granular,
    docs_viewer_scene_direction_coarse,
    docs_viewer_scene_direction_granular,
    process_results,
    process_results_unstructured,
)

DATASET_KWARGS = PLACEHOLDER_KWARGS
