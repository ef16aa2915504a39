"""No model reply can raise out of any task's ``process_results``, nor take long to score.

lmms-eval runs ``process_results`` in worker threads under a retry: an exception there costs
minutes and then drops or fails the task. Every task of every benchmark is driven here with
hostile replies (huge, deeply nested, unclosed tags, lone surrogates, long digit runs,
full-width letters) and with hypothesis-generated text, on the first fixture document of each
task. Each reply must score in under :data:`SECONDS_PER_REPLY` (a generous bound: the point is
to catch quadratic parsing, which takes tens of seconds on these sizes) and produce only
metrics the task declares.
"""

from __future__ import annotations

import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lmms_spatial.paths import tasks_dir

SECONDS_PER_REPLY = 2.0

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


def _leaf_tasks() -> list[str]:
    from lmms_eval.tasks import TaskManager

    index = TaskManager(include_defaults=False)._get_task_and_group(tasks_dir())
    return sorted(name for name, entry in index.items() if entry["type"] == "task")


@pytest.fixture(scope="module")
def tasks(offline_env):
    """{task name: (first fixture document without media, its process_results, declared metrics)}."""
    import os

    saved = dict(os.environ)
    os.environ.update(offline_env)
    try:
        from lmms_eval.tasks import TaskManager, get_task_dict

        manager = TaskManager(include_defaults=False)
        loaded = {}
        for name in _leaf_tasks():
            task = get_task_dict([name], manager)[name]
            doc = next(iter(task.eval_docs_no_media))
            loaded[name] = (doc, task.config.process_results, {m["metric"] for m in task.config.metric_list})
        yield loaded
    finally:
        os.environ.clear()
        os.environ.update(saved)


def _score(entry, reply: str) -> None:
    doc, process_results, declared = entry
    start = time.perf_counter()
    out = process_results(doc, [reply])
    elapsed = time.perf_counter() - start
    assert set(out) <= declared, f"undeclared metrics {set(out) - declared}"
    assert elapsed < SECONDS_PER_REPLY, f"{elapsed:.1f} s for a {len(reply)}-character reply"


def test_every_task_scores_every_hostile_reply_quickly_without_raising(tasks):
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


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(reply=_REPLY_TEXT, which=st.integers(min_value=0))
def test_generated_replies_never_raise_out_of_any_task(tasks, reply, which):
    names = sorted(tasks)
    for name in (names[which % len(names)], names[(which // len(names)) % len(names)]):
        _score(tasks[name], reply)
