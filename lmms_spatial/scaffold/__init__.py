"""``lmms-spatial new-task NAME``: a new benchmark's files, generated from templates.

The templates (``templates/``, mirroring the repository layout; ``__name__`` in a path is
replaced by the benchmark key, ``.tmpl`` is dropped) make a complete, working benchmark: a
synthetic multiple-choice fixture, the task, its metrics, hub card, converter and tests.
Generated code is ruff clean and passes the contract tests and its own tests as is; the
contributor then replaces the scaffold's rules with the paper's (see CONTRIBUTING.md).

Nothing shared is edited, and the files are those of every shipped benchmark, in four places only:
``tasks/<key>/`` (everything that is the benchmark's), ``metrics/<key>.py`` (its pure scorer),
``hub_cards/<key>/`` (its card) and ``tests/``. The benchmark is one object, ``BENCHMARK`` in
``tasks/<key>/__init__.py`` (key, Hub id, environment variable, ``features()``: its columns, and the modules
that are its converter, task needs, report and demo), which ``lmms_spatial.data.registry`` reads.

Titles may hold any printable characters: each template gets the title quoted for where it goes
(a Python docstring or string literal, YAML, Markdown).
"""

from __future__ import annotations

import importlib.util
import keyword
import re
from pathlib import Path
from string import Template

TEMPLATES = Path(__file__).resolve().parent / "templates"
SUFFIX = ".tmpl"
NAME_PLACEHOLDER = "__name__"
NAME_RULE = re.compile(r"^[a-z][a-z0-9]*(?:_[a-z0-9]+)*$")
MAX_NAME = 32
MAX_TITLE = 40  # characters; with quotes and backslashes escaped at most MAX_ESCAPED_TITLE in generated code
MAX_ESCAPED_TITLE = 60  # so every generated line stays within ruff's 120 columns
HUB_ID_RULE = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")


class ScaffoldError(ValueError):
    """The name is unusable or the files would overwrite something."""


def env_var(name: str) -> str:
    return f"LMMS_SPATIAL_{name.upper()}_PATH"


def template_files() -> list[Path]:
    return sorted(p for p in TEMPLATES.rglob(f"*{SUFFIX}") if p.is_file())


def target_path(template: Path, name: str) -> str:
    """Repository-relative path a template renders to (``__name__`` -> key, ``.tmpl`` dropped)."""
    rel = template.relative_to(TEMPLATES).as_posix()[: -len(SUFFIX)]
    return rel.replace(NAME_PLACEHOLDER, name)


def _builtin_task_names(name: str) -> list[str]:
    """lmms-eval YAMLs that declare a task or group called ``name`` (read as text, nothing imported)."""
    spec = importlib.util.find_spec("lmms_eval")
    if spec is None or not spec.submodule_search_locations:
        return []
    root = Path(next(iter(spec.submodule_search_locations))) / "tasks"
    declared = re.compile(rf"^(?:task|group|tag):\s*['\"]?{re.escape(name)}['\"]?\s*$", re.MULTILINE)
    hits = []
    for path in root.rglob("*.yaml"):
        try:
            text = path.read_text(errors="replace")
        except OSError:
            continue
        if name in text and declared.search(text):
            hits.append(str(path))
    return hits


def validate_name(name: str, repo: Path) -> None:
    """Raise :class:`ScaffoldError` unless ``name`` can be a new benchmark key in ``repo``."""
    if not NAME_RULE.match(name) or len(name) > MAX_NAME:
        raise ScaffoldError(
            f"{name!r}: a benchmark key is lower-case snake_case ([a-z][a-z0-9_]*, no '__', "
            f"at most {MAX_NAME} characters), e.g. 'orient_bench'"
        )
    if keyword.iskeyword(name):
        raise ScaffoldError(f"{name!r} is a Python keyword")
    from lmms_spatial.data.registry import BENCHMARKS

    if name in BENCHMARKS:
        raise ScaffoldError(f"{name!r} is already a benchmark key in lmms_spatial.data.registry.BENCHMARKS")
    existing = [rel for rel in (target_path(t, name) for t in template_files()) if (repo / rel).exists()]
    if (repo / "tasks" / name).exists():
        existing.insert(0, f"tasks/{name}/")
    if existing:
        raise ScaffoldError(f"{name!r}: these already exist in {repo}: {', '.join(sorted(set(existing)))}")
    builtin = _builtin_task_names(name)
    if builtin:
        raise ScaffoldError(f"{name!r} is a built-in lmms-eval task or group (built-ins win): {builtin[0]}")


def _escaped(title: str) -> str:
    """The title inside a Python docstring: backslashes and double quotes escaped."""
    return title.replace("\\", "\\\\").replace('"', '\\"')


def _python_literal(text: str) -> str:
    """A string literal of ``text`` quoted as ruff format quotes it (double quotes unless that needs more escapes)."""
    quote = "'" if text.count('"') > text.count("'") else '"'
    return quote + text.replace("\\", "\\\\").replace(quote, "\\" + quote) + quote


