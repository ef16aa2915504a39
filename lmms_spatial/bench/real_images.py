"""``lmms-spatial bench --image-size real``: the demo data with every image at a realistic size.

The embedded demo images are tiny (OSR-Bench panoramas 256 × 128, MMSI-Bench / DORI / MMPerspective
photos 120-192 px), so per-document CPU figures measured on them flatter us: decoding a 1024 × 512
PNG costs far more than decoding a 256 × 128 one. :func:`real_size_data` copies each benchmark's demo
folder with every embedded image re-encoded at the size of :data:`REAL_IMAGE_SIZES`, in its original
format (PNG stays PNG, JPEG stays JPEG, mode kept), and the parquet schema (with its ``datasets``
features metadata) unchanged, so the tasks read the copy through exactly the same code path.

An upscaled drawing is a few flat colours and compresses far better than a photo; mild seeded noise
(:data:`NOISE_LUMA` shared by the channels plus :data:`NOISE_CHROMA` per channel) gives the encoded
files photo-like sizes and decode costs (a 1024 × 512 PNG comes out at about 0.8 MB). The noise is
seeded from the source image's bytes, so equal inputs give byte-identical outputs, and a panorama
embedded in many question rows (OSR-Bench) stays one image repeated, as in the real data.
"""

from __future__ import annotations

import hashlib
import io
import shutil
import statistics
import time
from collections import Counter
from pathlib import Path
from typing import Any

# (width, height) of the re-encoded images per benchmark key, landscape; a portrait source image gets
# the transposed size, a square one the landscape size (the content does not matter here, the pixel
# count and the encoding do). None: the images are kept as they are.
REAL_IMAGE_SIZES: dict[str, tuple[int, int] | None] = {
    # OSR-Bench: 4,100 equirectangular panoramas of 1024 x 512, PNG (`data/<scene>/rgb.png`),
    # per hub_cards/osr_bench/README.md.
    "osr_bench": (1024, 512),
    # ODI-Bench: kept; its 12K ERPs are what the odi_decode phase measures (decode_erp at full size).
    "odi_bench": None,
    # MMSI-Bench: assumption, not measured on the release. Its images are frames of real-scene datasets
    # (e.g. ScanNet colour frames 1296 x 968, Matterport3D 1280 x 1024); ~1.2 MP is taken as typical.
    "mmsi": (1280, 960),
    # DORI: assumption, not measured; natural photos from public detection datasets and rendered
    # scenes, taken as ~1.2 MP like ordinary photos.
    "dori": (1280, 960),
    # MMPerspective: assumption, not measured; ordinary photographs, taken as ~1.2 MP.
    "mmperspective": (1280, 960),
}

NOISE_LUMA = 4  # +-grey levels, the same for all channels of a pixel (sensor-like luminance noise)
NOISE_CHROMA = 2  # +-grey levels, independent per channel
JPEG_QUALITY = 90  # re-encoding quality for JPEG sources (the originals' quality is unknown)
SEED = 0


def _is_image_struct(arrow_type) -> bool:
    """``datasets.Image()`` is stored as ``struct<bytes: binary, path: string>``."""
    import pyarrow as pa

    return pa.types.is_struct(arrow_type) and {arrow_type.field(i).name for i in range(arrow_type.num_fields)} == {
        "bytes",
        "path",
    }


def _image_columns(schema) -> dict[str, bool]:
    """{column: is a list of images} for every image column (``Image()`` or a list of ``Image()``)."""
    import pyarrow as pa

    out = {}
    for field in schema:
        if _is_image_struct(field.type):
            out[field.name] = False
        elif (pa.types.is_list(field.type) or pa.types.is_large_list(field.type)) and _is_image_struct(
            field.type.value_type
        ):
            out[field.name] = True
    return out


def target_size(source: tuple[int, int], size: tuple[int, int]) -> tuple[int, int]:
    """``size`` (landscape) for a landscape or square source, transposed for a portrait one."""
    width, height = max(size), min(size)
    return (height, width) if source[1] > source[0] else (width, height)


