"""Reading a release's files safely: paths stay inside the input folder, images are images.

Converters follow file names written in question files. A name such as
``../../outside/secret.txt`` or ``/etc/passwd`` must not pull a file from elsewhere into a
dataset (and then into a Hub upload); a file that is not an image must not become an
``Image()`` cell that fails only when a model reads it. Question files that are not valid
JSON / CSV / UTF-8 are reported in one line, naming the file and the place.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

from PIL import Image


class UnsafeFileError(ValueError):
    """A path outside the input folder, or a file that is not what it should be (message: one line)."""


def resolve_inside(root: Path, name: str | Path) -> Path:
    """``root / name`` resolved (symbolic links followed), refused unless it stays inside ``root``."""
    text = str(name)
    if not text.strip():
        raise UnsafeFileError("empty file name")
    if Path(text).is_absolute():
        raise UnsafeFileError(f"{text!r} is an absolute path: file names must be relative to {str(root)!r}")
    base = Path(root).resolve()
    candidate = (base / text).resolve()
    if not any(candidate == b or b in candidate.parents for b in (base, *_hub_blobs(base))):
        raise UnsafeFileError(f"{text!r} points outside the input folder {str(base)!r}")
    return candidate


def _hub_blobs(base: Path) -> tuple[Path, ...]:
    """A Hugging Face cache snapshot's files are links into the repository's ``blobs/``: allowed too."""
    if base.parent.name == "snapshots" and (base.parent.parent / "blobs").is_dir():
        return ((base.parent.parent / "blobs").resolve(),)
    return ()


def read_image_bytes(path: Path) -> bytes:
    """The bytes of an image file, after Pillow has checked that they are one (and complete)."""
    return check_image_bytes(Path(path).read_bytes(), repr(str(path)))


def check_image_bytes(data: bytes, where: str) -> bytes:
    """``data`` itself, once Pillow has checked that it is a complete image; ``where`` names it otherwise."""
    try:
        with Image.open(io.BytesIO(data)) as image:
            image.verify()
    except Exception as exc:
        raise UnsafeFileError(f"{where} is not a readable image ({type(exc).__name__}: {exc})") from None
    return data


def read_text(path: Path) -> str:
    """A question file's text as UTF-8, or one line naming the file and the byte that is not."""
    try:
        return Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise UnsafeFileError(f"{path}: not UTF-8 text (byte {exc.start}: {exc.reason})") from None


def parse_json(text: str, where: str) -> Any:
    """``json.loads`` whose error is one line naming the file and the line/column."""
    try:
        return json.loads(text)
    except (json.JSONDecodeError, RecursionError) as exc:
        raise UnsafeFileError(f"{where}: not valid JSON ({exc})") from None


def parse_csv(text: str, where: str) -> list[dict[str, Any]]:
    """CSV rows as dicts; a malformed file is one line naming it."""
    try:
        return [dict(row) for row in csv.DictReader(io.StringIO(text, newline=""))]
    except csv.Error as exc:
        raise UnsafeFileError(f"{where}: not valid CSV ({exc})") from None
