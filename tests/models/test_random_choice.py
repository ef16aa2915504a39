"""``--model random_choice``: a seeded uniform guess over each question's own answers, the same on every run
(lmms_spatial.models.random_choice, lmms_spatial.data.answer_space). The demo model: its guesses are the demo's
numbers, so they are pinned here by fast tests, not only through the CLI."""

from __future__ import annotations

import random
from collections import Counter

import datasets
from lmms_eval.api.instance import Instance

from lmms_spatial.data.answer_space import answer_space
from lmms_spatial.models.random_choice import RandomChoice


def model_over(task: str, rows: list[dict], seed: int = 0) -> RandomChoice:
    model = RandomChoice(seed=seed)
    model.task_dict = {task: {"test": datasets.Dataset.from_list(rows)}}
    return model


def request(task: str, doc_id: int) -> Instance:
    return Instance("generate_until", ("prompt", {}, lambda doc: [], doc_id, task, "test"), 0,
                    {"task": task, "doc_id": doc_id, "repeats": 1})  # fmt: skip


def test_each_document_is_answered_from_its_own_options():
    """Documents with 2, 3, 4 and 16 options (DORI's range): every guess is one of that document's letters,
    never one of another document's; over 40 passes each document's letters all occur."""
    rows = [{"options": [f"o{k}" for k in range(n)], "question": "q", "answer": "A"} for n in (2, 3, 4, 16)]
    seen: dict[int, set[str]] = {i: set() for i in range(4)}
    for seed in range(40):
        model = model_over("t", rows, seed)
        answers = model.generate_until([request("t", i) for i in (3, 0, 2, 1)])  # any order
        for doc_id, answer in zip((3, 0, 2, 1), answers, strict=True):
            seen[doc_id].add(answer)
    assert seen == {0: {"A", "B"}, 1: {"A", "B", "C"}, 2: set("ABCD"), 3: set("ABCDEFGHIJKLMNOP")}


def test_a_guess_depends_only_on_seed_task_and_document():
    model = RandomChoice(seed=3)
    choices = list("ABCD")
    first = [model.guess("mmsi_vanilla", i, choices) for i in range(50)]
    assert first == [RandomChoice(seed=3).guess("mmsi_vanilla", i, choices) for i in range(50)]  # a new process
    assert first == [random.Random(f"3:mmsi_vanilla:{i}").choice(choices) for i in range(50)]  # no hash involved
    assert first != [RandomChoice(seed=4).guess("mmsi_vanilla", i, choices) for i in range(50)]
    assert first != [model.guess("mmsi_cot", i, choices) for i in range(50)]
    assert first != [model.guess("mmsi_vanilla", i + 1, choices) for i in range(50)]


def test_guesses_are_uniform_over_the_options():
    """4,000 questions of 4 options: each letter 25% +- 2.7 points (4 standard deviations of a binomial share:
    sqrt(0.25 * 0.75 / 4000) = 0.68 points)."""
    counts = Counter(RandomChoice(seed=0).guess("t", i, list("ABCD")) for i in range(4000))
    assert set(counts) == set("ABCD")
    assert all(abs(n / 4000 - 0.25) < 0.027 for n in counts.values()), counts


def test_the_default_seed_is_0_as_the_readme_runs_it():
    assert RandomChoice().seed == 0
    assert [RandomChoice().guess("t", i, list("ABCD")) for i in range(20)] == [
        RandomChoice(seed=0).guess("t", i, list("ABCD")) for i in range(20)
    ]


def test_each_task_reads_its_own_documents_and_seeds_its_own_guesses():
    """Two tasks in one run: ``b``'s document 0 has 16 options, ``a``'s 2; each is answered from its own split, and
    the guess is the one its task name seeds."""
    model = RandomChoice(seed=1)
    model.task_dict = {
        "a": {"test": datasets.Dataset.from_list([{"options": ["x", "y"], "question": "q", "answer": "A"}])},
        "b": {"test": datasets.Dataset.from_list([{"options": [f"o{k}" for k in range(16)], "question": "q",
                                                   "answer": "A"}])},
    }  # fmt: skip
    answers = model.generate_until([request("a", 0), request("b", 0)] * 1)
    assert answers == [model.guess("a", 0, ["A", "B"]), model.guess("b", 0, list("ABCDEFGHIJKLMNOP"))]
    seen_b = {model_over("b", [{"options": [f"o{k}" for k in range(16)], "question": "q", "answer": "A"}], s)
              .generate_until([request("b", 0)])[0] for s in range(60)}  # fmt: skip
    assert len(seen_b) > 2  # b's own 16 options, not a's two


def test_a_question_without_answers_gets_an_empty_reply():
    assert RandomChoice().guess("t", 0, []) == ""


def test_images_are_never_read_to_guess():
    rows = [{"options": ["x", "y"], "question": "q", "answer": "A", "image": b"\x89PNG not an image"}]
    model = model_over("t", rows)
    assert model.generate_until([request("t", 0)])[0] in {"A", "B"}
    assert model._text_docs("t", "test").column_names == ["options", "answer", "question"]


