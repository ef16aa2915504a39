"""Convert a local copy of the ODI-Bench release into the normalised layout (hub_cards/odi_bench/README.md).

    huggingface-cli download LiuYang66/ODI-Bench --repo-type dataset --local-dir ODI-Bench
    lmms-spatial convert odi_bench ODI-Bench out/odi_bench      # then LMMS_SPATIAL_ODI_PATH=out/odi_bench

The Hub release is an image folder with raw QA files at ``QAs/<task>.jsonl`` (a third-party
loader run on the release reads ``QAs/{existence, counting, ocr, object_attribute, human_attribute,
view_orientation, allocentric, relative, scene_simulation, ODI_reasoning}.jsonl`` and
``images_final/``; hub_cards/odi_bench/README.md). Their key names are not documented, so this
converter accepts the plausible spellings and fails on anything else naming the file, the line
and the field. Assumptions, in one place:

- QA files: ``*.jsonl`` / ``*.json`` in ``QAs/`` (or ``--qa-dir``); a JSON file holds a list
  or ``{"data"|"questions"|"qas": [...]}``. The task comes from a row's ``task`` /
  ``task_type`` / ``category`` / ``type`` when present, else from the file name
  (``object_attribute``, "Object Attribute", ``OA``, ``EVO``, ``relative``, ``allocentric``, ...);
  ``view_orientation`` is the egocentric task only when an ``allocentric`` file sits beside it
  (alone, it could hold both view orientation tasks: its rows then need a task field);
- ``id``: ``id`` / ``qid`` / ``question_id`` / ``qa_id`` / ``idx`` / ``index``, else ``<task>_<line>``;
  ids are prefixed with the task when they are not unique across files;
- image: ``image`` / ``image_path`` / ``img`` / ``img_path`` / ``image_name`` / ``imagename`` /
  ``image_file`` / ``file_name`` / ``filename`` / ``image_id``, resolved as a path relative to the
  folder or the QA file, else by file name, else by file stem (``"indoor_1"`` ->
  ``images_final/indoor_1.jpg``);
- ``question``: ``question`` / ``Question`` / ``query`` / ``prompt``;
- options: a list (``"A. sofa"`` prefixes stripped), a ``{"A": ...}`` mapping, text
  (``"A. x\\nB. y"``), or separate ``A``..``D`` / ``option_A`` / ``choice_a`` keys, from
  ``options`` / ``choices`` / ``candidates`` / ``option``; none for yes/no questions;
- close-ended answer (``answer`` / ``gt`` / ``label`` / ``correct_answer`` / ``ground_truth`` /
  ``answer_close`` / ``close_answer`` / ``gt_answer`` / ``mc_answer`` / ``correct``): a letter (``"B"``,
  ``"(B)"``, ``"B. sofa"``, ``"Option B"``), a 0-based index (1-based when a file's indices
  never use 0 and reach the option count), or the option's text; yes/no questions: yes / no
  / true / false;
- open-ended ground truth (``answer_text`` / ``open_answer`` / ``answer_open`` /
  ``open_ended_answer`` / ``free_answer`` / ``gt_text``), else the correct option's text
  (or Yes / No), which the script reports.

Rows that break an assumption are reported by file, line and field; nothing is written unless
every row converts (``--skip-bad`` writes the good rows and lists the rest). Images are
embedded with their original bytes (no re-encoding); parquet row groups of ``--row-group``
rows keep memory bounded (one group of images in memory at a time).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lmms_spatial.data.column_map import ColumnMap, add_map_argument
from lmms_spatial.data.safe_files import UnsafeFileError, read_image_bytes, resolve_inside
from lmms_spatial.metrics.extraction import LETTERS
from lmms_spatial.metrics.odi_bench import TASKS, normalise_task
from lmms_spatial.progress import progress

# what a release must hold, in the paragraph a release that does not fit is described with
EXPECTED = (
    "a QAs/ folder of per-task *.jsonl / *.json files (question, image, options, answer or correct; e.g. "
    "QAs/existence.jsonl, QAs/allocentric.jsonl) and the ERP images they name (e.g. in images_final/)"
)

ID_KEYS = ("id", "qid", "question_id", "qa_id", "idx", "index")
TASK_KEYS = ("task", "task_type", "category", "type")
IMAGE_KEYS = (
    "image", "image_path", "img", "img_path", "image_name", "imagename", "image_file", "file_name", "filename",
    "image_id",
)  # fmt: skip
QUESTION_KEYS = ("question", "Question", "query", "prompt")
OPTION_KEYS = ("options", "choices", "candidates", "option", "Options", "Choices")
ANSWER_KEYS = (
    "answer", "Answer", "gt", "label", "correct_answer", "ground_truth", "answer_close", "close_answer",
    "gt_answer", "mc_answer", "correct",
)  # fmt: skip
ANSWER_TEXT_KEYS = ("answer_text", "open_answer", "answer_open", "open_ended_answer", "free_answer", "gt_text")
# what a column mapping (--map / LMMS_SPATIAL_ODI_MAP) may name, and what a row needs (the task may
# come from the file name, the options are absent for yes/no questions)
SPELLINGS: dict[str, tuple[str, ...]] = {
    "id": ID_KEYS,
    "image": IMAGE_KEYS,
    "task": TASK_KEYS,
    "question": QUESTION_KEYS,
    "options": OPTION_KEYS,
    "answer": ANSWER_KEYS,
    "answer_text": ANSWER_TEXT_KEYS,
}
REQUIRED = ("image", "question", "answer")
IMAGE_SUFFIXES = {".jpg", ".jpeg", ".png", ".webp", ".bmp", ".tif", ".tiff"}
YES = {"yes", "y", "true", "1"}
NO = {"no", "n", "false", "0"}


class ConversionError(ValueError):
    """Rows that could not be converted; the message lists them by file, line and field."""


@dataclass
class Problem:
    file: str
    line: int
    field: str
    problem: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: field {self.field!r}: {self.problem}"


@dataclass
class Conversion:
    rows: list[dict[str, Any]] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    derived_answer_text: int = 0


class _RowError(Exception):
    def __init__(self, field_name: str, problem: str):
        super().__init__(problem)
        self.field, self.problem = field_name, problem


# ---------------------------------------------------------------------------------------
# reading
# ---------------------------------------------------------------------------------------


def find_qa_dir(source: Path) -> Path:
    for name in ("QAs", "qas", "QA", "qa"):
        if (source / name).is_dir():
            return source / name
    found = sorted(p for p in source.rglob("*") if p.is_dir() and p.name.lower() in {"qas", "qa"})
    if found:
        return found[0]
    raise FileNotFoundError(f"{source}: no QAs/ folder; pass --qa-dir")


def read_qa_file(path: Path) -> Iterator[tuple[int, Any]]:
    """(line number, row) pairs of a .jsonl or .json file."""
    text = path.read_text(encoding="utf-8-sig")
    if path.suffix.lower() == ".jsonl":
        for line_no, line in enumerate(text.splitlines(), 1):
            if line.strip():
                try:
                    yield line_no, json.loads(line)
                except json.JSONDecodeError as exc:
                    raise ConversionError(f"{path}:{line_no}: not valid JSON ({exc})") from exc
        return
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConversionError(f"{path}: not valid JSON ({exc})") from exc
    if isinstance(data, Mapping):
        for key in ("data", "questions", "qas", "items"):
            if isinstance(data.get(key), list):
                data = data[key]
                break
    if not isinstance(data, list):
        raise ConversionError(f"{path}: expected a list of QA rows (or {{'data': [...]}})")
    yield from enumerate(data, 1)


def _first(row: Mapping[str, Any], keys: tuple[str, ...]) -> tuple[str | None, Any]:
    for key in keys:
        if key in row and row[key] is not None and row[key] != "":
            return key, row[key]
    return None, None


class ImageIndex:
    """Image files under the source folder, by relative path, file name and stem."""

    def __init__(self, root: Path):
        self.root = root
        self.by_name: dict[str, list[Path]] = {}
        self.by_stem: dict[str, list[Path]] = {}
        for path in sorted(root.rglob("*")):
            if path.suffix.lower() in IMAGE_SUFFIXES and path.is_file():
                self.by_name.setdefault(path.name.lower(), []).append(path)
                self.by_stem.setdefault(path.stem.lower(), []).append(path)

    def resolve(self, value: Any, qa_file: Path) -> Path:
        text = str(value).strip().replace("\\", "/")
        if not text:
            raise _RowError("image", "empty")
        for base in (self.root, qa_file.parent):
            try:  # "../x", "/abs", links out of the folder (or of a Hub snapshot's blobs): never read
                candidate = resolve_inside(self.root, (base / text).relative_to(self.root))
            except (UnsafeFileError, ValueError):
                raise _RowError("image", f"{text!r} points outside the input folder {str(self.root)!r}") from None
            if candidate.is_file():
                return base / text
        name = Path(text).name.lower()
        for index, key in ((self.by_name, name), (self.by_stem, Path(name).stem), (self.by_stem, name)):
            hits = index.get(key, [])
            if len(hits) == 1:
                return hits[0]
            if len(hits) > 1:
                raise _RowError("image", f"{text!r} matches {len(hits)} files, e.g. {hits[0]} and {hits[1]}")
        raise _RowError("image", f"no image file {text!r} under {self.root}")


# ---------------------------------------------------------------------------------------
# options and answers
# ---------------------------------------------------------------------------------------

_LETTER_PREFIX = re.compile(r"^\s*\(?([A-H])\s*[).:：]\s*")
_TEXT_OPTIONS = re.compile(r"\(?([A-H])\s*[).:：]\s*(.*?)(?=(?:[\n;,]|\s)\s*\(?[A-H]\s*[).:：]|$)", re.DOTALL)
_SEPARATE = re.compile(r"^(?:(?:option|choice)[_ ]?([A-Ha-h])|([A-H]))$", re.IGNORECASE)


def _strip_prefixes(options: list[str]) -> list[str]:
    """Drop "A. " / "(B) " prefixes when every option carries its own letter in order."""
    matches = [_LETTER_PREFIX.match(o) for o in options]
    if all(m and m.group(1) == LETTERS[i] for i, m in enumerate(matches)):
        return [o[m.end() :].strip() for o, m in zip(options, matches, strict=True)]  # type: ignore[union-attr]
    return [o.strip() for o in options]


def parse_options(row: Mapping[str, Any]) -> tuple[str | None, list[str]]:
    """(key used, option texts in letter order); ``[]`` when the row has no options."""
    key, value = _first(row, OPTION_KEYS)
    if value is None:
        separate = {}
        for k, v in row.items():
            m = _SEPARATE.match(str(k))
            if m and (m.group(1) or str(k).isupper()) and v not in (None, ""):
                separate[(m.group(1) or m.group(2)).upper()] = str(v).strip()
        if len(separate) >= 2:
            letters = sorted(separate)
            if "".join(letters) != LETTERS[: len(letters)]:
                raise _RowError("options", f"separate option keys {letters} are not A, B, C, ... in order")
            return "A..", [separate[letter] for letter in letters]
        return None, []
    if isinstance(value, Mapping):
        letters = sorted(str(k).strip().upper() for k in value)
        if "".join(letters) != LETTERS[: len(letters)]:
            raise _RowError(key, f"option keys {sorted(value)} are not A, B, C, ... in order")
        by_letter = {str(k).strip().upper(): str(v).strip() for k, v in value.items()}
        return key, [by_letter[letter] for letter in letters]
    if isinstance(value, (list, tuple)):
        if not all(isinstance(v, (str, int, float)) for v in value):
            raise _RowError(key, f"options must be strings, got {value!r}"[:200])
        return key, _strip_prefixes([str(v) for v in value])
    if isinstance(value, str):
        found = _TEXT_OPTIONS.findall(value)
        if len(found) >= 2 and "".join(letter for letter, _ in found) == LETTERS[: len(found)]:
            return key, [text.strip().rstrip(";,").strip() for _, text in found]
        raise _RowError(key, f"cannot split options text {value[:120]!r} into A., B., ...")
    raise _RowError(key, f"unsupported options value of type {type(value).__name__}")


_ANSWER_LETTER = re.compile(
    r"^\s*(?:option\s+|choice\s+)?\(?([A-Ha-h])\)?\s*(?:[.:：)]\s*(.*))?$", re.DOTALL | re.IGNORECASE
)


def _norm(text: str) -> str:
    return " ".join(re.sub(r"[^\w\s-]", " ", str(text).lower()).split())


def resolve_answer(value: Any, options: list[str], one_based: bool, key: str) -> str:
    """The answer letter from a letter, an index or an option text."""
    n = len(options)
    if isinstance(value, bool):
        raise _RowError(key, f"boolean answer {value!r} for a multiple-choice question")
    if isinstance(value, (int, float)) or (isinstance(value, str) and value.strip().isdigit()):
        index = int(value) - (1 if one_based else 0)
        if 0 <= index < n:
            return LETTERS[index]
        raise _RowError(key, f"answer index {value!r} out of range for {n} options")
    text = str(value).strip()
    match = _ANSWER_LETTER.match(text)
    if match:
        letter = match.group(1).upper()
        rest = (match.group(2) or "").strip()
        # "A" alone, or "B. sofa" whose text matches option B; "a" in lower case only alone
        if letter in LETTERS[:n] and (not rest or _norm(rest) == _norm(options[LETTERS.index(letter)])):
            if match.group(1).isupper() or len(text) <= 3:
                return letter
    hits = [i for i, o in enumerate(options) if _norm(o) == _norm(text)]
    if len(hits) == 1:
        return LETTERS[hits[0]]
    if match and match.group(1).upper() not in LETTERS[:n]:
        raise _RowError(key, f"answer letter {match.group(1)!r} out of range for {n} options")
    raise _RowError(key, f"answer {text[:80]!r} is neither a letter, an index nor the text of one of {n} options")


def _yes_no(value: Any, key: str) -> str:
    if isinstance(value, bool):
        return "Yes" if value else "No"
    text = str(value).strip().strip(".").lower()
    if text in YES:
        return "Yes"
    if text in NO:
        return "No"
    raise _RowError(key, f"a question without options needs a yes/no answer, got {value!r}"[:200])


# ---------------------------------------------------------------------------------------
# conversion
# ---------------------------------------------------------------------------------------


# file names a third-party loader reads from the release (not checked here): see hub_cards/odi_bench
FILE_ALIASES = {"relative": "relative_direction", "allocentric": "allocentric_view_orientation"}


def _file_task(path: Path, stems: set[str]) -> str | None:
    """The task a QA file's name names; ``stems``: the lower-case stems of the QA files beside it."""
    stem = path.stem.lower()
    if stem == "view_orientation":  # both view orientation tasks, unless allocentric has its own file
        return "egocentric_view_orientation" if "allocentric" in stems else None
    try:
        return FILE_ALIASES.get(stem) or normalise_task(path.stem)
    except ValueError:
        return None


