"""Convert a local copy of the DORI release into the normalised layout (hub_cards/dori/README.md).

    lmms-spatial convert dori path/to/DORI-Benchmark out/dori/      # then LMMS_SPATIAL_DORI_PATH=out/dori

The file layout of ``appledora/DORI-Benchmark`` is not documented (its card describes the
benchmark, not the files), so this converter is written against what the card and the paper
describe and accepts the plausible spellings; anything else fails with the file, the row and
the field named. Assumptions, in one place:

- question files: every ``*.json`` / ``*.jsonl`` / ``*.csv`` / ``*.parquet`` under the folder
  that has question rows (a JSON file may hold a list, or ``{"data"|"questions": [...]}``);
- ``task``: from ``task`` / ``question_type`` / ``task_type`` / ``type``, spelled as the paper
  names it ("View Parallelism", "view-parallelism", "Q1", ...);
- ``granularity``: from ``granularity`` / ``level`` / ``question_level`` / ``grain``
  (coarse; granular / fine / fine-grained);
- text: ``question`` + ``context`` + ``instructions`` + ``examples`` + ``options``, or one
  full structured ``prompt`` (TASK: ... CONTEXT: ... OPTIONS: ... FORMAT ... EXAMPLES: ...)
  split into those parts;
- ``options``: a list, a ``{"A": ...}`` mapping, or text ("A. x B. y", "{'A': 'x' 'B': 'y'}");
- ``answer``: a letter ("E", "E: Leftward ..."), a 0-based index, or the option's text;
- images: ``images`` / ``image_paths`` (list) or ``image`` / ``image_path`` / ``image_1`` +
  ``image_2``, as paths relative to the question file or the folder, or embedded bytes;
- ``source`` / ``category`` / ``data_type`` are copied when present, else left empty (the
  card says so); ``id`` from ``id`` / ``question_id`` / ``qid``, else ``<file>:<row>``.

Rows that break an assumption are collected and reported by file, row and field; nothing is
written unless every row converts (``--skip-bad`` writes the good rows and lists the rest).
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lmms_spatial.data.column_map import ColumnMap, add_map_argument
from lmms_spatial.data.convert import print_rejects
from lmms_spatial.data.safe_files import (
    UnsafeFileError,
    parse_csv,
    parse_json,
    read_image_bytes,
    read_text,
    resolve_inside,
)
from lmms_spatial.metrics.dori import GRANULARITIES, TASKS
from lmms_spatial.metrics.extraction import LETTERS
from lmms_spatial.progress import progress

# what a release must hold, in the paragraph a release that does not fit is described with
EXPECTED = (
    "question files (*.json, *.jsonl, *.csv, *.parquet) whose rows name a DORI task, a granularity, "
    "options, an answer and their image paths"
)

TASK_ALIASES = {
    "q1": "view_parallelism",
    "q2": "directional_facing",
    "q3": "single_axis_rotation",
    "q4": "compound_rotation",
    "q5": "inter_object_direction",
    "q6": "viewer_scene_direction",
    "q7": "canonical_orientation",
    "view_parallelism_perception": "view_parallelism",
    "directional_facing_perception": "directional_facing",
    "single_axis_rotation_perception": "single_axis_rotation",
    "compound_rotation_perception": "compound_rotation",
    "inter_object_direction_perception": "inter_object_direction",
    "inter_object_directional_relationships": "inter_object_direction",
    "viewer_scene_direction_perception": "viewer_scene_direction",
    "image_pair_rotational_relationships": "viewer_scene_direction",
    "canonical_orientation_reasoning": "canonical_orientation",
    "canonical_orientation_perception": "canonical_orientation",
}
GRANULARITY_ALIASES = {"coarse": "coarse", "granular": "granular", "fine": "granular", "fine_grained": "granular"}
QUESTION_FILE_SUFFIXES = {".json", ".jsonl", ".csv", ".parquet"}

# the release names read for each field of the layout, its own name first (a column mapping, --map /
# LMMS_SPATIAL_DORI_MAP, puts a column under the first name)
IMAGE_LIST_KEYS = ("images", "image_paths", "image_list")
IMAGE_KEYS = ("image", "image_path", "img", "image_1", "image1")
SECOND_IMAGE_KEYS = ("image_2", "image2")
PROMPT_KEYS = ("prompt", "full_prompt")
SPELLINGS: dict[str, tuple[str, ...]] = {
    "id": ("id", "question_id", "qid"),
    "images": IMAGE_LIST_KEYS + IMAGE_KEYS,
    "task": ("task", "question_type", "task_type", "type"),
    "granularity": ("granularity", "level", "question_level", "grain"),
    "question": ("question", "task_description"),
    "context": ("context",),
    "instructions": ("instructions", "steps"),
    "examples": ("examples",),
    "options": ("options", "choices", "option"),
    "answer": ("answer", "gt", "ground_truth", "correct_answer", "label"),
    "source": ("source", "dataset", "data_source"),
    "category": ("category", "object_category", "object"),
    "data_type": ("data_type", "domain"),
}
REQUIRED = ("images", "task", "granularity", "question", "options", "answer")
ALTERNATIVES = {"question": PROMPT_KEYS, "options": PROMPT_KEYS}  # one full structured prompt holds both


class RowError(ValueError):
    def __init__(self, field_name: str, problem: str):
        super().__init__(f"field {field_name!r}: {problem}")
        self.field = field_name


@dataclass
class Report:
    rows: int = 0
    written: int = 0
    rejects: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)


def _key(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", str(text).strip().lower()).strip("_")


def _first(row: Mapping[str, Any], *names: str) -> Any:
    for name in names:
        if name in row and row[name] is not None and row[name] == row[name]:  # skips NaN from CSV
            value = row[name]
            if not (isinstance(value, str) and not value.strip()):
                return value
    return None


def normalise_task(value: Any) -> str:
    key = _key(value)
    key = TASK_ALIASES.get(key, key)
    if key not in TASKS:
        raise RowError("task", f"{value!r} is not one of the 7 DORI tasks {TASKS}")
    return key


def normalise_granularity(value: Any) -> str:
    key = GRANULARITY_ALIASES.get(_key(value))
    if key not in GRANULARITIES:
        raise RowError("granularity", f"{value!r} is not coarse or granular")
    return key


_OPTION_SPLIT = re.compile(r"(?:^|\s)([A-P])[.):]\s+")


def parse_options(value: Any) -> list[str]:
    if isinstance(value, Mapping):
        return [str(value[k]).strip() for k in sorted(value, key=lambda k: LETTERS.index(str(k).strip().upper()[0]))]
    if isinstance(value, (list, tuple)):
        return [str(v).strip() for v in value]
    if hasattr(value, "tolist"):  # numpy array from parquet
        return parse_options(value.tolist())
    text = str(value).strip()
    if text.startswith(("{", "[")):
        try:
            return parse_options(json.loads(text))
        except ValueError:
            pass
        pairs = re.findall(r"""['"]([A-P])['"]\s*:\s*(['"])(.*?)\2""", text)
        if pairs:
            return [v.strip() for _, _, v in sorted(pairs)]
        try:
            return parse_options(ast.literal_eval(text))
        except (ValueError, SyntaxError):
            pass
    parts = _OPTION_SPLIT.split(" " + text)
    if len(parts) >= 3:
        letters, texts = parts[1::2], [p.strip() for p in parts[2::2]]
        if "".join(letters) == LETTERS[: len(letters)]:
            return texts
    raise RowError("options", f"cannot read options from {text[:80]!r}")


def parse_answer(value: Any, options: list[str]) -> str:
    if isinstance(value, bool):
        raise RowError("answer", f"{value!r} is not a letter, index or option text")
    if isinstance(value, (int, float)) and float(value).is_integer():
        index = int(value)
        if 0 <= index < len(options):
            return LETTERS[index]
        raise RowError("answer", f"index {index} is outside the {len(options)} options")
    text = str(value).strip()
    lowered = [o.strip().lower() for o in options]
    if len(text) > 1 and text.lower() in lowered:
        return LETTERS[lowered.index(text.lower())]
    m = re.fullmatch(r"\(?([A-Pa-p])\)?(?:\s*[.:)\-]\s*.*)?", text, re.DOTALL)
    if m and LETTERS.index(m.group(1).upper()) < len(options):
        return m.group(1).upper()
    if text.isdigit() and int(text) < len(options):
        return LETTERS[int(text)]
    raise RowError("answer", f"{text[:60]!r} is not a letter, 0-based index or option text of this question")


_SECTION = re.compile(r"(TASK|CONTEXT|OPTIONS|MULTIPLE-CHOICE OPTIONS|FORMAT YOUR RESPONSE AS|EXAMPLES)\s*:", re.I)
_STEPS_INTRO = re.compile(r"Please analy[sz]e (?:this image|these images|the images?) using these steps:\s*", re.I)


def split_structured_prompt(prompt: str) -> dict[str, Any]:
    """TASK / CONTEXT (+ steps) / OPTIONS / EXAMPLES parts of a full App. I prompt."""
    pieces = _SECTION.split(prompt)
    sections = {pieces[i].upper(): pieces[i + 1].strip() for i in range(1, len(pieces) - 1, 2)}
    if "TASK" not in sections:
        raise RowError("prompt", "no 'TASK:' section")
    context = sections.get("CONTEXT", "")
    steps: list[str] = []
    intro = _STEPS_INTRO.search(context)
    if intro:
        steps = [s.strip() for s in re.split(r"\s*\d+\.\s+", context[intro.end() :]) if s.strip()]
        context = context[: intro.start()].strip()
    options = sections.get("OPTIONS") or sections.get("MULTIPLE-CHOICE OPTIONS")
    if options is None:
        raise RowError("prompt", "no 'OPTIONS:' section")
    examples = [e.strip() for e in re.split(r"(?:^|\s)-\s+", sections.get("EXAMPLES", "")) if e.strip()]
    return {
        "question": sections["TASK"],
        "context": context,
        "instructions": steps,
        "options": options,
        "examples": examples,
    }


def _text_list(value: Any) -> list[str]:
    if value is None:
        return []
    if hasattr(value, "tolist"):
        value = value.tolist()
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("["):
            try:
                return [str(v) for v in json.loads(text)]
            except ValueError:
                pass
        return [s.strip() for s in re.split(r"\s*(?:\n|\d+\.\s+)\s*", text) if s.strip()]
    return [str(v) for v in value]


def _image(value: Any, base_dirs: list[Path], embed: bool = True) -> dict[str, Any]:
    if isinstance(value, Mapping) and value.get("bytes"):
        return {"bytes": value["bytes"], "path": None}
    if isinstance(value, (bytes, bytearray)):
        return {"bytes": bytes(value), "path": None}
    path = value.get("path") if isinstance(value, Mapping) else value
    if not isinstance(path, str) or not path.strip():
        raise RowError("images", f"unsupported image value {str(value)[:60]!r}")
    for base in base_dirs:
        try:
            candidate = resolve_inside(base, path)
            if candidate.is_file():
                if not embed:  # the prepared copy beside a download points at the release's file
                    return {"bytes": None, "path": str(Path(base).absolute() / path)}
                return {"bytes": read_image_bytes(candidate), "path": None}
        except UnsafeFileError as exc:
            raise RowError("images", str(exc)) from None
    raise RowError("images", f"image file {path!r} not found under {[str(b) for b in base_dirs]}")


def _images(row: Mapping[str, Any], base_dirs: list[Path], embed: bool = True) -> list[dict[str, Any]]:
    many = _first(row, *IMAGE_LIST_KEYS)
    if many is not None:
        if hasattr(many, "tolist"):
            many = many.tolist()
        if isinstance(many, str):
            many = json.loads(many) if many.strip().startswith("[") else [many]
        values = list(many)
    else:
        values = [v for v in (_first(row, *IMAGE_KEYS), _first(row, *SECOND_IMAGE_KEYS)) if v is not None]
    if not values:
        raise RowError("images", f"no image column ({_names('images')})")
    if len(values) > 2:
        raise RowError("images", f"{len(values)} images; DORI questions have 1 or 2")
    return [_image(v, base_dirs, embed) for v in values]


def _names(field_name: str) -> str:
    return " / ".join(SPELLINGS[field_name] + ALTERNATIVES.get(field_name, ()))


def _get(row: Mapping[str, Any], field_name: str) -> Any:
    return _first(row, *SPELLINGS[field_name])


def _required(row: Mapping[str, Any], field_name: str, fallback: Any = None) -> Any:
    value = _get(row, field_name)
    value = fallback if value is None else value
    if value is None:
        raise RowError(field_name, f"missing ({_names(field_name)})")
    return value


def convert_row(
    row: Mapping[str, Any], *, base_dirs: list[Path], default_id: str, embed_images: bool = True
) -> dict[str, Any]:
    prompt = _first(row, *PROMPT_KEYS)
    parts = split_structured_prompt(str(prompt)) if prompt is not None and _get(row, "question") is None else {}
    question = _required(row, "question", parts.get("question"))
    options = parse_options(_required(row, "options", parts.get("options")))
    if not 2 <= len(options) <= len(LETTERS):
        raise RowError("options", f"{len(options)} options; expected 3 to 16")
    answer = _required(row, "answer")
    task = _required(row, "task")
    granularity = _required(row, "granularity")
    return {
        "id": str(_get(row, "id") or default_id),
        "images": _images(row, base_dirs, embed_images),
        "task": normalise_task(task),
        "granularity": normalise_granularity(granularity),
        "question": str(question).strip(),
        "context": str(_get(row, "context") or parts.get("context", "")).strip(),
        "instructions": _text_list(_get(row, "instructions")) or parts.get("instructions", []),
        "examples": _text_list(_get(row, "examples")) or parts.get("examples", []),
        "options": options,
        "answer": parse_answer(answer, options),
        "source": str(_get(row, "source") or ""),
        "category": str(_get(row, "category") or ""),
        "data_type": str(_get(row, "data_type") or ""),
    }


def _read_rows(path: Path) -> Iterator[Mapping[str, Any]]:
    """Rows of one question file; a file that is not valid UTF-8 JSON / CSV stops with one line."""
    try:
        if path.suffix == ".jsonl":
            for n, line in enumerate(read_text(path).splitlines(), 1):
                if line.strip():
                    yield parse_json(line, f"{path}:{n}")
        elif path.suffix == ".json":
            data = parse_json(read_text(path), str(path))
            if isinstance(data, Mapping):
                data = data.get("data") or data.get("questions") or []
            yield from (r for r in data if isinstance(r, Mapping))
        elif path.suffix == ".csv":
            yield from parse_csv(read_text(path), str(path))
        elif path.suffix == ".parquet":
            import pyarrow.parquet as pq

            yield from pq.read_table(path).to_pylist()
    except UnsafeFileError as exc:
        raise SystemExit(f"convert_dori: {exc}") from None


def question_files(src: Path) -> list[Path]:
    return sorted(
        p for p in src.rglob("*") if p.suffix in QUESTION_FILE_SUFFIXES and p.is_file() and not p.name.startswith(".")
    )


def convert(
    src: Path, out_dir: Path, *, skip_bad: bool = False, embed_images: bool = True, column_map: ColumnMap | None = None
) -> Report:
    import datasets

    from lmms_spatial.tasks.dori import features

    src, out_dir = Path(src), Path(out_dir)
    files = question_files(src)
    if not files:
        raise SystemExit(f"convert_dori: no question files (*.json, *.jsonl, *.csv, *.parquet) under {src}")
    report = Report(files=[str(f.relative_to(src)) for f in files])
    rows: list[dict[str, Any]] = []
    seen: set[str] = set()
    per_file = [(f, list(_read_rows(f))) for f in files]  # question rows only (no image bytes): the bar's total
    with progress(total=sum(len(r) for _f, r in per_file), desc="convert dori", unit="row") as bar:
        for f, file_rows in per_file:
            rel = f.relative_to(src)
            for i, row in enumerate(file_rows):
                report.rows += 1
                bar.update(1)
                try:
                    converted = convert_row(
                        column_map.apply(row) if column_map else row,
                        base_dirs=[f.parent, src],
                        default_id=f"{rel}:{i}",
                        embed_images=embed_images,
                    )
                    if converted["id"] in seen:
                        raise RowError("id", f"duplicate id {converted['id']!r}")
                except RowError as exc:
                    report.rejects.append(f"{rel} row {i}: {exc}")
                    continue
                seen.add(converted["id"])
                rows.append(converted)
    if report.rejects and not skip_bad:
        return report
    if not rows:
        raise SystemExit("convert_dori: no row converted")
    out_dir.mkdir(parents=True, exist_ok=True)
    datasets.Dataset.from_list(rows, features=features()).to_parquet(str(out_dir / "test.parquet"))
    report.written = len(rows)
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("src", type=Path, help="local copy of appledora/DORI-Benchmark")
    parser.add_argument("out", type=Path, help="output folder (test.parquet)")
    parser.add_argument("--skip-bad", action="store_true", help="write the rows that convert; list the others")
    add_map_argument(parser, "dori")
    args = parser.parse_args(argv)
    report = convert(args.src, args.out, skip_bad=args.skip_bad, column_map=args.map)
    print_rejects(report.rejects)
    print(f"{report.rows} rows in {len(report.files)} files; {report.written} written, {len(report.rejects)} rejected")
    return 0 if report.written and (not report.rejects or args.skip_bad) else 1


if __name__ == "__main__":
    sys.exit(main())
