"""The hub cards (``hub_cards/<benchmark>/README.md``) read as data: the normalised layout's configs and features.

The card is the contract of a layout (tests/test_contract.py checks the fixtures against it), so
what needs the layout at run time (export, the column mapping's validation) reads it here rather
than keeping a second copy. Cards ship as package data (``lmms_spatial.hub_cards``).
"""

from __future__ import annotations

from importlib.resources import files
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported when a card is read, not with this module
    import datasets
    from huggingface_hub import DatasetCard


def card_text(key: str) -> str:
    path = files("lmms_spatial.hub_cards") / key / "README.md"
    if not path.is_file():
        raise FileNotFoundError(f"{key}: no hub card (hub_cards/{key}/README.md)")
    return path.read_text(encoding="utf-8")


def load_card(key: str) -> DatasetCard:
    from huggingface_hub import DatasetCard

    return DatasetCard(card_text(key))


def card_configs(key: str) -> dict[str, list[dict]]:
    """{config name: its ``data_files`` entries (split, path pattern)}, in the card's order."""
    from datasets.utils.metadata import MetadataConfigs

    configs = MetadataConfigs.from_dataset_card_data(load_card(key).data)
    return {name: list(config["data_files"]) for name, config in configs.items()}


def card_features(key: str) -> dict[str, datasets.Features]:
    """{config name: the features its ``dataset_info`` declares}."""
    from datasets.info import DatasetInfosDict

    infos = DatasetInfosDict.from_dataset_card_data(load_card(key).data)
    return {name: info.features for name, info in infos.items()}


def layout_columns(key: str) -> set[str]:
    """Every column name of the normalised layout, over all configs."""
    return {name for features in card_features(key).values() for name in features}
