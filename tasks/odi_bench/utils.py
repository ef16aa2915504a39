"""Thin lmms-eval glue for ODI-Bench: everything lives in lmms_spatial.tasks.odi_bench.adapter."""

# the YAMLs name a placeholder: the data is found when lmms-eval loads it (lmms_spatial.data.loading)
from lmms_spatial.data.loading import DATASET_PATH, PLACEHOLDER_KWARGS  # noqa: F401
from lmms_spatial.tasks.odi_bench.adapter import (  # noqa: F401
    aggregate_accuracy,
    aggregate_cache_hits,
    aggregate_failures,
    aggregate_fallback_share,
    aggregate_judge_score,
    aggregate_mean,
    aggregate_unparsed,
    doc_to_messages,
    doc_to_target,
    doc_to_target_open,
    doc_to_text,
    doc_to_visual,
    group_sum,
    process_docs_for,
    process_results,
    process_results_cot,
    process_results_open,
)

process_docs_object_attribute = process_docs_for("object_attribute")
process_docs_human_attribute = process_docs_for("human_attribute")
process_docs_existence = process_docs_for("existence")
process_docs_counting = process_docs_for("counting")
process_docs_ocr = process_docs_for("ocr")
process_docs_egocentric_view_orientation = process_docs_for("egocentric_view_orientation")
process_docs_allocentric_view_orientation = process_docs_for("allocentric_view_orientation")
process_docs_scene_simulation = process_docs_for("scene_simulation")
process_docs_relative_direction = process_docs_for("relative_direction")
process_docs_odi_reasoning = process_docs_for("odi_reasoning")

DATASET_KWARGS = PLACEHOLDER_KWARGS
