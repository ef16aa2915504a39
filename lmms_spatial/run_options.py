"""Run options: task settings chosen per run through environment variables, recorded per sample.

lmms-eval 0.7.3 cannot pass task options from the command line, so a few settings that change
what the model sees are environment variables (an option-order seed, resolution caps, a prompt
variant), each declared by its benchmark (``BENCHMARK.run_options``). An environment variable is
invisible in ``results.json``; so every score record of those benchmarks carries ``run_options`` — the
values in effect — and

* ``--model replay`` restores them before the tasks are built (re-scoring a seed-42 DORI run
  without ``LMMS_SPATIAL_DORI_SEED=42`` would score every letter against the wrong option order),
  and refuses a run whose environment contradicts the samples;
* ``lmms-spatial report`` prints them under each table and warns when the compared runs differ.

Only options that are set appear in a record: ``{}`` means every default was in effect.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any

from lmms_spatial.benchmark import RunOption
from lmms_spatial.data.registry import BENCHMARKS

RECORD_KEY = "run_options"

# every benchmark's run options (its BENCHMARK.run_options), in benchmark order
OPTIONS: tuple[RunOption, ...] = tuple(option for bench in BENCHMARKS.values() for option in bench.run_options)
BY_ENV = {option.env: option for option in OPTIONS}


def options_of(benchmark: str) -> tuple[RunOption, ...]:
    return tuple(option for option in OPTIONS if option.benchmark == benchmark)


def _normalised(value: str | None) -> str | None:
    value = (value or "").strip()
    return value or None


def in_effect(benchmark: str, env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The options of ``benchmark`` set in the environment, ``{env var: value}`` (sorted)."""
    env = os.environ if env is None else env
    found = {option.env: _normalised(env.get(option.env)) for option in options_of(benchmark)}
    return {name: value for name, value in sorted(found.items()) if value is not None}


def attach(record: dict[str, Any], benchmark: str) -> dict[str, Any]:
    """``record`` with ``run_options`` of ``benchmark`` added (the record itself, for chaining)."""
    record[RECORD_KEY] = in_effect(benchmark)
    return record


def from_record(record: Mapping[str, Any]) -> dict[str, str] | None:
    """The run options a score record carries; None for records written before they were recorded, unless a
    benchmark reads its older records (its ``BENCHMARK.old_run_options``)."""
    if isinstance(record.get(RECORD_KEY), Mapping):
        return {str(k): str(v) for k, v in record[RECORD_KEY].items()}
    for bench in BENCHMARKS.values():
        found = bench.old_run_options(record) if bench.old_run_options is not None else None
        if found is not None:
            return found
    return None


class RunOptionsConflict(ValueError):
    pass


def restore(recorded: Mapping[str, Mapping[str, str]], env: dict[str, str] | None = None) -> dict[str, str]:
    """Make ``env`` (default ``os.environ``) carry the options the samples were generated with.

    ``recorded``: ``{source (e.g. task or file): run options of its records}``, only for
    sources whose records carry options. For every option of a benchmark with recorded sources:
    unset here -> set to the recorded value; set to the same value -> kept; set otherwise, or
    the sources disagree among themselves -> :class:`RunOptionsConflict` naming both. Returns
    the options it set.
    """
    env = os.environ if env is None else env
    by_benchmark: dict[str, dict[str, Mapping[str, str]]] = {}
    for source, options in recorded.items():
        benchmarks = {BY_ENV[name].benchmark for name in options if name in BY_ENV} or {_benchmark_of(source)}
        for benchmark in benchmarks:
            by_benchmark.setdefault(benchmark, {})[source] = options
    restored: dict[str, str] = {}
    for benchmark, sources in sorted(by_benchmark.items()):
        for option in options_of(benchmark):
            values = {source: options.get(option.env) for source, options in sources.items()}
            distinct = sorted({str(v) for v in values.values()})
            if len(distinct) > 1:
                shown = ", ".join(f"{s}: {_shown(v)}" for s, v in sorted(values.items()))
                raise RunOptionsConflict(
                    f"the samples were generated with different {option.env} ({option.meaning}): {shown}. "
                    "Replay them in separate runs, one setting at a time."
                )
            wanted = next(iter(values.values()))
            current = _normalised(env.get(option.env))
            if current == wanted:
                continue
            if current is not None:
                raise RunOptionsConflict(
                    f"{option.env}={current} is set, but the samples were generated with {_shown(wanted)} "
                    f"({option.meaning}); the replayed answers would be scored against other documents. "
                    f"Unset it (replay restores the recorded value by itself)."
                )
            env[option.env] = str(wanted)
            restored[option.env] = str(wanted)
    return restored


def _shown(value: str | None) -> str:
    return "it unset" if value is None else repr(value)


def _benchmark_of(task: str) -> str:
    for option in OPTIONS:
        if task.startswith(option.benchmark):
            return option.benchmark
    return task


def what_the_model_saw(options: Mapping[str, str]) -> dict[str, str]:
    """The options that change prompts or images (not the document order a seed shuffles)."""
    return {k: v for k, v in options.items() if k not in BY_ENV or BY_ENV[k].affects != "documents"}


def describe(options: Mapping[str, str]) -> str:
    """One line for reports: ``LMMS_SPATIAL_DORI_SEED=42, ...`` or ``defaults``."""
    return ", ".join(f"{k}={v}" for k, v in sorted(options.items())) or "defaults"


def collect(records: Iterable[Mapping[str, Any]]) -> list[dict[str, str]]:
    """The distinct run options among records that carry them, in first-seen order."""
    seen: list[dict[str, str]] = []
    for record in records:
        options = from_record(record)
        if options is not None and options not in seen:
            seen.append(options)
    return seen
