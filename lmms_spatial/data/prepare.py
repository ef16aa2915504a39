"""From a benchmark's published Hub release to the layout its tasks read, with no manual step.

Resolution, for a benchmark whose release must be converted (its ``BENCHMARK``'s ``hub_is_normalised=False``):

1. ``LMMS_SPATIAL_<NAME>_PATH`` (a local normalised copy) wins; that is ``sources.dataset_source``.
2. The release at ``LMMS_SPATIAL_<NAME>_REVISION`` (default: the benchmark's pinned revision) is
   fetched with ``huggingface_hub.snapshot_download`` (``allow_patterns`` keeps it to the files
   the converter reads), or, offline (``HF_HUB_OFFLINE=1``), found in the Hugging Face cache:
   that is how air-gapped clusters run, with a copied ``HF_HUB_CACHE``.
3. The prepared copy ``$HF_HOME/lmms_spatial/<benchmark>/<commit>/data/`` is reused when complete;
   otherwise the in-package converter writes it into a temporary folder beside it, which is
   renamed into place (a crash never leaves half a copy), under a file lock (under
   ``accelerate launch`` one process prepares, the others wait and reuse it).

The prepared copy stores each image's path in the downloaded release, not its bytes (OSR-Bench
shares one panorama between ~37 question rows; ODI-Bench's panoramas are 7 GB and licensed
cc-by-nc-nd-4.0: they are never copied, let alone republished). It is remade when the
release's folder moved (a copied cache) or the converter changed.

Every failure is :class:`~lmms_spatial.data.sources.DataUnavailable`: one line naming the fix
for a missing or unreachable release, one paragraph (what was found, what was expected) for
a release the converter cannot read.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

from lmms_spatial.benchmark import Benchmark
from lmms_spatial.data.hub_cache import DataUnavailable, cached_commits, hf_home, hub_cache, offline, offline_because

if TYPE_CHECKING:
    from lmms_spatial.data.column_map import ColumnMap

# bump when a converter's output changes: prepared copies made by an older one are remade
PREPARED_FORMAT = 1
MARKER = "lmms_spatial_prepared.json"
_COMMIT = re.compile(r"^[0-9a-f]{40}$")


def prepared_root(bench: Benchmark) -> Path:
    return hf_home() / "lmms_spatial" / bench.key


def revision_of(bench: Benchmark) -> str:
    return os.environ.get(bench.revision_var, "").strip() or bench.revision


def _fix(bench: Benchmark) -> str:
    copy = (f"a converted copy (`lmms-spatial convert {bench.converter} RELEASE OUT`)" if bench.converter
            else f"a local copy of the release (the layout of hub_cards/{bench.key}/README.md)")  # fmt: skip
    return f"set {bench.env_var} to {copy}, or {bench.revision_var} to a revision of {bench.hub_id} that is available"


def cached_snapshot(bench: Benchmark, revision: str) -> Path | None:
    """The release's snapshot folder in the Hugging Face cache for ``revision``, without the network."""
    repo = hub_cache() / f"datasets--{bench.hub_id.replace('/', '--')}"
    commit = revision if _COMMIT.match(revision) else None
    ref = repo / "refs" / revision
    if commit is None and ref.is_file():
        commit = ref.read_text().strip()
    if commit and (repo / "snapshots" / commit).is_dir():
        return repo / "snapshots" / commit
    return None


def cached_release(bench: Benchmark, revision: str) -> Path:
    """The release's snapshot in the Hugging Face cache, as a run reads it offline; otherwise the one line it stops
    with (:class:`DataUnavailable`). No network."""
    found = cached_snapshot(bench, revision)
    if found is None:
        others = cached_commits(bench.hub_id)
        held = f" (it holds commit(s) {', '.join(others)})" if others else ""
        raise DataUnavailable(
            f"{bench.key}: offline ({'/'.join(offline_because())}) and {bench.hub_id}@{revision} is not in the Hugging "
            f"Face cache {str(hub_cache())!r}{held}; download it once with network access, or {_fix(bench)}"
        )
    return found


