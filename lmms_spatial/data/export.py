"""``lmms-spatial export BENCHMARK OUT``: a normalised copy as a folder the Hub's dataset viewer shows.

    lmms-spatial export osr_bench out/osr --demo           # the demo data; or the prepared copy (default),
    hf upload <org>/osr-bench out/osr --repo-type dataset  # a local copy (--data) or a local release (--release)
    export LMMS_SPATIAL_OSR_REPO=<org>/osr-bench           # the tasks then read it as published

OUT holds, per config and split of the benchmark's hub card, parquet shards
(``<config or data>/<split>-00000-of-0000N.parquet``) with every image embedded as an ``Image``
cell, and ``README.md``: the hub card with ``configs`` / ``dataset_info`` (features, splits,
``num_examples``, ``num_bytes``, sizes) describing exactly what was written, the release's
licence and citation, and where the rows came from (Hub repository and commit). Uploading is
huggingface_hub's job (``hf upload``, formerly ``huggingface-cli upload``); nothing here talks to the Hub.

Sizes are chosen for the viewer. It reads a parquet row group whole and refuses row groups of
about 300 MB and more ("TooBigContentError"), so a row group holds at most
:data:`ROWS_PER_GROUP` rows (``datasets``' own choice for image data) and at most
:data:`GROUP_BYTES` of data: ODI-Bench's panoramas (5 MB on average, up to 18.7K px) get groups
of ~20 rows, OSR-Bench's 1024×512 ones groups of 100. Shards stop at :data:`SHARD_BYTES`, the
size ``push_to_hub`` writes, so an interrupted upload resumes file by file.

Licence gate: a release whose licence allows no derivatives (ODI-Bench: cc-by-nc-nd-4.0) is
exported only with ``private=True`` (``--private``), and its card then says the copy must stay private.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lmms_spatial.data.benchmark import Benchmark

ROWS_PER_GROUP = 100  # datasets' row group size for image datasets (push_to_hub)
GROUP_BYTES = 100 * 1024**2  # datasets.config.MAX_ROW_GROUP_SIZE; the viewer's limit is ~300 MB
SHARD_BYTES = 500 * 1024**2  # datasets.config.MAX_SHARD_SIZE
SIZE_CATEGORIES = ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M"))


class ExportError(RuntimeError):
    """An export that cannot be made as asked; the message is one line."""


@dataclass(frozen=True)
class Origin:
    """Where the exported rows came from: a Hub release (repository, revision, commit) and how."""

    repo: str = ""
    revision: str = ""
    commit: str = ""
    how: str = ""

    def markdown(self) -> str:
        if not self.repo:
            return self.how
        where = f"[`{self.repo}`](https://huggingface.co/datasets/{self.repo})"
        if self.commit:
            where += f" at commit `{self.commit}`"
        if self.revision and self.revision != self.commit:
            where += f" (revision `{self.revision}`)"
        return where + (f", {self.how}" if self.how else "")


@dataclass
class Written:
    """One config's split as written: its files, rows, row groups and sizes."""

    config: str
    split: str
    files: list[Path] = field(default_factory=list)
    rows: int = 0
    num_bytes: int = 0  # arrow (in-memory) size, as push_to_hub reports it
    row_groups: list[int] = field(default_factory=list)

    @property
    def download_size(self) -> int:
        return sum(f.stat().st_size for f in self.files)


def no_derivatives(license_id: str) -> bool:
    """Whether a licence id forbids sharing adapted material (Creative Commons ``-nd``)."""
    return bool(re.search(r"(^|-)nd(-|$)", str(license_id).lower()))


# ---------------------------------------------------------------------------------------
# where the rows come from
# ---------------------------------------------------------------------------------------


def origin_of(path: Path, key: str) -> Origin:
    """The Hub release a normalised copy was made from: the prepared copy's marker, or a cache snapshot."""
    from lmms_spatial.data.prepare import MARKER

    path = Path(path).absolute()
    for folder in (path, *path.parents):
        marker = folder / MARKER
        if marker.is_file():
            m = json.loads(marker.read_text())
            how = f"converted by lmms-spatial's `{key}` converter"
            how += f" with the column mapping `{m['map']}`" if m.get("map") else ""
            return Origin(m.get("hub_id", ""), m.get("revision", ""), m.get("commit", ""), how)
        if folder.parent.name == "snapshots" and folder.parent.parent.name.startswith("datasets--"):
            repo = folder.parent.parent.name.removeprefix("datasets--").replace("--", "/", 1)
            return Origin(repo, "", folder.name, "")
    return Origin(how=f"a local copy (`{path.name}`) whose origin was not recorded")


