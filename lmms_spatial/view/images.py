"""The images of a sample, from the benchmark's data (the samples files hold none), as small JPEG files.

A sample's document is found by its score record's ``id`` in the ``id`` column of the benchmark's parquet files:
the folder given with ``--data KEY=PATH``, else the local copy the run recorded reading (its results'
``lmms_spatial.data``) where it lies in the run's folder or a data root the benchmark declares
(:func:`recorded_roots`), else the benchmark's ``LMMS_SPATIAL_<NAME>_PATH``.
Nothing is downloaded: without a local copy the page says the images need one. Each distinct image is written
once (named by its content hash): ``thumbs/<hash>.jpg`` for the list (``THUMB`` pixels on its longer side) and
``large/<hash>.js`` (a data URL in a script, ``LARGE`` pixels) for the larger view and figure export (a canvas
stays exportable only with images that are not ``file://`` URLs).
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

THUMB = 320
LARGE = 1280
IMAGE_COLUMNS = ("image", "images")


def declared_roots(key: str) -> list[Path]:
    """Where benchmark ``key``'s data lies on this machine as the installed benchmarks declare it: the copy its
    ``LMMS_SPATIAL_<NAME>_PATH`` names (now), its Hub release's folder in the Hugging Face cache (and that of the
    published copy its ``_REPO`` variable names), and the copy converted from its release
    (``$HF_HOME/lmms_spatial/<key>``). [] for a benchmark this package does not know."""
    from lmms_spatial.data.hub_cache import hub_cache
    from lmms_spatial.data.prepare import prepared_root
    from lmms_spatial.data.registry import BENCHMARKS

    bench = BENCHMARKS.get(key)
    if bench is None:
        return []
    roots = [Path(value).expanduser()] if (value := os.environ.get(bench.env_var, "").strip()) else []
    repos = (bench.hub_id, os.environ.get(bench.repo_var, "").strip())
    roots += [hub_cache() / f"datasets--{repo.replace('/', '--')}" for repo in repos if repo]
    return [*roots, prepared_root(bench)]


def _fixture_of(folder: Path) -> str | None:
    """The benchmark whose fixture lmms-spatial built in ``folder`` (its marker file names it), else None."""
    from lmms_spatial.data.demo import FIXTURE_MARKER

    try:
        marker = json.loads((folder / FIXTURE_MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return marker.get("benchmark") if isinstance(marker, dict) else None


def _exists(path: Path) -> bool:
    try:
        return path.exists()
    except (OSError, ValueError):  # a folder we may not read, a NUL in the name: nothing to read there either
        return False


def _inside(path: Path, roots: Iterable[Path]) -> bool:
    resolved = path.resolve()
    return any(resolved.is_relative_to(root.resolve()) for root in roots)


def recorded_roots(runs: Iterable[tuple[Path, Mapping[str, Any]]]) -> tuple[dict[str, Path], dict[str, str]]:
    """({benchmark: the local copy its documents were read from}, {benchmark: why a recorded copy was not used}), as
    the runs' results (``(results file, its contents)``) record them (``lmms_spatial.data``; the first run naming a
    benchmark whose copy may be read wins), for the copies still on this disk.

    A results file is a file anyone can edit: the copy it names is read only where it lies inside the run's own
    folder (the results file's), inside one of the benchmark's :func:`declared_roots`, or is a fixture lmms-spatial
    built for that benchmark. Any other is not looked into (it could be ``/``: the whole disk walked, and images of
    any parquet file whose ids match put into the page); the second dict says so, one line per benchmark."""
    from lmms_spatial.conditions import KEY, RunConditions

    roots: dict[str, Path] = {}
    refused: dict[str, str] = {}
    for results_file, value in runs:
        for name, record in sorted((RunConditions.from_json(value.get(KEY)).data or {}).items()):
            key = name.split("/", 1)[0]
            source = Path(record.source)
            if not record.local or key in roots or not _exists(source):
                continue
            if _inside(source, [results_file.parent, *declared_roots(key)]) or _fixture_of(source) == key:
                roots[key] = source
            else:
                refused.setdefault(
                    key,
                    f"{key}: images not looked for in {source}, the copy {results_file} records "
                    f"reading: it lies outside the run's folder and {key}'s declared data roots "
                    f"({_declared_names(key)}); pass --data {key}=PATH to read a copy there",
                )
    return roots, refused


def _declared_names(key: str) -> str:
    from lmms_spatial.data.registry import BENCHMARKS

    bench = BENCHMARKS.get(key)
    named = f"{bench.env_var}, " if bench is not None else ""
    return f"{named}the Hugging Face cache of its release, a fixture lmms-spatial built"


def data_roots(given: Mapping[str, str] | None = None, recorded: Mapping[str, Path] | None = None) -> dict[str, Path]:
    """{benchmark: local data path}: ``given`` (``--data``) first, then the copy the run recorded reading where it may
    be read (:func:`recorded_roots`), then each benchmark's environment variable."""
    from lmms_spatial.data.registry import BENCHMARKS

    roots = {k: Path(v) for k, v in (given or {}).items()}
    for key, path in (recorded or {}).items():
        roots.setdefault(key, Path(path))
    for key, bench in BENCHMARKS.items():
        value = os.environ.get(bench.env_var, "").strip()
        if key not in roots and value and Path(value).exists():
            roots[key] = Path(value)
    return roots


class DataIndex:
    """Rows of each benchmark's local data by ``id`` (read once per benchmark and data subfolder)."""

    def __init__(self, roots: Mapping[str, Path]):
        self.roots = dict(roots)
        self._tables: dict[tuple[str, str | None], dict[str, dict[str, Any]]] = {}

    def where(self, benchmark: str | None) -> str | None:
        return str(self.roots[benchmark]) if benchmark in self.roots else None

    def row(self, benchmark: str | None, config: str | None, columns: tuple[str, ...], doc: Any) -> dict | None:
        if benchmark not in self.roots or doc is None:
            return None
        key = (benchmark, config)
        if key not in self._tables:
            self._tables[key] = self._read(self.roots[benchmark], config, columns)
        return self._tables[key].get(str(doc))

    @staticmethod
    def _read(root: Path, config: str | None, columns: tuple[str, ...]) -> dict[str, dict[str, Any]]:
        import pyarrow.parquet as pq

        if root.is_file():
            files = [root]
        else:
            base = root / config if config and (root / config).is_dir() else root
            files = sorted(base.rglob("*.parquet"))
        out: dict[str, dict[str, Any]] = {}
        for f in files:
            names = pq.read_schema(f).names
            if "id" not in names:
                continue
            wanted = ["id", *[c for c in (*IMAGE_COLUMNS, *columns) if c in names]]
            for rec in pq.read_table(f, columns=wanted).to_pylist():
                out.setdefault(str(rec["id"]), rec)
        return out


def image_bytes(row: Mapping[str, Any] | None) -> list[bytes]:
    """The encoded images of a dataset row (``image`` or ``images``; ``{"bytes": ...}`` structs or paths)."""
    if not row:
        return []
    found: list[bytes] = []
    for col in IMAGE_COLUMNS:
        value = row.get(col)
        items = value if isinstance(value, list) else [value] if value is not None else []
        for item in items:
            if isinstance(item, Mapping) and item.get("bytes"):
                found.append(bytes(item["bytes"]))
            elif isinstance(item, Mapping) and item.get("path") and Path(item["path"]).is_file():
                found.append(Path(item["path"]).read_bytes())
    return found


class ImageStore:
    """Writes each distinct image once, as a thumbnail file and a larger data-URL script; counts the bytes."""

    def __init__(self, out: Path):
        self.out = out
        self.seen: dict[str, dict[str, Any]] = {}
        self.thumb_bytes = 0
        self.large_bytes = 0

    def add(self, data: bytes) -> dict[str, Any] | None:
        digest = hashlib.sha1(data).hexdigest()[:20]
        if digest in self.seen:
            return self.seen[digest]
        from PIL import Image

        try:
            with Image.open(io.BytesIO(data)) as img:
                img = img.convert("RGB")
                width, height = img.size
                thumb, large = img.copy(), img.copy()
        except Exception:  # noqa: BLE001 - an image PIL cannot read is shown as missing, not a crash
            self.seen[digest] = {}
            return None
        thumb.thumbnail((THUMB, THUMB))
        large.thumbnail((LARGE, LARGE))
        (self.out / "thumbs").mkdir(parents=True, exist_ok=True)
        (self.out / "large").mkdir(parents=True, exist_ok=True)
        buf = io.BytesIO()
        thumb.save(buf, "JPEG", quality=70, optimize=True)
        (self.out / "thumbs" / f"{digest}.jpg").write_bytes(buf.getvalue())
        self.thumb_bytes += buf.tell()
        buf = io.BytesIO()
        large.save(buf, "JPEG", quality=82, optimize=True)
        script = f'LMMSView.image("{digest}","data:image/jpeg;base64,{base64.b64encode(buf.getvalue()).decode()}");\n'
        (self.out / "large" / f"{digest}.js").write_text(script, encoding="ascii")
        self.large_bytes += len(script)
        entry = {"id": digest, "w": width, "h": height, "tw": thumb.size[0], "th": thumb.size[1]}
        self.seen[digest] = entry
        return entry
