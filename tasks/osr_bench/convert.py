"""Convert the official OSR-Bench release into the normalised layout (hub_cards/osr_bench/README.md).

    lmms-spatial convert osr_bench path/to/OSR-Bench out/osr/     # then LMMS_SPATIAL_OSR_PATH=out/osr

Input (``UUUserna/OSR-Bench``): ``qa.csv`` (config ``standard``) and ``qa_with_negative.csv``
(config ``negative``) with columns ``image_id, turn_id, question, answer, skills_tested``;
turn 0 of every image is the cognitive-map question, whose answer is the 10x10 ground-truth
grid (JSON or Python-literal text) and whose prompt lists the object pool in ``{...}``;
images at ``data/<scene>/rgb.png`` (``image_id`` is that path). Output:
``<out>/standard/test-*.parquet`` and ``<out>/negative/test-*.parquet``, one row per question
(turn >= 1) with the image, its grid and its object pool.

Every row is validated - the grid is 10x10 lists of class names, the skill is known, the image
exists, the image has a turn-0 map - and rejects are reported by ``image_id:turn_id`` with the
reason; nothing is written unless every row converts (``--skip-bad`` writes the rest).
Images are written in shards (``--shard-size`` questions), so memory stays bounded.
"""

from __future__ import annotations

import argparse
import ast
import csv
import json
import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lmms_spatial.data.column_map import ColumnMap, add_map_argument
from lmms_spatial.data.convert import print_rejects
from lmms_spatial.data.safe_files import UnsafeFileError, read_image_bytes, resolve_inside
from lmms_spatial.metrics.osr_bench import GRID, SKILLS
from lmms_spatial.progress import progress

# what a release must hold, in the paragraph a release that does not fit is described with
EXPECTED = (
    "qa.csv and qa_with_negative.csv (image_id, turn_id, question, answer, skills_tested) and data/<scene>/rgb.png"
)

CONFIG_FILES = {"standard": "qa.csv", "negative": "qa_with_negative.csv"}
# the release's column for each field of the layout it is read into (a column mapping, --map /
# LMMS_SPATIAL_OSR_MAP, names another); id, scene_id, object_pool and cogmap are made by the converter
SPELLINGS: dict[str, tuple[str, ...]] = {
    "image": ("image_id",),
    "turn_id": ("turn_id",),
    "question": ("question",),
    "answer": ("answer",),
    "skill": ("skills_tested",),
}
REQUIRED = tuple(SPELLINGS)
REQUIRED_COLUMNS = tuple(names[0] for names in SPELLINGS.values())
_POOL = re.compile(r"categories to care about in this scene:\s*\{([^}]*)\}")


class RowError(ValueError):
    pass


@dataclass
class Report:
    rows: dict[str, int] = field(default_factory=dict)
    written: dict[str, int] = field(default_factory=dict)
    rejects: list[str] = field(default_factory=list)


def parse_grid(text: str) -> list[list[list[str]]]:
    try:
        grid = json.loads(text)
    except ValueError:
        try:
            grid = ast.literal_eval(text)
        except (ValueError, SyntaxError) as exc:
            raise RowError(f"cognitive map is neither JSON nor a Python literal ({exc})") from None
    if not (isinstance(grid, list) and len(grid) == GRID and all(isinstance(r, list) and len(r) == GRID for r in grid)):
        raise RowError(f"cognitive map is not a {GRID}x{GRID} grid")
    for row in grid:
        for cell in row:
            if not isinstance(cell, list) or not all(isinstance(name, str) and name for name in cell):
                raise RowError("cognitive map cell is not a list of class names")
    return grid


def parse_pool(question: str) -> list[str]:
    m = _POOL.search(question)
    if not m:
        raise RowError("turn-0 question has no '{...}' object pool")
    return [name.strip() for name in m.group(1).split(",") if name.strip()]


def _rows(path: Path, column_map: ColumnMap | None = None) -> Iterable[dict[str, str]]:
    column_map = column_map or ColumnMap("osr_bench")
    with open(path, encoding="utf-8", newline="") as fh:
        reader = csv.DictReader(fh)
        missing = [c for c in REQUIRED_COLUMNS if c not in column_map.columns(reader.fieldnames or [])]
        if missing:
            raise SystemExit(f"convert_osr_bench: {path} lacks columns {missing} (has {reader.fieldnames})")
        yield from map(column_map.apply, reader)