def check_title(title: str) -> None:
    """Any one line of printable text (quotes, apostrophes, backslashes, non-ASCII letters), kept short."""
    if not title.strip() or title != title.strip() or not title.isprintable():
        raise ScaffoldError(f"title {title!r}: one line of printable text, no leading or trailing space")
    if len(title) > MAX_TITLE or len(_escaped(title)) > MAX_ESCAPED_TITLE:
        raise ScaffoldError(
            f"title {title!r}: at most {MAX_TITLE} characters (double quotes and backslashes count twice, "
            f"at most {MAX_ESCAPED_TITLE} in all)"
        )


def title_values(title: str) -> dict[str, str]:
    """The title as each kind of template needs it: quoted where a quote or backslash would break the file."""
    from lmms_spatial.data.cards import dump_yaml

    pretty = f"{title} (normalised layout read by lmms-spatial)"
    return {
        "title": title,  # YAML comments, Markdown text
        "title_doc": _escaped(title),  # inside a Python docstring
        "title_py": _python_literal(title),  # a Python string literal
        # the card's line exactly as `lmms-spatial card` rewrites the front matter (yaml.safe_dump)
        "pretty_name_line": dump_yaml({"pretty_name": pretty}).rstrip("\n"),
    }


def render(name: str, title: str | None = None, hub_id: str = "") -> dict[str, str]:
    """{repository-relative path: file text} for benchmark ``name``."""
    title = title if title is not None else " ".join(part.capitalize() for part in name.split("_"))
    check_title(title)
    if hub_id and not HUB_ID_RULE.match(hub_id):
        raise ScaffoldError(f"hub id {hub_id!r}: expected 'owner/name'")
    values = {
        "name": name,
        **title_values(title),
        "env_var": env_var(name),
        "hub_id": hub_id,
        "hub_rst": f"Hub ``{hub_id}``" if hub_id else "no Hub copy yet",
        "hub_md": f"the Hub (`{hub_id}`)" if hub_id else "a local copy (no Hub copy yet)",
    }
    return {target_path(t, name): Template(t.read_text()).substitute(values) for t in template_files()}


def scaffold(name: str, repo: Path | str = ".", title: str | None = None, hub_id: str = "") -> list[Path]:
    """Write the new benchmark's files into ``repo``; returns them. Refuses to overwrite anything."""
    repo = Path(repo).resolve()
    missing = [d for d in ("tasks", "metrics", "lmms_spatial", "tests") if not (repo / d).is_dir()]
    if missing:
        raise ScaffoldError(f"{repo} is not an lmms-spatial checkout (no {', '.join(missing)}): pass --repo")
    validate_name(name, repo)
    written = []
    for rel, text in render(name, title, hub_id).items():
        path = repo / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        written.append(path)
    return written


def tree(paths: list[Path], root: Path) -> str:
    """The files as an indented tree, relative to ``root`` (folders first, then files, sorted)."""
    nested: dict = {}
    for path in paths:
        node = nested
        for part in Path(path).resolve().relative_to(Path(root).resolve()).parts:
            node = node.setdefault(part, {})
    lines: list[str] = []

    def walk(node: dict, prefix: str) -> None:
        items = sorted(node.items(), key=lambda kv: (not kv[1], kv[0]))
        for i, (part, child) in enumerate(items):
            last = i == len(items) - 1
            lines.append(f"{prefix}{'└── ' if last else '├── '}{part}{'/' if child else ''}")
            walk(child, prefix + ("    " if last else "│   "))

    walk(nested, "")
    return "\n".join(lines)


NEXT_STEPS = """\
Next (CONTRIBUTING.md walks through each step):
  1. lmms-spatial demo --tasks {name}          # its demo through lmms-eval, ending with its report
     pytest tests/test_contract.py -k {name} -m "not slow" -n 0       # the loop: its contract checks
     pytest tests/test_contract.py tests/metrics/test_{name}.py tests/scripts/test_convert_{name}.py \
tests/e2e/test_{name}_cli.py -k {name}   # green as generated
  2. metrics/{name}.py: the paper's prompt, categories and extraction strategy
  3. tasks/{name}/__init__.py (BENCHMARK): the real columns in features(), the Hub id; then
     `lmms-spatial card {name}` writes them into hub_cards/{name}/README.md
  4. tasks/{name}/demo.py: a fixture like the data (`lmms-spatial fixture {name}` builds it
     in a folder for the real CLI); tasks/{name}/convert.py: the official release -> that layout
  5. tasks/{name}/report.py: the paper's table, CITATION (tasks/{name}/CITATION.bib), published rows
     (tasks/{name}/published.json, schema in lmms_spatial/reports/references.py); name both in BENCHMARK
  6. tests: replace the hand-computed values as the rules change; docs/faithfulness.md, CHANGELOG.md,
     README task table, docs/data.md data table, the mutation baseline (CONTRIBUTING.md)
  7. pytest -k {name} -m "not slow"      # every check of the benchmark that CI runs, the shared ones too
  Data: export {env_var}=/path/to/converted  (the Hub id lives in tasks/{name}/__init__.py)"""


def next_steps(name: str) -> str:
    return NEXT_STEPS.format(name=name, env_var=env_var(name))