def _one_based(rows: list[tuple[int, Any]]) -> bool:
    """A file's integer answers are 1-based when 0 never occurs and some index equals the option count."""
    indices, reaches_n = [], False
    for _line, row in rows:
        if not isinstance(row, Mapping):
            continue
        _key, value = _first(row, ANSWER_KEYS)
        if isinstance(value, bool) or not (
            isinstance(value, int) or (isinstance(value, str) and value.strip().isdigit())
        ):
            continue
        try:
            n = len(parse_options(row)[1])
        except _RowError:
            continue
        indices.append(int(value))
        reaches_n |= n > 0 and int(value) == n
    return bool(indices) and 0 not in indices and reaches_n


def convert_row(row: Any, *, path: Path, line: int, default_task: str | None, images: ImageIndex, one_based: bool):
    if not isinstance(row, Mapping):
        raise _RowError("<row>", f"expected a JSON object, got {type(row).__name__}")
    task_key, task_value = _first(row, TASK_KEYS)
    if task_value is not None:
        try:
            task = normalise_task(task_value)
        except ValueError as exc:
            raise _RowError(task_key, str(exc)) from exc
    elif default_task is not None:
        task = default_task
    elif path.stem.lower() == "view_orientation":
        raise _RowError(
            "task",
            f"no task field, and {path.name!r} may hold both view orientation tasks (egocentric, allocentric) "
            "as no allocentric file sits beside it",
        )
    else:
        raise _RowError("task", f"no task field and the file name {path.name!r} names no ODI-Bench task")
    q_key, question = _first(row, QUESTION_KEYS)
    if question is None:
        raise _RowError("question", f"missing (looked for {', '.join(QUESTION_KEYS)})")
    i_key, image_value = _first(row, IMAGE_KEYS)
    if image_value is None:
        raise _RowError("image", f"missing (looked for {', '.join(IMAGE_KEYS)})")
    image_path = images.resolve(image_value, path)
    _o_key, options = parse_options(row)
    a_key, answer_value = _first(row, ANSWER_KEYS)
    t_key, answer_text = _first(row, ANSWER_TEXT_KEYS)
    if answer_value is None:
        raise _RowError("answer", f"missing (looked for {', '.join(ANSWER_KEYS)})")
    if options:
        if len(options) > len(LETTERS):
            raise _RowError("options", f"{len(options)} options; at most {len(LETTERS)} supported")
        answer = resolve_answer(answer_value, options, one_based, a_key)
        derived = options[LETTERS.index(answer)]
    else:
        answer = _yes_no(answer_value, a_key)
        derived = answer
    id_key, doc_id = _first(row, ID_KEYS)
    return {
        "id": str(doc_id) if doc_id is not None else f"{task}_{line}",
        "task": task,
        "question": str(question).strip(),
        "options": options,
        "answer": answer,
        "answer_text": str(answer_text).strip() if answer_text is not None else str(derived).strip(),
        "_image_path": image_path,
        "_derived": answer_text is None,
    }


