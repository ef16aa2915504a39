"""How a 360° panorama is decoded and projected (issue 42): the resolution cap's parsing and sizes, which image value
opens, what the decode hands the model, the view lists, the box -> crop defaults, the direction words at their
boundaries, the rotating video's path, the seam padding, the resolution level and the projector's fallbacks.

Hand-made inputs only (tiny arrays and images built here); the expected values are written in each test with their
arithmetic, so a bug that moves a pixel, a boundary or a default fails here, in a few seconds."""

from __future__ import annotations

import io
import math

import numpy as np
import py360convert
import pytest
from PIL import Image

from lmms_spatial.data import erp_image as erp
from lmms_spatial.data import projection as proj
from lmms_spatial.data.erp_image import ResolutionCap, decode_erp, open_erp, parse_size
from lmms_spatial.data.images import BadDocumentError


def _encoded(image: Image.Image, fmt: str) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format=fmt)
    return buffer.getvalue()


def _noise(width: int, height: int, seed: int = 0) -> Image.Image:
    """An RGB image whose every pixel differs from its neighbours (a resampling change moves some value)."""
    rng = np.random.default_rng(seed)
    return Image.fromarray(rng.integers(0, 256, (height, width, 3), dtype=np.uint8))


# --- the resolution cap: parsing -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "size"),
    [
        ((512, 1024), (1024, 512)),  # a tuple, height first
        (["6", "8"], (8, 6)),  # strings in a list are read as integers
        (" 512 × 1024 ", (1024, 512)),  # the multiplication sign, spaces around
        ("512X1024", (1024, 512)),
        ("512*1024", (1024, 512)),
        ("512,1024", (1024, 512)),
        ("512 x 1024", (1024, 512)),
        ("1x5", (5, 1)),  # one pixel is a size
        ("5x1", (1, 5)),
    ],
)
def test_a_resize_is_height_by_width_in_each_spelling(value, size):
    assert parse_size(value) == size


@pytest.mark.parametrize("value", [[1, 2, 3], "12", 12, "512x", "x1024", "512x1024x3", "a512x1024", "512x1024b"])
def test_a_resize_that_is_not_two_numbers_is_refused_naming_the_form(value):
    with pytest.raises(ValueError, match=r"^resize must be HEIGHTxWIDTH such as '512x1024', got "):
        parse_size(value)


@pytest.mark.parametrize("value", ["0x1024", "512x0", [0, 5], [5, -1]])
def test_a_resize_with_a_zero_or_negative_side_is_refused(value):
    with pytest.raises(ValueError, match=r"^resize must be positive, got "):
        parse_size(value)


@pytest.mark.parametrize(
    ("value", "pixels"),
    [
        (None, None),
        ("", None),
        (" None ", None),
        ("OFF", None),
        ("full", None),
        ("0", None),  # 0 switches the cap off rather than asking for an empty image
        (524288, 524288),
        ("1", 1),
        ("1_000_000", 1_000_000),  # underscores as thousands separators
        ("2__000_", 2000),  # all dropped (Python's float() alone reads only single ones between digits)
        ("1e6", 1_000_000),
        (" 2.5e3 ", 2500),
        ("1024x512", 524288),  # a product: 1024 * 512
        ("1024X512", 524288),
        ("1024*512", 524288),
    ],
)
def test_max_pixels_in_each_spelling(value, pixels):
    assert ResolutionCap.from_options({"max_pixels": value}, env={}).max_pixels == pixels


@pytest.mark.parametrize("value", ["-5", "0.4", "1024x0", "-2*3"])
def test_max_pixels_below_one_is_refused(value):
    # int(float("0.4")) = 0; 1024 * 0 = 0; -2 * 3 = -6
    with pytest.raises(ValueError, match=r"^max_pixels must be positive, got "):
        ResolutionCap.from_options({"max_pixels": value}, env={})


