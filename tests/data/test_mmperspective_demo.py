"""Synthetic MMPerspective data: real perspective geometry, answers that follow from it, exact variants."""

import hashlib
import io

import pytest
from PIL import Image

from lmms_spatial.metrics.mmperspective import TASKS
from lmms_spatial.tasks.mmperspective.demo import build as build_mmperspective
from lmms_spatial.tasks.mmperspective.demo import build_rows
from lmms_spatial.tasks.mmperspective.scenes import Box, Camera, box_scene, corridor, line_relation
from lmms_spatial.tasks.mmperspective.schema import check_rows


@pytest.fixture(scope="module")
def rows():
    return build_rows()


def _answer_text(row):
    return row["options"]["ABCDEFGH".index(row["answer"])]


def test_a_level_camera_looking_down_a_corridor_has_one_vanishing_point_at_its_principal_point():
    image, camera = corridor(160, 120, vp=(44, 34))
    assert camera.finite_vanishing_points() == {"Z": (44.0, 34.0)}
    assert camera.perspective_type() == 1 and image.size == (160, 120)


def test_a_turned_camera_sees_two_vanishing_points_on_the_horizon():
    camera = Camera(160, 120, 100.0, 80.0, 60.0, position=(0.0, 1.6, 0.0), yaw=45.0)
    vps = camera.finite_vanishing_points()
    assert set(vps) == {"X", "Z"} and camera.perspective_type() == 2
    # turned 45 deg to the right: world Z now lies to the left, f * tan(45) = 100 px left of centre,
    # and the X lines meet f / tan(45) = 100 px right of centre
    assert vps["Z"] == pytest.approx((-20.0, 60.0)) and vps["X"] == pytest.approx((180.0, 60.0))


def test_tilting_up_adds_a_third_vanishing_point_above_the_image():
    camera = Camera(160, 120, 100.0, 80.0, 60.0, yaw=30.0, pitch=20.0)
    assert camera.perspective_type() == 3
    assert camera.vanishing_point((0.0, 1.0, 0.0))[1] < 0  # verticals converge upward
    for name in ("X", "Z"):  # horizontal directions meet on the horizon row cy + f tan(pitch)
        assert camera.vanishing_point({"X": (1.0, 0.0, 0.0), "Z": (0.0, 0.0, 1.0)}[name])[1] == pytest.approx(
            camera.horizon_v()
        )


def test_a_projected_box_edge_points_at_its_vanishing_point():
    camera = Camera(160, 120, 100.0, 80.0, 60.0, position=(0.0, 1.6, 0.0), yaw=35.0)
    (u0, v0), (u1, v1) = camera.project((3.0, 2.0, 6.0)), camera.project((3.0, 2.0, 9.0))  # along Z
    ux, vx = camera.vanishing_point((0.0, 0.0, 1.0))
    assert (u1 - u0) * (vx - v0) - (v1 - v0) * (ux - u0) == pytest.approx(0.0, abs=1e-6)  # collinear
    assert box_scene(camera, Box(2.0, 4.0, 6.0, 9.0, 3.0)).size == (160, 120)


def test_line_relations_come_from_3d_directions():
    assert line_relation(((0, 0, 0), (1, 0, 0)), ((0, 1, 0), (1, 1, 0))) == "parallel"
    assert line_relation(((0, 0, 0), (1, 0, 0)), ((0, 0, 0), (0, 0, 1))) == "perpendicular"
    assert line_relation(((0, 0, 0), (1, 0, 0)), ((0, 0, 0), (1, 1, 0))) == "oblique"
    assert line_relation(((0, 0, 0), (1, 0, 0)), ((0, 1, 0), (0, 1, 1))) == "skew"


def test_every_task_has_items_and_the_rows_meet_the_layout(rows):
    assert {r["task"] for r in rows if r["robust_group"] is None} == set(TASKS)
    groups = check_rows(rows)
    assert groups == {g: ["original", "crop", "flip", "mask", "rotate"] for g in ("robust-0", "robust-1", "robust-2")}
    assert all(len(r["images"]) == (2 if r["task"] == "PTS" else 1) for r in rows)


def test_a_flip_mirrors_the_vanishing_point_quarter_and_a_rotation_turns_it(rows):
    variants = {r["perturbation"]: _answer_text(r) for r in rows if r["robust_group"] == "robust-0"}
    assert variants["original"] == "top-right"  # the corridor's vanishing point is at (112, 30)
    assert variants["flip"] == "top-left"  # (160 - 112, 30)
    assert variants["mask"] == "top-right"
    assert variants["crop"] == "top-right"  # crop (40, 0, 160, 90): (72, 30) in 120 x 90
    assert variants["rotate"] == "top-left"  # 90 deg counter-clockwise: (30, 48) in 120 x 160


def test_the_perspective_type_survives_every_variant(rows):
    assert {_answer_text(r) for r in rows if r["robust_group"] == "robust-1"} == {"three-point perspective"}


def test_variant_images_are_the_transformed_original(rows):
    group = {
        r["perturbation"]: Image.open(io.BytesIO(r["images"][0]["bytes"]))
        for r in rows
        if r["robust_group"] == "robust-0"
    }
    original = group["original"]
    assert group["flip"].tobytes() == original.transpose(Image.Transpose.FLIP_LEFT_RIGHT).tobytes()
    assert group["rotate"].size == (120, 160) and group["crop"].size == (120, 90)


def test_build_is_byte_for_byte_deterministic(tmp_path):
    first = build_mmperspective(tmp_path / "a")
    second = build_mmperspective(tmp_path / "b")
    assert hashlib.sha256(first.read_bytes()).digest() == hashlib.sha256(second.read_bytes()).digest()
