"""What a benchmark is: one typed object, ``BENCHMARK`` in its folder's ``tasks/<key>/__init__.py``.

Everything the shared machinery knows of a benchmark is read from that object: where its data comes from (Hub
release, revision, local-copy variable, converter, the schema of its rows), what its tasks need of a run (judge,
map stage, run options), which run options are seeds, its report (layouts, citation, published rows), its demo
and fixture builder, its answer rule, its own commands and its page extras. Discovery
(:data:`lmms_spatial.data.registry.BENCHMARKS`) imports each ``tasks/<key>/__init__.py`` and reads ``BENCHMARK``;
nothing is found by a file's name.

A benchmark's parts (its report, converter, demo, ...) are named as modules of its own package (``"report"``:
``lmms_spatial.tasks.<key>.report``), or as ``"module:attribute"`` for one object, and imported only when used
(:meth:`Benchmark.load`): importing a benchmark's ``__init__`` costs a dataclass. A leaf module: it imports
nothing of ours.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

PARTS = ("convert", "needs", "report", "demo", "answers", "commands", "view")


@dataclass(frozen=True)
class RunOption:
    """A task setting chosen per run through an environment variable (:mod:`lmms_spatial.run_options`)."""

    env: str
    affects: str  # "documents" (what is scored against), "prompt" or "images" (what the model sees)
    meaning: str
    benchmark: str = ""  # the benchmark declaring it (filled in by :class:`Benchmark`)


@dataclass(frozen=True)
class Benchmark:
    """One benchmark, as the package reads it. The fields after ``features`` name its parts (see the module doc);
    ``""`` is "none"."""

    key: str
    # --- data: the Hub release, its revision, the variable naming a local copy, the schema of its rows
    hub_id: str
    env_var: str
    # the Hub release is already the layout the tasks read (else ``convert`` converts it first)
    hub_is_normalised: bool = True
    # what of the release to download (None: everything), and the revision used unless
    # LMMS_SPATIAL_<NAME>_REVISION says otherwise: a commit where one was checked, else "main"
    allow_patterns: tuple[str, ...] | None = None
    revision: str = "main"
    # () -> datasets.Features of the normalised rows: the one schema source (card, converter, fixtures)
    features: Callable[[], Any] | None = field(default=None, compare=False)
    # --- runs: settings chosen per run, and which of them are seeds, not conditions (a report pools runs that
    # differ only in them as seeds of one model, e.g. an option-order seed)
    run_options: tuple[RunOption, ...] = ()
    seed_options: tuple[str, ...] = ()
    # record -> its run options, for score records written before ``run_options`` were recorded (None: not one)
    old_run_options: Callable[[Mapping[str, Any]], dict[str, str] | None] | None = field(default=None, compare=False)
    # --- parts, imported on use: the converter of the release (convert(), main(argv), EXPECTED), what its tasks
    # need of a run (a TaskNeeds), report layouts (layouts(), CITATION, SCATTERS, analysis, hint), the demo data
    # (build(out_dir, n), DEMO_TASKS), its answer rule (answer_space(doc), BEFORE_GENERIC), its own commands
    # (add_commands(subparsers)) and page extras
    convert: str = ""
    needs: str = ""
    report: str = ""
    demo: str = ""
    answers: str = ""
    commands: str = ""
    view: str = ""
    # files of its folder: the paper's published rows and its BibTeX
    published: str = "published.json"
    citation: str = "CITATION.bib"
    # a flag of ``lmms-spatial report`` that lets its analyses ask the LLM judge, and its help
    judge_analyses_flag: tuple[str, str] | None = None

    def __post_init__(self) -> None:
        options = tuple(
            option if option.benchmark == self.key else RunOption(option.env, option.affects, option.meaning, self.key)
            for option in self.run_options
        )
        object.__setattr__(self, "run_options", options)

    @property
    def package(self) -> str:
        return f"lmms_spatial.tasks.{self.key}"

    @property
    def converter(self) -> str:
        """The key of its converter (``lmms-spatial convert <key>``), ``""`` when it has none."""
        return self.key if self.convert else ""

    def module_name(self, part: str) -> str:
        """The module holding ``part`` (one of :data:`PARTS`), ``""`` when the benchmark has none."""
        ref = getattr(self, part)
        return f"{self.package}.{ref.partition(':')[0]}" if ref else ""

    def load(self, part: str) -> Any:
        """``part`` imported: the module it names, or the attribute of ``"module:attribute"``; None when the
        benchmark has none."""
        ref = getattr(self, part)
        if not ref:
            return None
        module, _, attribute = ref.partition(":")
        loaded = importlib.import_module(f"{self.package}.{module}")
        return getattr(loaded, attribute) if attribute else loaded

    @property
    def revision_var(self) -> str:
        return self.env_var.removesuffix("_PATH") + "_REVISION"

    @property
    def repo_var(self) -> str:
        """A published normalised copy (``<org>/<name>``) read instead of the release."""
        return self.env_var.removesuffix("_PATH") + "_REPO"

    @property
    def map_var(self) -> str:
        """A column mapping (``question=query,answer=gt``) for converting a release whose names changed."""
        return self.env_var.removesuffix("_PATH") + "_MAP"
