"""No model reply can raise out of any task's ``process_results``, nor hang it.

lmms-eval runs ``process_results`` in worker threads under a retry: an exception there costs
minutes and then drops or fails the task. Every task of every benchmark is driven here with
hostile replies (huge, deeply nested, unclosed tags, lone surrogates, long digit runs,
full-width letters) and with hypothesis-generated text, on the first fixture document of each
task; one benchmark per test, so ``-k <key>`` narrows it and workers share the load. Each reply
must produce only metrics the task declares, and finish within :data:`HANG_SECONDS`: a guard against a hang
(catastrophic backtracking never ends on these sizes), not a speed assertion (which would fail on a loaded
machine); how long our scoring takes is measured by ``lmms-spatial bench``.
"""

from __future__ import annotations

import signal
from contextlib import contextmanager

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lmms_spatial.paths import benchmark_keys

HANG_SECONDS = 300

HOSTILE_REPLIES = [
    "",
    "<answer>" * 100_000,
    "<think>" + "x" * 500_000,
    "<answer>" + " " * 300_000 + "B",
    "` " + " " * 200_000 + "x",
    "answer: " + " " * 200_000 + "because",
    "{" * 300_000,
    "}" * 300_000,
    "[" * 5_000 + "]" * 5_000,
    '{"chair": ' + "[" * 3_000 + "]" * 3_000 + "}",
    '{"chair": [[' + "9" * 5_000 + ", 1]]}",
    "9" * 5_000,
    "There are " + "7" * 100_000 + " chairs",
    "\ud800\udfff\ud83d A",
    "Ｃ",
    "(ｂ)",
    "\x00\x01\x02 B",
    "front_left " * 50_000,
    '{"answer": "' + "A" * 200_000,
    "```" * 100_000,
]


# one benchmark per test; its tasks are loaded once per run (the contract tests' load, same xdist worker)
LOADED_KEYS = [pytest.param(key, marks=pytest.mark.xdist_group(f"tasks-{key}"), id=key) for key in benchmark_keys()]


@pytest.fixture
def tasks(key, scored_tasks, monkeypatch):
    """{task name: (first fixture document without media, its process_results, declared metrics)} of ``key``."""
    monkeypatch.setenv("LMMS_SPATIAL_JUDGE", "none")  # judged tasks: the rule-based fallback, no network
    return {name: (t.docs[0], t.process_results, t.declared) for name, t in scored_tasks(key).items()}


@contextmanager
def hang_guard(what: str):
    def hung(*_):
        raise AssertionError(f"still scoring after {HANG_SECONDS} s: {what}")

    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(HANG_SECONDS)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def _score(entry, reply: str) -> None:
    doc, process_results, declared = entry
    with hang_guard(f"a {len(reply)}-character reply"):
        out = process_results(doc, [reply])
    assert set(out) <= declared, f"undeclared metrics {set(out) - declared}"


# 10-20 s a benchmark on 2 cores (up to 800,000 characters a reply, through every task): out of the
# `pytest -k <key> -m "not slow"` loop, in every full run (CI's `pytest`)
@pytest.mark.slow
@pytest.mark.parametrize("key", LOADED_KEYS)
def test_every_task_scores_every_hostile_reply_without_raising(key, tasks):
    failures = []
    for name, entry in tasks.items():
        for reply in HOSTILE_REPLIES:
            try:
                _score(entry, reply)
            except Exception as exc:  # collected so one run names every task and reply that fails
                failures.append(f"{name} <- {reply[:30]!r}... ({len(reply)} chars): {type(exc).__name__}: {exc}")
    assert not failures, "\n".join(failures[:20])


_REPLY_TEXT = st.one_of(
    st.text(max_size=300),
    st.text(alphabet=st.sampled_from('<>/answer{}[]":,0123456789ABCDabcd `\n-_Ｃ'), max_size=400),
    st.builds(lambda a, b: f"<answer>{a}</answer>{b}", st.text(max_size=50), st.text(max_size=50)),
    st.builds(lambda n, d: "[" * n + str(d) + "]" * n, st.integers(0, 2000), st.integers()),
)


@pytest.mark.parametrize("key", LOADED_KEYS)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(reply=_REPLY_TEXT, which=st.integers(min_value=0))
def test_generated_replies_never_raise_out_of_any_task(key, tasks, reply, which):
    names = sorted(tasks)
    for name in (names[which % len(names)], names[(which // len(names)) % len(names)]):
        _score(tasks[name], reply)