def test_the_environment_wins_over_the_task_options_for_each_setting():
    options = {"max_pixels": 100, "resize": "10x20"}
    env = {erp.ENV_MAX_PIXELS: "200", erp.ENV_RESIZE: "30x40"}
    assert ResolutionCap.from_options(options, env=env) == ResolutionCap(max_pixels=200, size=(40, 30))
    # blank environment values (set but empty) leave the task options in force
    blank = {erp.ENV_MAX_PIXELS: "  ", erp.ENV_RESIZE: " "}
    assert ResolutionCap.from_options(options, env=blank) == ResolutionCap(max_pixels=100, size=(20, 10))
    assert ResolutionCap.from_options(None, env={}) == ResolutionCap()


def test_the_variable_names_can_be_another_tasks():
    env = {"MY_PIXELS": "300", "MY_RESIZE": "4x8", erp.ENV_MAX_PIXELS: "1", erp.ENV_RESIZE: "1x1"}
    cap = ResolutionCap.from_options({}, env=env, env_max_pixels="MY_PIXELS", env_resize="MY_RESIZE")
    assert cap == ResolutionCap(max_pixels=300, size=(8, 4))


def test_the_process_environment_is_read_when_none_is_given(monkeypatch):
    monkeypatch.setenv(erp.ENV_MAX_PIXELS, "4096")
    monkeypatch.setenv(erp.ENV_RESIZE, "64x128")
    assert ResolutionCap.from_options({}) == ResolutionCap(max_pixels=4096, size=(128, 64))


@pytest.mark.parametrize("resize", ["none", " OFF ", "Full", ""])
def test_a_resize_switched_off_in_words_means_no_size(resize):
    assert ResolutionCap.from_options({"resize": resize}, env={}).size is None


def test_the_default_names_are_the_odi_variables():
    assert (erp.ENV_MAX_PIXELS, erp.ENV_RESIZE) == ("LMMS_SPATIAL_ODI_MAX_PIXELS", "LMMS_SPATIAL_ODI_RESIZE")


# --- the resolution cap: sizes -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "cap",
    [
        ResolutionCap(max_pixels=1),
        ResolutionCap(size=(1, 1)),
        ResolutionCap(max_side=1),
        ResolutionCap(max_short_side=1),
    ],
)
def test_any_one_limit_makes_the_cap_active(cap):
    assert cap.active and not ResolutionCap().active


def test_an_image_exactly_at_a_limit_is_kept():
    # 1024 * 512 = 524,288 pixels: exactly max_pixels; long side 1024 = max_side; short side 512 = max_short_side
    assert ResolutionCap(max_pixels=524288).target_size(1024, 512) is None
    assert ResolutionCap(max_side=1024).target_size(1024, 512) is None
    assert ResolutionCap(max_short_side=512).target_size(512, 1024) is None
    assert ResolutionCap(max_pixels=524288, max_side=1024, max_short_side=512).target_size(1024, 512) is None


def test_an_image_one_pixel_over_a_limit_is_reduced():
    assert ResolutionCap(max_pixels=524287).target_size(1024, 512) == (1022, 511)  # 1022 * 511 = 522,242
    assert ResolutionCap(max_side=1023).target_size(1024, 512) == (1022, 511)  # short 512 * 1023/1024 = 511.5 -> 511
    assert ResolutionCap(max_short_side=511).target_size(1024, 512) == (1022, 511)


def test_an_exact_size_equal_to_the_image_keeps_it_and_any_other_is_given():
    cap = ResolutionCap(size=(300, 150))
    assert cap.target_size(300, 150) is None
    assert cap.target_size(150, 300) == (300, 150)  # an exact size is not turned with the image
    assert cap.target_size(3000, 1500) == (300, 150)


def test_a_portrait_image_is_scaled_on_its_short_side_too():
    # 6000 x 12000 under 1024 * 512: scale sqrt(524288 / 72e6) = 0.08533 -> short side 512, long side 1024
    assert ResolutionCap(max_pixels=1024 * 512).target_size(6000, 12000) == (512, 1024)


