"""The hub cards (``hub_cards/<benchmark>/README.md``): read as data, and their features written from ``features()``.

The card is the contract of a layout (tests/test_contract.py checks the fixtures against it), so what needs
the layout at run time (export, the column mapping's validation) reads it here rather than keeping a second
copy; cards ship as package data (``lmms_spatial.hub_cards``).

The columns of a benchmark's rows are declared once, by ``BENCHMARK.features`` in ``tasks/<key>/__init__.py``;
converters and fixtures write them, and ``lmms-spatial card <key>`` writes them into the YAML front matter of
``hub_cards/<key>/README.md`` (every config's ``dataset_info``), leaving the rest of the card as it is. ``--check``
only compares (the contract test does the same): renaming a column is one edit in ``features()`` plus one command.
The front matter is written the way ``yaml.safe_dump`` writes it (keys in their order, no comments): the shipped
cards are in that form already, so regenerating an unchanged card changes no byte.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path
from typing import TYPE_CHECKING, Any

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


def default_config(key: str) -> str | None:
    """The config the card marks ``default: true`` (or names ``default``, or its only one): what the viewer opens on."""
    from datasets.utils.metadata import MetadataConfigs

    return MetadataConfigs.from_dataset_card_data(load_card(key).data).get_default_config_name()


def card_features(key: str) -> dict[str, datasets.Features]:
    """{config name: the features its ``dataset_info`` declares}."""
    from datasets.info import DatasetInfosDict

    infos = DatasetInfosDict.from_dataset_card_data(load_card(key).data)
    return {name: info.features for name, info in infos.items()}


def layout_columns(key: str) -> set[str]:
    """Every column name of the normalised layout, over all configs."""
    return {name for features in card_features(key).values() for name in features}


# --- features written from features() ------------------------------------------------


class CardError(ValueError):
    """The card cannot be read or written as a Hub dataset card; the message names the file and the fix."""


@dataclass(frozen=True)
class Card:
    front: dict[str, Any]  # the YAML front matter
    body: str  # everything after the closing ``---`` line


def read_card(path: Path) -> Card:
    text = Path(path).read_text(encoding="utf-8")
    if not text.startswith("---\n"):
        raise CardError(f"{path}: a Hub dataset card starts with YAML front matter between two '---' lines")
    closing = text.find("\n---\n", 3)
    if closing < 0:
        raise CardError(f"{path}: the front matter is not closed by a '---' line")
    import yaml

    front = yaml.safe_load(text[4 : closing + 1]) or {}
    if not isinstance(front, dict):
        raise CardError(f"{path}: the front matter is not a YAML mapping")
    return Card(front, text[closing + len("\n---\n") :])


def dump_yaml(data: dict[str, Any]) -> str:
    """Front matter text: keys in their order, Unicode kept, no line ever wrapped."""
    import yaml

    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=1_000_000)


def render_card(card: Card) -> str:
    return "---\n" + dump_yaml(card.front) + "---\n" + card.body


def feature_list(features: Any) -> list[dict[str, Any]]:
    """``datasets.Features`` as the card's YAML list (what ``datasets`` itself writes into a card)."""
    return features._to_yaml_list()


def with_features(front: dict[str, Any], features: Any) -> dict[str, Any]:
    """The front matter with every config's ``dataset_info.features`` set to ``features``.

    ``dataset_info`` is a mapping for a card with one config and a list of ``config_name`` entries
    for several (how ``datasets`` reads it); a card without one gets one entry per config.
    """
    configs = [c.get("config_name", "default") for c in front.get("configs") or [{"config_name": "default"}]]
    info = front.get("dataset_info")
    if info is None:
        info = {} if len(configs) == 1 else [{"config_name": name} for name in configs]
    if isinstance(info, dict):
        info = {**info, "features": feature_list(features)}
    elif isinstance(info, list):  # a list per config (one shared object would be dumped as a YAML anchor)
        info = [{**entry, "features": feature_list(features)} for entry in info]
    else:
        raise CardError(f"dataset_info must be a mapping or a list of config entries, not {type(info).__name__}")
    out = dict(front)
    out["dataset_info"] = info
    return out


def installed_cards() -> Path:
    """The folder of the installed package's cards (``lmms_spatial.hub_cards``; a checkout's ``hub_cards/``
    when installed in editable mode)."""
    return Path(str(files("lmms_spatial.hub_cards")))


def cards_dir(repo: Path | str | None = None) -> Path:
    """The folder holding ``<key>/README.md``: ``repo/hub_cards``; without ``repo``, the current folder's
    ``hub_cards/`` when it has one (a checkout), else the installed package's cards."""
    if repo is not None:
        return Path(repo) / "hub_cards"
    here = Path.cwd() / "hub_cards"
    return here if here.is_dir() else installed_cards()


def card_path(key: str, repo: Path | str | None = None) -> Path:
    return cards_dir(repo) / key / "README.md"


def sync_card(key: str, repo: Path | str | None = None, check: bool = False) -> bool:
    """Write (or, with ``check``, only compare) benchmark ``key``'s card features from ``features()``.

    True when the card's features differed from ``features()`` (compared as YAML, not as text).
    ``repo``: the repository root holding ``hub_cards/`` (default: see :func:`cards_dir`).
    """
    from lmms_spatial.data.registry import features

    path = card_path(key, repo)
    if not path.is_file():
        raise CardError(f"{path}: no hub card for {key!r} (lmms-spatial new-task writes one; or pass --repo)")
    card = read_card(path)
    updated = Card(with_features(card.front, features(key)), card.body)
    if not check:
        text = render_card(updated)
        if text != path.read_text(encoding="utf-8"):
            path.write_text(text, encoding="utf-8")
    return updated.front != card.front