def collect(source: Path, qa_dir: Path | None = None, column_map: ColumnMap | None = None) -> Conversion:
    """Read and check every QA row (no image bytes are read here)."""
    source = Path(source)
    qa_dir = Path(qa_dir) if qa_dir else find_qa_dir(source)
    files = sorted(p for p in qa_dir.rglob("*") if p.suffix.lower() in {".jsonl", ".json"} and p.is_file())
    if not files:
        raise FileNotFoundError(f"{qa_dir}: no .jsonl / .json QA files")
    images = ImageIndex(source)
    result = Conversion()
    for path in files:
        rows = [(line, column_map.apply(row) if column_map else row) for line, row in read_qa_file(path)]
        default_task = _file_task(path, {p.stem.lower() for p in files if p.parent == path.parent})
        one_based = _one_based(rows)
        for line, row in rows:
            try:
                converted = convert_row(
                    row, path=path, line=line, default_task=default_task, images=images, one_based=one_based
                )
            except _RowError as exc:
                result.problems.append(Problem(str(path), line, exc.field, exc.problem))
                continue
            result.derived_answer_text += converted.pop("_derived")
            result.rows.append(converted)
    ids = [r["id"] for r in result.rows]
    if len(set(ids)) != len(ids):  # per-file ids: make them unique with the task
        for r in result.rows:
            r["id"] = f"{r['task']}_{r['id']}"
        ids = [r["id"] for r in result.rows]
        dupes = sorted({i for i in ids if ids.count(i) > 1})
        if dupes:
            raise ConversionError(f"duplicate question ids within a task: {dupes[:10]}")
    order = {t: k for k, t in enumerate(TASKS)}
    result.rows.sort(key=lambda r: order[r["task"]])  # stable: file order inside a task
    return result


