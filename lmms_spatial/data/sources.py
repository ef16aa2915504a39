"""Where each benchmark's data comes from: a local copy named by an env var, or the Hub release.

Resolved when a task's documents are loaded (:mod:`lmms_spatial.data.loading`), never when a YAML
is read, so users can run offline and point a task at their own copy::

    export LMMS_SPATIAL_<NAME>_PATH=/data/<name>              # a folder of parquet files
    export LMMS_SPATIAL_<NAME>_PATH=/data/<name>/test.parquet # or a single file

A folder is handed to ``datasets.load_dataset`` as is (a Hub snapshot, or our normalised
layout with ``test*.parquet`` / ``data/test-*.parquet``); a single file is loaded as the
``test`` split with the builder its suffix names.

Which benchmarks exist is :mod:`lmms_spatial.data.registry`'s business (``BENCHMARKS`` is
read from there); this module only resolves where a registered benchmark's data is. Imports go one
way: this module -> :mod:`~lmms_spatial.data.prepare`, :mod:`~lmms_spatial.data.published` ->
:mod:`~lmms_spatial.data.hub_cache`.
"""

from __future__ import annotations

import csv
import functools
import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from lmms_spatial.benchmark import Benchmark
from lmms_spatial.data.hub_cache import (  # noqa: F401  (DataUnavailable, hf_home, hub_cache: re-exported)
    OFFLINE_VARS,
    DataUnavailable,
    cached_commits,
    hf_home,
    hub_cache,
    in_datasets_cache,
    in_hub_cache,
    offline,
    offline_because,
)
from lmms_spatial.data.prepare import cached_release, cached_snapshot, column_map_of, prepare, revision_of
from lmms_spatial.data.published import published_benchmark
from lmms_spatial.data.registry import BENCHMARKS

T = TypeVar("T")

_BUILDERS = {".parquet": "parquet", ".jsonl": "json", ".json": "json", ".csv": "csv", ".arrow": "arrow"}


@dataclass(frozen=True)
class DatasetSource:
    path: str
    kwargs: dict = field(default_factory=dict)
    local: bool = False


def hub_source(bench: Benchmark) -> DatasetSource:
    """The Hub release, read as published or through a prepared copy; otherwise :class:`DataUnavailable`.

    Checked before lmms-eval starts its download (and its retries): a release that cannot be had
    offline, or is not public, fails in one line naming the fix.
    """
    _check_public(bench)
    if not bench.hub_is_normalised:
        return DatasetSource(str(prepare(bench)), {}, local=True)
    if offline():
        return _offline_source(bench)
    revision = revision_of(bench)
    return DatasetSource(bench.hub_id, {"revision": revision} if revision != "main" else {})


def _check_public(bench: Benchmark) -> None:
    if not bench.hub_id:
        raise DataUnavailable(
            f"{bench.key}: no public release on the Hugging Face Hub; convert a local copy with "
            f"`lmms-spatial convert {bench.converter} ...` and set {bench.env_var} to the output"
        )


def _offline_source(bench: Benchmark) -> DatasetSource:
    """A release read as published, offline: a snapshot copied into HF_HUB_CACHE is read as a local folder
    (datasets itself only finds releases it prepared before); else what datasets cached; else one line."""
    revision = revision_of(bench)
    snapshot = cached_snapshot(bench, revision)
    if snapshot is not None:
        return DatasetSource(str(snapshot), {}, local=True)
    others = cached_commits(bench.hub_id)
    if others and not in_datasets_cache(bench.hub_id):  # e.g. a copied cache of another commit
        raise DataUnavailable(
            f"{bench.key}: offline ({'/'.join(offline_because())}) and {bench.hub_id}@{revision} is not in the "
            f"Hugging Face cache, which holds commit(s) {', '.join(others)}; set {bench.revision_var} to one "
            f"of them, download {revision} once with network access, or set {bench.env_var} to a local copy"
        )
    if not in_hub_cache(bench.hub_id):
        raise DataUnavailable(
            f"{bench.key}: offline ({'/'.join(offline_because())}) and {bench.hub_id}@{revision} is not in the Hugging "
            f"Face cache {str(hub_cache())!r}; download it once with network access, or set {bench.env_var} to a local "
            "copy"
        )
    return DatasetSource(bench.hub_id, {"revision": revision} if revision != "main" else {})


def offline_gap(key: str) -> str | None:
    """With no local copy named (``LMMS_SPATIAL_<NAME>_PATH`` unset), the one line a run of ``key``'s tasks would
    stop with offline for want of its data, or None when the release or published copy (``_REPO``) it would read is
    in the Hugging Face cache. For ``lmms-spatial doctor``: it reads the environment and the cache only; nothing is
    downloaded or converted (a release that needs converting is found, not prepared)."""
    return _stop_line(lambda: _from_release(BENCHMARKS[key], _found_offline))