def test_an_other_aspect_ratio_is_kept_as_near_as_whole_pixels_allow():
    # 30 x 20 under 100 pixels: sqrt(100 / 600) * 20 = 8.16 -> short 8, long round(8 * 1.5) = 12: 96 pixels
    assert ResolutionCap(max_pixels=100).target_size(30, 20) == (12, 8)


def test_a_rounding_that_overshoots_takes_one_pixel_off_the_short_side_until_it_fits():
    # 6 x 5 under 11 pixels: sqrt(11 / 30) * 5 = 3.03 -> short 3, long round(3 * 6 / 5 = 3.6) = 4: 12 > 11;
    # short 2, long round(2.4) = 2: 4 pixels fit
    assert ResolutionCap(max_pixels=11).target_size(6, 5) == (2, 2)
    # 7 x 5 under 23: sqrt(23 / 35) * 5 = 4.05 -> 4 x round(5.6) = 6: 24 > 23; 3 x round(4.2) = 4: 12 fit
    assert ResolutionCap(max_pixels=23).target_size(7, 5) == (4, 3)
    # 7 x 4 under 7: sqrt(7 / 28) * 4 = 2 -> 2 x round(3.5) = 4: 8 > 7; 1 x round(1.75) = 2: 2 fit
    assert ResolutionCap(max_pixels=7).target_size(7, 4) == (2, 1)


def test_the_short_side_is_the_scaled_one_rounded_down_not_the_largest_that_fits():
    # 5 x 3 under 6 pixels: short int(3 * sqrt(6 / 15)) = int(1.897) = 1, long round(1 * 5 / 3) = 2: 2 x 1
    # (3 x 2 would fit too; the formula, not a search, decides)
    assert ResolutionCap(max_pixels=6).target_size(5, 3) == (2, 1)
    # long side at most 3: short int(3 * 3 / 5) = int(1.8) = 1, long 2
    assert ResolutionCap(max_side=3).target_size(5, 3) == (2, 1)


def test_a_side_never_goes_below_one_pixel():
    # 12000 x 6000 under 1 pixel: sqrt(1 / 72e6) * 6000 = 0.71 -> short max(1, 0) = 1, long round(1 * 2) = 2;
    # 2 pixels do not fit but the short side cannot shrink below 1
    assert ResolutionCap(max_pixels=1).target_size(12000, 6000) == (2, 1)
    # 100 x 1 under 50: short 1, long min(100, round(1 * 100)) = 100 > 50: the long side is not cut alone
    assert ResolutionCap(max_pixels=50).target_size(100, 1) == (100, 1)
    # 4 x 3 under 1: short max(1, int(0.87)) = 1, long round(1 * 4 / 3) = 1: one pixel
    assert ResolutionCap(max_pixels=1).target_size(4, 3) == (1, 1)


def test_a_scale_that_lands_a_hair_below_a_whole_pixel_counts_as_that_pixel():
    # 501 * (256 / 1002) = 127.99999999999999 in floating point: 128 with the 1e-6 allowance, 127 without
    assert ResolutionCap(max_side=256).target_size(1002, 501) == (256, 128)
    # 607 * (384 / 607) = 383.99999999999994: 384, and the long side round(384 * 1214 / 607) = 768
    assert ResolutionCap(max_short_side=384).target_size(1214, 607) == (768, 384)


def test_the_tightest_limit_wins_and_the_others_do_not_loosen_it():
    # 4000 x 2000: max_pixels 2e6 gives short 1000; max_side 1000 gives short 500; max_short_side 800 gives 800
    cap = ResolutionCap(max_pixels=2_000_000, max_side=1000, max_short_side=800)
    assert cap.target_size(4000, 2000) == (1000, 500)
    cap = ResolutionCap(max_pixels=200_000, max_side=1000, max_short_side=800)  # sqrt(2e5 / 8e6) * 2000 = 316
    assert cap.target_size(4000, 2000) == (632, 316)


# --- opening and decoding ------------------------------------------------------------------------------