def parse_origin(text: str, how: str = "") -> Origin:
    """``REPO[@COMMIT]`` given by the user (``--origin``)."""
    repo, _, commit = text.strip().partition("@")
    if not re.fullmatch(r"[\w.-]+/[\w.-]+", repo):
        raise ExportError(f"--origin {text!r}: expected <org>/<name>[@<commit>]")
    return Origin(repo, commit, commit, how)


def _input_files(folder: Path, patterns: list[str], single_config: bool) -> list[Path]:
    """The parquet files of one config's split: the card's patterns, else (one config) every parquet file."""
    import fnmatch

    parquet = sorted(p for p in folder.rglob("*.parquet") if p.is_file() and not p.name.startswith("."))
    found = [p for p in parquet if any(fnmatch.fnmatch(p.relative_to(folder).as_posix(), pat) for pat in patterns)]
    return found or (parquet if single_config else [])


# ---------------------------------------------------------------------------------------
# writing
# ---------------------------------------------------------------------------------------


def _image_columns(features) -> dict[str, bool]:
    """{column: holds a list of images} for the features' image columns."""
    import datasets

    out = {}
    for name, feature in features.items():
        if isinstance(feature, datasets.Image):
            out[name] = False
        elif isinstance(getattr(feature, "feature", None), datasets.Image):
            out[name] = True
    return out


def _embed(cell: Any, where: str, base: Path) -> dict[str, Any] | None:
    """An image cell with its bytes (read from its path when it has none) and only a file name as path."""
    from lmms_spatial.data.safe_files import UnsafeFileError, check_image_bytes, read_image_bytes

    if cell is None:
        return None
    data, path = cell.get("bytes"), cell.get("path")
    try:
        if data is not None:
            data = check_image_bytes(data, "the embedded image")
        elif path:
            file = Path(path) if Path(path).is_absolute() else base / path
            data = read_image_bytes(file)
        else:
            raise ExportError(f"{where}: an image with neither bytes nor a path")
    except (OSError, UnsafeFileError) as exc:
        raise ExportError(f"{where}: {exc}") from None
    return {"bytes": data, "path": Path(path).name if path else None}


def _rows(files: list[Path], columns: list[str], images: dict[str, bool], key: str) -> Iterator[dict[str, Any]]:
    """The rows of ``files`` (only ``columns``), images embedded, one batch in memory at a time."""
    import pyarrow.parquet as pq

    for path in files:
        have = pq.read_schema(path).names
        missing = [c for c in columns if c not in have]
        if missing:
            raise ExportError(f"{path}: lacks column(s) {missing} of the {key} layout (hub_cards/{key}/README.md)")
        for batch in pq.ParquetFile(path).iter_batches(batch_size=ROWS_PER_GROUP, columns=columns):
            for row in batch.to_pylist():
                for column, many in images.items():
                    where = f"{path.name}: document {row.get('id')!r}, field {column!r}"
                    value = row[column]
                    row[column] = (
                        [_embed(v, where, path.parent) for v in value or []]
                        if many
                        else _embed(value, where, path.parent)
                    )
                yield row


def _row_bytes(row: dict[str, Any]) -> int:
    """A row's approximate size: its image bytes and text (what makes a row group large)."""
    total = 0
    for value in row.values():
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, dict):
                total += len(item.get("bytes") or b"")
            elif isinstance(item, str):
                total += len(item)
            else:
                total += 8
    return total