def _stop_line(check: Callable[[], object]) -> str | None:
    """The :class:`DataUnavailable` line ``check`` stops with, or None when it passes (doctor's questions)."""
    try:
        check()
    except DataUnavailable as exc:
        return str(exc)
    return None


def _found_offline(release: Benchmark) -> None:
    """:func:`hub_source` offline, up to what it would convert: the release's snapshot and column map."""
    _check_public(release)
    if release.hub_is_normalised:
        _offline_source(release)
    else:  # what prepare() reads before it converts
        column_map_of(release)
        cached_release(release, revision_of(release))


def _from_release(bench: Benchmark, read: Callable[[Benchmark], T]) -> T:
    """``read`` of what ``bench``'s tasks read with no local copy: the published copy its ``_REPO`` variable names
    (read as published; a failure names the variable), else its release."""
    published = published_benchmark(bench)
    if published is None:
        return read(bench)
    try:
        return read(published)
    except DataUnavailable as exc:
        raise DataUnavailable(f"{bench.repo_var}={published.hub_id}: {exc}") from None


def dataset_source(key: str) -> DatasetSource:
    """Resolve a benchmark's data location now (its env var, else a published copy, else the Hub release)."""
    bench = BENCHMARKS[key]
    local = os.environ.get(bench.env_var, "").strip()
    if not local:
        return _from_release(bench, hub_source)
    return local_source(bench, local)


def local_source(bench: Benchmark, local: str) -> DatasetSource:
    """The copy that ``local`` (the value of ``bench``'s ``LMMS_SPATIAL_<NAME>_PATH``) names, checked before
    lmms-eval reads it: it exists, a folder holds data files and a ``test`` split, and the columns are not another
    benchmark's layout (headers only: no row is read). Otherwise :class:`DataUnavailable`, naming the variable."""
    path = Path(local).expanduser()
    if not path.exists():
        unset = ", or unset it to read the release" if bench.hub_id else ""
        raise DataUnavailable(f"{bench.env_var}={local!r}: no such file or folder: point it at the data{unset}")
    if path.is_dir():
        stamp = _layout_stamp(path)  # one look at the folder for both checks below
        if not _has_data_files(str(path), stamp):
            makes = f" (`lmms-spatial convert {bench.converter}` makes one)" if bench.converter else ""
            raise DataUnavailable(
                f"{bench.env_var}={local!r}: the folder holds no data files ({', '.join(sorted(_BUILDERS))}); "
                f"point it at a copy in the layout of hub_cards/{bench.key}/README.md{makes}"
            )
        try:
            _check_test_split(path, stamp, bench.env_var, local)
        except DataUnavailable:  # the run stops here: on the line that names the fix for what the folder holds
            _check_columns(path, bench, local, stopping=True)
            raise
        _check_columns(path, bench, local)
        return DatasetSource(str(path.resolve()), {}, local=True)
    builder = _BUILDERS.get(path.suffix.lower())
    if builder is None:
        raise DataUnavailable(f"{bench.env_var}={local!r}: expected a folder or one of {sorted(_BUILDERS)}")
    _check_columns(path, bench, local)
    return DatasetSource(builder, {"data_files": {"test": str(path.resolve())}}, local=True)


def local_gap(key: str, local: str) -> str | None:
    """The one line a run of ``key``'s tasks would stop with for the local copy ``local`` (the value of its
    ``LMMS_SPATIAL_<NAME>_PATH``), or None when the run would read it. For ``lmms-spatial doctor``: the run's own
    checks (:func:`local_source`), on the value doctor was given rather than this process's environment."""
    return _stop_line(lambda: local_source(BENCHMARKS[key], local.strip()))


def _columns(path: Path) -> list[str] | None:
    """The columns of the first data file at ``path`` (a file, or the first in a folder), read from its header
    only; ``None`` when they cannot be read that way (datasets will say what it makes of the file)."""
    files = [path] if path.is_file() else sorted(f for f in path.rglob("*") if f.is_file() and f.suffix in _BUILDERS)
    for file in files:
        try:
            if file.suffix == ".parquet":
                import pyarrow.parquet

                return list(pyarrow.parquet.read_schema(file).names)
            if file.suffix == ".jsonl":
                with open(file, encoding="utf-8") as handle:
                    first = json.loads(handle.readline() or "{}")
                return list(first) if isinstance(first, dict) else None
            if file.suffix == ".csv":
                with open(file, encoding="utf-8", newline="") as handle:
                    return next(csv.reader(handle), None)
        except Exception:
            return None
    return None


