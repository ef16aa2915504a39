"""Omni-CoT's answer path (issue 42): which crops a relevance reply keeps (and so whether the first answer is refined),
and which coordinate system a grounding reply's boxes are read in. Hand-made replies; the expected values are
written here with their arithmetic."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from lmms_eval.api.instance import Instance

from lmms_spatial.models import omni_cot as oc
from lmms_spatial.models import stages
from lmms_spatial.tasks.odi_bench import adapter

TESTS_DIR = Path(__file__).resolve().parents[1]
if str(TESTS_DIR) not in sys.path:
    sys.path.insert(0, str(TESTS_DIR))

from omni_cot_fakes import ScriptedChat, TaskOfSetting, red_square_jpeg  # noqa: E402

TASK = "odi_bench_close_mixed"
CLOSE = TaskOfSetting(adapter.doc_to_messages, "close")  # the task's doc_to_messages, as lmms-eval passes it


DOC = {
    "id": "odi_unsure",
    "image": {"bytes": red_square_jpeg(90.0), "path": None},
    "task": "egocentric_view_orientation",
    "question": "In which direction is the red square from my viewpoint?",
    "options": ["Front", "Right", "Back", "Left"],
    "answer": "B",
}


class UnsureChat(ScriptedChat):
    """Answers every crop's relevance question with a reply that is neither yes nor no."""

    def _reply(self, doc, text):
        return "I cannot tell." if text.startswith("This image is a crop") else super()._reply(doc, text)


@pytest.fixture(autouse=True)
def _clean():
    stages.clear()
    yield
    stages.clear()


def test_a_relevance_reply_that_is_neither_yes_nor_no_keeps_no_crop_and_the_first_answer_stands():
    model = oc.OmniCoT(base=f"{__name__}.UnsureChat", view_size=16, crop_size=16)
    model.task_dict = {TASK: {"test": [DOC]}}
    request = Instance(
        "generate_until",
        ("", CLOSE.doc_to_messages, {"max_new_tokens": 32}, 0, TASK, "test"),
        0,
        {"task": TASK, "doc_id": 0, "repeats": 1},
    )
    # the scripted first answer is the next letter after the right one (B -> C); only a refinement would give B
    assert model.generate_until([request]) == ["C"]
    record = oc.lookup(DOC, "close")
    assert record["refined"] is False and record["crops_kept"] == 0 and record["crops_dropped"] == 2
    assert [c["relevance"] for c in record["crops"]] == [None, None]


def test_a_box_whose_largest_value_is_exactly_1_is_normalised():
    # [0, 0, 1, 0.5] on a 2000 x 1000 ERP: every value <= 1, so normalised (read as 0-1000 it would be a speck)
    assert oc.box_format_of([[0.0, 0.0, 1.0, 0.5]], 2000, 1000) == "normalized"
    assert oc.parse_boxes("[0, 0, 1, 0.5]", 2000, 1000).boxes == [[0.0, 0.0, 1.0, 0.5]]


def test_a_box_below_the_erp_s_height_is_not_in_pixels():
    # 800 x 400 ERP, box y from 500 to 700: past the 400 rows, so not pixels (it would fit the 800 columns);
    # all values <= 1000: the 0-1000 system, x 100/1000 = 0.1 ... y 700/1000 = 0.7
    assert oc.box_format_of([[100, 500, 300, 700]], 800, 400) == "thousand"
    assert oc.parse_boxes("[100, 500, 300, 700]", 800, 400).boxes == [[0.1, 0.5, 0.3, 0.7]]
