"""Package discovery for the mapped layout: tasks/, metrics/ and hub_cards/ install inside lmms_spatial.

Everything else is declared in pyproject.toml. A new benchmark folder under tasks/ or hub_cards/ is picked
up here without editing any list.

Folders that hold only package data (``hub_cards/<key>/``, ``lmms_spatial/view/assets/``, the scaffold's
templates) are declared as namespace packages: setuptools copies a folder's data only for a declared
package, and warns (12 blocks of "Package would be ignored" on every install, with setuptools 84) that
it will stop copying data of undeclared importable folders.
"""

from setuptools import find_namespace_packages, setup

_NOT_PACKAGES = ["__pycache__", "*.__pycache__"]


def _subpackages(prefix: str, where: str) -> list[str]:
    return [prefix] + [f"{prefix}.{name}" for name in find_namespace_packages(where, exclude=_NOT_PACKAGES)]


setup(
    packages=(
        _subpackages("lmms_spatial", "lmms_spatial")
        + _subpackages("lmms_spatial.metrics", "metrics")
        + _subpackages("lmms_spatial.tasks", "tasks")
        + _subpackages("lmms_spatial.hub_cards", "hub_cards")  # the dataset cards, as package data
    )
)
