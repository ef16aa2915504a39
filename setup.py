"""Package discovery for the mapped layout: tasks/, metrics/ and hub_cards/ install inside lmms_spatial.

Everything else is declared in pyproject.toml. A new benchmark folder under tasks/ (with an
__init__.py) is picked up here without editing any list.
"""

from setuptools import find_packages, setup


def _subpackages(prefix: str, where: str) -> list[str]:
    return [prefix] + [f"{prefix}.{name}" for name in find_packages(where)]


setup(
    packages=(
        _subpackages("lmms_spatial", "lmms_spatial")
        + _subpackages("lmms_spatial.metrics", "metrics")
        + _subpackages("lmms_spatial.tasks", "tasks")
        + ["lmms_spatial.hub_cards"]  # the dataset cards, as package data
    )
)
