"""The mutation check's own rules (tools.mutation): what it mutates, how it reads the accepted
survivors, when CI reruns a module. mutmut itself is not run here (see CONTRIBUTING.md, "Mutation testing")."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from lmms_spatial.data.registry import BENCHMARKS
from tools import mutation

REPO = Path(__file__).resolve().parents[1]
# what a contributor runs when a module's baseline is missing or out of date (CONTRIBUTING.md's PR checklist)
UPDATE_BASELINE = f"{mutation.COMMAND} --changed --update-baseline"


def benchmark_of(module: str) -> str | None:
    """The benchmark key a module in scope belongs to: ``metrics/<key>.py``, ``tasks/<key>/...`` and the judge rubrics
    ``metrics/rubrics/<key>_*.py`` (None: shared code, such as the extraction or the report's tables)."""
    parts = module.removesuffix(".py").split("/")
    if parts[0] == "tasks":
        return parts[1]
    if parts[:2] == ["metrics", "rubrics"]:
        found = [key for key in BENCHMARKS if parts[2] == key or parts[2].startswith(f"{key}_")]
        return max(found, key=len, default=None)
    return parts[1] if parts[0] == "metrics" and parts[1] in BENCHMARKS else None


# each benchmark's modules in scope, one case each, named by its key (``pytest -k <key>`` runs them)
BENCHMARK_MODULES = [
    pytest.param(key, module, id=f"{key}-{module}")
    for module in mutation.scope(REPO)
    if (key := benchmark_of(module)) is not None
]

ADAPTER = """
def doc_to_text(doc):
    return "prompt"


def process_results(doc, results):
    return {}


class Scorer:
    def score(self, x):
        return x


def main(argv=None):
    return 0
"""


def test_the_scope_is_every_scorer_module_found_a_new_benchmark_included(tmp_path):
    for module in ("metrics/__init__.py", "metrics/dori.py", "metrics/rubrics/base.py", "tasks/dori/adapter.py"):
        (tmp_path / module).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / module).write_text("")
    (tmp_path / "tasks/dori/utils.py").write_text("")
    assert mutation.scope(tmp_path) == ["metrics/dori.py", "metrics/rubrics/base.py", "tasks/dori/adapter.py"]
    (tmp_path / "tasks/orient_bench").mkdir()
    (tmp_path / "tasks/orient_bench/adapter.py").write_text("")
    assert "tasks/orient_bench/adapter.py" in mutation.scope(tmp_path)
    assert {"metrics/extraction.py", "metrics/aggregation.py", "tasks/osr_bench/adapter.py"} <= set(
        mutation.scope(REPO)
    )


def test_module_names_are_the_installed_ones():
    assert mutation.dotted("metrics/rubrics/base.py") == "lmms_spatial.metrics.rubrics.base"
    assert mutation.package_path("tasks/dori/adapter.py") == "lmms_spatial/tasks/dori/adapter.py"
    assert mutation.module_of("lmms_spatial.metrics.rubrics.base.x_as_text__mutmut_3") == "metrics/rubrics/base.py"
    assert mutation.module_of("lmms_spatial.metrics.odi_bench.x_scored__mutmut_1") == "metrics/odi_bench.py"
    # a module of the package itself (issue 42's scope) keeps its path; a name outside the package is none of ours
    assert mutation.module_of("lmms_spatial.data.answer_space.x_answer_space__mutmut_1") == (
        "lmms_spatial/data/answer_space.py"
    )
    assert mutation.package_path("lmms_spatial/models/random_choice.py") == "lmms_spatial/models/random_choice.py"
    assert mutation.module_of("lmms_spatial.conditions.x_parse_model_args__mutmut_1") == "lmms_spatial/conditions.py"
    assert mutation.module_of("mutants.something.x_f__mutmut_1") is None


def test_each_group_is_mutated_against_its_own_tests_and_only_its_tests_enter_its_fingerprints():
    """The scorers keep the configuration their baseline was recorded with: a group added later does not make every
    scorer module 'changed' (CI would rerun them all, over its budget)."""
    assert mutation.group_of("metrics/dori.py").tests == mutation.TESTS
    answers = mutation.group_of("lmms_spatial/models/random_choice.py")
    assert answers.name == "answers" and "tests/models/test_random_choice.py" in answers.tests
    assert mutation.config_fingerprint(mutation.TESTS) == mutation.config_fingerprint()
    assert mutation.config_fingerprint(answers.tests) != mutation.config_fingerprint()
    assert {"lmms_spatial/models/random_choice.py", "lmms_spatial/data/answer_space.py"} <= set(mutation.scope(REPO))


def test_each_converter_is_mutated_against_its_own_test_files_only():
    """A converter's mutants run its two test files, not the other converters' (CPU is scarce: issue 42)."""
    for bench in ("osr_bench", "mmperspective", "dori", "odi_bench"):
        group = mutation.group_of(f"tasks/{bench}/convert.py")
        assert group.tests == (f"tests/scripts/test_convert_{bench}.py", f"tests/scripts/test_convert_{bench}_edges.py")
        assert all((REPO / test).is_file() for test in group.tests)


