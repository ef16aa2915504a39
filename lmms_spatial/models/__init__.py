"""Model classes registered with lmms-eval through the ``lmms_eval.models`` entry point.

Also through lmms-eval's older plugin variable, ``LMMS_EVAL_PLUGINS=lmms_spatial``, which reads
:data:`AVAILABLE_MODELS` ({model name: class name in ``lmms_spatial.models.<model name>``}). (In
0.7.3 that variable adds ``lmms_spatial.tasks`` to the task path only after the task index is
built, so our tasks still come from the startup hook or ``--include_path``.)
"""

from __future__ import annotations

import os
import sys

AVAILABLE_MODELS = {
    "replay": "Replay",
    "random_choice": "RandomChoice",
    "staged": "Staged",
    "omni_cot": "OmniCoT",
    "fast_vlm": "FastVLM",
}

HOOK_MISSING = (
    "lmms-spatial: its startup file (lmms_spatial_startup.pth) did not run (installed with `pip install --target` "
    "and PYTHONPATH? Python reads .pth files only in site directories); installing the task hook now. If "
    'lmms-eval still finds none of our tasks, pass --include_path "$(lmms-spatial tasks-dir)"'
)


def _ensure_task_hook() -> None:
    """Without the .pth, tasks would be silently missing: install the hook late, and say so once."""
    if "lmms_spatial_startup" in sys.modules:  # the .pth ran (the normal case)
        return
    # (LMMS_EVAL_PLUGINS does not register tasks in lmms-eval 0.7.3: it adds the path after indexing)
    if os.environ.get("LMMS_SPATIAL_DISABLE_HOOK", "").strip().lower() in {"1", "true", "yes", "on"}:
        return
    print(HOOK_MISSING, file=sys.stderr)
    import lmms_spatial_startup  # noqa: F401  (installs the finder, or patches lmms_eval modules in place)


def manifests():
    """Entry-point payload: lmms-eval calls this when it builds its model registry."""
    from lmms_eval.models.registry_v2 import ModelManifest

    _ensure_task_hook()

    return [
        ModelManifest(model_id="replay", simple_class_path="lmms_spatial.models.replay.Replay"),
        ModelManifest(model_id="random_choice", simple_class_path="lmms_spatial.models.random_choice.RandomChoice"),
        ModelManifest(model_id="staged", chat_class_path="lmms_spatial.models.staged.Staged"),
        ModelManifest(model_id="omni_cot", chat_class_path="lmms_spatial.models.omni_cot.OmniCoT"),
        ModelManifest(model_id="fast_vlm", chat_class_path="lmms_spatial.models.fast_vlm.FastVLM"),
    ]
