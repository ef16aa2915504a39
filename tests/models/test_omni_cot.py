"""``--model omni_cot``: the exact prompts of every stage, batching per round, artefacts, ablations, baselines."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from lmms_eval.api.instance import Instance

from lmms_spatial.models import omni_cot as oc
from lmms_spatial.models import stages
from lmms_spatial.tasks.odi_bench import adapter, omni_cot_table

TESTS_DIR = Path(__file__).resolve().parents[1]
if str(TESTS_DIR) not in sys.path:
    sys.path.insert(0, str(TESTS_DIR))

from omni_cot_fakes import ScriptedChat, TaskOfSetting, red_square_jpeg  # noqa: E402

EVO = {
    "id": "odi_evo",
    "image": {"bytes": red_square_jpeg(90.0), "path": None},
    "task": "egocentric_view_orientation",
    "question": "In which direction is the red square from my viewpoint?",
    "options": ["Front", "Right", "Back", "Left"],
    "answer": "B",
}
EXIST = {
    "id": "odi_exist",
    "image": {"bytes": red_square_jpeg(-90.0), "path": None},
    "task": "existence",
    "question": "Is there a red square around me?",
    "options": [],
    "answer": "Yes",
}
DOCS = [EVO, EXIST]
TASK = "odi_bench_close_mixed"
CLOSE = TaskOfSetting(adapter.doc_to_messages, "close")  # the task's doc_to_messages, as lmms-eval passes it

EVO_TEXT = (
    "Answer the question based on the provided ERP-formatted image.\n"
    "Question: In which direction is the red square from my viewpoint?\n"
    "Options:\nA. Front\nB. Right\nC. Back\nD. Left\n"
    "Answer ONLY with the option letter (e.g., A, B, C, or D)."
)
CAPTIONS = (
    "The panorama seen from the camera position, described view by view (front is the centre of the "
    "ERP-formatted image, right is three quarters across it, back is at its left and right edges, left is "
    "one quarter across it):\n"
    "Front view: front caption\nRight view: right caption\nBack view: back caption\n"
    "Left view: left caption\nTop view: top caption\nBottom view: bottom caption"
)


@pytest.fixture(autouse=True)
def _clean():
    stages.clear()
    yield
    stages.clear()


def _requests(docs=DOCS):
    return [
        Instance(
            "generate_until",
            ("", CLOSE.doc_to_messages, {"max_new_tokens": 32}, i, TASK, "test"),
            0,
            {"task": TASK, "doc_id": i, "repeats": 1},
        )
        for i in range(len(docs))
    ]


def _run(docs=DOCS, **options):
    model = oc.OmniCoT(base="omni_cot_fakes.ScriptedChat", view_size=32, crop_size=24, **options)
    model.task_dict = {TASK: {"test": docs}}
    answers = model.generate_until(_requests(docs))
    return model, answers


def _calls(model) -> dict[int, list[dict]]:
    out: dict[int, list[dict]] = {}
    for entry in model.base.transcript:
        out.setdefault(entry["call"], []).append(entry)
    return out


def test_three_batched_rounds_for_all_documents_together():
    model, answers = _run()
    calls = _calls(model)
    assert sorted(calls) == [1, 2, 3]
    assert len(calls[1]) == 2 * 6 + 2  # six captions + one grounding per document
    assert len(calls[2]) == 2 + 2 * 2  # one first answer + one relevance question per crop
    assert len(calls[3]) == 2  # one refinement per document (each kept a crop)
    assert answers == ["B", "Yes"]  # the refinement's (right) answers, not the first (wrong) ones
    assert isinstance(model.base, ScriptedChat)
    assert model.calls["caption"] == 12 and model.calls["relevance"] == 4 and model.calls["refine"] == 2


def test_caption_prompts_are_six_90_degree_views():
    model, _ = _run()
    captions = [e for e in _calls(model)[1] if e["doc_id"] == 0][:6]
    assert [e["texts"] for e in captions][0] == [
        "This image is the front view (90° field of view) of a 360-degree panoramic image, seen from the camera "
        "position. Describe in two or three sentences the objects, people and text visible in this view and "
        "where they are in it."
    ]
    assert [e["texts"][0].split(" view ")[0][len("This image is the ") :] for e in captions] == [
        "front", "right", "back", "left", "top", "bottom",
    ]  # fmt: skip
    assert all(e["images"] == [[32, 32]] and e["max_new_tokens"] == 256 for e in captions)


def test_grounding_prompt_has_the_erp_and_the_bare_question():
    model, _ = _run()
    grounding = [e for e in _calls(model)[1] if e["texts"][0].startswith("Here is")]
    assert grounding[0]["images"] == [[256, 128]]
    assert grounding[0]["texts"] == [
        "Here is an ERP-formatted 360-degree panoramic image and a question about it.\n"
        "Question: In which direction is the red square from my viewpoint?\n"
        "Give the bounding boxes of at most 4 image regions that are most relevant to answering the question, as "
        "a JSON list [[x1, y1, x2, y2], ...] with coordinates normalised to [0, 1] (x from the left edge, y from "
        "the top edge of the image). Answer [] if no region helps."
    ]


def test_first_answer_and_relevance_prompts():
    model, _ = _run()
    round2 = [e for e in _calls(model)[2] if e["doc_id"] == 0]
    first, right, top = round2[0], round2[1], round2[2]
    assert first["images"] == [[256, 128]] and first["max_new_tokens"] == 32  # the task's gen_kwargs
    assert first["texts"] == [f"{CAPTIONS}\n\n{EVO_TEXT}"]
    # box [0.70, 0.40, 0.80, 0.60]: θ = −180 + 0.75·360 = 90, φ = 0, fov = 36 + 10 = 46
    assert right["texts"] == [
        "This image is a crop of a 360-degree panoramic image, looking right (yaw 90°, pitch 0°, field of view "
        "46°).\nQuestion: In which direction is the red square from my viewpoint?\n"
        "Is this crop relevant to answering the question? Answer ONLY with yes or no."
    ]
    assert right["images"] == [[24, 24]] and right["max_new_tokens"] == 16
    # box [0.10, 0.0, 0.20, 0.30]: θ = −126, φ = 90 − 0.15·180 = 63, fov = max(36, 54) + 10 = 64
    assert top["texts"][0].startswith(
        "This image is a crop of a 360-degree panoramic image, looking top (yaw -126°, pitch 63°, field of view 64°)."
    )


def test_refinement_prompt_has_erp_kept_crops_directions_captions_and_previous_answer():
    model, _ = _run()
    (refine,) = [e for e in _calls(model)[3] if e["doc_id"] == 0]
    assert refine["images"] == [[256, 128], [24, 24]]  # the ERP, then the one kept crop
    assert refine["texts"] == [
        f"{CAPTIONS}\n\n"
        "Crops of the panorama that may help, in the order of the images after the ERP-formatted image:\n"
        "Crop 1: looking right (yaw 90°, pitch 0°, field of view 46°)\n\n"
        "Your previous answer was: C\nRethink your answer using the crops and the view descriptions.\n\n"
        f"{EVO_TEXT}"
    ]


def test_artifacts_log_every_step():
    _run()
    art = oc.lookup(EVO, "close")
    assert art["key"] == "close:odi_evo" and art["prompt_version"] == "omni_cot/1"
    assert art["captions"]["top"] == "top caption" and len(art["captions"]) == 6
    assert art["grounding_reply"] == "[[0.70, 0.40, 0.80, 0.60], [0.10, 0.0, 0.20, 0.30]]"
    assert (art["box_format"], art["boxes_raw"]) == ("normalized", [[0.7, 0.4, 0.8, 0.6], [0.1, 0.0, 0.2, 0.3]])
    assert [(c["theta"], c["phi"], c["fov"], c["direction"], c["kept"]) for c in art["crops"]] == [
        (90.0, 0.0, 46.0, "right", True),
        (-126.0, 63.0, 64.0, "top", False),
    ]
    assert [c["relevance_reply"] for c in art["crops"]] == ["Yes.", "No"]
    assert (art["first_answer"], art["final_answer"], art["refined"]) == ("C", "B", True)
    assert (art["crops_kept"], art["crops_dropped"]) == (1, 1)
    exist = oc.lookup(EXIST, "close")
    assert exist["box_format"] == "thousand"  # [700, 400, 800, 600] cannot be pixels of a 256 × 128 image
    assert exist["boxes"] == [[0.7, 0.4, 0.8, 0.6], [0.1, 0.0, 0.2, 0.3]]
    assert exist["first_answer"] == "No" and exist["final_answer"] == "Yes"


def test_process_results_logs_the_artifacts_and_replay_restores_them():
    _run()
    metrics = adapter.process_results({k: v for k, v in EVO.items() if k != "image"}, ["B"])
    logged = json.loads(json.dumps(metrics["accuracy"]))
    assert logged["score"] == 1.0 and logged["omni_cot"]["final_answer"] == "B"
    assert "omni_cot" not in adapter.process_results_open({**EVO, "answer_text": "right"}, ["x"])["judge_score"]
    stages.clear()
    assert oc.lookup(EVO, "close") is None
    assert stages.restore_from_record(logged) == 1
    assert oc.lookup(EVO, "close") == logged["omni_cot"]


@pytest.mark.parametrize(
    "switches,calls_per_round,refined",
    [
        ({"grounding": False}, [12, 2], False),  # viewpoint guiding only (Table 5 row 1): first answer = final
        ({"crop_filter": False}, [14, 2, 2], True),  # grounding without the relevance filter: all crops kept
        ({"viewpoint": False}, [2, 2 + 4, 2], True),  # no captions: the first answer is the direct one
        ({"viewpoint": False, "grounding": False}, [2], False),  # direct answering through the same machinery
    ],
)
def test_each_step_can_be_switched_off(switches, calls_per_round, refined):
    model, answers = _run(**switches)
    assert [len(v) for _, v in sorted(_calls(model).items())] == calls_per_round
    art = oc.lookup(EVO, "close")
    assert art["refined"] is refined
    if not refined:
        assert art["final_answer"] == art["first_answer"]
    if switches.get("crop_filter") is False:
        assert [c["kept"] for c in art["crops"]] == [True, True] and "relevance_reply" not in art["crops"][0]
    if switches.get("viewpoint") is False:
        assert art["captions"] is None
        assert _calls(model)[1 if not switches.get("grounding", True) else 2][0]["texts"] == [EVO_TEXT]


def test_fov_margin_and_box_format_options():
    model, _ = _run(fov=80, margin=0, box_format="normalized", max_crops=1)
    first_caption = _calls(model)[1][0]["texts"][0]
    assert first_caption.startswith("This image is the front view (80° field of view)")
    art = oc.lookup(EVO, "close")
    assert [(c["theta"], c["fov"]) for c in art["crops"]] == [(90.0, 36.0)]  # margin 0, one crop
    assert art["options"]["fov"] == 80.0


class NoChat(ScriptedChat):
    """Says no to every crop."""

    def _reply(self, doc, text):
        return "no" if text.startswith("This image is a crop") else super()._reply(doc, text)


def test_no_kept_crop_means_no_refinement_call():
    model = oc.OmniCoT(base=f"{__name__}.NoChat", view_size=16, crop_size=16)
    model.task_dict = {TASK: {"test": DOCS}}
    answers = model.generate_until(_requests())
    assert sorted(_calls(model)) == [1, 2] and answers == ["C", "No"]  # the first answers stand
    assert oc.lookup(EVO, "close")["refined"] is False


def test_stage_cache_serves_captions_grounding_first_and_relevance(tmp_path):
    _run(stage_cache=str(tmp_path))
    model, answers = _run(stage_cache=str(tmp_path))
    assert sorted(_calls(model)) == [1] and len(_calls(model)[1]) == 2  # only the refinements
    assert answers == ["B", "Yes"] and model.calls["stage_cache_hits"] == 14 + 6


@pytest.mark.parametrize(
    "text,size,fmt,boxes",
    [
        ("[0.5, 0.25, 0.75, 0.5]", (256, 128), "normalized", [[0.5, 0.25, 0.75, 0.5]]),
        ("(64, 32, 128, 64)", (256, 128), "pixel", [[0.25, 0.25, 0.5, 0.5]]),  # fits a ≤1000 px image
        ("[250, 250, 500, 500]", (6000, 3000), "thousand", [[0.25, 0.25, 0.5, 0.5]]),
        ("[1500, 750, 3000, 1500]", (6000, 3000), "pixel", [[0.25, 0.25, 0.5, 0.5]]),  # > 1000: pixels
        ("[0.8, 0.6, 0.4, 0.2]", (256, 128), "normalized", [[0.4, 0.2, 0.8, 0.6]]),  # corners put in order
        ("[0.5, 0.5, 0.5, 0.9]", (256, 128), "normalized", []),  # no width: dropped
        ("no boxes here", (256, 128), "none", []),
    ],
)
def test_parse_boxes_tolerates_normalised_pixel_and_0_1000_formats(text, size, fmt, boxes):
    parsed = oc.parse_boxes(text, *size)
    assert (parsed.format, parsed.boxes) == (fmt, boxes)


def test_parse_boxes_clips_and_forced_format():
    parsed = oc.parse_boxes("[-10, 20, 300, 140]", 256, 128, box_format="pixel")
    assert parsed.boxes == [[0.0, 0.15625, 1.0, 1.0]]
    assert oc.parse_boxes("[[0.1,0.1,0.2,0.2],[0.3,0.3,0.4,0.4]]", 10, 10, max_boxes=1).boxes == [[0.1, 0.1, 0.2, 0.2]]


def test_multiview_baseline_sends_twelve_labelled_views_instead_of_the_erp():
    model, answers = _run(method="multiview")
    (call,) = _calls(model).values()
    entry = call[0]
    assert len(entry["images"]) == 12 and entry["images"][0] == [32, 32]
    assert entry["texts"][0].startswith("The 360-degree panorama is shown as 12 perspective views (90° field of view)")
    assert entry["texts"][1:4] == ["Front view (yaw 0°, pitch 0°):", "Front-right view (yaw 45°, pitch 0°):",
                                   "Right view (yaw 90°, pitch 0°):"]  # fmt: skip
    assert entry["texts"][-1] == EVO_TEXT and answers == ["B", "Yes"]
    assert [v["name"] for v in oc.lookup(EVO, "close")["views"]][-1] == "bottom-back"


def test_video_baseline_sends_rotating_frames():
    model, _ = _run(method="video", video_fps=1.0, video_size=20)
    entry = _calls(model)[1][0]
    assert entry["images"] == [[20, 20]] * 12  # 12 s at 1 frame per second
    assert entry["texts"][0].startswith(
        "The 360-degree panorama is shown as a video of 12 frames (1 frames per second, 12 s)"
    )
    assert oc.lookup(EVO, "close")["frames"][2] == {"t": 2.0, "yaw": 105.0, "pitch": 0.0}


def test_resized_erp_baseline():
    model, _ = _run(method="direct", erp_resize="64x128")
    entry = _calls(model)[1][0]
    assert entry["images"] == [[128, 64]] and entry["texts"] == [EVO_TEXT]
    assert oc.lookup(EVO, "close")["options"]["erp_resize"] == "64x128"


def test_bad_options_are_refused():
    with pytest.raises(ValueError, match="method"):
        oc.Options.from_args(method="tree")
    with pytest.raises(ValueError, match="box_format"):
        oc.Options.from_args(box_format="polar")
    assert oc.Options.from_args(viewpoint="false", fov="100").viewpoint is False


def test_filter_ratio_report(tmp_path):
    _run()
    sample = {"doc_id": 0, "accuracy": {"omni_cot": oc.lookup(EVO, "close")}}
    other = {"doc_id": 1, "accuracy": {"omni_cot": oc.lookup(EXIST, "close")}}
    (tmp_path / "x_samples_odi_bench_close_a.jsonl").write_text(json.dumps(sample) + "\n" + json.dumps(other) + "\n")
    found = omni_cot_table.artifacts_in_samples([tmp_path])
    ratio = omni_cot_table.filter_ratio(found["odi_bench_close_a"])
    assert ratio == {
        "documents": 2,
        "crops": 4,
        "kept": 2,
        "dropped": 2,
        "filter_ratio": 0.5,
        "refined": 2,
        "changed": 2,
    }
    assert "| odi_bench_close_a | 2 | 4 | 2 | 2 | 50.00% | 2 | 2 |" in omni_cot_table.format_report(found)


def test_each_round_shows_a_bar_named_for_its_stages_over_its_model_requests(progress_bars):
    _run()
    assert [(b.desc, b.total, b.n, b.unit) for b in progress_bars] == [
        ("omni_cot: caption + grounding", 2 * 6 + 2, 14, "request"),
        ("omni_cot: first + relevance", 2 + 2 * 2, 6, "request"),
        ("omni_cot: refined answers", 2, 2, "request"),
    ]
