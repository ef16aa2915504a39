"""Model classes registered with lmms-eval through the ``lmms_eval.models`` entry point."""

from __future__ import annotations


def manifests():
    """Entry-point payload: lmms-eval calls this when it builds its model registry."""
    from lmms_eval.models.registry_v2 import ModelManifest

    return [
        ModelManifest(model_id="replay", simple_class_path="lmms_spatial.models.replay.Replay"),
        ModelManifest(model_id="random_choice", simple_class_path="lmms_spatial.models.random_choice.RandomChoice"),
        ModelManifest(model_id="staged", chat_class_path="lmms_spatial.models.staged.Staged"),
        ModelManifest(model_id="omni_cot", chat_class_path="lmms_spatial.models.omni_cot.OmniCoT"),
    ]
