"""Convert a folder of images + a question file into the MMPerspective layout (hub_cards/mmperspective).

    lmms-spatial convert mmperspective --images raw/images --questions raw/questions.json --out data/mmp
    export LMMS_SPATIAL_MMPERSPECTIVE_PATH=data/mmp

The question file is JSON (a list of objects, or ``{"questions": [...]}``), JSONL or CSV, one
question per record, with the fields ``id``, ``image`` (one path) or ``images`` (a list; in
CSV, paths joined by ``|``), ``task``, ``question``, ``options`` (a list; in CSV a JSON list
or texts joined by ``|``), ``answer`` (a letter, or the exact text of one option), and
optionally ``robust_group`` and ``perturbation``. Image paths are relative to ``--images``.
Every record is checked against the layout; the first problem stops the conversion with a
message naming the record and the field (or the missing image file).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from lmms_spatial.data.column_map import ColumnMap, add_map_argument
from lmms_spatial.data.images import BadDocumentError
from lmms_spatial.data.safe_files import (
    UnsafeFileError,
    parse_csv,
    parse_json,
    read_image_bytes,
    read_text,
    resolve_inside,
)
from lmms_spatial.metrics.extraction import LETTERS
from lmms_spatial.progress import progress
from lmms_spatial.tasks.mmperspective import features
from lmms_spatial.tasks.mmperspective.schema import check_rows

# what a release must hold, in the paragraph a release that does not fit is described with
EXPECTED = "a folder of images and a JSON / JSONL / CSV question file (no public release yet)"

# what a column mapping (--map) may name: the record fields read, by their layout names
SPELLINGS: dict[str, tuple[str, ...]] = {
    "id": ("id",),
    "images": ("images", "image"),
    "task": ("task",),
    "question": ("question",),
    "options": ("options",),
    "answer": ("answer",),
    "robust_group": ("robust_group",),
    "perturbation": ("perturbation",),
}
REQUIRED = ("id", "images", "task", "question", "options", "answer")


class ConversionError(ValueError):
    pass


def read_records(path: Path) -> list[dict[str, Any]]:
    """Records of a JSON / JSONL / CSV question file, as dicts."""
    suffix = path.suffix.lower()
    if not path.is_file():
        raise ConversionError(f"question file {str(path)!r} does not exist")
    try:
        text = read_text(path)
        if suffix == ".csv":
            return parse_csv(text, str(path))
        if suffix == ".jsonl":
            lines = enumerate(text.splitlines(), 1)
            return [parse_json(line, f"{path}:{n}") for n, line in lines if line.strip()]
        data = parse_json(text, str(path)) if suffix == ".json" else None
    except UnsafeFileError as exc:
        raise ConversionError(str(exc)) from None
    if suffix == ".json":
        if isinstance(data, dict) and "questions" in data:
            data = data["questions"]
        if not isinstance(data, list):
            raise ConversionError(f"{path}: expected a list of question objects")
        return data
    raise ConversionError(f"{path}: unsupported question file type {suffix!r} (use .json, .jsonl or .csv)")


def _label(record: dict[str, Any], index: int) -> str:
    return (
        f"record {index + 1} (id {record.get('id')!r})" if record.get("id") not in (None, "") else f"record {index + 1}"
    )


def _split_list(value: Any) -> list[str]:
    if isinstance(value, (list, tuple)):
        return [str(v) for v in value]
    text = str(value).strip()
    if text.startswith("["):
        return [str(v) for v in json.loads(text)]
    return [part.strip() for part in text.split("|") if part.strip()]


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, str) and not value.strip()) or value == []


def normalise_record(record: dict[str, Any], index: int, images_dir: Path) -> dict[str, Any]:
    """One record in the layout (images read as bytes); raises naming the record and field."""
    where = _label(record, index)
    for field in ("id", "task", "question", "options", "answer"):
        if _missing(record.get(field)):
            raise ConversionError(f"{where}: missing field {field!r}")
    paths = record.get("images") if not _missing(record.get("images")) else record.get("image")
    if _missing(paths):
        raise ConversionError(f"{where}: missing field 'images' (or 'image')")
    try:
        options = _split_list(record["options"])
    except (json.JSONDecodeError, TypeError) as exc:
        raise ConversionError(f"{where}: field 'options' is not a list ({exc})") from exc
    answer = str(record["answer"]).strip()
    if answer.upper() in LETTERS[: len(options)] and len(answer) == 1:
        answer = answer.upper()
    elif answer in options:
        answer = LETTERS[options.index(answer)]
    images = []
    for rel in _split_list(paths):
        try:
            file = resolve_inside(images_dir, rel)
            if not file.is_file():
                raise ConversionError(f"{where}: field 'images': image file {str(file)!r} not found")
            images.append({"bytes": read_image_bytes(file), "path": None})
        except UnsafeFileError as exc:
            raise ConversionError(f"{where}: field 'images': {exc}") from None
    group = record.get("robust_group")
    perturbation = record.get("perturbation")
    return {
        "id": str(record["id"]).strip(),
        "images": images,
        "task": str(record["task"]).strip().upper(),
        "question": str(record["question"]).strip(),
        "options": options,
        "answer": answer,
        "robust_group": None if _missing(group) else str(group).strip(),
        "perturbation": "original" if _missing(perturbation) else str(perturbation).strip().lower(),
    }


def convert(images_dir: Path, questions: Path, out_dir: Path, column_map: ColumnMap | None = None) -> Path:
    """Write ``out_dir/test.parquet`` in the layout; returns its path."""
    import datasets

    images_dir, out_dir = Path(images_dir), Path(out_dir)
    if not images_dir.is_dir():
        raise ConversionError(f"image folder {str(images_dir)!r} does not exist")
    records = read_records(Path(questions))
    if column_map:
        records = [column_map.apply(record) for record in records]
    if not records:
        raise ConversionError(f"{questions}: no questions")
    rows = []
    with progress(total=len(records), desc="convert mmperspective", unit="row") as bar:
        for i, record in enumerate(records):
            rows.append(normalise_record(record, i, images_dir))  # the images are read here
            bar.update(1)
    try:
        check_rows(rows)
    except BadDocumentError as exc:
        raise ConversionError(f"{questions}: {exc}") from exc
    from lmms_spatial.metrics.mmperspective import N_IMAGES

    for row in rows:
        if len(row["images"]) != N_IMAGES[row["task"]]:
            problem = f"a {row['task']} question needs {N_IMAGES[row['task']]} image(s), got {len(row['images'])}"
            raise ConversionError(f"{questions}: document {row['id']!r}, field 'images': {problem}")
    columns = {c: [r[c] for r in rows] for c in features()}
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / "test.parquet"
    datasets.Dataset.from_dict(columns, features=features()).to_parquet(str(path))
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--images", required=True, type=Path, help="folder the image paths are relative to")
    parser.add_argument("--questions", required=True, type=Path, help="question file: .json, .jsonl or .csv")
    parser.add_argument("--out", required=True, type=Path, help="output folder (test.parquet is written there)")
    add_map_argument(parser, "mmperspective")
    args = parser.parse_args(argv)
    try:
        path = convert(args.images, args.questions, args.out, args.map)
    except ConversionError as exc:
        print(f"convert_mmperspective: {exc}", file=sys.stderr)
        return 1
    print(f"wrote {path}\nexport LMMS_SPATIAL_MMPERSPECTIVE_PATH={path.parent}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
