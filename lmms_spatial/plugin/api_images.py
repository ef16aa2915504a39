"""Tell our tasks which model lmms-eval is evaluating, so images for API models fit the provider.

lmms-eval 0.7.3 hands a task's ``doc_to_messages`` the document only (and the task's
``lmms_eval_specific_kwargs``, keyed by the ``--model`` name, which says nothing of the provider
behind ``openai``). ``evaluate(lm, task_dict, ...)`` is where the model object meets the tasks:
wrapped, it records ``lm`` (:func:`lmms_spatial.data.api_images.set_model`) for the duration of
the call, which covers every ``doc_to_messages`` / ``doc_to_visual`` call (prefetch workers
included) and every ``process_results`` call that records the rule in the samples.
"""

from __future__ import annotations

import functools
import sys


def patch_api_image_sizing(module) -> None:
    """Wrap ``module.evaluate`` (lmms_eval.evaluator) to record the model it evaluates."""
    original = getattr(module, "evaluate", None)
    if original is None:
        print(
            "lmms-spatial: this lmms-eval has no evaluator.evaluate, so ODI-Bench cannot tell an API model from a "
            "local one and sends panoramas at full resolution; set LMMS_SPATIAL_ODI_API_IMAGES=<provider> "
            "(openai, gemini, anthropic, qwen-vl) for an API model",
            file=sys.stderr,
        )
        return
    if getattr(original, "_lmms_spatial_api_images", False):
        return

    @functools.wraps(original)
    def evaluate(*args, **kwargs):
        from lmms_spatial.data import api_images

        api_images.set_model(kwargs.get("lm", args[0] if args else None))
        try:
            return original(*args, **kwargs)
        finally:
            api_images.set_model(None)

    evaluate._lmms_spatial_api_images = True
    module.evaluate = evaluate