def convert_config(
    src: Path,
    config: str,
    out_dir: Path,
    report: Report,
    *,
    skip_bad: bool,
    shard_size: int,
    embed_images: bool = True,
    column_map: ColumnMap | None = None,
) -> None:
    import datasets

    from lmms_spatial.tasks.osr_bench import features

    path = src / CONFIG_FILES[config]
    if not path.is_file():
        raise SystemExit(f"convert_osr_bench: {path} not found (expected {CONFIG_FILES[config]} in {src})")
    maps: dict[str, tuple[str, list[str]]] = {}
    questions: list[dict[str, str]] = []
    bad: list[str] = []
    for row in _rows(path, column_map):
        ident = f"{row['image_id']}:{row['turn_id']}"
        try:
            turn = int(row["turn_id"])
        except ValueError:
            bad.append(f"{config} {ident}: turn_id {row['turn_id']!r} is not an integer")
            continue
        if turn == 0:
            try:
                maps[row["image_id"]] = (json.dumps(parse_grid(row["answer"])), parse_pool(row["question"]))
            except RowError as exc:
                bad.append(f"{config} {ident}: {exc}")
        else:
            questions.append(row)
    report.rows[config] = len(questions)
    good: list[dict[str, Any]] = []
    for row in questions:
        ident = f"{row['image_id']}:{row['turn_id']}"
        try:
            if row["skills_tested"] not in SKILLS:
                raise RowError(f"unknown skill {row['skills_tested']!r} (known: {SKILLS})")
            if row["image_id"] not in maps:
                raise RowError("no valid turn-0 cognitive map for this image")
            try:
                image = resolve_inside(src, row["image_id"])
            except UnsafeFileError as exc:
                raise RowError(f"image {exc}") from None
            if not image.is_file():
                raise RowError(f"image {row['image_id']} not found")
        except RowError as exc:
            bad.append(f"{config} {ident}: {exc}")
            continue
        cogmap, pool = maps[row["image_id"]]
        scene = Path(row["image_id"]).parent.name
        good.append(
            {
                "id": f"{scene}:{int(row['turn_id'])}",
                "image": (str(image), str(Path(src).absolute() / row["image_id"])),  # (to read, to point at)
                "scene_id": scene,
                "turn_id": int(row["turn_id"]),
                "skill": row["skills_tested"],
                "question": row["question"],
                "answer": row["answer"],
                "object_pool": pool,
                "cogmap": cogmap,
            }
        )
    report.rejects.extend(bad)
    if bad and not skip_bad:
        return
    folder = out_dir / config
    folder.mkdir(parents=True, exist_ok=True)
    with progress(total=len(good), desc=f"convert osr_bench {config}", unit="row") as bar:
        for n, start in enumerate(range(0, len(good), shard_size)):
            shard = [{**r, "image": _image_cell(*r["image"], embed_images)} for r in good[start : start + shard_size]]
            datasets.Dataset.from_list(shard, features=features()).to_parquet(str(folder / f"test-{n:05d}.parquet"))
            bar.update(len(shard))
    report.written[config] = len(good)


def _image_cell(resolved: str, in_release: str, embed: bool) -> dict[str, Any]:
    """The image's bytes (a portable copy), or its path in the release (a prepared copy beside the download)."""
    if embed:
        return {"bytes": read_image_bytes(Path(resolved)), "path": None}
    return {"bytes": None, "path": in_release}


def convert(
    src: Path,
    out_dir: Path,
    *,
    skip_bad: bool = False,
    shard_size: int = 2000,
    embed_images: bool = True,
    column_map: ColumnMap | None = None,
) -> Report:
    """Both configs. ``embed_images=False`` stores each image's path instead of its bytes: a panorama is
    shared by ~37 question rows, so the automatic prepared copy points at the downloaded release."""
    report = Report()
    for config in CONFIG_FILES:
        convert_config(
            Path(src), config, Path(out_dir), report, skip_bad=skip_bad, shard_size=shard_size,
            embed_images=embed_images, column_map=column_map,
        )  # fmt: skip
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("src", type=Path, help="local copy of UUUserna/OSR-Bench (qa.csv, qa_with_negative.csv, data/)")
    parser.add_argument("out", type=Path, help="output folder (standard/ and negative/)")
    parser.add_argument("--skip-bad", action="store_true", help="write the rows that convert; list the others")
    parser.add_argument("--shard-size", type=int, default=2000, help="questions per parquet file")
    add_map_argument(parser, "osr_bench")
    args = parser.parse_args(argv)
    try:
        report = convert(args.src, args.out, skip_bad=args.skip_bad, shard_size=args.shard_size, column_map=args.map)
    except UnsafeFileError as exc:  # an image file that is not an image
        print(f"convert_osr_bench: {exc}", file=sys.stderr)
        return 1
    print_rejects(report.rejects)
    print(f"questions {report.rows}; written {report.written}; {len(report.rejects)} rejected")
    return 0 if not report.rejects or args.skip_bad else 1


if __name__ == "__main__":
    sys.exit(main())
