"""PEP 517 build backend: setuptools, plus one startup ``.pth`` file at the wheel root.

lmms-eval 0.7.3 has no plugin hook for tasks (only for models), so lmms-spatial ships a
one-line ``.pth`` file that imports the top-level module :mod:`lmms_spatial_startup` at interpreter start.
That module only registers a tiny import hook; lmms-eval itself is never imported by it.
setuptools cannot place a file at the root of site-packages for both regular and editable
(PEP 660) installs, so this wrapper appends it to whatever wheel setuptools builds.
"""

from __future__ import annotations

import base64
import hashlib
import os
import zipfile

from setuptools import build_meta as _setuptools
from setuptools.build_meta import *  # noqa: F401,F403  (re-export the other PEP 517 hooks)

PTH_NAME = "lmms_spatial_startup.pth"
PTH_TEXT = "import lmms_spatial_startup\n"


def _add_pth(wheel_path: str) -> None:
    tmp_path = wheel_path + ".tmp"
    data = PTH_TEXT.encode()
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    with zipfile.ZipFile(wheel_path) as src, zipfile.ZipFile(tmp_path, "w", zipfile.ZIP_DEFLATED) as dst:
        record_name = next(n for n in src.namelist() if n.endswith(".dist-info/RECORD"))
        for info in src.infolist():
            if info.filename not in (record_name, PTH_NAME):
                dst.writestr(info, src.read(info.filename))
        dst.writestr(PTH_NAME, data)
        record = src.read(record_name).decode().rstrip("\n")
        dst.writestr(record_name, f"{record}\n{PTH_NAME},sha256={digest},{len(data)}\n")
    os.replace(tmp_path, wheel_path)


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    name = _setuptools.build_wheel(wheel_directory, config_settings, metadata_directory)
    _add_pth(os.path.join(wheel_directory, name))
    return name


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    name = _setuptools.build_editable(wheel_directory, config_settings, metadata_directory)
    _add_pth(os.path.join(wheel_directory, name))
    return name