def realistic_image(data: bytes, size: tuple[int, int], seed: int = SEED) -> bytes:
    """``data`` (an encoded image) resized to ``size`` with mild noise, re-encoded in its own format."""
    import numpy as np
    from PIL import Image

    with Image.open(io.BytesIO(data)) as source:
        fmt = source.format
        image = source.convert("RGB") if source.mode not in ("RGB", "RGBA", "L") else source.copy()
    image = image.resize(target_size(image.size, size), Image.Resampling.BICUBIC)
    digest = int.from_bytes(hashlib.sha256(data).digest()[:8], "little")
    rng = np.random.default_rng([seed, digest])
    pixels = np.asarray(image, dtype=np.int16)
    if pixels.ndim == 2:
        pixels = pixels[:, :, None]
    colour = pixels.shape[2] - (1 if image.mode == "RGBA" else 0)  # alpha stays untouched
    h, w = pixels.shape[:2]
    noise = rng.integers(-NOISE_LUMA, NOISE_LUMA + 1, size=(h, w, 1), dtype=np.int16)
    noise = noise + rng.integers(-NOISE_CHROMA, NOISE_CHROMA + 1, size=(h, w, colour), dtype=np.int16)
    pixels[:, :, :colour] = np.clip(pixels[:, :, :colour] + noise, 0, 255)
    out = pixels.astype(np.uint8)
    out = Image.fromarray(out[:, :, 0] if image.mode == "L" else out, mode=image.mode)
    buffer = io.BytesIO()
    options = {"quality": JPEG_QUALITY} if fmt == "JPEG" else {}
    out.save(buffer, format=fmt, **options)
    return buffer.getvalue()


class _Stats:
    """What was written: counts, formats, sizes, encoded bytes and decode cost of the distinct images."""

    def __init__(self) -> None:
        self.rows = self.images = 0
        self.formats: Counter = Counter()
        self.source_sizes: Counter = Counter()
        self.sizes: Counter = Counter()
        self.unique: dict[str, bytes] = {}

    def add(self, before: bytes, after: bytes) -> None:
        from PIL import Image

        self.images += 1
        with Image.open(io.BytesIO(before)) as a, Image.open(io.BytesIO(after)) as b:
            self.formats[b.format] += 1
            self.source_sizes["x".join(map(str, a.size))] += 1
            self.sizes["x".join(map(str, b.size))] += 1
        self.unique.setdefault(hashlib.sha256(after).hexdigest(), after)

    def summary(self) -> dict[str, Any]:
        from PIL import Image

        kb = [len(b) / 1024 for b in self.unique.values()]
        decode_ms = []
        for data in self.unique.values():
            start = time.process_time()
            with Image.open(io.BytesIO(data)) as image:
                image.load()
            decode_ms.append(1000 * (time.process_time() - start))
        return {
            "rows": self.rows,
            "images": self.images,
            "distinct_images": len(self.unique),
            "formats": dict(self.formats),
            "source_sizes": dict(self.source_sizes),
            "sizes": dict(self.sizes),
            "mean_image_kb": round(statistics.mean(kb), 1) if kb else None,
            "max_image_kb": round(max(kb), 1) if kb else None,
            "mean_decode_cpu_ms": round(statistics.mean(decode_ms), 2) if decode_ms else None,
        }


def _convert_images(value: Any, size: tuple[int, int] | None, cache: dict[bytes, bytes], stats: _Stats) -> Any:
    """One cell of an image column (``{"bytes", "path"}``) with its image re-encoded (``size`` None: kept)."""
    if value is None or value.get("bytes") is None:  # not embedded (a path only): left as it is
        return value
    data = value["bytes"]
    if size is None:
        new = data
    else:
        key = hashlib.sha256(data).digest()
        if key not in cache:
            cache[key] = realistic_image(data, size)
        new = cache[key]
    stats.add(data, new)
    return {**value, "bytes": new}