def write_parquet(
    rows: list[dict[str, Any]], out_dir: Path, rows_per_shard: int = 400, row_group: int = 16, embed_images: bool = True
) -> list[Path]:
    """Write ``test-XXXXX-of-YYYYY.parquet`` shards with the normalised features, images embedded.

    One row group of images is in memory at a time; each image file is read once per row.
    ``embed_images=False`` stores each panorama's path instead (the prepared copy beside a download:
    7 GB of panoramas are not copied).
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    from lmms_spatial.tasks.odi_bench import features as layout

    features = layout()
    schema = features.arrow_schema
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    n_shards = max(1, -(-len(rows) // rows_per_shard))
    written = []
    with progress(total=len(rows), desc="convert odi_bench", unit="row") as bar:
        for shard in range(n_shards):
            path = out_dir / f"test-{shard:05d}-of-{n_shards:05d}.parquet"
            chunk = rows[shard * rows_per_shard : (shard + 1) * rows_per_shard]
            with pq.ParquetWriter(str(path), schema) as writer:
                for start in range(0, len(chunk), row_group):
                    group = chunk[start : start + row_group]
                    columns = {
                        "id": [r["id"] for r in group],
                        "image": [
                            {"bytes": read_image_bytes(r["_image_path"]), "path": r["_image_path"].name}
                            if embed_images
                            else {"bytes": None, "path": str(Path(r["_image_path"]).absolute())}
                            for r in group
                        ],
                        "task": [r["task"] for r in group],
                        "question": [r["question"] for r in group],
                        "options": [r["options"] for r in group],
                        "answer": [r["answer"] for r in group],
                        "answer_text": [r["answer_text"] for r in group],
                    }
                    writer.write_table(pa.Table.from_pydict(columns, schema=schema))
                    bar.update(len(group))
            written.append(path)
    return written


def convert(
    source: Path,
    out_dir: Path,
    *,
    qa_dir: Path | None = None,
    skip_bad: bool = False,
    column_map: ColumnMap | None = None,
    **kw,
) -> Conversion:
    result = collect(source, qa_dir, column_map)
    if result.problems and not skip_bad:
        shown = "\n  ".join(str(p) for p in result.problems[:30])
        more = f"\n  ... and {len(result.problems) - 30} more" if len(result.problems) > 30 else ""
        raise ConversionError(f"{len(result.problems)} QA rows cannot be converted:\n  {shown}{more}")
    if not result.rows:
        raise ConversionError("no QA rows converted")
    write_parquet(result.rows, out_dir, **kw)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("source", type=Path, help="local copy of LiuYang66/ODI-Bench")
    parser.add_argument("out", type=Path, help="output folder for the normalised parquet shards")
    parser.add_argument("--qa-dir", type=Path, help="folder of the QA files (default: <source>/QAs)")
    parser.add_argument("--skip-bad", action="store_true", help="write the good rows, list the bad ones")
    parser.add_argument("--rows-per-shard", type=int, default=400)
    add_map_argument(parser, "odi_bench")
    args = parser.parse_args(argv)
    try:
        result = convert(
            args.source, args.out, qa_dir=args.qa_dir, skip_bad=args.skip_bad, rows_per_shard=args.rows_per_shard,
            column_map=args.map,
        )  # fmt: skip
    except (ConversionError, FileNotFoundError, UnsafeFileError) as exc:
        print(f"convert_odi_bench: {exc}", file=sys.stderr)
        return 1
    counts = {t: sum(r["task"] == t for r in result.rows) for t in TASKS}
    print(f"wrote {len(result.rows)} questions to {args.out}: " + ", ".join(f"{t} {n}" for t, n in counts.items()))
    if result.derived_answer_text:
        print(f"{result.derived_answer_text} rows had no open-ended answer field: answer_text = the correct option")
    for problem in result.problems:
        print(f"skipped {problem}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
