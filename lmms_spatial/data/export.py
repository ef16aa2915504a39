"""``lmms-spatial export BENCHMARK OUT``: a normalised copy as a folder the Hub's dataset viewer shows.

    lmms-spatial export <key> out/copy --demo              # the demo data; or the prepared copy (default),
    hf upload <org>/<name> out/copy --repo-type dataset    # a local copy (--data) or a local release (--release)
    export LMMS_SPATIAL_<NAME>_REPO=<org>/<name>           # the tasks then read it as published

OUT holds, per config and split of the benchmark's hub card, parquet shards
(``<config or data>/<split>-00000-of-0000N.parquet``) with every image embedded as an ``Image``
cell, and ``README.md``: the hub card with ``configs`` / ``dataset_info`` (features, splits,
``num_examples``, ``num_bytes``, sizes) describing exactly what was written, the release's
licence and citation, and where the rows came from (Hub repository and commit). Uploading is
huggingface_hub's job (``hf upload``, formerly ``huggingface-cli upload``); nothing here talks to the Hub.

Sizes are chosen for the viewer. It reads a parquet row group whole and refuses row groups of
about 300 MB and more ("TooBigContentError"), so a row group holds at most
:data:`ROWS_PER_GROUP` rows (a viewer page; ``datasets``' choice for image data up to 4.x) and at most
:data:`GROUP_BYTES` of data: ODI-Bench's panoramas (5 MB on average, up to 18.7K px) get groups
of ~20 rows, OSR-Bench's 1024×512 ones groups of 100. Shards stop at :data:`SHARD_BYTES`, the
size ``push_to_hub`` writes, so an interrupted upload resumes file by file.

The parquet files carry a page index (the viewer can read a few rows without the whole row group),
as ``datasets``' own writer now writes them; its other new defaults (content-defined chunking, image
bytes PLAIN-encoded) were measured worse for rows that share an image (:func:`parquet_options`).

Images over the viewer's limit: the viewer re-encodes every image cell with Pillow at full size, and
Pillow refuses an image of more than :data:`VIEWER_MAX_PIXELS` (178,956,970 px, its
decompression-bomb error), so that row's preview would fail. Such an image is refused in one line
naming the limit and ``--downscale-large-images``; with it (``downscale_large_images=True``) the
image is stored downscaled to fit, aspect ratio kept, re-encoded in its own format, and its original
width and height are kept in an extra column ``<column>_original_size`` (the layout's columns are
unchanged: SPEC section 4 allows extra columns), which the card declares and explains. Refusing is the
default because the copy is what the tasks evaluate: a smaller image is not the release's, so it is
made only when asked for (the known releases never reach the limit: ODI-Bench's largest panoramas are
about 175 MP).

Synthetic data: a copy of fixture data (``--demo``, or a folder ``lmms-spatial fixture`` built, which
holds :data:`~lmms_spatial.data.demo.FIXTURE_MARKER`) says so at the top of its card, and claims no
licence of the release (it is not derived from it).

Licence gate: a release whose licence allows no derivatives (ODI-Bench: cc-by-nc-nd-4.0) is
exported only with ``private=True`` (``--private``), and its card then says the copy must stay private.
Nothing about the Hub repository can be checked here (offline): the command's last lines give the
upload commands that keep it private (``hf repos create ... --private`` first: ``hf upload --private``
does not change a repository that exists), and the viewer's condition for private datasets (PRO or
Enterprise).
"""

from __future__ import annotations

import argparse
import io
import json
import re
import shutil
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lmms_spatial.benchmark import Benchmark

