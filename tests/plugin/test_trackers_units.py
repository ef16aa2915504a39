"""Our samples shaped as lmms-eval's W&B logger reads them (``lmms_spatial.plugin.trackers``)."""

from __future__ import annotations

import types

import pytest

from lmms_spatial.plugin import trackers

CONFIG = {"metric_list": [{"metric": "accuracy"}, {"metric": "Motion (Cam.)"}, {"metric": "MSR"}]}


def test_every_sample_gets_every_metric_the_prompt_and_the_whole_reply():
    samples = [
        {"doc_id": 0, "target": "B", "filtered_resps": "The answer is `B`", "input": "Which?",
         "accuracy": {"score": 1.0, "parsed": "B"}, "Motion (Cam.)": 1.0},
        {"doc_id": 1, "target": "A", "resps": ["C", "D"], "filtered_resps": ["C"], "input": "Where?",
         "accuracy": {"score": 0.0}, "MSR": 0.0},
    ]  # fmt: skip
    shaped = trackers.for_table(samples, CONFIG)
    assert [(s["accuracy"], s["Motion (Cam.)"], s["MSR"]) for s in shaped] == [(1.0, 1.0, None), (0.0, None, 0.0)]
    assert [s["arguments"][0][0] for s in shaped] == ["Which?", "Where?"]
    assert [(s["resps"][0][0], s["filtered_resps"][0]) for s in shaped] == [
        ("The answer is `B`", "The answer is `B`"), ("C", "C")]  # fmt: skip
    assert samples[0]["accuracy"] == {"score": 1.0, "parsed": "B"} and "arguments" not in samples[0]  # copies


def test_a_record_without_a_numeric_score_is_kept_as_its_text():
    [shaped] = trackers.for_table([{"accuracy": {"parsed": "B"}, "filtered_resps": None}], CONFIG)
    assert shaped["accuracy"] == '{"parsed": "B"}' and shaped["resps"] == [[""]]


class _Logger:
    def __init__(self, task_names, configs, fail=None):
        self.task_names, self.task_configs, self.fail, self.seen = task_names, configs, fail, None

    def log_eval_samples(self, samples):
        self.seen = (list(self.task_names), samples)
        if self.fail:
            raise self.fail


@pytest.fixture
def notes(monkeypatch):
    said: list[str] = []
    monkeypatch.setattr(trackers.failures, "add_note", said.append)
    return said


def test_our_groups_without_a_config_are_left_out_and_our_samples_shaped(notes):
    cls = types.new_class("L", (_Logger,))
    cls.log_eval_samples = trackers._log_eval_samples(_Logger.log_eval_samples)
    logger = cls(["mmsi", "mmsi_vanilla", "mme"], {"mmsi_vanilla": CONFIG, "mme": {}})
    samples = {"mmsi_vanilla": [{"doc_id": 0, "filtered_resps": "B", "accuracy": {"score": 1.0}}], "mme": [{"x": 1}]}
    logger.log_eval_samples(samples)
    names, given = logger.seen
    assert names == ["mmsi_vanilla", "mme"]
    assert given["mmsi_vanilla"][0]["accuracy"] == 1.0 and given["mme"] == [{"x": 1}]  # lmms-eval's tasks as they are
    assert logger.task_names == ["mmsi", "mmsi_vanilla", "mme"] and notes == []


def test_a_logger_that_fails_anyway_is_said_at_the_end_and_its_error_kept(notes):
    cls = types.new_class("L", (_Logger,))
    cls.log_eval_samples = trackers._log_eval_samples(_Logger.log_eval_samples)
    logger = cls(["mmsi_vanilla"], {"mmsi_vanilla": CONFIG}, fail=KeyError("x"))
    with pytest.raises(KeyError):
        logger.log_eval_samples({"mmsi_vanilla": []})
    assert notes == ["lmms-spatial: the samples were not logged to Weights & Biases (KeyError: 'x'); they are in the "
                     "run's samples files"]  # fmt: skip


def test_a_run_with_none_of_our_tasks_reaches_the_logger_untouched(notes):
    cls = types.new_class("L", (_Logger,))
    cls.log_eval_samples = trackers._log_eval_samples(_Logger.log_eval_samples)
    samples = {"mme": [{"x": 1}]}
    logger = cls(["mme", "group_x"], {"mme": {}})
    logger.log_eval_samples(samples)
    assert logger.seen == (["mme", "group_x"], samples)
