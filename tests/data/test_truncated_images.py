"""A truncated image fails naming its document and field, although lmms-eval tolerates truncation.

lmms-eval sets ``PIL.ImageFile.LOAD_TRUNCATED_IMAGES = True`` for the whole process; Pillow then
pads a cut-off image with grey and raises nothing. Our decoders must not inherit that.
"""

from __future__ import annotations

import io

import pytest
from PIL import Image, ImageFile

from lmms_spatial.data.erp_image import decode_erp
from lmms_spatial.data.images import BadDocumentError, load_image


@pytest.fixture(autouse=True)
def lmms_eval_tolerates_truncation(monkeypatch):
    monkeypatch.setattr(ImageFile, "LOAD_TRUNCATED_IMAGES", True)


def _encoded(fmt: str) -> bytes:
    buffer = io.BytesIO()
    Image.effect_noise((128, 64), 64).convert("RGB").save(buffer, fmt)
    return buffer.getvalue()


@pytest.mark.parametrize("fmt", ["PNG", "JPEG"])
def test_a_truncated_image_fails_naming_the_document_and_field(fmt):
    data = _encoded(fmt)
    with pytest.raises(BadDocumentError, match=r"document 'q7', field 'images'.*truncated"):
        load_image(data[: len(data) * 2 // 3], doc_id="q7", field="images")
    assert ImageFile.LOAD_TRUNCATED_IMAGES is True  # the process-wide flag is left as lmms-eval set it


@pytest.mark.parametrize("fmt", ["PNG", "JPEG"])
def test_a_truncated_panorama_fails_in_the_erp_decoder_too(fmt):
    data = _encoded(fmt)
    with pytest.raises(BadDocumentError, match=r"document 'p1', field 'image'.*truncated"):
        decode_erp(data[: len(data) // 2], doc_id="p1", field="image")


@pytest.mark.parametrize("fmt", ["PNG", "JPEG"])
def test_an_intact_image_decodes_to_the_same_pixels_as_pillow(fmt):
    data = _encoded(fmt)
    ours = load_image(data, doc_id="q7", field="images")
    assert ours.tobytes() == Image.open(io.BytesIO(data)).convert("RGB").tobytes()