def test_modules_belong_to_the_benchmark_their_path_names():
    assert benchmark_of("metrics/dori.py") == "dori"
    assert benchmark_of("tasks/osr_bench/convert.py") == "osr_bench"
    assert benchmark_of("metrics/rubrics/mmsi_diagnosis.py") == "mmsi"
    assert benchmark_of("metrics/rubrics/odi_open.py") is None  # a rubric named after no key: shared
    assert benchmark_of("metrics/extraction.py") is None
    assert benchmark_of("lmms_spatial/reports/tables.py") is None


def test_every_shared_module_in_scope_has_a_committed_baseline_and_the_baseline_names_nothing_else():
    """Else CI's ``--changed`` check would take a module never recorded for a changed one and run it on every push.
    A benchmark's own modules are checked under its key, below."""
    baseline = json.loads((REPO / mutation.BASELINE_FILE).read_text(encoding="utf-8"))
    shared = {m for m in mutation.scope(REPO) if benchmark_of(m) is None}
    missing = sorted(shared - set(baseline["modules"]))
    assert missing == [], f"no entry in {mutation.BASELINE_FILE}: run `{UPDATE_BASELINE}` and commit it"
    stale = sorted(set(baseline["modules"]) - set(mutation.scope(REPO)))
    assert stale == [], f"{mutation.BASELINE_FILE} names modules out of scope: run `{UPDATE_BASELINE}`"


@pytest.mark.parametrize(("key", "module"), BENCHMARK_MODULES)
def test_each_module_of_a_benchmark_has_a_baseline_entry_and_it_is_current(key, module):
    """What CI's ``--changed`` check would rerun (and fail past its budget): a module whose source or
    ``equivalent.txt`` lines changed since its entry was recorded, or a new module without one."""
    baseline = json.loads((REPO / mutation.BASELINE_FILE).read_text(encoding="utf-8"))
    recorded = baseline["modules"].get(module)
    assert recorded is not None, f"{module} has no entry in {mutation.BASELINE_FILE}: run `{UPDATE_BASELINE}`"
    equivalents = (REPO / mutation.EQUIVALENT_FILE).read_text(encoding="utf-8")
    assert recorded["fingerprint"] == mutation.fingerprint(module, REPO, equivalents), (
        f"{module} changed since {mutation.BASELINE_FILE} was recorded: run `{UPDATE_BASELINE}` and commit it"
    )


def test_the_shipped_benchmarks_modules_are_checked_under_their_keys():
    keys = {param.values[0] for param in BENCHMARK_MODULES}
    assert {"dori", "mmperspective", "mmsi", "odi_bench", "osr_bench"} <= keys
    assert pytest.param("dori", "metrics/dori.py", id="dori-metrics/dori.py") in BENCHMARK_MODULES


def test_prompts_and_command_line_plumbing_are_left_out_and_methods_are_kept():
    assert mutation.functions(ADAPTER) == ["x_doc_to_text", "x_process_results", "x\u01c1Scorer\u01c1score", "x_main"]
    assert mutation.mutant_globs("tasks/x/adapter.py", ADAPTER) == [
        "lmms_spatial.tasks.x.adapter.x_process_results__mutmut_*",
        "lmms_spatial.tasks.x.adapter.x\u01c1Scorer\u01c1score__mutmut_*",
    ]


def test_an_accepted_survivor_is_id_mutated_line_and_a_reason_of_a_known_kind():
    # the mutated line may hold " | " (a set union): the id is the first field, the reason the last
    text = "# comment\n\nlmms_spatial.metrics.dori.x_f__mutmut_2 | return a | b | equivalent: a and b are sets\n"
    (entry,) = mutation.parse_equivalents(text).values()
    assert (entry.mutant, entry.line, entry.reason) == (
        "lmms_spatial.metrics.dori.x_f__mutmut_2",
        "return a | b",
        "equivalent: a and b are sets",
    )


@pytest.mark.parametrize(
    "line",
    [
        "lmms_spatial.metrics.dori.x_f__mutmut_2 | return a",  # no reason
        "lmms_spatial.metrics.dori.x_f | return a | equivalent: x",  # no mutant id
        "lmms_spatial.metrics.dori.x_f__mutmut_2 | return a | looks fine",  # no kind
        "lmms_spatial.metrics.dori.x_f__mutmut_2 | return a | harmless: x",  # an unknown kind
    ],
)
def test_a_malformed_entry_is_refused_naming_its_line(line):
    with pytest.raises(ValueError, match=r"equivalent\.txt:2: "):
        mutation.parse_equivalents("# head\n" + line + "\n")


def test_an_entry_listed_twice_is_refused():
    line = "lmms_spatial.metrics.dori.x_f__mutmut_2 | return a | equivalent: same\n"
    with pytest.raises(ValueError, match="listed twice"):
        mutation.parse_equivalents(line * 2)


def test_equivalent_and_valid_data_entries_are_equivalent_the_others_are_survivors():
    kinds = {"equivalent: x": True, "valid data: x": True, "not a score: x": False, "gap: x": False}
    for reason, equivalent in kinds.items():
        assert mutation.Equivalent("m__mutmut_1", "l", reason).is_equivalent is equivalent