def copy_parquet(src: Path, dst: Path, size: tuple[int, int] | None, cache: dict | None = None,
                 stats: _Stats | None = None) -> _Stats:  # fmt: skip
    """Write ``src`` to ``dst`` with every embedded image at ``size``; same schema (metadata included)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    cache = {} if cache is None else cache
    stats = _Stats() if stats is None else stats
    table = pq.read_table(src)
    image_columns = _image_columns(table.schema)
    columns = []
    for field, column in zip(table.schema, table.columns, strict=True):
        is_list = image_columns.get(field.name)
        if is_list is None:
            columns.append(column)
            continue
        values = column.to_pylist()
        if is_list:
            new = [None if cell is None else [_convert_images(v, size, cache, stats) for v in cell] for cell in values]
        else:
            new = [_convert_images(v, size, cache, stats) for v in values]
        columns.append(pa.chunked_array([pa.array(new, type=field.type)]))
    out = pa.Table.from_arrays(columns, schema=table.schema)
    dst.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(out, dst)
    stats.rows += table.num_rows
    return stats


def copy_folder(src: Path, dst: Path, size: tuple[int, int] | None) -> dict[str, Any]:
    """Mirror ``src`` (a dataset folder or one parquet file) into ``dst``, images re-encoded at ``size``."""
    src, dst = Path(src), Path(dst)
    start = time.perf_counter()
    cache: dict[bytes, bytes] = {}
    stats = _Stats()
    files = [src] if src.is_file() else sorted(p for p in src.rglob("*") if p.is_file())
    parquets = 0
    for path in files:
        target = dst / path.name if src.is_file() else dst / path.relative_to(src)
        if path.suffix == ".parquet":
            copy_parquet(path, target, size, cache, stats)
            parquets += 1
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, target)
    info = {"size": list(size) if size else None, "parquet_files": parquets, **stats.summary()}
    info["build_s"] = round(time.perf_counter() - start, 2)
    return info


def real_size_data(env: dict[str, str], out: Path, sizes: dict[str, tuple[int, int] | None] | None = None,
                   only: set[str] | None = None):  # fmt: skip
    """Copy every benchmark folder of ``env`` ({env var: folder}, as ``build_demo_data`` returns) with its
    images at ``sizes`` (default :data:`REAL_IMAGE_SIZES`) into ``out/<key>``.

    Returns ({env var: folder to use}, {benchmark key: what was written}); a benchmark whose size is None,
    that ``sizes`` does not name, or that is not in ``only`` (benchmark keys; None: all) keeps its folder
    and is reported with ``"size": None, "kept": True``."""
    from lmms_spatial.data.sources import BENCHMARKS

    sizes = REAL_IMAGE_SIZES if sizes is None else sizes
    key_of = {b.env_var: key for key, b in BENCHMARKS.items()}
    new_env, report = {}, {}
    for var, folder in env.items():
        key = key_of.get(var, var)
        size = sizes.get(key) if only is None or key in only else None
        if size is None:
            new_env[var] = folder
            report[key] = {"size": None, "kept": True, **inventory({var: folder})[key]}
            continue
        target = Path(out) / key
        if target.exists():
            shutil.rmtree(target)
        report[key] = copy_folder(Path(folder), target, size)
        new_env[var] = str(target if Path(folder).is_dir() else target / Path(folder).name)
    return new_env, report


def inventory(env: dict[str, str]) -> dict[str, dict[str, Any]]:
    """Image formats and sizes of the folders of ``env`` as they are (nothing written)."""
    import pyarrow.parquet as pq

    from lmms_spatial.data.sources import BENCHMARKS

    key_of = {b.env_var: key for key, b in BENCHMARKS.items()}
    report = {}
    for var, folder in env.items():
        folder = Path(folder)
        stats = _Stats()
        for path in [folder] if folder.is_file() else sorted(folder.rglob("*.parquet")):
            table = pq.read_table(path)
            stats.rows += table.num_rows
            for name, is_list in _image_columns(table.schema).items():
                for cell in table.column(name).to_pylist():
                    for value in (cell or []) if is_list else [cell]:
                        if value is not None and value.get("bytes") is not None:
                            stats.add(value["bytes"], value["bytes"])
        report[key_of.get(var, var)] = {"size": None, "folder": str(folder), **stats.summary()}
    return report
