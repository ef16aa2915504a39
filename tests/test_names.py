"""A task name lmms-eval cannot find that is near one of ours is answered with ours (lmms_spatial.plugin.names)."""

from __future__ import annotations

import pytest

from lmms_spatial.plugin.failures import our_task_names
from lmms_spatial.plugin.names import check_names, distance, nearest_ours

OURS = sorted(our_task_names())


@pytest.mark.parametrize(
    ("a", "b", "edits"),
    [("mmsi_vanila", "mmsi_vanilla", 1),  # a letter dropped
     ("dorri", "dori", 1),  # a letter added
     ("odri", "dori", 1),  # two letters swapped: one edit, not two
     ("mmsi_vonilla", "mmsi_vanilla", 1),  # a letter changed
     ("mmperspectve_vp", "mmperspective_vpp", 2)],
)  # fmt: skip
def test_edit_distance_counts_drops_additions_changes_and_swaps(a, b, edits):
    assert distance(a, b, limit=2) == edits


def test_edit_distance_stops_counting_past_the_limit():
    assert distance("osr_bench", "totally_unknown", limit=2) == 3


@pytest.mark.parametrize(
    ("name", "meant"),
    [("mmsi_vanila", ["mmsi_vanilla"]),
     ("MMSI_Vanilla", ["mmsi_vanilla"]),  # the same name in another case
     ("dorri", ["dori"]),
     ("dori_view_par", ["dori_view_parallelism_coarse", "dori_view_parallelism_granular"]),  # a prefix of ours
     ("spatial_suit", ["spatial_suite"])],
)  # fmt: skip
def test_a_name_near_ours_gets_our_nearest(name, meant):
    assert nearest_ours(name, OURS) == meant


@pytest.mark.parametrize("name", ["totally_unknown_xyz", "mme_typo", "mm", "vqav2"])
def test_a_name_nowhere_near_ours_gets_nothing(name):
    assert nearest_ours(name, OURS) == []


def test_a_name_nearer_to_one_of_lmms_evals_own_names_is_left_to_lmms_eval():
    # 'abcdefgz' is 2 edits from ours, 1 from lmms-eval's 'abcdefgx'
    assert nearest_ours("abcdefgz", ["abcdefgxy"], others=["abcdefgx"]) == []
    assert nearest_ours("abcdefgz", ["abcdefgxy"], others=["zzz"]) == ["abcdefgxy"]


def test_each_misspelt_name_gets_its_own_line():
    lines = check_names(["mmsi_vanila", "dori", "dorri"], matched=["dori"], all_names=OURS)
    assert lines == ["lmms-spatial: no task named mmsi_vanila: did you mean mmsi_vanilla?",
                     "lmms-spatial: no task named dorri: did you mean dori?"]  # fmt: skip


def test_an_unknown_name_nowhere_near_ours_keeps_lmms_evals_answer_unless_ours_were_asked_for_too():
    assert check_names(["totally_unknown_xyz"], matched=[], all_names=OURS) == []
    assert check_names(["mmsi_vanilla", "totally_unknown_xyz"], matched=["mmsi_vanilla"], all_names=OURS) == [
        "lmms-spatial: no task named totally_unknown_xyz (`lmms-eval --tasks list` lists every name); mmsi_vanilla "
        "not evaluated"
    ]


def test_wildcards_and_names_that_were_found_are_not_questioned():
    assert check_names(["mmsi_*", "mmsi_vanilla"], matched=["mmsi_vanilla"], all_names=OURS) == []


def test_a_misspelt_name_through_the_python_api_raises_the_clis_did_you_mean():
    import lmms_eval.evaluator

    from lmms_spatial.plugin.names import UnknownTaskError

    with pytest.raises(KeyError) as raised:  # lmms-eval's own error type, still caught by code that caught it
        lmms_eval.evaluator.simple_evaluate(model="random_choice", tasks=["mmsi_vanila"], limit=1)
    assert isinstance(raised.value, UnknownTaskError)
    assert str(raised.value) == "no task named mmsi_vanila: did you mean mmsi_vanilla?"


def test_a_key_error_from_inside_a_task_or_a_name_nowhere_near_ours_stays_lmms_evals():
    from types import SimpleNamespace

    from lmms_spatial.plugin.names import unknown_task_error

    manager = SimpleNamespace(all_tasks=["mmsi_vanilla", "mme"])
    assert unknown_task_error(KeyError("answer"), ["mmsi_vanilla"], manager) is None  # a field, not a name given
    assert unknown_task_error(KeyError("totally_unknown_xyz"), ["totally_unknown_xyz"], manager) is None
    error = unknown_task_error(KeyError("dorri"), ["mme", "dorri"], manager)
    assert str(error) == "no task named dorri: did you mean dori?"