def test_the_mutated_line_is_the_added_lines_of_the_diff():
    diff = "--- a\n+++ a\n@@ -1,3 +1,3 @@\n def f():\n-    return 1\n+    return 2\n+\n+    pass\n"
    assert mutation.mutated_line(diff) == "return 2 \u23ce pass"


def test_the_score_leaves_equivalent_mutants_out_and_counts_accepted_survivors_against_it():
    result = mutation.ModuleResult("metrics/x.py", mutants=100, killed=90, equivalent=5, accepted=3)
    assert result.score == 90 / 95
    assert mutation.ModuleResult("metrics/x.py").score == 1.0  # nothing to kill


def test_a_fingerprint_changes_with_the_source_and_with_the_modules_entries_only(tmp_path):
    module = "metrics/x.py"
    (tmp_path / "metrics").mkdir()
    (tmp_path / module).write_text("def f():\n    return 1\n")
    own = "lmms_spatial.metrics.osr_bench.x_f__mutmut_1 | l | equivalent: x\n"
    other = "lmms_spatial.metrics.dori.x_f__mutmut_1 | l | equivalent: x\n"
    base = mutation.fingerprint(module, tmp_path, "")
    assert mutation.fingerprint(module, tmp_path, other) == base
    (tmp_path / module).write_text("def f():\n    return 2\n")
    assert mutation.fingerprint(module, tmp_path, "") != base
    osr = "metrics/osr_bench.py"
    (tmp_path / osr).write_text("")
    assert mutation.fingerprint(osr, tmp_path, own) != mutation.fingerprint(osr, tmp_path, other)


def test_changed_modules_are_those_whose_fingerprint_is_not_recorded(tmp_path):
    for module in ("metrics/dori.py", "metrics/mmsi.py", "tasks/dori/adapter.py"):
        (tmp_path / module).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / module).write_text(f"# {module}\n")
    recorded = {m: {"fingerprint": mutation.fingerprint(m, tmp_path, "")} for m in mutation.scope(tmp_path)}
    assert mutation.changed_modules(tmp_path, "", {"modules": recorded}) == []
    (tmp_path / "metrics/dori.py").write_text("# changed\n")
    del recorded["metrics/mmsi.py"]
    assert mutation.changed_modules(tmp_path, "", {"modules": recorded}) == ["metrics/dori.py", "metrics/mmsi.py"]


def test_the_time_estimate_needs_every_module_recorded():
    baseline = {"modules": {"metrics/a.py": {"seconds": 100.0}, "metrics/b.py": {"seconds": 60.0}}}
    assert mutation.estimated_seconds(["metrics/a.py", "metrics/b.py"], baseline, 2) == mutation.OVERHEAD_S + 80.0
    assert mutation.estimated_seconds(["metrics/a.py", "metrics/c.py"], baseline, 2) is None


def test_the_committed_baseline_and_entries_are_readable_and_name_modules_in_scope():
    baseline = json.loads((REPO / mutation.BASELINE_FILE).read_text(encoding="utf-8"))
    assert set(baseline["modules"]) <= set(mutation.scope(REPO))
    entries = mutation.parse_equivalents((REPO / mutation.EQUIVALENT_FILE).read_text(encoding="utf-8"))
    assert all(mutation.module_of(m) is not None for m in entries)


def test_the_baseline_file_is_written_one_module_per_line(tmp_path):
    (tmp_path / "mutation").mkdir()
    mutation.write_baseline(
        tmp_path, {"tool": "mutmut 3.8.1", "modules": {"metrics/b.py": {"k": 2}, "metrics/a.py": {"k": 1}}}
    )
    lines = (tmp_path / mutation.BASELINE_FILE).read_text().splitlines()
    assert lines[3:5] == ['    "metrics/a.py": {"k": 1},', '    "metrics/b.py": {"k": 2}']
    assert json.loads((tmp_path / mutation.BASELINE_FILE).read_text())["modules"]["metrics/a.py"] == {"k": 1}


def test_the_command_refuses_to_run_outside_the_repository(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert mutation.main([]) == 2
    assert "run it from the repository root" in capsys.readouterr().out


def test_a_baseline_is_never_recorded_from_another_test_selection(monkeypatch, capsys):
    monkeypatch.chdir(REPO)
    assert mutation.main(["--update-baseline", "--tests", "tests/metrics/test_mmsi.py"]) == 2
    assert "drop --tests" in capsys.readouterr().out


def test_a_mutant_worker_that_allocates_past_the_cap_gets_a_memory_error_not_the_machine():
    # the cap mutmut and its forked workers run under: 1 GiB here; the child asks for 1.5 GiB in one piece
    grow = "import sys\ntry:\n    bytearray(3 * 2**29)\nexcept MemoryError:\n    sys.exit(7)\n"
    done = subprocess.run([sys.executable, "-c", grow], preexec_fn=mutation._address_space_limit(1.0), check=False)
    assert done.returncode == 7
    free = subprocess.run([sys.executable, "-c", grow], preexec_fn=mutation._address_space_limit(0), check=False)
    assert free.returncode == 0  # 0: no cap
