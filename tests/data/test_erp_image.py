"""ERP image path: resolution cap, decode-once with JPEG draft, geometry of the synthetic panoramas."""

from __future__ import annotations

import io

import pytest
from PIL import Image

from lmms_spatial.data.demo.erp import to_xy, to_yaw_pitch, yaw_to_direction
from lmms_spatial.data.erp_image import ResolutionCap, decode_erp, parse_size
from lmms_spatial.data.images import BadDocumentError


def _jpeg(width: int, height: int) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (width, height), (10, 120, 200)).save(buffer, format="JPEG", quality=90)
    return buffer.getvalue()


def test_resize_is_height_by_width_as_the_paper_writes_it():
    assert parse_size("512x1024") == (1024, 512)
    assert parse_size([512, 1024]) == (1024, 512)


def test_malformed_resize_is_a_clear_error():
    with pytest.raises(ValueError, match="HEIGHTxWIDTH"):
        parse_size("big")


def test_max_pixels_keeps_the_aspect_ratio_and_never_upscales():
    cap = ResolutionCap(max_pixels=1024 * 512)
    assert cap.target_size(12000, 6000) == (1024, 512)
    assert cap.target_size(800, 400) is None


def test_a_2_to_1_panorama_stays_exactly_2_to_1():
    # sqrt(1,010,000 / 72,000,000) * 6000 = 710.6: short side 710, long side 2 * 710 (rounding each side
    # down on its own gave 1421 x 710)
    assert ResolutionCap(max_pixels=1_010_000).target_size(12000, 6000) == (1420, 710)


def test_side_limits_scale_by_the_tightest_one_whatever_the_orientation():
    cap = ResolutionCap(max_side=2048, max_short_side=768)
    assert cap.target_size(12000, 6000) == (1536, 768)  # the short side binds: 768 / 6000 < 2048 / 12000
    assert cap.target_size(6000, 12000) == (768, 1536)
    assert cap.target_size(8000, 1000) == (2048, 256)  # the long side binds: 2048 / 8000 < 768 / 1000


def test_options_from_environment_override_the_task_options():
    cap = ResolutionCap.from_options({"max_pixels": 100}, env={"LMMS_SPATIAL_ODI_RESIZE": "512x1024"})
    assert cap.size == (1024, 512) and cap.max_pixels == 100
    assert cap.target_size(12000, 6000) == (1024, 512)  # an exact size wins over max_pixels


def test_no_option_means_full_resolution():
    cap = ResolutionCap.from_options({}, env={})
    assert not cap.active and cap.target_size(12000, 6000) is None


def test_max_pixels_accepts_a_product():
    assert ResolutionCap.from_options({"max_pixels": "1024*512"}, env={}).max_pixels == 524288


def test_jpeg_is_decoded_in_draft_mode_below_full_size_then_resized_exactly():
    data = _jpeg(4000, 2000)
    opened = Image.open(io.BytesIO(data))
    opened.draft("RGB", (500, 250))
    assert opened.size == (500, 250)  # libjpeg scales by 1/8 while decoding
    image = decode_erp(data, ResolutionCap(size=(400, 200)))
    assert image.size == (400, 200) and image.mode == "RGB"


def test_full_resolution_decode_keeps_the_stored_size():
    assert decode_erp({"bytes": _jpeg(300, 150), "path": None}).size == (300, 150)


def test_undecodable_bytes_name_the_document_and_field():
    with pytest.raises(BadDocumentError, match="document 'd7', field 'image'"):
        decode_erp(b"\x00\x01", doc_id="d7")


@pytest.mark.parametrize(("yaw", "x"), [(0, 128), (90, 192), (-90, 64), (180, 0)])
def test_erp_columns_follow_the_e2p_convention(yaw, x):
    assert to_xy(yaw, 0, 256, 128) == (x, 64)


def test_yaw_pitch_round_trips_through_pixels():
    assert to_yaw_pitch(*to_xy(45, 30, 256, 128), 256, 128) == (45, 30)


def test_yaw_maps_to_the_nearest_direction_word():
    assert yaw_to_direction(-170) == "back"
    assert yaw_to_direction(50, eight=True) == "front-right"


def test_a_panorama_over_pillows_bomb_limits_opens_without_warning_while_other_images_keep_the_limit(monkeypatch):
    import io
    import warnings

    from PIL import Image

    from lmms_spatial.data.erp_image import decode_erp

    buffer = io.BytesIO()
    Image.new("RGB", (64, 32), "white").save(buffer, format="JPEG")
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 1000)  # 2,048 px is over twice the limit: an error in Pillow
    with pytest.raises(Image.DecompressionBombError):
        Image.open(io.BytesIO(buffer.getvalue()))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # any warning fails the test
        assert decode_erp(buffer.getvalue()).size == (64, 32)
    assert Image.MAX_IMAGE_PIXELS == 1000  # restored for everyone else
