"""Contract: whatever a task of ours returns from ``process_results`` passes lmms-eval's own aggregation.

lmms-eval 0.7.x aggregates every task after generation and writes nothing until all are done, so one
record it cannot aggregate loses every answer of the run. It also computes a CLT standard error from the
``score`` key of every dict record: a ``score`` of ``None`` raises inside numpy. Here every task's records,
for hostile replies and for every judge state (unset, ``none``, server down, malformed HTTP 200, working),
go through lmms-eval's real path: ``TaskOutput.calculate_aggregate_metric`` (bootstrap standard errors),
``calculate_clt_aggregate_metric``, ``calculate_stability_metrics``, ``consolidate_results`` and the groups'
``aggregate_metric_list`` (``consolidate_group_results``). Judge metrics are NaN when no judge scored,
never 0, and every unjudged item is counted in ``judge_failures``. OSR-Bench's with-map tasks are driven both
with a map in the conversation (the reply itself) and without one: without, they are unscored (NaN), their
judge not asked.
"""

from __future__ import annotations

import math

import pytest
from loaded_tasks import task_leaves

from lmms_spatial.data.demo import DEMO_BENCHMARKS
from lmms_spatial.judge import reset_judges
from tools.fake_judge import FakeJudgeServer, FakeReply

HOSTILE_REPLIES = [
    "",
    "A",
    "``B``",
    "The answer is C.",
    "Yes",
    "no idea",
    "<answer>3</answer>",
    '{"chair": [[1, 2]], "table": [[5, 5]]}',
    "<think>" * 2000,
    "{" * 20000,
    "9" * 5000,
    "\ud800 lone surrogate \x00 NUL Ａ",
]
JUDGE_STATES = ["unset", "none", "down", "malformed", "working"]
JUDGED_BENCHMARKS = {"odi_bench", "osr_bench"}  # the benchmarks with tasks that report judge_failures
JUDGE_SCORES = {"llm_accuracy", "judge_score"}  # what a judge scores, per task


def _cases() -> list[tuple[str, str]]:
    return [(key, state) for key in sorted(DEMO_BENCHMARKS) for state in
            (JUDGE_STATES if key in JUDGED_BENCHMARKS else ["unset"])]  # fmt: skip


@pytest.fixture(scope="module", autouse=True)
def _optional_imports_fail_once():
    """lmms-eval's ``stderr_for_metric`` imports two of its own tasks' modules on every call, for their aggregation
    functions (``lmms_eval.tasks.amber_g.utils``, ``coco_cap_chair.utils``); where one cannot be imported (they need
    spacy), Python runs it again on each of the ~1,300 calls a judge state makes (~0.35 s a state). Such a module is
    entered in ``sys.modules`` as None for this module's tests: the same ImportError, which lmms-eval catches, at no
    cost. A module that imports is left alone."""
    import importlib
    import sys

    failing = []
    for name in ("lmms_eval.tasks.amber_g.utils", "lmms_eval.tasks.coco_cap_chair.utils"):
        try:
            importlib.import_module(name)
        except Exception:
            failing.append(name)
    saved = {name: sys.modules.get(name) for name in failing}
    sys.modules.update(dict.fromkeys(failing))
    yield
    for name, module in saved.items():
        if module is None:
            sys.modules.pop(name, None)
        else:
            sys.modules[name] = module


@pytest.fixture(scope="module")
def server():
    with FakeJudgeServer() as srv:
        yield srv