def test_each_kind_of_image_value_opens_to_the_same_pixels(tmp_path):
    source = _noise(8, 4)
    data = _encoded(source, "PNG")
    path = tmp_path / "p.png"
    path.write_bytes(data)
    expected = np.asarray(source)
    for value in (
        data,
        bytearray(data),
        memoryview(data),
        {"bytes": data, "path": None},
        {"path": str(path)},
        str(path),
    ):
        assert np.array_equal(np.asarray(open_erp(value).convert("RGB")), expected), type(value)
    # bytes win over a path that does not exist
    assert open_erp({"bytes": data, "path": str(tmp_path / "missing.png")}).size == (8, 4)
    assert open_erp(source) is source  # an image already open is used as it is


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ({"bytes": None, "path": None}, "cannot open image (image dict has neither bytes nor path)"),
        ({"bytes": b"", "path": ""}, "cannot open image (image dict has neither bytes nor path)"),
        (12, "cannot open image (unsupported image value of type int)"),
        ([b"x"], "cannot open image (unsupported image value of type list)"),
    ],
)
def test_an_unusable_image_value_names_the_document_the_field_and_why(value, problem):
    with pytest.raises(BadDocumentError) as caught:
        open_erp(value, doc_id="d3", field="panorama")
    assert str(caught.value) == f"document 'd3', field 'panorama': {problem}"


def test_an_unusable_value_without_a_document_id_says_so():
    for call in (open_erp, decode_erp):
        with pytest.raises(BadDocumentError) as caught:
            call(12)
        assert (caught.value.doc_id, caught.value.field) == ("<no id>", "image")
    with pytest.raises(BadDocumentError) as caught:
        decode_erp(12, doc_id="d1", field="pano")  # the decode passes its names on to the opening
    assert (caught.value.doc_id, caught.value.field) == ("d1", "pano")