# datasets' row group size for image data up to 4.x (PARQUET_ROW_GROUP_SIZE_FOR_IMAGE_DATASETS; 5.x leaves it to
# MAX_ROW_GROUP_SIZE); the viewer shows 100 rows a page
ROWS_PER_GROUP = 100
GROUP_BYTES = 100 * 1024**2  # datasets.config.MAX_ROW_GROUP_SIZE; the viewer's limit is ~300 MB
SHARD_BYTES = 500 * 1024**2  # datasets.config.MAX_SHARD_SIZE
# Pillow's DecompressionBombError threshold with its default MAX_IMAGE_PIXELS (1024**3 // 4 // 3 = 89,478,485):
# it raises above twice that. The viewer decodes and re-encodes image cells with a default Pillow.
VIEWER_MAX_PIXELS = 2 * (1024**3 // 4 // 3)  # 178,956,970
DOWNSCALE_FLAG = "--downscale-large-images"
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
    synthetic: bool = False  # rows drawn by lmms-spatial's fixture builders, not taken from any release

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
    downscaled: int = 0  # images stored smaller than they were (over the viewer's limit)

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
    if fixture_of(path):
        return Origin(
            how=f"synthetic demo data drawn by lmms-spatial's fixture builder (`tasks/{key}/demo.py`)",
            synthetic=True,
        )
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


def fixture_of(path: Path) -> bool:
    """Whether ``path`` (a folder, or a file in one) was built by ``lmms-spatial fixture`` / the demo."""
    from lmms_spatial.data.demo import FIXTURE_MARKER

    path = Path(path)
    folder = path if path.is_dir() else path.parent
    return (folder / FIXTURE_MARKER).is_file()


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


def original_size_column(column: str) -> str:
    """The extra column holding the original size of ``column``'s downscaled images."""
    return f"{column}_original_size"


def _with_original_sizes(features, images: dict[str, bool]):
    """``features`` plus, per image column, its ``<column>_original_size`` (width, height; null when kept)."""
    import datasets

    out = datasets.Features(features)
    for column, many in images.items():
        size = {"width": datasets.Value("int64"), "height": datasets.Value("int64")}
        out[original_size_column(column)] = [size] if many else size
    return out


def _open_large(data: bytes):
    """Pillow's ``Image.open`` for an image up to 1,000 MP without a warning (the size is checked here)."""
    from PIL import Image

    from lmms_spatial.data.erp_image import ERP_MAX_PIXELS
    from lmms_spatial.data.images import rebound

    bound = rebound(Image._decompression_bomb_check, MAX_IMAGE_PIXELS=ERP_MAX_PIXELS // 2)
    return rebound(Image.open, _decompression_bomb_check=bound)(io.BytesIO(data))


def _downscaled(data: bytes, size: tuple[int, int]) -> bytes:
    """``data`` (an image of ``size``) at the largest size within :data:`VIEWER_MAX_PIXELS`, aspect ratio kept,
    in its own format (JPEG: with its own quantisation tables and subsampling)."""
    from PIL import Image, JpegImagePlugin

    from lmms_spatial.data.erp_image import ResolutionCap
    from lmms_spatial.data.images import load_strictly

    target = ResolutionCap(max_pixels=VIEWER_MAX_PIXELS).target_size(*size)
    with _open_large(data) as image:
        fmt = image.format if image.format in Image.SAVE else "PNG"
        if image.format == "JPEG":
            image.draft(image.mode, target)  # DCT scaling while decoding, never below the target
        load_strictly(image)
        options: dict[str, Any] = {}
        if fmt == "JPEG":
            options = {"qtables": image.quantization, "subsampling": JpegImagePlugin.get_sampling(image)}
            if options["subsampling"] == -1:  # not one Pillow can write: let it choose
                del options["subsampling"]
        work = image if image.mode in {"1", "L", "LA", "RGB", "RGBA", "CMYK", "I", "F"} else image.convert("RGBA")
        small = work.resize(target, Image.Resampling.BICUBIC, reducing_gap=2.0)
    out = io.BytesIO()
    small.save(out, fmt, **options)
    return out.getvalue()


def _embed(
    cell: Any, where: str, base: Path, *, downscale: bool = False
) -> tuple[dict[str, Any] | None, dict[str, int] | None]:
    """An image cell with its bytes (read from its path when it has none) and only a file name as path,
    and the image's original size when it had to be downscaled to fit the viewer (else None).

    An image over :data:`VIEWER_MAX_PIXELS` is refused in one line naming the limit and
    :data:`DOWNSCALE_FLAG`, or (``downscale``) stored downscaled to fit.
    """
    if cell is None:
        return None, None
    data, path = cell.get("bytes"), cell.get("path")
    if data is None and not path:
        raise ExportError(f"{where}: an image with neither bytes nor a path")
    try:
        if data is None:
            file = Path(path) if Path(path).is_absolute() else base / path
            data = file.read_bytes()
    except OSError as exc:
        raise ExportError(f"{where}: {exc}") from None
    try:
        with _open_large(data) as image:
            size = image.size
            image.verify()
    except Exception as exc:  # Pillow: not an image, truncated, over 1,000 MP
        raise ExportError(f"{where}: not a readable image ({type(exc).__name__}: {exc})") from None
    name = Path(path).name if path else None
    if size[0] * size[1] <= VIEWER_MAX_PIXELS:
        return {"bytes": data, "path": name}, None
    if not downscale:
        raise ExportError(
            f"{where}: {size[0]:,} x {size[1]:,} = {size[0] * size[1]:,} pixels, over the dataset viewer's limit of "
            f"{VIEWER_MAX_PIXELS:,} (Pillow's decompression-bomb error), so its preview would fail; pass "
            f"{DOWNSCALE_FLAG} to store it downscaled to fit (its original size kept in the row)"
        )
    return {"bytes": _downscaled(data, size), "path": name}, {"width": size[0], "height": size[1]}


def _rows(
    files: list[Path],
    columns: list[str],
    images: dict[str, bool],
    key: str,
    written: Written,
    *,
    downscale: bool = False,
) -> Iterator[dict[str, Any]]:
    """The rows of ``files`` (only ``columns``), images embedded, one batch in memory at a time.

    With ``downscale``, every row also gets ``<column>_original_size`` per image column (null for an
    image stored as it was); ``written.downscaled`` counts the images stored smaller.
    """
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
                    values = (value or []) if many else [value]
                    cells = [_embed(v, where, path.parent, downscale=downscale) for v in values]
                    row[column] = [c for c, _ in cells] if many else cells[0][0]
                    sizes = [s for _, s in cells]
                    written.downscaled += sum(s is not None for s in sizes)
                    if downscale:
                        row[original_size_column(column)] = sizes if many else sizes[0]
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


def parquet_options() -> dict[str, Any]:
    """pyarrow's writer options: its defaults (snappy, dictionary encoding) plus a page index.

    The page index lets a reader (the viewer's) fetch a few rows without the whole row group. Of what
    ``datasets`` 5's own writer adds, content-defined chunking and PLAIN (no dictionary) image bytes
    were measured worse here: rows sharing an image (OSR-Bench: ~37 questions per panorama; ODI-Bench:
    ~2) are stored once per row group by dictionary encoding, and both options undo that (an OSR-like
    set of 592 rows on 8 PNGs of 1 MB: 20 MB with this, 459 MB with chunking, 599 MB as ``datasets``
    writes it); the page index costs 0.01-1.7 % (demo data: +321 to +1,218 bytes).
    """
    import pyarrow as pa

    return {"write_page_index": True} if int(pa.__version__.split(".")[0]) >= 13 else {}


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
    options = parquet_options()
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
            writer, shard_size = pq.ParquetWriter(str(parts[-1]), schema, **options), 0
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


def upload_commands(repo: str, out: Path | str, *, private: bool) -> list[str]:
    """The ``hf`` commands (huggingface_hub's CLI) that upload ``out`` to ``repo``; private: created private first.

    ``hf upload --private`` only applies to a repository it creates: an existing one keeps its visibility.
    """
    upload = f"hf upload {repo} {out} --repo-type dataset"
    if not private:
        return [upload]
    return [f"hf repos create {repo} --repo-type dataset --private", upload]


PRIVATE_NOTES = (
    "`hf upload --private` is ignored for a repository that exists: an existing public repository stays public "
    "(make it private first: `hf repos settings {repo} --repo-type dataset --private`)",
    "the dataset viewer shows a private dataset only when its owner is a PRO user or an Enterprise Hub "
    "organisation; otherwise the files are there, without a preview",
)


def write_card(
    bench: Benchmark,
    out: Path,
    written: list[Written],
    origin: Origin,
    *,
    private: bool,
    repo_id: str = "",
    features: dict[str, Any] | None = None,
    downscale: bool = False,
) -> Path:
    """``out/README.md``: the hub card describing exactly the files written, and where they came from.

    ``features``: {config: the features written} (default: the card's); ``downscale``: the files carry
    the ``<column>_original_size`` columns of :func:`_rows`.
    """
    from datasets import DatasetInfo, SplitDict, SplitInfo
    from datasets.info import DatasetInfosDict
    from datasets.utils.metadata import MetadataConfigs
    from huggingface_hub import DatasetCard, DatasetCardData

    from lmms_spatial import __version__
    from lmms_spatial.data.cards import card_features, default_config, load_card

    card = load_card(bench.key)
    data = {k: v for k, v in card.data.to_dict().items() if k not in {"configs", "dataset_info"}}
    data["size_categories"] = [_size_category(sum(w.rows for w in written))]
    name = str(card.data.get("pretty_name") or bench.key).split(" (")[0]
    if origin.synthetic:  # drawn by code: no licence of the release, no source data set
        data.pop("license", None)
        data["pretty_name"] = f"{name}: synthetic demo data (lmms-spatial fixture, not the release)"
        data["tags"] = [*(data.get("tags") or []), "synthetic"]
    elif origin.repo:
        data["source_datasets"] = [origin.repo]
    card_data = DatasetCardData(**data)
    features = features or card_features(bench.key)
    configs: dict[str, dict] = {}
    infos = DatasetInfosDict()
    written_configs = list(dict.fromkeys(w.config for w in written))
    default = default_config(bench.key)
    for config in written_configs:
        mine = [w for w in written if w.config == config]
        folder = mine[0].files[0].parent.relative_to(out).as_posix()
        configs[config] = {"data_files": [{"split": w.split, "path": f"{folder}/{w.split}-*.parquet"} for w in mine]}
        if len(written_configs) > 1 and config == default:
            configs[config]["default"] = True  # the viewer opens on it (else on the first name in alphabetical order)
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
    lines = []
    if origin.synthetic:
        lines += [
            f"**Synthetic demo data, not the {name} release.** Every row of this copy was drawn by lmms-spatial's "
            f"fixture builder (`tasks/{bench.key}/demo.py`) to exercise the layout: no image or question "
            "comes from the benchmark, a score on it measures nothing, and no licence of the release applies to it "
            "or is claimed for it. The rest of this card describes the real benchmark's layout and release.",
            "",
        ]
    lines += [
        "## This copy",
        "",
        f"Exported by `lmms-spatial export {bench.key}` (lmms-spatial {__version__}) from {origin.markdown()}.",
        f"Rows: {counts}. Images are embedded in the parquet files; row groups hold at most {ROWS_PER_GROUP} rows "
        f"and {GROUP_BYTES // 1024**2} MB, so the dataset viewer can show every image.",
    ]
    if not origin.synthetic:
        lines += [
            "",
            f"lmms-spatial reads it as published: `export {bench.repo_var}={repo}` (a commit: `{bench.revision_var}`),",
            "then `lmms-eval --tasks ...` as usual; offline, from a copied Hugging Face cache (`HF_HUB_OFFLINE=1`).",
        ]
    if downscale:
        extra = {c for f in features.values() for c in f if c.endswith("_original_size")}
        columns = ", ".join(f"`{c}`" for c in sorted(extra))
        total = sum(w.downscaled for w in written)
        lines += [
            "",
            f"**Downscaled images.** The dataset viewer cannot show an image of more than {VIEWER_MAX_PIXELS:,} "
            f"pixels (Pillow's decompression-bomb limit): {total:,} such image(s) are stored downscaled to fit, aspect "
            f"ratio kept, re-encoded in their own format. {columns} holds each one's original width and height "
            "(null for an image stored as it was). A model reading this copy at full resolution sees them smaller "
            "than in the release.",
        ]
    license_id = str(card.data.license or "")
    if private and not origin.synthetic:
        lines += [
            "",
            f"**Private copy.** The release is licensed `{license_id}`"
            + (", which allows no derivatives to be shared" if no_derivatives(license_id) else "")
            + ": keep this repository private and share it only with those allowed to use the release. "
            f"Create it private before uploading (`{upload_commands(repo, '.', private=True)[0]}`): "
            + "; ".join(note.format(repo=repo) for note in PRIVATE_NOTES)
            + ".",
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
    downscale_large_images: bool = False,
    rows_per_group: int = ROWS_PER_GROUP,
    group_bytes: int = GROUP_BYTES,
    shard_bytes: int = SHARD_BYTES,
) -> list[Written]:
    """Write ``source`` (a normalised copy: folder or parquet file) as a viewer-ready folder ``out``.

    Fixture data (:func:`fixture_of`) is exported as synthetic whatever ``origin`` says, and the
    licence gate does not apply to it (it is no derivative of the release).
    """
    from lmms_spatial.data.cards import card_configs, card_features, load_card
    from lmms_spatial.data.registry import BENCHMARKS
    from lmms_spatial.progress import progress

    bench = BENCHMARKS[key]
    source = Path(source)
    if fixture_of(source) and not origin.synthetic:
        origin = origin_of(source, key)
    license_id = str(load_card(key).data.license or "")
    if no_derivatives(license_id) and not private and not origin.synthetic:
        raise ExportError(
            f"{key}: the release is licensed {license_id} (no derivatives): a converted copy may not be published; "
            "pass --private to export one for a private repository"
        )
    out = Path(out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ExportError(f"{out} exists and is not an empty folder; choose a new OUT")
    configs, features = card_configs(key), card_features(key)
    if downscale_large_images:
        features = {c: _with_original_sizes(f, _image_columns(f)) for c, f in features.items()}
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
                images = _image_columns(card_features(key)[config])
                columns = list(card_features(key)[config])
                split = Written(config, entry["split"])
                total = sum(_count_rows(f) for f in files)
                with progress(total=total, desc=f"export {key} {config}/{split.split}", unit="row") as bar:
                    rows = _rows(files, columns, images, key, split, downscale=downscale_large_images)
                    rows = _counted(rows, bar)
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
        write_card(
            bench, out, written, origin, private=private, repo_id=repo_id, features=features,
            downscale=downscale_large_images,
        )  # fmt: skip
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
    parser.add_argument(
        "--private", action="store_true",
        help="the copy goes to a private repository (the last lines say how to create one; nothing is checked here)",
    )  # fmt: skip
    parser.add_argument(
        DOWNSCALE_FLAG, action="store_true",
        help=f"store an image of more than {VIEWER_MAX_PIXELS:,} pixels (the dataset viewer's limit) downscaled to "
        "fit, its original size in <column>_original_size, instead of refusing it",
    )  # fmt: skip
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
                repo_id=args.repo_id, downscale_large_images=args.downscale_large_images,
                rows_per_group=args.rows_per_group,
            )  # fmt: skip
    except (ExportError, DataUnavailable, MappingError) as exc:
        print(f"lmms-spatial export: {exc}", file=sys.stderr)
        return 1
    from lmms_spatial.data.registry import BENCHMARKS

    bench = BENCHMARKS[args.benchmark]
    repo = args.repo_id or "<org>/<name>"
    for w in written:
        shrunk = f", {w.downscaled} image(s) downscaled to fit the viewer" if w.downscaled else ""
        print(f"{w.config}/{w.split}: {w.rows} rows in {len(w.files)} file(s), row groups {w.row_groups}{shrunk}")
    print(f"wrote {args.out} (README.md: configs, features, counts, licence, origin)")
    print(f"read back: export {bench.repo_var}={repo}")
    commands = upload_commands(repo, args.out, private=args.private)
    if not args.private:
        print(f"upload:    {commands[0]}")
        return 0
    print("upload, private (nothing about the repository can be checked from here, offline):")
    print("\n".join(f"  {c}" for c in commands))
    print("\n".join(f"note: {n.format(repo=repo)}" for n in PRIVATE_NOTES))
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
            from lmms_spatial.data.demo import build_fixture

            self.tmp = Path(tempfile.mkdtemp(prefix="lmms_spatial_export_"))
            build_fixture(key, self.tmp / key)  # marks the folder as synthetic
            return self.tmp / key, origin_of(self.tmp / key, key)
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
    else:  # read as published (a release in the normalised layout, a published copy): the snapshot, downloaded now
        remote = published_benchmark(bench) or bench
        path = fetch_release(remote, revision_of(remote))
    return path, origin_of(path, bench.key)
