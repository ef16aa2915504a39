"""Converters read only inside their input folder, and only images as images."""

from __future__ import annotations

import io
import os

import pytest
from PIL import Image

from lmms_spatial.data.safe_files import UnsafeFileError, parse_csv, read_image_bytes, resolve_inside


def test_a_relative_name_inside_the_folder_resolves(tmp_path):
    (tmp_path / "img").mkdir()
    assert resolve_inside(tmp_path, "img/a.png") == (tmp_path / "img" / "a.png").resolve()


@pytest.mark.parametrize("name", ["../secret.txt", "img/../../secret.txt", "/etc/passwd", ""])
def test_names_leaving_the_folder_are_refused(tmp_path, name):
    with pytest.raises(UnsafeFileError):
        resolve_inside(tmp_path / "root", name)


def test_a_symbolic_link_out_of_the_folder_is_refused(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    (tmp_path / "secret.txt").write_text("x")
    os.symlink(tmp_path / "secret.txt", root / "innocent.png")
    with pytest.raises(UnsafeFileError, match="points outside"):
        resolve_inside(root, "innocent.png")


def test_image_bytes_are_checked_to_be_an_image(tmp_path):
    buffer = io.BytesIO()
    Image.new("RGB", (4, 4)).save(buffer, "PNG")
    (tmp_path / "ok.png").write_bytes(buffer.getvalue())
    (tmp_path / "bad.png").write_bytes(b"%PDF-1.4 not an image")
    assert read_image_bytes(tmp_path / "ok.png") == buffer.getvalue()
    with pytest.raises(UnsafeFileError, match="bad.png' is not a readable image"):
        read_image_bytes(tmp_path / "bad.png")


def test_csv_rows_are_dicts():
    assert parse_csv("id,question\n1,where?\n", "q.csv") == [{"id": "1", "question": "where?"}]
