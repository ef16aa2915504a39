"""Published normalised copies for tests: ``lmms-spatial export`` output placed in a Hugging Face cache
as the dataset repository it would be uploaded to (``hf upload <repo> OUT --repo-type dataset``)."""

from __future__ import annotations

from pathlib import Path

from hub_releases import place_in_hub_cache

from lmms_spatial.data.export import Origin, export


def folder_files(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` by its path relative to it."""
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def publish(key: str, source: Path, work: Path, hub_cache: Path, repo: str, **place) -> Path:
    """Export ``source`` (a normalised copy) into ``work`` and cache it as dataset ``repo``; returns the snapshot."""
    out = work / f"export-{key}"
    export(key, out, source=source, origin=Origin(how="test data"), private=True)
    return place_in_hub_cache(hub_cache, repo, folder_files(out), **place)
