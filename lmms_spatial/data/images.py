"""Decode dataset images, failing loudly with the document id and field on bad input."""

from __future__ import annotations

import copy
import hashlib
import io
import threading
import types
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

from PIL import Image, ImageFile


class BadDocumentError(ValueError):
    """A dataset row that cannot be used: the message names the document and the field."""

    def __init__(self, doc_id: Any, field: str, problem: str):
        super().__init__(f"document {doc_id!r}, field {field!r}: {problem}")
        self.doc_id, self.field, self.problem = doc_id, field, problem


def doc_id_of(doc: Mapping[str, Any]) -> Any:
    return doc.get("id", doc.get("question_id", "<no id>"))


def require(doc: Mapping[str, Any], field: str) -> Any:
    """``doc[field]``, or a :class:`BadDocumentError` naming the document if it is missing."""
    if field not in doc or doc[field] is None:
        raise BadDocumentError(doc_id_of(doc), field, "missing")
    return doc[field]


def rebound(function: types.FunctionType, **overrides: Any) -> types.FunctionType:
    """``function`` bound to a private copy of its module globals, with ``overrides`` in it.

    A Pillow setting that is a module global (``LOAD_TRUNCATED_IMAGES``, ``MAX_IMAGE_PIXELS``)
    changed for our calls only: flipping the global itself is not thread-safe (decoding runs in
    worker threads, next to lmms-eval's own) and would change it for everyone else.
    """
    copy_ = types.FunctionType(
        function.__code__, {**function.__globals__, **overrides}, function.__name__, function.__defaults__,
        function.__closure__,
    )  # fmt: skip
    copy_.__kwdefaults__ = function.__kwdefaults__
    return copy_


# lmms-eval sets ``ImageFile.LOAD_TRUNCATED_IMAGES = True`` process-wide (``api/task.py``), which
# makes Pillow pad a truncated image with grey and say nothing: our loads read it as False.
_STRICT_LOAD = rebound(ImageFile.ImageFile.load, LOAD_TRUNCATED_IMAGES=False)


def load_strictly(image: Image.Image) -> None:
    """Decode ``image`` in place; raise ``OSError`` if its data is truncated, whatever the global flag says.

    JPEG's plugin reads the global flag itself and, at a premature end, fakes an end marker and
    sets ``_ended``: that mark is checked too.
    """
    if isinstance(image, ImageFile.ImageFile):
        _STRICT_LOAD(image)
        if getattr(image, "_ended", False):
            raise OSError("image file is truncated (JPEG data ends before its end marker)")
    else:
        image.load()


def load_image(value: Any, *, doc_id: Any, field: str) -> Image.Image:
    """An RGB PIL image from a PIL image, raw bytes, a ``{"bytes", "path"}`` dict or a path.

    Images may arrive decoded (``datasets.Image`` features) or as raw bytes (parquet
    without features); both are accepted.
    """
    try:
        if isinstance(value, Image.Image):
            image = value
        elif isinstance(value, (bytes, bytearray, memoryview)):
            image = Image.open(io.BytesIO(bytes(value)))
        elif isinstance(value, Mapping):
            if value.get("bytes"):
                image = Image.open(io.BytesIO(value["bytes"]))
            elif value.get("path"):
                image = Image.open(value["path"])
            else:
                raise ValueError("image dict has neither bytes nor path")
        elif isinstance(value, str):
            image = Image.open(value)
        else:
            raise TypeError(f"unsupported image value of type {type(value).__name__}")
        if image is value:  # handed in as a PIL image: decoded (or not) by whoever made it
            image.load()
        else:
            load_strictly(image)
    except BadDocumentError:
        raise
    except Exception as exc:
        raise BadDocumentError(doc_id, field, f"cannot decode image ({exc})") from exc
    return image if image.mode == "RGB" else image.convert("RGB")


def _without_decoding(feature: Any) -> Any:
    import datasets

    if isinstance(feature, datasets.Image):
        return datasets.Image(mode=feature.mode, decode=False) if feature.decode else feature
    if isinstance(feature, datasets.Sequence):
        return datasets.Sequence(_without_decoding(feature.feature), length=feature.length)
    if isinstance(feature, datasets.List):
        return datasets.List(_without_decoding(feature.feature), length=feature.length)
    if isinstance(feature, list) and len(feature) == 1:
        return [_without_decoding(feature[0])]
    return feature


def undecoded(dataset, column: str = "image"):
    """The dataset with the ``Image()`` feature(s) of ``column`` set to ``decode=False``.

    Rows then carry ``{bytes, path}`` and only ``doc_to_visual`` decodes, once per request:
    a decoding column is decoded on every row read (the first image of a list even twice, by
    ``datasets`` 5.2). A schema change, no data is rewritten: the arrow storage is the same.
    """
    import datasets

    feature = dataset.features.get(column)
    plain = _without_decoding(feature)
    if plain == feature:
        return dataset
    if isinstance(plain, datasets.Image):
        return dataset.cast_column(column, plain)
    # a list of images: ``cast_column`` would rewrite every image byte through ``map``; the
    # storage is the same, so the same arrow table is re-wrapped with the new features instead
    info = copy.deepcopy(dataset.info)
    info.features[column] = plain
    fingerprint = hashlib.sha256(f"{dataset._fingerprint}:undecoded:{column}".encode()).hexdigest()[:16]
    return datasets.Dataset(
        dataset.data, info=info, split=dataset.split, indices_table=dataset._indices, fingerprint=fingerprint
    )


def _encoded_bytes(value: Any) -> bytes | None:
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    if isinstance(value, Mapping) and value.get("bytes"):
        return value["bytes"]
    return None


class DecodedImageCache:
    """The last ``capacity`` decoded images, keyed by a digest of their encoded bytes.

    For datasets that embed one image in many rows (OSR-Bench: a panorama on each of its
    ~37 question rows): rows read undecoded (:func:`undecoded`)
    cost a hash (~1 ms for a 1 MB PNG) instead of a decode (~14 ms) when the image was seen
    recently. Callers get a copy, so a model that edits its input cannot change the cache.
    """

    def __init__(self, capacity: int = 8) -> None:
        self.capacity = capacity
        self._images: OrderedDict[bytes, Image.Image] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = self.misses = 0

    def load(self, value: Any, *, doc_id: Any, field: str) -> Image.Image:
        data = _encoded_bytes(value)
        path = value.get("path") if isinstance(value, Mapping) and data is None else None
        if (data is None and not path) or self.capacity <= 0:  # decoded already: nothing to share
            return load_image(value, doc_id=doc_id, field=field)
        # a prepared copy beside a download names the release's file instead of embedding it
        key = hashlib.blake2b(data if data is not None else f"path:{path}".encode(), digest_size=16).digest()
        with self._lock:
            cached = self._images.get(key)
            if cached is not None:
                self._images.move_to_end(key)
                self.hits += 1
                return cached.copy()
        image = load_image(data if data is not None else value, doc_id=doc_id, field=field)
        with self._lock:
            self.misses += 1
            self._images[key] = image
            while len(self._images) > self.capacity:
                self._images.popitem(last=False)
        return image.copy()


def load_images(doc: Mapping[str, Any], field: str = "images") -> list[Image.Image]:
    values = require(doc, field)
    if not isinstance(values, (list, tuple)):
        values = [values]
    doc_id = doc_id_of(doc)
    return [load_image(v, doc_id=doc_id, field=f"{field}[{i}]") for i, v in enumerate(values)]
