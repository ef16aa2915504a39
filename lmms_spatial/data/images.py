"""Decode dataset images, failing loudly with the document id and field on bad input."""

from __future__ import annotations

import io
from collections.abc import Mapping
from typing import Any

from PIL import Image


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
        image.load()
    except BadDocumentError:
        raise
    except Exception as exc:
        raise BadDocumentError(doc_id, field, f"cannot decode image ({exc})") from exc
    return image if image.mode == "RGB" else image.convert("RGB")


def load_images(doc: Mapping[str, Any], field: str = "images") -> list[Image.Image]:
    values = require(doc, field)
    if not isinstance(values, (list, tuple)):
        values = [values]
    doc_id = doc_id_of(doc)
    return [load_image(v, doc_id=doc_id, field=f"{field}[{i}]") for i, v in enumerate(values)]