def test_a_truncated_file_fails_while_decoding_naming_the_document_and_field():
    data = _encoded(_noise(64, 32), "PNG")
    with pytest.raises(BadDocumentError, match=r"^document 'd9', field 'img': cannot decode image \("):
        decode_erp(data[: len(data) // 2], doc_id="d9", field="img")


def test_a_png_under_a_cap_is_resized_exactly_with_bicubic_and_a_reducing_gap_of_2():
    source = _noise(64, 32)
    image = decode_erp(_encoded(source, "PNG"), ResolutionCap(size=(8, 4)))
    expected = source.resize((8, 4), Image.Resampling.BICUBIC, reducing_gap=2.0)
    assert image.size == (8, 4) and image.mode == "RGB"
    assert np.array_equal(np.asarray(image), np.asarray(expected))


def test_a_grey_or_transparent_image_reaches_the_model_as_rgb():
    grey = Image.fromarray(np.array([[0, 128], [200, 255]], np.uint8))  # mode L
    image = decode_erp(_encoded(grey, "PNG"))
    assert image.mode == "RGB" and np.asarray(image)[1, 0].tolist() == [200, 200, 200]
    rgba = Image.new("RGBA", (4, 2), (10, 20, 30, 40))
    image = decode_erp(_encoded(rgba, "PNG"), ResolutionCap(max_pixels=2))  # 4 x 2 -> 2 x 1
    assert image.mode == "RGB" and image.size == (2, 1)


def test_only_a_capped_jpeg_is_drafted_and_to_the_target_size(monkeypatch):
    calls: list[tuple[str, tuple[int, int]]] = []
    from PIL import JpegImagePlugin

    draft = JpegImagePlugin.JpegImageFile.draft

    def spy(self, mode, size):
        calls.append((mode, size))
        return draft(self, mode, size)

    monkeypatch.setattr(JpegImagePlugin.JpegImageFile, "draft", spy)
    jpeg = _encoded(Image.new("RGB", (160, 80), (10, 120, 200)), "JPEG")
    assert decode_erp(jpeg).size == (160, 80)  # no cap: no draft
    assert decode_erp(_encoded(_noise(160, 80), "PNG"), ResolutionCap(size=(20, 10))).size == (20, 10)
    assert calls == []  # a PNG is not drafted either
    assert decode_erp(jpeg, ResolutionCap(size=(20, 10))).size == (20, 10)
    assert decode_erp(jpeg, ResolutionCap(size=(160, 80))).size == (160, 80)  # its own size: no target, no draft
    assert calls == [("RGB", (20, 10))]


def test_a_jpeg_drafted_to_its_target_exactly_is_not_resized_again(monkeypatch):
    # 160 x 80 at 1/8 scale is 20 x 10: libjpeg gives the target itself, so no resample may run after it
    monkeypatch.setattr(Image.Image, "resize", lambda *a, **k: pytest.fail("resized an image already at its size"))
    jpeg = _encoded(Image.new("RGB", (160, 80), (10, 120, 200)), "JPEG")
    assert decode_erp(jpeg, ResolutionCap(size=(20, 10))).size == (20, 10)


# --- view lists, crops, words ----------------------------------------------------------------------------


def test_a_view_defaults_to_90_degrees_at_512_square_and_changes_one_field_at_a_time():
    view = proj.View("front", 10.0, -5.0)
    assert (view.fov, view.out_hw) == (90.0, (512, 512))
    assert view.with_(fov=30.0, out_hw=(64, 32)) == proj.View("front", 10.0, -5.0, 30.0, (64, 32))
    assert view.with_(yaw=-10.0) == proj.View("front", -10.0, -5.0, 90.0, (512, 512))


def test_a_view_list_defaults_to_90_degrees_at_512_and_converts_types():
    (view,) = proj.views([("right", 90, 0)])
    assert view == proj.View("right", 90, 0, 90.0, (512, 512))
    (view,) = proj.views([("right", 90, 0)], fov=45, size=64.0)
    assert (view.fov, view.out_hw) == (45.0, (64, 64)) and type(view.fov) is float
    assert type(view.out_hw[0]) is int and type(view.out_hw[1]) is int


def test_a_crop_uses_a_10_degree_margin_and_clips_to_30_and_120_degrees_by_default():
    # fov_w = 0.1 * 360 = 36, fov_h = 0.1 * 180 = 18: 36 + 10 = 46
    assert proj.box_to_crop((0.45, 0.45, 0.55, 0.55)).fov == pytest.approx(46.0)
    assert proj.box_to_crop((0.5, 0.5, 0.51, 0.51)).fov == 30.0  # 3.6 + 10 = 13.6 -> 30
    assert proj.box_to_crop((0.0, 0.0, 0.5, 0.5)).fov == 120.0  # 180 + 10 -> 120


def test_a_pixel_box_passes_its_margin_and_limits_on_and_defaults_to_the_paper_s():
    # 1000 x 500 ERP, box 100 px wide, 50 tall: fov_w = 0.1 * 360 = 36, fov_h = 0.1 * 180 = 18
    box = (450, 225, 550, 275)
    assert proj.box_to_crop_pixels(box, 1000, 500).fov == pytest.approx(46.0)  # 36 + 10
    assert proj.box_to_crop_pixels(box, 1000, 500, margin=0).fov == pytest.approx(36.0)
    assert proj.box_to_crop_pixels(box, 1000, 500, margin=0, min_fov=40).fov == 40.0
    assert proj.box_to_crop_pixels(box, 1000, 500, margin=20, max_fov=50).fov == 50.0  # 56 -> 50
    crop = proj.box_to_crop_pixels((0, 0, 10, 5), 1000, 500, margin=0)
    # cx = 5 / 1000 -> θ = -180 + 0.005 * 360 = -178.2; cy = 2.5 / 500 -> φ = 90 - 0.005 * 180 = 89.1
    assert (crop.theta, crop.phi, crop.fov_w, crop.fov_h, crop.fov) == pytest.approx((-178.2, 89.1, 3.6, 1.8, 30.0))
    assert proj.box_to_crop_pixels((0, 0, 10, 5), 1000, 500).fov == 30.0  # 3.6 + 10 = 13.6 -> 30
    assert proj.box_to_crop_pixels((0, 0, 500, 250), 1000, 500).fov == 120.0  # 180 + 10 = 190 -> 120


@pytest.mark.parametrize(
    ("theta", "phi", "words"),
    [
        (0, 60.0, "top"),  # |φ| = 60 is already top / bottom
        (0, -60.0, "bottom"),
        (0, 59.9, "upper front"),
        (0, -59.9, "lower front"),
        (90, 30.0, "upper right"),  # |φ| = 30 is already upper / lower
        (90, -30.0, "lower right"),
        (90, 29.9, "right"),
        (90, -29.9, "right"),
        (180, 0, "back"),
        (-180, 0, "back"),
        (450, 0, "right"),  # 450 = 90 + 360
        (-22.5, 0, "front"),  # 337.5 / 45 + 0.5 = 8 -> 8 mod 8 = 0
        (22.5, 0, "front-right"),  # 0.5 + 0.5 = 1
        (67.5, 0, "right"),
        (-67.5, 0, "front-left"),  # 292.5 / 45 + 0.5 = 7: index 7
        (-90, 0, "left"),
        (135, 0, "back-right"),
        (-135, 0, "back-left"),
        (-45, 0, "front-left"),
        (-23, 0, "front-left"),  # 337 / 45 + 0.5 = 7.99: index 7 (one degree more, 338, would be 8: front)
        (383, 0, "front-right"),  # 383 - 360 = 23: 23 / 45 + 0.5 = 1.01: index 1
    ],
)
def test_direction_words_at_their_boundaries(theta, phi, words):
    assert proj.direction_words(theta, phi) == words


def test_the_eight_yaw_names_run_clockwise_from_the_front():
    assert proj.HORIZONTAL_WORDS == (
        "front",
        "front-right",
        "right",
        "back-right",
        "back",
        "back-left",
        "left",
        "front-left",
    )


# --- the rotating video ---------------------------------------------------------------------------------


def test_the_rotation_defaults_to_12_seconds_at_60_frames_per_second():
    frames = proj.rotation_schedule()
    assert len(frames) == 720  # 12 * 60
    assert frames[1] == (round(1 / 60, 6), 0.875, 0.0)  # 630 / 720 = 0.875° per frame
    assert frames[-1] == (11.983333, 0.0, -89.125)  # 719 * 0.875 = 629.125: 90 - (629.125 - 450)


def test_the_rotation_passes_each_turning_point_on_a_frame():
    # 7 frames over 630°: 90° a frame; 0, 90, 180 (-180 wrapped), 270 (-90), 360 = front looking level,
    # 450 = straight up, 540 = level again on the way down; t = i / 2 at 2 frames per second
    assert proj.rotation_schedule(3.5, 2.0) == [
        (0.0, 0.0, 0.0),
        (0.5, 90.0, 0.0),
        (1.0, -180.0, 0.0),
        (1.5, -90.0, 0.0),
        (2.0, 0.0, 0.0),
        (2.5, 0.0, 90.0),
        (3.0, 0.0, 0.0),
    ]


def test_the_rotation_turns_up_only_after_a_full_turn_and_down_only_after_the_top():
    # 1260 frames over 630°: 0.5° a frame; frame 720 is 360° (front, level), 721 is 360.5°: looking up by 0.5°;
    # frame 900 is 450° (straight up), 901 is 450.5°: 0.5° past the top, coming down
    frames = proj.rotation_schedule(1260.0, 1.0)
    assert frames[719] == (719.0, -0.5, 0.0)  # 359.5° of yaw: wrapped to -0.5
    assert frames[720] == (720.0, 0.0, 0.0)
    assert frames[721] == (721.0, 0.0, 0.5)
    assert frames[900] == (900.0, 0.0, 90.0)
    assert frames[901] == (901.0, 0.0, 89.5)


def test_a_rotation_too_short_for_one_frame_has_one_and_times_are_rounded_to_microseconds():
    assert proj.rotation_schedule(0.0, 60.0) == [(0.0, 0.0, 0.0)]
    assert proj.rotation_schedule(0.01, 60.0) == [(0.0, 0.0, 0.0)]  # round(0.6) = 1 frame
    frames = proj.rotation_schedule(1.0, 3.0)  # t = 1/3 -> 0.333333; 630 / 3 = 210° a frame
    assert frames == [(0.0, 0.0, 0.0), (0.333333, -150.0, 0.0), (0.666667, 0.0, 60.0)]


# --- the projection: seam, levels, fallbacks ------------------------------------------------------------


def test_the_padding_wraps_columns_round_the_seam_and_rows_over_the_poles():
    array = np.arange(12, dtype=np.uint8).reshape(3, 4)  # [[0 1 2 3], [4 5 6 7], [8 9 10 11]]
    padded = proj._pad(array)
    # the row above the top is the top row turned half way round (w // 2 = 2): [2 3 0 1]; below the bottom:
    # [10 11 8 9]; the left border column is the last image column (wrapped), the right border the first
    assert padded.tolist() == [
        [1, 2, 3, 0, 1, 2],
        [3, 0, 1, 2, 3, 0],
        [7, 4, 5, 6, 7, 4],
        [11, 8, 9, 10, 11, 8],
        [9, 10, 11, 8, 9, 10],
    ]
    rgb = np.stack([array, array + 10, array + 20], axis=-1)
    assert proj._pad(rgb).shape == (5, 6, 3) and np.array_equal(proj._pad(rgb)[..., 2], padded + 20)


def test_pixels_per_degree_at_the_centre_of_a_view():
    # 512 wide, 90°: f = 256 / tan 45° = 256 px/rad = 256 * pi / 180 px/° = 4.468
    assert proj._focal_px_per_degree(proj.View("v", 0, 0, 90, (100, 512))) == pytest.approx(256 * math.pi / 180)
    # 60°: 256 / tan 30° = 443.4 px/rad; the width is out_hw[1], not the height
    assert proj._focal_px_per_degree(proj.View("v", 0, 0, 60, (512, 100))) == pytest.approx(
        50 / math.tan(math.pi / 6) * math.pi / 180
    )


def test_the_level_stops_when_the_height_would_drop_below_two_rows():
    view = proj.View("v", 0, 0, 90, (2, 2))  # f = 1 px/rad: the ERP needs 2 pi = 6.3 px of width
    # 4096 x 4: halving to 2048 x 2 keeps 2 rows; 1024 x 1 would not
    assert proj.choose_level(4096, 4, view) == 1
    assert proj.choose_level(4096, 8, view) == 2  # 2048 x 4, 1024 x 2
    assert proj.choose_level(4096, 3, view) == 0  # 3 // 2 = 1 row


def test_the_level_keeps_the_oversampling_asked_for():
    view = proj.View("v", 0, 0, 90, (2, 2))  # needs 2 pi * oversample px of width
    assert proj.choose_level(64, 64, view, oversample=1.0) == 3  # 64 -> 32 -> 16 -> 8 (>= 6.28); 4 < 6.28
    assert proj.choose_level(64, 64, view, oversample=2.0) == 2  # needs 12.57: 16 yes, 8 no
    assert proj.choose_level(64, 64, view, oversample=0.5) == 4  # needs 3.14: 4 yes, 2 no


def test_the_level_halves_whole_pixels_and_an_erp_exactly_as_wide_as_needed_is_enough():
    view = proj.View("v", 0, 0, 90, (2, 2))
    # 13 px: 13 // 2 = 6 < 6.28 needed (half of 13 would be 6.5, enough): no level to drop to
    assert proj.choose_level(13, 64, view) == 0
    # oversample chosen so that exactly 990 px of width are needed: a 1980-px ERP halves to 990, just enough
    oversample = 990 / (proj._focal_px_per_degree(view) * 360.0)
    assert oversample * proj._focal_px_per_degree(view) * 360.0 == 990.0  # exact in floating point
    assert proj.choose_level(1980, 1980, view, oversample) == 1
    # 999.9 px needed over 360° (1002.7 if the turn were 361°): 1000 px is enough
    assert proj.choose_level(2000, 2000, view, 999.9 / (proj._focal_px_per_degree(view) * 360.0)) == 1


def test_the_projector_takes_an_array_or_any_image_mode_and_keeps_one_copy_per_level():
    array = np.zeros((32, 64, 3), np.uint8)
    array[:, 32:] = 200
    projector = proj.ErpProjector(array)
    assert projector.size == (64, 32) and projector.image.mode == "RGB" and projector.oversample == 1.0
    grey = proj.ErpProjector(Image.fromarray(array[..., 0]))
    assert grey.image.mode == "RGB" and np.asarray(grey.image)[0, 40].tolist() == [200, 200, 200]
    level2 = projector._level(2)
    assert level2.size == (16, 8) and projector._level(2) is level2 and projector._level(1).size == (32, 16)
    padded = projector.padded(1)
    assert padded.shape == (18, 34, 3) and projector.padded(1) is padded


def test_the_projector_samples_the_level_it_chose_for_each_view():
    erp = np.zeros((64, 128, 3), np.uint8)
    view = proj.View("v", 0, 0, 90, (2, 2))  # needs 6.3 px of ERP width: 128 -> 8 at level 4 (16 -> 8 still >= 6.3)
    projector = proj.ErpProjector(erp)
    projector.project([view, view.with_(out_hw=(64, 64), fov=30.0)])
    # the 64-px 30° crop: f = 32 / tan 15° = 119.4 px/rad, needs 750 px: level 0
    assert projector.levels_used == {4, 0} and set(projector._padded) == {4, 0}


def test_without_opencv_the_projector_still_equals_e2p_bit_for_bit(monkeypatch):
    """py360convert samples with scipy when OpenCV is missing: the projector's fallback must sample the same."""
    import py360convert.utils as utils

    monkeypatch.setattr(utils, "cv2", None)
    rng = np.random.default_rng(1)
    erp = rng.integers(0, 256, (32, 64, 3), dtype=np.uint8)
    vs = [proj.View("a", 30.0, 10.0, 60.0, (12, 16)), proj.View("b", -150.0, -40.0, 90.0, (9, 9))]
    ours = proj.ErpProjector(erp, oversample=None).project(vs)
    for image, view in zip(ours, vs, strict=True):
        reference = py360convert.e2p(erp, view.fov, view.yaw, view.pitch, view.out_hw, mode="bilinear")
        assert np.array_equal(np.asarray(image), reference)


def test_a_yaw_to_the_right_samples_the_right_of_the_panorama():
    # columns left of the centre black, right of it white: a 10° view at yaw +90 sees white, at -90 black
    erp = np.zeros((90, 180, 3), np.uint8)
    erp[:, 90:] = 255
    right, left = proj.ErpProjector(erp, oversample=None).project(
        [proj.View("r", 90, 0, 10, (3, 3)), proj.View("l", -90, 0, 10, (3, 3))]
    )
    assert np.asarray(right)[1, 1].tolist() == [255, 255, 255] and np.asarray(left)[1, 1].tolist() == [0, 0, 0]


def test_a_resized_image_is_the_same_object_at_its_size_and_bicubic_with_gap_2_otherwise():
    source = _noise(64, 32)
    assert proj.resized(source, (64, 32)) is source
    assert proj.resized(source, [64, 32]) is source  # a list names the same size
    expected = source.resize((8, 4), Image.Resampling.BICUBIC, reducing_gap=2.0)
    assert np.array_equal(np.asarray(proj.resized(source, (8, 4))), np.asarray(expected))