def benchmark_of(columns: list[str]) -> str | None:
    """The benchmark whose whole layout (every column of its ``features()``) the columns hold, if one does."""
    from lmms_spatial.data.registry import features

    found = set(columns)
    return next((key for key in sorted(BENCHMARKS) if set(features(key)) <= found), None)


def _check_columns(path: Path, bench: Benchmark, shown: str, *, stopping: bool = False) -> None:
    """The copy's columns (one header) against the benchmark's layout. One that holds another benchmark's data (every
    column of its layout, not of this one's) fails now, naming the variable, the benchmark found and the one
    expected, instead of a confusing row error later. Where the run stops anyway (``stopping``: its split line), one
    whose columns are not the layout (a release as downloaded, say) is named as such: it needs converting, not the
    file renaming the split line would suggest. Columns that cannot be read, or that hold the layout, pass."""
    from lmms_spatial.data.registry import features

    columns = _columns(path)
    if not columns or set(features(bench.key)) <= set(columns):
        return
    found = benchmark_of(columns)
    if found is not None and found != bench.key:
        raise DataUnavailable(
            f"{bench.env_var}={shown!r} holds {found} data (the layout of hub_cards/{found}/README.md), not "
            f"{bench.key}: point {bench.env_var} at a {bench.key} copy ({found} is read from "
            f"{BENCHMARKS[found].env_var})"
        )
    if not stopping:
        return
    convert = f", or convert this one (`lmms-spatial convert {bench.converter} {shown} OUT`) and point it at OUT" if (
        bench.converter) else ""  # fmt: skip
    unset = ", or unset it to read the release" if bench.hub_id else ""
    raise DataUnavailable(
        f"{bench.env_var}={shown!r}: not {bench.key}'s layout (its columns: {', '.join(columns)}); point it at a "
        f"copy in the layout of hub_cards/{bench.key}/README.md{convert}{unset}"
    )


def where(key: str) -> str:
    """Where benchmark ``key``'s data is read from now, as the user set it (for messages)."""
    bench = BENCHMARKS[key]
    local = os.environ.get(bench.env_var, "").strip()
    if local:
        return f"{bench.env_var}={local!r}"
    repo = os.environ.get(bench.repo_var, "").strip()
    return f"{bench.repo_var}={repo}" if repo else f"{key}'s release ({bench.hub_id})"


def _check_test_split(folder: Path, stamp: tuple[tuple[str, int], ...], env_var: str, shown: str) -> None:
    """The tasks read split ``test``; datasets names splits after file names (``foo.parquet`` is ``train``).

    A card's ``configs`` (README.md front matter) may name the splits itself: then datasets decides.
    """
    splits = _splits_of(str(folder), stamp)
    if splits is None:
        return
    if "test" not in splits:
        raise DataUnavailable(
            f"{env_var}={shown!r}: datasets reads this folder as split(s) {splits}, the tasks read 'test'; name the "
            "files test*.parquet (or data/test-*.parquet), or set the variable to one parquet file"
        )


def _layout_stamp(folder: Path) -> tuple[tuple[str, int], ...]:
    """The modification times of the folder, its README.md and its direct subfolders: a file added, removed or
    renamed in them, or the card edited, changes it (what datasets' split patterns look at: ``test.parquet``,
    ``data/test-*``, ``test/...``). What the checks below found is reused while it stays the same."""
    stamp = []
    for where in (folder, folder / "README.md", *(p for p in folder.iterdir() if p.is_dir())):
        try:
            stamp.append((where.name, where.stat().st_mtime_ns))
        except OSError:  # no README.md, or gone meanwhile
            continue
    return tuple(sorted(stamp))


@functools.lru_cache(maxsize=64)
def _has_data_files(folder: str, stamp: tuple[tuple[str, int], ...]) -> bool:
    """Whether the folder holds a file datasets can read (walked once per folder and layout, as :func:`_splits_of`)."""
    return any(f.suffix.lower() in _BUILDERS for f in Path(folder).rglob("*") if f.is_file())


@functools.lru_cache(maxsize=64)
def _splits_of(folder: str, stamp: tuple[tuple[str, int], ...]) -> list[str] | None:
    """The splits datasets reads ``folder`` as (None: a card names them, or datasets cannot tell). Asked once per
    folder and layout: every task of a benchmark reads the same folder, and datasets' split patterns glob the
    whole folder each time (a third of a run's task building on the fixtures, measured; more on a release with
    thousands of images)."""
    path = Path(folder)
    readme = path / "README.md"
    if readme.is_file() and "configs:" in readme.read_text(encoding="utf-8", errors="replace"):
        return None
    try:
        from datasets.data_files import get_data_patterns

        return sorted(str(s) for s in get_data_patterns(folder))
    except Exception:  # datasets will say what it makes of the folder
        return None
