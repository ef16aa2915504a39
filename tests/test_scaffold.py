"""``lmms-spatial new-task``: the scaffold is ruff clean, refuses bad names, and passes the contract.

The slow test scaffolds a benchmark in a temporary copy of the repository and runs the
copy's contract tests and the generated tests there. The installed (editable) package
points at this checkout, so the copy is made importable as ``lmms_spatial`` by an overlay
folder on ``PYTHONPATH``: ``overlay/lmms_spatial/`` holds symlinks to the copy's
``lmms_spatial/*`` plus ``tasks``, ``metrics`` and ``hub_cards`` (the installed layout), and
``overlay/tools`` the copy's workshop code. ``PYTHONPATH`` comes before site-packages, and
setuptools' editable finder is appended to ``sys.meta_path``, so the overlay wins in every
process, lmms-eval subprocesses included; pytest runs there with ``-o pythonpath=`` (the
repository's ``pythonpath = ["."]`` would put the copy's own ``lmms_spatial/``, which holds no
``tasks/``, before the overlay).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from lmms_eval_install import NO_BUILTIN_TASKS, builtin_task_yamls

from lmms_spatial.cli import main as lmms_spatial
from lmms_spatial.scaffold import ScaffoldError, render, scaffold, tree, validate_name

REPO = Path(__file__).resolve().parents[1]
NAME = "zz_scaffold_probe"
EXPECTED_FILES = {
    f"tasks/{NAME}/__init__.py",
    f"tasks/{NAME}/_default.yaml",
    f"tasks/{NAME}/{NAME}.yaml",
    f"tasks/{NAME}/utils.py",
    f"tasks/{NAME}/adapter.py",
    f"metrics/{NAME}.py",
    f"hub_cards/{NAME}/README.md",
    f"tasks/{NAME}/convert.py",
    f"tasks/{NAME}/demo.py",
    f"tasks/{NAME}/report.py",
    f"tests/metrics/test_{NAME}.py",
    f"tests/scripts/test_convert_{NAME}.py",
    f"tests/e2e/test_{NAME}_cli.py",
}
# shared test files with a case per benchmark key that a generated benchmark passes as it is
SHARED_CHECKS = (
    "tests/data/test_convert_discovery.py",
    "tests/reports/test_citations_once.py",
    "tests/reports/test_references.py",
    "tests/reports/test_render_escaping.py",
    "tests/test_run_options.py",
    "tests/test_yaml_configs.py",
    "tests/test_yaml_names.py",
)
COPY_IGNORE = shutil.ignore_patterns(
    ".git", ".venv", "venv", "__pycache__", "*.egg-info", ".pytest_cache", ".ruff_cache", ".benchmarks",
    ".hypothesis", "build", "dist", "runs", ".whl", ".gl",
)  # fmt: skip


def _ruff() -> str | None:
    local = Path(sys.executable).with_name("ruff")
    return str(local) if local.exists() else shutil.which("ruff")


def _fake_repo(root: Path) -> Path:
    for folder in ("tasks", "metrics", "lmms_spatial", "tests"):
        (root / folder).mkdir(parents=True)
    return root


def test_the_template_renders_every_file_of_a_benchmark():
    assert set(render(NAME)) == EXPECTED_FILES
    for text in render(NAME, hub_id="someone/Probe-Bench").values():
        assert "${" not in text and "__name__/" not in text


TRICKY_TITLES = [
    "Zed's Bench",
    'What\'sUp "quoted" \\ é',
    '"' * 30,
    "\\" * 30,
    "Quite-Long Title (v2.0), Mk 1.5 abcdefgh",
]


@pytest.mark.parametrize(
    ("name", "title"),
    [("ab", None), *(("a_very_long_benchmark_key_123456", t) for t in TRICKY_TITLES)],
)
def test_generated_code_is_ruff_clean_for_short_and_long_names_and_any_title(tmp_path, name, title):
    ruff = _ruff()
    if ruff is None:
        pytest.skip("ruff is not installed (pip install -e '.[test]')")
    for rel, text in render(name, title=title).items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    config = ["--config", str(REPO / "pyproject.toml")]
    check = subprocess.run([ruff, "check", *config, str(tmp_path)], capture_output=True, text=True)
    assert check.returncode == 0, check.stdout
    fmt = subprocess.run([ruff, "format", "--check", *config, str(tmp_path)], capture_output=True, text=True)
    assert fmt.returncode == 0, fmt.stdout


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("Orient", "snake_case"),
        ("orient-bench", "snake_case"),
        ("a__b", "snake_case"),
        ("x" * 33, "snake_case"),
        ("class", "keyword"),
        ("mmsi", "already a benchmark key"),
        ("mmsi_bench", "built-in lmms-eval task"),
    ],
)
def test_unusable_names_are_refused_with_the_reason(tmp_path, name, why):
    if why.startswith("built-in") and not builtin_task_yamls():
        pytest.skip(f"{NO_BUILTIN_TASKS} to collide with")
    with pytest.raises(ScaffoldError, match=why):
        validate_name(name, _fake_repo(tmp_path))


@pytest.mark.parametrize("title", TRICKY_TITLES)
def test_any_title_is_quoted_where_it_appears(title):
    import ast

    import yaml

    files = render(NAME, title=title)
    layout = ast.parse(files[f"tasks/{NAME}/report.py"])
    assigned = {n.targets[0].id: n.value for n in layout.body if isinstance(n, ast.Assign)}
    assert ast.literal_eval(assigned["TITLE"]) == title
    for rel in (f"metrics/{NAME}.py", f"tasks/{NAME}/__init__.py", f"tasks/{NAME}/adapter.py"):
        assert ast.get_docstring(ast.parse(files[rel])).startswith(title), rel
    front = yaml.safe_load(files[f"hub_cards/{NAME}/README.md"].split("---\n")[1])
    assert front["pretty_name"] == f"{title} (normalised layout read by lmms-spatial)"


@pytest.mark.parametrize(
    ("title", "why"),
    [("two\nlines", "one line"), (" padded", "no leading"), ("x" * 41, "at most 40"), ('"' * 31, "count twice")],
)
def test_unusable_titles_and_hub_ids_are_refused(title, why):
    with pytest.raises(ScaffoldError, match=why):
        render(NAME, title=title)
    with pytest.raises(ScaffoldError, match="hub id"):
        render(NAME, hub_id="no-slash")


def test_the_scaffold_names_its_converter_and_its_card_is_what_lmms_spatial_card_writes(tmp_path):
    from lmms_spatial.data.cards import read_card, render_card

    files = render(NAME, title="Zed's Bench")
    assert 'convert="convert",' in files[f"tasks/{NAME}/__init__.py"]
    card = tmp_path / "README.md"
    card.write_text(files[f"hub_cards/{NAME}/README.md"])
    assert render_card(read_card(card)) == card.read_text()  # `lmms-spatial card` would change no byte


def test_scaffold_writes_the_files_and_never_overwrites(tmp_path):
    repo = _fake_repo(tmp_path)
    written = scaffold(NAME, repo)
    assert {p.relative_to(repo).as_posix() for p in written} == EXPECTED_FILES
    (repo / "metrics" / f"{NAME}.py").write_text("# edited by hand\n")
    with pytest.raises(ScaffoldError, match="already exist"):
        scaffold(NAME, repo)
    assert (repo / "metrics" / f"{NAME}.py").read_text() == "# edited by hand\n"
    with pytest.raises(ScaffoldError, match="not an lmms-spatial checkout"):
        scaffold("other", tmp_path / "tasks")


def test_tree_lists_folders_first():
    root = Path("/r")
    paths = [root / "b.txt", root / "a" / "z.py", root / "a" / "y" / "x.py"]
    assert tree(paths, root) == "├── a/\n│   ├── y/\n│   │   └── x.py\n│   └── z.py\n└── b.txt"


def test_cli_new_task_prints_the_tree_and_next_steps(tmp_path, capsys):
    repo = _fake_repo(tmp_path)
    assert lmms_spatial(["new-task", NAME, "--repo", str(repo), "--title", "Probe Bench"]) == 0
    out = capsys.readouterr().out
    assert f"created {len(EXPECTED_FILES)} files" in out and "├── tasks/" in out
    assert f"LMMS_SPATIAL_{NAME.upper()}_PATH" in out
    assert "Probe Bench" in (repo / "hub_cards" / NAME / "README.md").read_text()
    assert lmms_spatial(["new-task", NAME, "--repo", str(repo)]) == 1
    assert "already exist" in capsys.readouterr().err


def _overlay(copy: Path, root: Path) -> Path:
    """``root/lmms_spatial`` = the copy's package in its installed layout, made of symlinks; ``root/tools`` = the
    copy's workshop code (what the repository's ``pythonpath = ["."]`` gives the tests)."""
    package = root / "lmms_spatial"
    package.mkdir(parents=True)
    for child in (copy / "lmms_spatial").iterdir():
        (package / child.name).symlink_to(child)
    for folder in ("tasks", "metrics", "hub_cards"):
        (package / folder).symlink_to(copy / folder)
    (root / "tools").symlink_to(copy / "tools")
    return root


@pytest.mark.slow
def test_a_scaffolded_benchmark_passes_the_contract_and_its_own_tests_in_a_copy_of_the_repo(tmp_path):
    copy = tmp_path / "repo"
    shutil.copytree(REPO, copy, ignore=COPY_IGNORE, symlinks=True)
    overlay = _overlay(copy, tmp_path / "overlay")
    env = {k: v for k, v in os.environ.items() if not k.startswith("LMMS_SPATIAL_")}
    # the overlay must win over the copy itself, whose lmms_spatial/ has no tasks/ or metrics/ inside: the
    # working directory (the copy) is kept off sys.path (Python >= 3.11; nothing imports our package early)
    env.update(PYTHONPATH=str(overlay), PYTHONDONTWRITEBYTECODE="1", PYTHONSAFEPATH="1")

    cli = [sys.executable, "-m", "lmms_spatial.cli", "new-task", NAME, "--repo", str(copy)]
    made = subprocess.run(cli, env=env, capture_output=True, text=True, cwd=copy, timeout=120)
    assert made.returncode == 0, made.stderr
    print(made.stdout)  # the scaffold's file tree (pytest -s shows it)
    assert all((copy / rel).is_file() for rel in EXPECTED_FILES)

    # the subprocesses import the copy, and the copy's registries discovered the new benchmark
    probe = (
        "import lmms_spatial, lmms_spatial.tasks, lmms_spatial.metrics;"
        "from lmms_spatial.data.demo import DEMO_BENCHMARKS, demo_tasks;"
        "from lmms_spatial.data.sources import BENCHMARKS;"
        f"print(lmms_spatial.__file__, lmms_spatial.tasks.__file__, BENCHMARKS['{NAME}'].env_var,"
        f" DEMO_BENCHMARKS['{NAME}'][1], '{NAME}' in demo_tasks())"
    )
    seen = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, cwd=copy)
    assert seen.returncode == 0, seen.stderr
    assert seen.stdout.split() == [
        str(overlay / "lmms_spatial" / "__init__.py"),
        str(overlay / "lmms_spatial" / "tasks" / "__init__.py"),
        f"LMMS_SPATIAL_{NAME.upper()}_PATH",
        f"['{NAME}']",
        "True",
    ]

    # nothing but the new benchmark's own files was written
    changed = sorted(
        rel
        for rel in (p.relative_to(copy).as_posix() for p in copy.rglob("*") if p.is_file())
        if rel not in EXPECTED_FILES
        and (not (REPO / rel).is_file() or (REPO / rel).read_bytes() != (copy / rel).read_bytes())
    )
    assert changed == []

    # the card already declares features()
    card = subprocess.run([sys.executable, "-m", "lmms_spatial.cli", "card", NAME, "--check"], env=env,
                          capture_output=True, text=True, cwd=copy, timeout=120)  # fmt: skip
    assert card.returncode == 0, card.stderr

    # the contract tests of the new benchmark (-k: only its own), the other shared checks run per key, and its
    # generated tests; left to the contributor: its README rows and mutation baseline (CONTRIBUTING.md)
    tests = [
        "tests/test_contract.py",
        *SHARED_CHECKS,
        f"tests/metrics/test_{NAME}.py",
        f"tests/scripts/test_convert_{NAME}.py",
        f"tests/e2e/test_{NAME}_cli.py",
    ]
    cmd = [sys.executable, "-m", "pytest", "-v", "-p", "no:cacheprovider", "-o", "pythonpath=", "-n", "0", "-k", NAME]
    cmd += tests
    run = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=copy, timeout=600)
    print(run.stdout[-3000:])
    assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-2000:]
    assert " passed" in run.stdout and "skipped" not in run.stdout, run.stdout[-2000:]
    # its demo alone (lmms-spatial demo --tasks <its task>) exited 0 with its report, among its contract tests
    assert f"test_the_demo_of_the_benchmark_alone_exits_0_with_its_report[{NAME}] PASSED" in run.stdout
    assert "[mmsi]" not in run.stdout  # -k selected the new benchmark's contract tests only


def test_a_task_folder_left_with_only_bytecode_is_no_benchmark(tmp_path, monkeypatch):
    import lmms_spatial.data.registry as registry
    import lmms_spatial.tasks as tasks_pkg

    (tmp_path / "real_bench").mkdir()
    (tmp_path / "real_bench" / "__init__.py").write_text(
        "from lmms_spatial.benchmark import Benchmark\nBENCHMARK = Benchmark('real_bench', '', 'V')\n"
    )
    (tmp_path / "removed_bench" / "__pycache__").mkdir(parents=True)  # git rm / stash -u keep ignored files
    (tmp_path / "removed_bench" / "__pycache__" / "__init__.cpython-311.pyc").write_bytes(b"")
    (tmp_path / "_shared").mkdir()
    (tmp_path / "_shared" / "__init__.py").write_text("")
    monkeypatch.setattr(tasks_pkg, "__path__", [str(tmp_path)])
    try:
        assert list(registry._declared()) == ["real_bench"]
    finally:
        sys.modules.pop("lmms_spatial.tasks.real_bench", None)