def write_split(
    rows: Iterator[dict[str, Any]],
    features,
    folder: Path,
    written: Written,
    *,
    rows_per_group: int = ROWS_PER_GROUP,
    group_bytes: int = GROUP_BYTES,
    shard_bytes: int = SHARD_BYTES,
) -> None:
    """``rows`` as ``<split>-XXXXX-of-YYYYY.parquet`` shards in ``folder``, row groups bounded in rows and bytes."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = features.arrow_schema  # carries the features (datasets reads Image columns back as images)
    folder.mkdir(parents=True, exist_ok=True)
    parts: list[Path] = []
    writer: pq.ParquetWriter | None = None
    shard_size = 0

    def flush(group: list[dict[str, Any]]) -> None:
        nonlocal writer, shard_size
        try:
            table = pa.Table.from_pylist(group, schema=schema)
        except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
            raise ExportError(
                f"{written.config}/{written.split}: a row does not fit the card's features ({exc})"
            ) from None
        if writer is not None and shard_size + table.nbytes > shard_bytes:
            writer.close()
            writer = None
        if writer is None:
            parts.append(folder / f".{written.split}-{len(parts):05d}.parquet")
            writer, shard_size = pq.ParquetWriter(str(parts[-1]), schema), 0
        writer.write_table(table, row_group_size=table.num_rows)  # one row group per call
        shard_size += table.nbytes
        written.rows += table.num_rows
        written.num_bytes += table.nbytes
        written.row_groups.append(table.num_rows)

    group: list[dict[str, Any]] = []
    size = 0
    for row in rows:
        row_size = _row_bytes(row)
        if group and (len(group) >= rows_per_group or size + row_size > group_bytes):
            flush(group)
            group, size = [], 0
        group.append(row)
        size += row_size
    if group:
        flush(group)
    if writer is not None:
        writer.close()
    if not parts:
        raise ExportError(f"{written.config}/{written.split}: no rows to export")
    for n, part in enumerate(parts):
        final = folder / f"{written.split}-{n:05d}-of-{len(parts):05d}.parquet"
        part.rename(final)
        written.files.append(final)


# ---------------------------------------------------------------------------------------
# the card
# ---------------------------------------------------------------------------------------


def _size_category(rows: int) -> str:
    return next((name for limit, name in SIZE_CATEGORIES if rows < limit), "1M<n<10M")


def write_card(
    bench: Benchmark, out: Path, written: list[Written], origin: Origin, *, private: bool, repo_id: str = ""
) -> Path:
    """``out/README.md``: the hub card describing exactly the files written, and where they came from."""
    from datasets import DatasetInfo, SplitDict, SplitInfo
    from datasets.info import DatasetInfosDict
    from datasets.utils.metadata import MetadataConfigs
    from huggingface_hub import DatasetCard, DatasetCardData

    from lmms_spatial import __version__
    from lmms_spatial.data.cards import card_features, load_card

    card = load_card(bench.key)
    data = {k: v for k, v in card.data.to_dict().items() if k not in {"configs", "dataset_info"}}
    data["size_categories"] = [_size_category(sum(w.rows for w in written))]
    if origin.repo:
        data["source_datasets"] = [origin.repo]
    card_data = DatasetCardData(**data)
    features = card_features(bench.key)
    configs: dict[str, dict] = {}
    infos = DatasetInfosDict()
    for config in dict.fromkeys(w.config for w in written):
        mine = [w for w in written if w.config == config]
        folder = mine[0].files[0].parent.relative_to(out).as_posix()
        configs[config] = {"data_files": [{"split": w.split, "path": f"{folder}/{w.split}-*.parquet"} for w in mine]}
        splits = SplitDict()
        for w in mine:
            splits.add(SplitInfo(name=w.split, num_bytes=w.num_bytes, num_examples=w.rows))
        infos[config] = DatasetInfo(
            features=features[config],
            splits=splits,
            download_size=sum(w.download_size for w in mine),
            dataset_size=sum(w.num_bytes for w in mine),
            config_name=config,
        )
    MetadataConfigs(configs).to_dataset_card_data(card_data)
    infos.to_dataset_card_data(card_data)

    repo = repo_id or "<org>/<name>"
    counts = ", ".join(f"`{w.config}` {w.split} {w.rows:,}" for w in written)
    lines = [
        "## This copy",
        "",
        f"Exported by `lmms-spatial export {bench.key}` (lmms-spatial {__version__}) from {origin.markdown()}.",
        f"Rows: {counts}. Images are embedded in the parquet files; row groups hold at most {ROWS_PER_GROUP} rows "
        f"and {GROUP_BYTES // 1024**2} MB, so the dataset viewer can show every image.",
        "",
        f"lmms-spatial reads it as published: `export {bench.repo_var}={repo}` (a commit: `{bench.revision_var}`),",
        "then `lmms-eval --tasks ...` as usual; offline, from a copied Hugging Face cache (`HF_HUB_OFFLINE=1`).",
    ]
    license_id = str(card.data.license or "")
    if private:
        lines += [
            "",
            f"**Private copy.** The release is licensed `{license_id}`"
            + (", which allows no derivatives to be shared" if no_derivatives(license_id) else "")
            + ": keep this repository private (`hf upload ... --private`) and share it only with those allowed to use"
            " the release.",
        ]
    body = card.text.lstrip("\n")
    heading, _, rest = body.partition("\n")
    text = f"---\n{card_data.to_yaml()}\n---\n\n{heading}\n\n" + "\n".join(lines) + "\n" + rest
    path = out / "README.md"
    DatasetCard(text).save(path)
    return path


# ---------------------------------------------------------------------------------------
# the whole export
# ---------------------------------------------------------------------------------------


def export(
    key: str,
    out: Path,
    *,
    source: Path,
    origin: Origin,
    private: bool = False,
    repo_id: str = "",
    rows_per_group: int = ROWS_PER_GROUP,
    group_bytes: int = GROUP_BYTES,
    shard_bytes: int = SHARD_BYTES,
) -> list[Written]:
    """Write ``source`` (a normalised copy: folder or parquet file) as a viewer-ready folder ``out``."""
    from lmms_spatial.data.cards import card_configs, card_features, load_card
    from lmms_spatial.data.registry import BENCHMARKS
    from lmms_spatial.progress import progress

    bench = BENCHMARKS[key]
    license_id = str(load_card(key).data.license or "")
    if no_derivatives(license_id) and not private:
        raise ExportError(
            f"{key}: the release is licensed {license_id} (no derivatives): a converted copy may not be published; "
            "pass --private to export one for a private repository"
        )
    out = Path(out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ExportError(f"{out} exists and is not an empty folder; choose a new OUT")
    source = Path(source)
    configs, features = card_configs(key), card_features(key)
    if source.is_file() and len(configs) > 1:
        raise ExportError(f"{source}: {key} has configs {', '.join(configs)}; give the folder that holds them all")
    out.absolute().parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.absolute().parent))  # renamed to out when done
    try:
        written: list[Written] = []
        for config, entries in configs.items():
            folder = work / (config if len(configs) > 1 else "data")
            for entry in entries:
                patterns = entry["path"] if isinstance(entry["path"], list) else [entry["path"]]
                files = [source] if source.is_file() else _input_files(source, patterns, len(configs) == 1)
                if not files:
                    raise ExportError(f"{source}: no parquet file for config {config!r} ({', '.join(patterns)})")
                columns = list(features[config])
                split = Written(config, entry["split"])
                total = sum(_count_rows(f) for f in files)
                with progress(total=total, desc=f"export {key} {config}/{split.split}", unit="row") as bar:
                    rows = _counted(_rows(files, columns, _image_columns(features[config]), key), bar)
                    write_split(
                        rows, features[config], folder, split,
                        rows_per_group=rows_per_group, group_bytes=group_bytes, shard_bytes=shard_bytes,
                    )  # fmt: skip
                written.append(split)
        if out.exists():
            out.rmdir()
        work.rename(out)
        for w in written:  # now under out/
            w.files = [out / f.relative_to(work) for f in w.files]
        write_card(bench, out, written, origin, private=private, repo_id=repo_id)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return written


def _count_rows(path: Path) -> int:
    import pyarrow.parquet as pq

    return pq.ParquetFile(path).metadata.num_rows


def _counted(rows: Iterator[dict[str, Any]], bar: Any) -> Iterator[dict[str, Any]]:
    for row in rows:
        yield row
        bar.update(1)


# ---------------------------------------------------------------------------------------
# the command line
# ---------------------------------------------------------------------------------------


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from lmms_spatial.data.registry import BENCHMARKS

    parser.add_argument("benchmark", choices=sorted(BENCHMARKS))
    parser.add_argument("out", type=Path, help="the folder to write (new or empty)")
    what = parser.add_mutually_exclusive_group()
    what.add_argument("--demo", action="store_true", help="export the demo data (synthetic, a few rows)")
    what.add_argument("--data", type=Path, help="a normalised copy: a folder of parquet files or one file")
    what.add_argument("--release", type=Path, help="a local copy of the release, converted first")
    parser.add_argument("--map", default="", metavar="FIELD=COLUMN,...", help="with --release: renamed columns")
    parser.add_argument("--private", action="store_true", help="the copy goes to a private repository")
    parser.add_argument("--repo-id", default="", help="the repository you will upload to (named in the card)")
    parser.add_argument("--origin", default="", help="REPO[@COMMIT] the data came from, if not recorded with it")
    parser.add_argument("--rows-per-group", type=int, default=ROWS_PER_GROUP, help=argparse.SUPPRESS)


def main_args(args: argparse.Namespace) -> int:
    from lmms_spatial.data.column_map import MappingError
    from lmms_spatial.data.sources import DataUnavailable

    try:
        with _source(args) as (source, origin):
            if args.origin:
                origin = parse_origin(args.origin, origin.how if not origin.repo else "")
            written = export(
                args.benchmark, args.out, source=source, origin=origin, private=args.private,
                repo_id=args.repo_id, rows_per_group=args.rows_per_group,
            )  # fmt: skip
    except (ExportError, DataUnavailable, MappingError) as exc:
        print(f"lmms-spatial export: {exc}", file=sys.stderr)
        return 1
    from lmms_spatial.data.registry import BENCHMARKS

    bench = BENCHMARKS[args.benchmark]
    repo = args.repo_id or "<org>/<name>"
    for w in written:
        print(f"{w.config}/{w.split}: {w.rows} rows in {len(w.files)} file(s), row groups {w.row_groups}")
    print(f"wrote {args.out} (README.md: configs, features, counts, licence, origin)")
    print(f"upload:    hf upload {repo} {args.out} --repo-type dataset" + (" --private" if args.private else ""))
    print(f"read back: export {bench.repo_var}={repo}")
    return 0


class _source:
    """The normalised copy to export (and its origin), made in a temporary folder when needed."""

    def __init__(self, args: argparse.Namespace):
        self.args = args
        self.tmp: Path | None = None

    def __enter__(self) -> tuple[Path, Origin]:
        from lmms_spatial.data.registry import BENCHMARKS

        args, key = self.args, self.args.benchmark
        bench = BENCHMARKS[key]
        if args.map and not args.release:
            raise ExportError("--map applies to --release (a release converted now)")
        if args.data:
            if not args.data.exists():
                raise ExportError(f"--data {args.data}: no such file or directory")
            return args.data, origin_of(args.data, key)
        if args.demo:
            import datasets

            from lmms_spatial.data.demo import DEMO_BENCHMARKS

            datasets.disable_progress_bars()
            self.tmp = Path(tempfile.mkdtemp(prefix="lmms_spatial_export_"))
            DEMO_BENCHMARKS[key][0](self.tmp / key)
            return self.tmp / key, Origin(how="synthetic demo data drawn by lmms-spatial's fixture builder")
        if args.release:
            return self._converted(bench, args.release, args.map)
        return _prepared(bench)

    def _converted(self, bench: Benchmark, release: Path, mapping: str) -> tuple[Path, Origin]:
        from lmms_spatial.data.column_map import map_hint, parse
        from lmms_spatial.data.convert import ReleaseMismatch, convert_release

        if bench.hub_is_normalised or not bench.converter:
            raise ExportError(
                f"{bench.key}: --release needs a converter that reads a release folder; convert it with "
                f"`lmms-spatial convert {bench.key} ...`, then export with --data OUT"
            )
        column_map = parse(bench.converter, mapping)
        self.tmp = Path(tempfile.mkdtemp(prefix="lmms_spatial_export_"))
        try:
            convert_release(bench.converter, release, self.tmp / "data", column_map)
        except ReleaseMismatch as exc:
            raise ExportError(f"{release}: {exc}{map_hint(bench, release, column_map)}") from None
        found = origin_of(release, bench.key)
        how = f"converted by lmms-spatial's `{bench.converter}` converter"
        how += f" with the column mapping `{column_map.text}`" if column_map else ""
        if not found.repo:
            return self.tmp / "data", Origin(how=f"{how} from a local copy of the release")
        return self.tmp / "data", Origin(found.repo, found.revision, found.commit, how)

    def __exit__(self, *exc: object) -> None:
        if self.tmp is not None:
            shutil.rmtree(self.tmp, ignore_errors=True)


def _prepared(bench: Benchmark) -> tuple[Path, Origin]:
    """What the tasks would read now (a local copy, a published copy, the prepared release), as a local path."""
    from lmms_spatial.data.prepare import fetch_release, revision_of
    from lmms_spatial.data.published import published_benchmark
    from lmms_spatial.data.sources import dataset_source

    source = dataset_source(bench.key)
    if source.local and "data_files" in source.kwargs:  # one file
        path = Path(next(iter(source.kwargs["data_files"].values())))
    elif source.local:
        path = Path(source.path)
    else:  # read as published (MMSI-Bench, a published copy): the snapshot, downloaded now
        remote = published_benchmark(bench) or bench
        path = fetch_release(remote, revision_of(remote))
    return path, origin_of(path, bench.key)
