"""ERP -> perspective projection: py360convert's conventions pinned, Omni-CoT's box -> crop formulas
on hand-worked boxes, the view lists, the rotating-video path, and the batched projector."""

from __future__ import annotations

import numpy as np
import py360convert
import pytest
from PIL import Image

from lmms_spatial.data import projection as proj
from lmms_spatial.data.demo.erp import to_xy

W, H = 720, 360  # 2 ERP pixels per degree


def marker_erp(yaw: float, pitch: float, width: int = W, height: int = H) -> np.ndarray:
    """Black ERP with a white 8 × 8 square centred exactly at (yaw, pitch) (whole-pixel positions here)."""
    image = np.zeros((height, width, 3), np.uint8)
    x, y = (round(v) for v in to_xy(yaw, pitch, width, height))
    image[y - 4 : y + 4, x - 4 : x + 4] = 255
    return image


def centroid(view: np.ndarray) -> tuple[float, float] | None:
    """(row, column) of the bright pixels of a view, or None when there are none."""
    ys, xs = np.nonzero(np.asarray(view)[..., 0] > 128)
    return (float(ys.mean()), float(xs.mean())) if len(ys) else None


# --- py360convert's conventions ------------------------------------------------------------


def test_u0_looks_at_the_centre_column_and_u90_at_three_quarters():
    columns = np.zeros((H, W, 3), np.uint8)
    columns[:, :, 0] = (np.arange(W) * 255 // (W - 1))[None, :]  # red grows left -> right
    centre = py360convert.e2p(columns, 10, 0, 0, (11, 11))[5, 5, 0]
    right = py360convert.e2p(columns, 10, 90, 0, (11, 11))[5, 5, 0]
    assert abs(int(centre) - int(columns[H // 2, W // 2, 0])) <= 1  # column 360 of 720
    assert abs(int(right) - int(columns[H // 2, 3 * W // 4, 0])) <= 1  # column 540


def test_positive_v_looks_up():
    above = marker_erp(0.0, 30.0)  # 30° above the horizon, straight ahead
    row, col = centroid(py360convert.e2p(above, 90, 0, 0, (101, 101)))
    assert row < 50 and col == pytest.approx(50, abs=0.6)  # upper half of the front view
    row, col = centroid(py360convert.e2p(above, 30, 0, 30, (101, 101)))
    assert (row, col) == (pytest.approx(50, abs=0.6), pytest.approx(50, abs=0.6))


@pytest.mark.parametrize(
    "yaw,pitch", [(0, 0), (90, 0), (-90, 0), (178, 0), (45, 20), (-135, -30), (30, 75), (-60, -70)]
)
def test_a_marker_at_yaw_pitch_is_at_the_centre_of_the_view_looking_there(yaw, pitch):
    view = py360convert.e2p(marker_erp(yaw, pitch), 30, yaw, pitch, (101, 101))
    row, col = centroid(view)
    assert (row, col) == (pytest.approx(50, abs=0.8), pytest.approx(50, abs=0.8))


def test_top_and_bottom_views_have_the_front_at_the_bottom_and_top_edge_and_right_on_the_right():
    top = proj.views([("top", 0.0, 90.0)], 90, 101)[0]
    bottom = proj.views([("bottom", 0.0, -90.0)], 90, 101)[0]
    (front_up,) = proj.ErpProjector(marker_erp(0, 60)).project([top])
    (right_up,) = proj.ErpProjector(marker_erp(90, 60)).project([top])
    (front_down,) = proj.ErpProjector(marker_erp(0, -60)).project([bottom])
    row, col = centroid(front_up)
    assert row > 70 and col == pytest.approx(50, abs=1)  # looking up, the front is below the centre
    row, col = centroid(right_up)
    assert col > 70 and row == pytest.approx(50, abs=1)
    row, col = centroid(front_down)
    assert row < 30 and col == pytest.approx(50, abs=1)  # looking down, the front is above the centre


def test_e2c_faces_agree_with_e2p_directions_including_up_and_down():
    """F, R, L = u 0, 90, -90; U and D have the same orientation as e2p(v=±90) in py360convert 1.0.4."""
    for yaw, pitch, face in [(0, 0, "F"), (90, 0, "R"), (-90, 0, "L"), (0, 70, "U"), (90, 60, "U"), (0, -70, "D")]:
        erp = marker_erp(yaw, pitch)
        faces = py360convert.e2c(erp, face_w=101, cube_format="dict")
        assert [k for k, v in faces.items() if centroid(v)] == [face]
        expected = centroid(
            py360convert.e2p(erp, 90, 0 if face in "UD" else yaw, {"U": 90, "D": -90}.get(face, 0), (101, 101))
        )
        assert centroid(faces[face]) == (pytest.approx(expected[0], abs=1.5), pytest.approx(expected[1], abs=1.5))


# --- Omni-CoT's box -> crop (paper eq. 1-3) -------------------------------------------------


def test_box_on_the_right_of_the_horizon():
    # cx = 0.75 -> θ = −180 + 0.75·360 = 90; cy = 0.5 -> φ = 0; fov_w = 0.1·360 = 36, fov_h = 0.2·180 = 36
    crop = proj.box_to_crop((0.7, 0.4, 0.8, 0.6), margin=10)
    assert (crop.theta, crop.phi, crop.fov_w, crop.fov_h) == pytest.approx((90.0, 0.0, 36.0, 36.0))
    assert crop.fov == pytest.approx(46.0)  # 36 + margin 10


def test_tall_box_up_and_left_takes_the_larger_of_the_two_fovs():
    # cx = 0.15 -> θ = −180 + 54 = −126; cy = 0.15 -> φ = 90 − 27 = 63; fov_w = 36, fov_h = 0.3·180 = 54
    crop = proj.box_to_crop((0.10, 0.0, 0.20, 0.30), margin=0)
    assert (crop.theta, crop.phi, crop.fov) == pytest.approx((-126.0, 63.0, 54.0))


def test_fov_is_clipped_to_30_and_120_degrees():
    tiny = proj.box_to_crop((0.5, 0.5, 0.51, 0.52), margin=10)  # max(3.6, 3.6) + 10 = 13.6 -> 30
    huge = proj.box_to_crop((0.0, 0.0, 1.0, 1.0), margin=10)  # max(360, 180) + 10 = 370 -> 120
    assert (tiny.fov, huge.fov) == (30.0, 120.0)
    assert (huge.theta, huge.phi) == (0.0, 0.0)
    assert proj.box_to_crop((0.5, 0.5, 0.51, 0.52), margin=10, min_fov=10).fov == pytest.approx(13.6)
    assert proj.box_to_crop((0.0, 0.0, 0.5, 0.5), margin=0, max_fov=150).fov == pytest.approx(180.0 * 0 + 150.0)


def test_pixel_boxes_use_cx_over_w_literally():
    # 6000 × 3000 ERP: cx = 4800 -> θ = −180 + 0.8·360 = 108; cy = 1875 -> φ = 90 − 0.625·180 = −22.5
    # fov_w = 600/6000·360 = 36, fov_h = 750/3000·180 = 45 -> fov = 45 + 10 = 55
    crop = proj.box_to_crop_pixels((4500, 1500, 5100, 2250), 6000, 3000, margin=10)
    assert (crop.theta, crop.phi, crop.fov) == pytest.approx((108.0, -22.5, 55.0))


@pytest.mark.parametrize(
    "theta,phi,words",
    [
        (0, 0, "front"),
        (90, 10, "right"),
        (-126, 63, "top"),
        (-126, 40, "upper back-left"),
        (170, -35, "lower back"),
        (-170, 0, "back"),
        (-30, -70, "bottom"),
        (22.4, 0, "front"),
        (22.6, 0, "front-right"),
    ],
)
def test_direction_words(theta, phi, words):
    assert proj.direction_words(theta, phi) == words


def test_a_crop_shows_the_boxed_object_at_its_centre():
    erp = marker_erp(90, 0)
    box = (0.7, 0.4, 0.8, 0.6)  # around (yaw 90, pitch 0)
    crop = proj.box_to_crop(box)
    (image,) = proj.ErpProjector(erp).project([proj.View("crop", crop.theta, crop.phi, crop.fov, (64, 64))])
    row, col = centroid(image)
    assert (row, col) == (pytest.approx(31.5, abs=1), pytest.approx(31.5, abs=1))


# --- view lists and the rotating video -----------------------------------------------------


def test_six_and_twelve_view_lists():
    assert [(n, y, p) for n, y, p in proj.SIX_VIEWS] == [
        ("front", 0, 0), ("right", 90, 0), ("back", 180, 0), ("left", -90, 0), ("top", 0, 90), ("bottom", 0, -90),
    ]  # fmt: skip
    names = [n for n, _, _ in proj.TWELVE_VIEWS]
    assert names == [
        "front",
        "front-right",
        "right",
        "right-back",
        "back",
        "left-back",
        "left",
        "left-front",
        "top-front",
        "top-back",
        "bottom-front",
        "bottom-back",
    ]  # fmt: skip  (Table 7's list, in the paper's order)
    assert all(v.fov == 80 and v.out_hw == (64, 64) for v in proj.views(proj.SIX_VIEWS, 80, 64))


def test_rotation_schedule_turns_right_round_then_up_then_down():
    frames = proj.rotation_schedule(12.0, 1.0)  # 12 frames, 630° / 12 = 52.5° per frame
    assert len(frames) == 12 and len(proj.rotation_schedule(12.0, 60.0)) == 720
    assert frames[0] == (0.0, 0.0, 0.0)
    assert frames[2] == (2.0, 105.0, 0.0)  # turning right
    assert frames[6] == (6.0, -45.0, 0.0)  # 315°: front-left, nearly round
    assert frames[7] == (7.0, 0.0, 7.5)  # 367.5°: front again, looking up
    assert frames[8] == (8.0, 0.0, 60.0)
    assert frames[9] == (9.0, 0.0, 67.5)  # 472.5°: past the top (90°), coming down
    assert frames[11] == (11.0, 0.0, -37.5)  # 577.5°: towards the bottom


# --- the batched projector -----------------------------------------------------------------


def test_projector_equals_py360convert_e2p_bit_for_bit_at_full_resolution():
    rng = np.random.default_rng(0)
    erp = rng.integers(0, 256, (128, 256, 3), dtype=np.uint8)
    vs = proj.views(proj.SIX_VIEWS, 90, 48) + [proj.View("crop", 33.0, 20.0, 40.0, (40, 56))]
    ours = proj.ErpProjector(erp, oversample=None).project(vs)
    reference = proj.project_e2p(erp, vs)
    for a, b in zip(ours, reference, strict=True):
        assert np.array_equal(np.asarray(a), np.asarray(b))


def test_level_choice_keeps_one_erp_pixel_per_view_pixel():
    # a 512² 90° view has f = 256 px/rad = 4.47 px/° -> needs an ERP 1,608.5 px wide
    view = proj.View("front", 0, 0, 90, (512, 512))
    assert proj.choose_level(12000, 6000, view) == 2  # 3000 wide; 1500 would be too coarse
    assert proj.choose_level(6000, 3000, view) == 1
    assert proj.choose_level(1024, 512, view) == 0
    assert proj.choose_level(12000, 6000, view, oversample=None) == 0
    # a 512² 30° crop: f = 256 / tan 15° = 955 px/rad -> 6,002 px: the full 12K image
    assert proj.choose_level(12000, 6000, proj.View("crop", 0, 0, 30, (512, 512))) == 0


def test_reduced_level_gives_nearly_the_same_view_on_a_smooth_image():
    yy, xx = np.mgrid[0:512, 0:1024]
    smooth = np.stack([xx * 255 // 1023, yy * 255 // 511, (xx + yy) * 255 // 1535], axis=-1).astype(np.uint8)
    view = proj.View("right", 90, 10, 90, (64, 64))
    projector = proj.ErpProjector(smooth)
    (reduced,) = projector.project([view])
    assert projector.levels_used == {2}  # 1024 -> 256 still has 64 / (2·tan 45°) px/rad · 2π = 201 px
    (full,) = proj.project_e2p(smooth, [view])
    assert np.abs(np.asarray(reduced, float) - np.asarray(full, float)).mean() < 3.0


def test_resized_gives_the_exact_table_11_size():
    image = Image.new("RGB", (2048, 1024))
    assert proj.resized(image, (1024, 512)).size == (1024, 512)
