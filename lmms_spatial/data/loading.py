"""A task's documents are found when lmms-eval loads them: never when a YAML is read or a module imported.

Our YAMLs name no data. They point lmms-eval at a one-row *placeholder* file shipped with the package
(``dataset_path: json``, ``dataset_kwargs: PLACEHOLDER_KWARGS``). Each task's ``process_docs`` is wrapped by
:func:`documents_of`, which names the benchmark (and config) the task reads: given the placeholder it
resolves the benchmark's data now (:func:`lmms_spatial.data.sources.dataset_source`:
the local copy of ``LMMS_SPATIAL_<B>_PATH``, else the Hub release, prepared if it must be converted) and
loads it; given anything else it processes exactly that. So

- ``lmms-eval --tasks list``, and building tasks that are not run, touch no data;
- a YAML that includes ours and overrides ``dataset_path`` / ``dataset_kwargs`` reads exactly what it names
  (nothing of ours is resolved, downloaded or prepared);
- one process loads each source once: the 33 ODI-Bench tasks share one load.

A source with no data files for the ``test`` split fails in one line naming the folder and the variable.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lmms_spatial import run_state

PLACEHOLDER_COLUMN = "lmms_spatial_placeholder"
PLACEHOLDER_FILE = Path(__file__).resolve().parent / "placeholder.jsonl"
# what every YAML of ours names as its data (tasks/<key>/utils.py re-exports these two)
DATASET_PATH = "json"
PLACEHOLDER_KWARGS = {"data_files": {"test": str(PLACEHOLDER_FILE)}}

_lock = threading.Lock()
_loaded: dict[tuple, Any] = {}


def is_placeholder(dataset: Any) -> bool:
    return PLACEHOLDER_COLUMN in (getattr(dataset, "column_names", None) or ())


def _load(key: str, config: str | None):
    import datasets

    from lmms_spatial.data.registry import BENCHMARKS
    from lmms_spatial.data.sources import DataUnavailable, dataset_source

    source = dataset_source(key)
    kwargs = dict(source.kwargs)
    if config:
        kwargs["data_dir"] = config
    memo = (source.path, repr(sorted(kwargs.items())))
    with _lock:
        if memo in _loaded:
            _record(key, config, source, _loaded[memo])
            return _loaded[memo]
        if source.local and config:
            _require_files(Path(source.path) / config, BENCHMARKS[key].env_var, source.path, config)
        try:
            loaded = datasets.load_dataset(source.path, split="test", **kwargs)
        except ValueError as exc:  # datasets' `Instruction "test" corresponds to no data!` and its kin
            where = f"{source.path}" + (f" (folder {config}/)" if config else "")
            raise DataUnavailable(
                f"{key}: no 'test' data in {where}: {exc}; set {BENCHMARKS[key].env_var} to a copy in the layout of "
                f"hub_cards/{key}/README.md"
            ) from None
        _loaded[memo] = loaded
        _record(key, config, source, loaded)
        return loaded


def _record(key: str, config: str | None, source: Any, loaded: Any) -> None:
    """Tell the call in progress where benchmark ``key``'s documents came from (its results record it)."""
    revision = None if source.local else source.kwargs.get("revision")
    fingerprint = getattr(loaded, "_fingerprint", None)
    fingerprint = fingerprint if isinstance(fingerprint, str) else None
    record = run_state.DataRecord(source.path, source.local, revision, fingerprint)
    run_state.data_read(f"{key}/{config}" if config else key, record)


def _require_files(folder: Path, env_var: str, root: str, config: str) -> None:
    from lmms_spatial.data.sources import DataUnavailable

    suffixes = {".parquet", ".arrow", ".jsonl", ".json", ".csv"}
    if not any(p.is_file() and p.suffix in suffixes for p in folder.rglob("*")):
        raise DataUnavailable(
            f"{env_var}={root!r}: no data files in its folder {config}/ (the {config} config's test split); "
            f"convert the release with `lmms-spatial convert` or point {env_var} at a complete copy"
        )


def resolve(dataset: Any, key: str, config: str | None = None) -> Any:
    """The documents a task's ``process_docs`` works on: benchmark ``key``'s data (its folder ``config``, if
    any) for the placeholder; ``dataset`` itself otherwise (a YAML that names its own data)."""
    return _load(key, config) if is_placeholder(dataset) else dataset


def documents_of(key: str, config: str | None = None) -> Callable[[Callable], Callable]:
    """Decorator for a task's ``process_docs``: resolve and load benchmark ``key``'s data when lmms-eval loads it."""

    def decorate(process_docs: Callable) -> Callable:
        @functools.wraps(process_docs)
        def wrapper(dataset, *args, **kwargs):
            import lmms_spatial_startup  # the hook module (outside this package), imported at interpreter start

            lmms_spatial_startup.install_late()  # lmms-eval builds a task of ours: with the hook off, patch it now
            try:
                return _layout_named(process_docs, dataset, key, config, *args, **kwargs)
            except Exception as exc:
                run_state.documents_failed(key, exc)  # the plugin, if it listens, names it in the run's last lines
                raise

        return wrapper

    return decorate


def _layout_named(process_docs: Callable, dataset: Any, key: str, config: str | None, *args, **kwargs):
    """``process_docs`` on the resolved documents; data of ours (not a YAML's own) missing a column the task
    reads is named by where it came from (the variable) and the layout it should have."""
    from lmms_spatial.data.images import BadDocumentError
    from lmms_spatial.data.registry import BENCHMARKS
    from lmms_spatial.data.sources import DataUnavailable, where

    ours = is_placeholder(dataset)
    documents = resolve(dataset, key, config)
    try:
        return process_docs(documents, *args, **kwargs)
    except BadDocumentError as exc:
        if not ours or exc.doc_id != "<every row>":
            raise
        converter = BENCHMARKS[key].converter
        convert = f", or convert a release with `lmms-spatial convert {converter}`" if converter else ""
        raise DataUnavailable(
            f"{where(key)}: not {key}'s layout ({exc}); point it at a {key} copy in the layout of "
            f"hub_cards/{key}/README.md{convert}"
        ) from None


def forget_loaded() -> None:
    """Drop the loads kept for this process (tests that change a benchmark's files between runs)."""
    with _lock:
        _loaded.clear()