def fetch_release(bench: Benchmark, revision: str) -> Path:
    """The downloaded release (a snapshot folder named by its commit)."""
    if offline():
        return cached_release(bench, revision)
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import (
        GatedRepoError,
        LocalEntryNotFoundError,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    try:
        folder = snapshot_download(
            bench.hub_id,
            repo_type="dataset",
            revision=revision,
            allow_patterns=list(bench.allow_patterns) if bench.allow_patterns else None,
            cache_dir=str(hub_cache()),
        )
    except RevisionNotFoundError:
        raise DataUnavailable(
            f"{bench.key}: {bench.hub_id} has no revision {revision!r}; set {bench.revision_var} to a branch, tag "
            "or commit of the release"
        ) from None
    except GatedRepoError:
        raise DataUnavailable(
            f"{bench.key}: {bench.hub_id} is gated; accept its terms on the Hub and log in (`hf auth login`), "
            f"or {_fix(bench)}"
        ) from None
    except RepositoryNotFoundError:
        raise DataUnavailable(f"{bench.key}: the Hub has no dataset {bench.hub_id}; {_fix(bench)}") from None
    except (LocalEntryNotFoundError, OSError) as exc:  # no connection and nothing cached, disk full, ...
        first = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else type(exc).__name__
        error = DataUnavailable(f"{bench.key}: cannot download {bench.hub_id}@{revision} ({first}); {_fix(bench)}")
        error.transient = not offline()  # offline, with nothing cached, another try finds nothing either
        raise error from None
    return Path(folder)


def _complete(target: Path, snapshot: Path, mapping: str = "") -> bool:
    try:
        marker = json.loads((target / MARKER).read_text())
    except (OSError, ValueError):
        return False
    return (
        marker.get("format") == PREPARED_FORMAT
        and marker.get("release") == str(snapshot.absolute())
        and marker.get("map", "") == mapping  # made with another LMMS_SPATIAL_<NAME>_MAP: remade
    )


def column_map_of(bench: Benchmark) -> ColumnMap:
    """The release's renamed columns (``LMMS_SPATIAL_<NAME>_MAP``); a malformed value is the run's one line."""
    from lmms_spatial.data.column_map import MappingError, from_env

    try:
        return from_env(bench)
    except MappingError as exc:
        raise DataUnavailable(f"{bench.key}: {exc}") from None


def prepare(bench: Benchmark) -> Path:
    """The prepared copy of ``bench``'s release (made now if needed); see the module docstring."""
    from filelock import FileLock

    from lmms_spatial.data.column_map import map_hint
    from lmms_spatial.data.convert import ReleaseMismatch, convert_release

    column_map = column_map_of(bench)
    revision = revision_of(bench)
    snapshot = fetch_release(bench, revision)
    target = prepared_root(bench) / snapshot.name
    if _complete(target, snapshot, column_map.text):
        return target / "data"
    target.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(target) + ".lock"):
        if _complete(target, snapshot, column_map.text):  # another process prepared it while this one waited
            return target / "data"
        work = Path(tempfile.mkdtemp(prefix=f".{snapshot.name}.", dir=target.parent))
        try:
            try:
                convert_release(bench.converter, snapshot, work / "data", column_map)
            except ReleaseMismatch as exc:
                raise DataUnavailable(
                    f"{bench.key}: the release {bench.hub_id}@{revision} (commit {snapshot.name}, in {snapshot}) does "
                    f"not have the layout lmms-spatial reads: {exc} Convert a local copy with `lmms-spatial convert "
                    f"{bench.converter} RELEASE OUT [--skip-bad]` and set {bench.env_var} to OUT, set "
                    f"{bench.revision_var} to a revision that has that layout, or name renamed columns with "
                    f"{bench.map_var} (FIELD=COLUMN,...).{map_hint(bench, snapshot, column_map)}"
                ) from None
            (work / MARKER).write_text(  # beside data/, so that datasets sees parquet files only
                json.dumps(
                    {
                        "format": PREPARED_FORMAT,
                        "benchmark": bench.key,
                        "hub_id": bench.hub_id,
                        "revision": revision,
                        "commit": snapshot.name,
                        "release": str(snapshot.absolute()),
                        "map": column_map.text,  # the user's column mapping ("" = none)
                        "prepared_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                    },
                    indent=1,
                )
            )
            if target.exists():  # an older or moved copy: replaced whole
                shutil.rmtree(target)
            os.replace(work, target)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return target / "data"