def test_the_answer_space_of_each_benchmarks_documents():
    assert answer_space({"options": ["a", "b", "c"]}, "dori") == ["A", "B", "C"]  # DORI, ODI-Bench, MMPerspective
    mmsi = {"question": "Q\nOptions: A: x, B: y, C: z", "answer": "B"}
    assert answer_space(mmsi, "mmsi") == ["A", "B", "C"]  # MMSI: tasks/mmsi/answers.py
    assert answer_space({"options": [], "answer": "no"}) == ["Yes", "No"]
    osr = {"question": "Which is closer to the sofa (bed, lamp, door)?", "answer": "lamp"}
    assert answer_space({**osr, "skill": "relative_distance"}, "osr_bench") == ["bed", "lamp", "door"]
    assert answer_space({**osr, "skill": "object_counting"}, "osr_bench") == [str(i) for i in range(10)]
    assert len(answer_space({**osr, "skill": "relative_direction"}, "osr_bench")) == 8
    assert answer_space({**osr, "skill": "existence", "answer": "yes"}, "osr_bench") == []  # its own rule: open
    assert answer_space({**osr, "answer": "yes"}, "osr_bench") == ["Yes", "No"]  # no skill: the generic rules
    assert answer_space({"question": "open?", "answer": "a chair"}) == []
    assert answer_space({"options": ["the only one"]}) == ["A"]
    # a benchmark's own rule is its own: another benchmark's (or no benchmark's) documents get the generic rules
    assert answer_space(mmsi, "dori") == [] and answer_space({**osr, "skill": "object_counting"}, "dori") == []
    assert answer_space({"options": ["a", "b"], "question": "Options: A: x, B: y, C: z"}, "mmsi") == ["A", "B", "C"]


def test_random_choice_finds_each_tasks_benchmark_by_the_folder_that_declares_it():
    model = RandomChoice(seed=0)
    tasks = ("mmsi_vanilla", "osr_qa_standard_vanilla", "dori_coarse", "mme")  # a group; lmms-eval's own
    assert [model.benchmark_of(t) for t in tasks] == ["mmsi", "osr_bench", None, None]
    assert model.benchmark_of("dori_view_parallelism_coarse") == "dori"


def test_a_task_of_ours_is_guessed_from_its_benchmarks_own_answers():
    """An OSR-Bench counting question has no options: its answers are the counts 0-9 (tasks/osr_bench/answers.py),
    which random_choice finds by the task's folder; an MMSI question's options are the ones written into it."""
    counting = {"skill": "object_counting", "question": "How many chairs?", "answer": "3"}
    model = model_over("osr_qa_standard_vanilla", [counting])
    assert {model_over("osr_qa_standard_vanilla", [counting], s).generate_until([request(
        "osr_qa_standard_vanilla", 0)])[0] for s in range(200)} == {str(i) for i in range(10)}  # fmt: skip
    assert model.generate_until([request("osr_qa_standard_vanilla", 0)])[0] != ""
    mmsi = {"question": "Which?\nOptions: A: x, B: y, C: z", "answer": "C"}
    assert {model_over("mmsi_vanilla", [mmsi], s).generate_until([request("mmsi_vanilla", 0)])[0]
            for s in range(30)} == {"A", "B", "C"}  # fmt: skip


def test_a_task_not_known_by_its_name_is_read_by_every_benchmarks_rule_in_order():
    """A YAML of the user's that includes one of ours under its own name: OSR-Bench's rule before the options list
    and Yes/No, MMSI-Bench's after them (as when the rules were one function)."""
    osr = {"question": "How many chairs?", "answer": "yes"}
    assert answer_space({**osr, "skill": "object_counting"}) == [str(i) for i in range(10)]
    assert answer_space({**osr, "skill": "existence"}) == []  # a skill: open, though the answer reads yes
    assert answer_space({"question": "Q\nOptions: A: x, B: y, C: z", "answer": "C"}) == ["A", "B", "C"]
    assert answer_space({"options": ["a", "b"], "question": "Options: A: x, B: y, C: z"}) == ["A", "B"]
    assert answer_space({"question": "Options: A: x, B: y", "answer": "no"}) == ["Yes", "No"]
    model = model_over("my_broken", [{"question": "Which?\nOptions: A: x, B: y", "answer": "B"}])
    assert model.benchmark_of("my_broken") is None
    assert model.generate_until([request("my_broken", 0)])[0] in {"A", "B"}


def test_a_task_known_by_its_name_is_read_by_its_own_benchmarks_rules_only():
    """A DORI question whose text happens to hold "Options:" (and no options list) is not read as MMSI-Bench's."""
    doc = {"question": "Options: A: x, B: y, C: z", "answer": "A"}
    assert model_over("dori_view_parallelism_coarse", [doc]).generate_until(
        [request("dori_view_parallelism_coarse", 0)]) == [""]  # fmt: skip
    assert model_over("my_own_task", [doc]).generate_until([request("my_own_task", 0)])[0] in {"A", "B", "C"}


def test_an_mmsi_question_without_written_options_falls_to_the_generic_rules():
    assert answer_space({"question": "Is the chair left of the table?", "answer": "yes"}, "mmsi") == ["Yes", "No"]
    assert answer_space({"question": "How far?", "answer": "3 m"}, "mmsi") == []


def test_osr_distance_candidates_are_the_first_parenthesised_list_even_when_a_name_holds_parentheses():
    question = ("Measuring from the closest point of each object, which of these objects (bed, lamp) is the closest "
                "to the tv (television) in this PANORAMA?")  # fmt: skip
    doc = {"skill": "relative_distance", "question": question, "answer": "bed"}
    assert answer_space(doc, "osr_bench") == ["bed", "lamp"]
