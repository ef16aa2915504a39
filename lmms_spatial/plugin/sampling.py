"""Sampled answers are kept too: a sampled run killed at hour 30 resumes, as a greedy one does.

lmms-eval's response cache stores only deterministic answers (``is_deterministic``: no ``do_sample``, no
``temperature > 0``): with ``--gen_kwargs do_sample=True,temperature=0.9`` every request is skipped and a killed run
loses every answer, while chain-of-thought and "think" settings are often run sampled. In a run of ours a sampled
answer is kept under a key that also holds what made it (:data:`KEY` in the key's ``gen_kwargs``):

- ``seed``: the seeds that reach sampling, as :func:`seed_text` says them: the model's own ``seed=`` argument, and
  lmms-eval's torch seed (``--seed``'s third value), or ``unseeded``. Another seed is another draw: never served;
- ``draw``: the request's draw number, 0 for the first; a request lmms-eval repeats (a task's ``repeats: N``) is
  drawn N times, 0 to N-1, each kept on its own.

A resumed sampled run serves the draws it kept and draws the rest: each answer is a real sample of those weights
under those settings and that seed, but the random stream after a resume is not the one an uninterrupted run would
have reached (the generator's position differs), so a resumed sampled run equals an uninterrupted one in
distribution, not answer for answer (docs/running.md). Several answers per request (``n`` > 1, ``best_of``) stay
lmms-eval's: not kept.
"""

from __future__ import annotations

import copy
import functools
from typing import Any

KEY = "lmms_spatial_sample"  # added to a sampled request's gen_kwargs in the store's key (and stored rows)
DRAW = "lmms_spatial_draw"  # an Instance's metadata: its draw number (repeats of one request)
_GREEDY = {"do_sample": False, "temperature": 0}


def seed_text(arguments: dict[str, Any]) -> str:
    """The seeds that reach sampling in a run called with ``arguments`` (``simple_evaluate``'s):
    ``model=3,torch=1234``, ``torch=1234``, ``torch=unseeded``."""
    from lmms_spatial.conditions import parse_model_args

    parts = []
    own = parse_model_args(arguments.get("model_args")).get("seed")
    if own not in (None, ""):
        parts.append(f"model={own}")
    torch_seed = arguments.get("torch_random_seed")
    parts.append(f"torch={torch_seed if torch_seed is not None else 'unseeded'}")
    return ",".join(parts)


def keepable(is_deterministic: Any, reqtype: str, gen_kwargs: Any) -> bool:
    """A request lmms-eval would not keep only because it samples (one answer per request): one we keep."""
    if not isinstance(gen_kwargs, dict) or is_deterministic(reqtype, gen_kwargs):
        return False
    return bool(is_deterministic(reqtype, {**gen_kwargs, **_GREEDY}))


def with_draws(requests: list) -> list:
    """``requests`` with each repeat of one request (lmms-eval repeats the same object) a copy numbered by draw."""
    seen: dict[int, int] = {}
    out = []
    for request in requests:
        draw = seen.get(id(request), 0)
        seen[id(request)] = draw + 1
        if draw:
            request = copy.copy(request)
            request.metadata = {**(getattr(request, "metadata", None) or {}), DRAW: draw}
        out.append(request)
    return out


def _seed() -> str | None:
    from lmms_spatial import run_state

    call = run_state.current_call()
    run = run_state.current()
    if run is None:
        return None
    arguments = call.arguments if call is not None else (run.call.arguments if run.call is not None else {})
    return seed_text(arguments)


def extract_gen_kwargs(original: Any, is_deterministic: Any):
    """lmms-eval's ``extract_gen_kwargs``: in a run of ours, a sampled request's settings gain :data:`KEY` (seed
    and draw), so its key is its own and :func:`is_deterministic_wrapper` keeps it."""

    @functools.wraps(original)
    def extract(instance: Any) -> dict:
        found = original(instance)
        reqtype = getattr(instance, "request_type", "generate_until")
        if not keepable(is_deterministic, reqtype, found):
            return found
        seed = _seed()
        if seed is None:
            return found
        draw = int((getattr(instance, "metadata", None) or {}).get(DRAW, 0))
        return {**found, KEY: {"seed": seed, "draw": draw}}

    extract._lmms_spatial = True
    return extract


def is_deterministic_wrapper(original: Any):
    """lmms-eval's ``is_deterministic``: a request whose settings carry :data:`KEY` is kept."""

    @functools.wraps(original)
    def is_deterministic(request_type: str, gen_kwargs: Any) -> bool:
        if isinstance(gen_kwargs, dict) and KEY in gen_kwargs:
            return True
        return original(request_type, gen_kwargs)

    is_deterministic._lmms_spatial = True
    return is_deterministic


def samples(generation: dict[str, dict[str, Any]]) -> bool:
    """Whether any task's generation settings in effect sample (``do_sample``, or ``temperature`` > 0)."""
    for kwargs in generation.values():
        temperature = kwargs.get("temperature")
        if kwargs.get("do_sample") in (True, "True", "true") or (
            isinstance(temperature, (int, float)) and not isinstance(temperature, bool) and temperature > 0
        ):
            return True
    return False
