"""A chat model asked for OSR-Bench's with-map tasks draws its own map: the paper's protocol from one command.

``osr_qa_cogmap_*`` asks each question after the model's own cognitive map of the image (OSR-Bench's
multi-turn protocol: the map turn, the model's map as the assistant turn, then the question). A task
says so with a stage placeholder in its messages (:mod:`lmms_spatial.models.stages`), which
``--model staged`` fills. In a run of ours whose model is any other lmms-eval *chat* model
(``qwen2_5_vl``, ``openai``, ``fast_vlm``, ...), :func:`own_maps` puts the same stage engine
(:meth:`lmms_spatial.models.staged.Staged.around`) in front of the model for the requests of those
tasks only, for the duration of ``evaluate``:

- each image's map is generated once (per object pool), batched, then every question with it: what
  ``--model staged --model_args base=<the model>,...`` does; requests of every other task go to the
  model exactly as before (same calls, same batches);
- the maps are kept with the run's answers (``lmms_spatial_stages.sqlite`` in the answers folder), so a
  resumed run's answers, taken from lmms-eval's response cache, still record the map they were given;
- every answer records its map (``stage_outputs``), and the results say ``map_source: own_map``.

A simple (non-chat) model gets no messages, so no map: its with-map tasks are left unscored
(:mod:`lmms_spatial.tasks.osr_bench.adapter`), and the run's last lines say how to score them.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lmms_spatial.conditions import DeclaredTask


def map_tasks(declared: Mapping[str, DeclaredTask]) -> set[str]:
    """The tasks whose answers are given after a stage the model must generate (their ``map_stage``)."""
    return {name for name, info in declared.items() if info.map_stage}


def needs_engine(lm: Any, tasks: set[str]) -> bool:
    """Whether ``lm`` must be given a stage engine for ``tasks``: a chat model that draws no stage itself."""
    from lmms_spatial.models.staged import Staged

    return bool(tasks) and not getattr(lm, "is_simple", True) and not isinstance(lm, Staged)


@contextmanager
def own_maps(lm: Any, tasks: set[str], model_id: str, answers: str | None = None) -> Iterator[bool]:
    """While the block runs, requests of ``tasks`` sent to ``lm.generate_until`` go through a stage engine
    built around ``lm`` (module doc); yields whether one was put in place. Set on the instance and removed
    afterwards, like :func:`lmms_spatial.prefetch.prefetching_model`."""
    state = getattr(lm, "__dict__", None)
    original = getattr(lm, "generate_until", None)
    if state is None or original is None or not needs_engine(lm, tasks):
        yield False
        return
    from lmms_spatial.models.staged import Staged

    engine = Staged.around(lm, original, model_id)
    if answers:
        engine.keep_stages_with_answers(answers)
    had_own, own = "generate_until" in state, state.get("generate_until")

    def generate_until(requests: list) -> list:
        staged = [i for i, request in enumerate(requests) if getattr(request, "task_name", None) in tasks]
        if not staged:
            return original(requests)
        answers_: list = [None] * len(requests)
        chosen = set(staged)
        others = [i for i in range(len(requests)) if i not in chosen]
        if others:
            for i, answer in zip(others, original([requests[i] for i in others]), strict=True):
                answers_[i] = answer
        for i, answer in zip(staged, engine.generate_until([requests[i] for i in staged]), strict=True):
            answers_[i] = answer
        return answers_

    state["generate_until"] = generate_until
    try:
        yield True
    finally:
        if had_own:
            state["generate_until"] = own
        else:
            state.pop("generate_until", None)