def _set_judge(state: str, monkeypatch, server: FakeJudgeServer) -> None:
    for name in ("LMMS_SPATIAL_JUDGE", "LMMS_SPATIAL_JUDGE_BASE_URL", "OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("LMMS_SPATIAL_JUDGE_CACHE", "off")  # every state asks afresh
    monkeypatch.setenv("LMMS_SPATIAL_JUDGE_MAX_RETRIES", "0")
    monkeypatch.setenv("LMMS_SPATIAL_JUDGE_TIMEOUT", "5")
    monkeypatch.setenv("LMMS_SPATIAL_JUDGE_API_KEY", "test-key")
    if state == "none":
        monkeypatch.setenv("LMMS_SPATIAL_JUDGE", "none")
    elif state == "down":
        monkeypatch.setenv("LMMS_SPATIAL_JUDGE", "fake-judge")
        monkeypatch.setenv("LMMS_SPATIAL_JUDGE_BASE_URL", "http://127.0.0.1:9/v1")  # discard port: refused
    elif state in ("malformed", "working"):
        server.handler = (
            (lambda request: FakeReply(body=b"<html>502 Bad Gateway</html>"))
            if state == "malformed"
            else (lambda request: '{"score": 1, "confidence": "high"}')
        )
        monkeypatch.setenv("LMMS_SPATIAL_JUDGE", "fake-judge")
        monkeypatch.setenv("LMMS_SPATIAL_JUDGE_BASE_URL", server.base_url)
    reset_judges()


def _is_finite_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


@pytest.mark.parametrize(("key", "state"), _cases())
def test_every_record_passes_lmms_evals_aggregation_for_every_judge_state(key, state, benchmark_tasks, offline_base_env,
                                                                          server, monkeypatch):  # fmt: skip
    from lmms_eval.evaluator_utils import TaskOutput, consolidate_group_results, consolidate_results

    for name, value in offline_base_env.items():
        monkeypatch.setenv(name, value)
    _set_judge(state, monkeypatch, server)

    task_dicts = benchmark_tasks(key)  # its groups as `--tasks` names them, built once per worker (conftest)
    for round_, reply in enumerate(HOSTILE_REPLIES):  # one round per reply: every document answered once, as in a run
        mapless = round_ % 2 == 1  # OSR-Bench's with-map tasks: the reply as the map, or no map at all
        drawn = (lambda stage, key: None) if mapless else (lambda stage, key, r=reply: {"key": key, "output": r})
        monkeypatch.setattr("lmms_spatial.tasks.osr_bench.adapter.stage_result", drawn)
        results: dict = {}
        leaves: dict[str, int] = {}  # leaf task -> its judge_failures records
        for task_dict in task_dicts:
            outputs = []
            for name, task in sorted(task_leaves(task_dict).items()):
                output = TaskOutput.from_taskdict(name, task)
                declared = {m["metric"] for m in task.config.metric_list}
                for doc in task.eval_docs_no_media:  # what the CLI hands process_results: no image columns
                    record = task.process_results(doc, [reply])
                    assert set(record) <= declared, f"{name}: undeclared {set(record) - declared}"
                    for metric, value in record.items():
                        if isinstance(value, dict) and "score" in value:  # lmms-eval's CLT reads it
                            assert _is_finite_number(value["score"]), f"{name}/{metric}: score {value['score']!r}"
                        output.sample_metrics[(metric, "none")].append(value)
                leaves[name] = len(output.sample_metrics.get(("judge_failures", "none"),
                                                      output.sample_metrics.get(("accuracy", "none"), [])))  # fmt: skip
                output.calculate_aggregate_metric(bootstrap_iters=100000)
                output.calculate_clt_aggregate_metric()
                output.calculate_stability_metrics()
                outputs.append(output)
            task_results, _samples, _configs, versions, _shots, _hib = consolidate_results(outputs)
            results.update(consolidate_group_results(task_results, versions, task_dict)[0])
        _check(key, state, reply, results, leaves, mapless)


def _check(key: str, state: str, reply: str, results: dict, leaves: dict[str, int], mapless: bool) -> None:
    where = f"{key}, judge {state}, reply {reply[:20]!r}{', no map' if mapless else ''}"
    assert results, where
    for name, metrics in results.items():
        unscored = mapless and name.startswith("osr_qa_cogmap_")  # answered without the map the task asks after
        if unscored:
            assert math.isnan(metrics["accuracy,none"]) and metrics["answers_without_map,none"] == leaves[name], where
        for metric, value in metrics.items():
            if metric in ("alias", " ", "samples") or "," not in metric:
                continue
            assert value == "N/A" or isinstance(value, (int, float)), f"{where}: {name} {metric}: {value!r}"
            if unscored and metric.split(",")[0] in (*JUDGE_SCORES, "judge_failures"):
                judge_failures = metric.startswith("judge_failures,")
                assert value == 0 if judge_failures else math.isnan(value), f"{where}: {name} {metric}: {value!r}"
                continue
            if metric.split(",")[0] in JUDGE_SCORES:
                if state == "working":
                    assert _is_finite_number(value), f"{where}: {name} {metric}: {value!r}"
                elif state != "none":
                    assert isinstance(value, float) and math.isnan(value), f"{where}: {name} {metric}: {value!r}"
            if metric.startswith("judge_failures,") and name in leaves:
                expected = 0 if state in ("none", "working") else leaves[name]
                assert value == expected, f"{where}: {name} counts {value} judge failures of {leaves[name]} items"
                assert leaves[name] > 0, f"{where}: {name} judged nothing"
