"""``lmms-spatial card``: a hub card's ``dataset_info.features`` written from the benchmark's ``features()``."""

from __future__ import annotations

from pathlib import Path

import datasets
import pytest
import yaml

from lmms_spatial.cli import main as lmms_spatial
from lmms_spatial.data.cards import CardError, read_card, sync_card
from lmms_spatial.data.registry import BENCHMARKS

REPO = Path(__file__).resolve().parents[2]
BODY = "\n# The card\n\nColumns: `id`, `image`.\n"


def _repo(tmp_path, key: str, front: str):
    (tmp_path / "hub_cards" / key).mkdir(parents=True)
    (tmp_path / "hub_cards" / key / "README.md").write_text(f"---\n{front}---\n{BODY}")
    return tmp_path


def _features(path) -> list:
    info = yaml.safe_load(path.read_text().split("---\n")[1])["dataset_info"]
    return [e["features"] for e in info] if isinstance(info, list) else [info["features"]]


ODI_COLUMNS = [
    {"name": "id", "dtype": "string"},
    {"name": "image", "dtype": "image"},
    {"name": "task", "dtype": "string"},
    {"name": "question", "dtype": "string"},
    {"name": "options", "list": "string"},
    {"name": "answer", "dtype": "string"},
    {"name": "answer_text", "dtype": "string"},
]


def test_a_card_gets_the_features_of_its_benchmark_and_keeps_everything_else(tmp_path):
    front = "license: mit\npretty_name: Probe\nconfigs:\n- config_name: default\n  data_files:\n  - split: test\n" \
            "    path: '*.parquet'\ndataset_info:\n  features:\n  - name: id\n    dtype: int64\n"  # fmt: skip
    repo = _repo(tmp_path, "odi_bench", front)
    card = repo / "hub_cards" / "odi_bench" / "README.md"
    assert sync_card("odi_bench", repo, check=True) is True  # differs, but only compared
    assert _features(card) == [[{"name": "id", "dtype": "int64"}]]
    assert sync_card("odi_bench", repo) is True
    assert _features(card) == [ODI_COLUMNS]
    written = read_card(card)
    assert written.body == BODY and written.front["license"] == "mit" and written.front["pretty_name"] == "Probe"
    assert datasets.Features._from_yaml_list(_features(card)[0])["image"] == datasets.Image()
    assert sync_card("odi_bench", repo) is False  # a second run changes nothing
    text = card.read_text()
    sync_card("odi_bench", repo)
    assert card.read_text() == text


def test_every_config_of_a_multi_config_card_gets_its_own_copy(tmp_path):
    front = "license: mit\nconfigs:\n- config_name: standard\n  data_files: standard/*.parquet\n" \
            "- config_name: negative\n  data_files: negative/*.parquet\n"  # fmt: skip
    repo = _repo(tmp_path, "osr_bench", front)
    card = repo / "hub_cards" / "osr_bench" / "README.md"
    assert sync_card("osr_bench", repo) is True
    info = yaml.safe_load(card.read_text().split("---\n")[1])["dataset_info"]
    assert [e["config_name"] for e in info] == ["standard", "negative"]
    assert info[0]["features"] == info[1]["features"] and len(info[0]["features"]) == 9
    assert "&id" not in card.read_text()  # written out twice, not as a YAML anchor


def test_a_missing_card_or_front_matter_names_the_file(tmp_path):
    with pytest.raises(CardError, match="no hub card for 'mmsi'"):
        sync_card("mmsi", tmp_path)
    repo = tmp_path / "r"
    (repo / "hub_cards" / "mmsi").mkdir(parents=True)
    (repo / "hub_cards" / "mmsi" / "README.md").write_text("# no front matter\n")
    with pytest.raises(CardError, match="starts with YAML front matter"):
        sync_card("mmsi", repo)


def test_cli_check_exits_1_naming_the_command_and_the_shipped_cards_are_in_step(tmp_path, capsys):
    front = "license: mit\nconfigs:\n- config_name: default\n  data_files: '*.parquet'\n"
    repo = _repo(tmp_path, "dori", front)
    assert lmms_spatial(["card", "dori", "--check", "--repo", str(repo)]) == 1
    assert "run `lmms-spatial card dori`" in capsys.readouterr().err
    assert lmms_spatial(["card", "dori", "--repo", str(repo)]) == 0
    assert "features written from features()" in capsys.readouterr().out
    assert lmms_spatial(["card", "--check", "--repo", str(REPO)]) == 0  # this checkout's cards
    assert capsys.readouterr().out.count("features match features()") >= 5


def test_card_check_passes_run_from_a_folder_outside_the_repository(tmp_path):
    """Without --repo and without a hub_cards/ folder where it runs, it checks the installed package's cards."""
    import subprocess
    import sys

    run = subprocess.run([sys.executable, "-c", "import sys; from lmms_spatial.cli import main; sys.exit(main())",
                          "card", "--check"], cwd=tmp_path, capture_output=True, text=True, timeout=300)  # fmt: skip
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert len(lines) == len(BENCHMARKS) and all(line.endswith("features match features()") for line in lines)
    from lmms_spatial.data.cards import installed_cards

    assert {Path(line.split(":")[0]).parent.parent for line in lines} == {installed_cards()}


# Who wrote each benchmark's paper, where and when it appeared, its arXiv id: from the seed papers
# (/work/shared/seeds: ODI-Bench "Published as a conference paper at ICLR 2026"; MMSI-Bench "Conference: ICLR
# 2026") and the arXiv listings (first authors Liu Yang, Nazia Tasnim, Zihao Dongfang, Sihan Yang, Yunlong Tang).
# DORI's seed is an anonymous submission under review and OSR-Bench's and MMPerspective's name no venue: arXiv 2025.
CITED = {
    "odi_bench": ("Yang", "ICLR 2026", "2510.11549"),
    "dori": ("Tasnim", "2025", "2505.21649"),
    "osr_bench": ("Dongfang", "2025", "2505.11907"),
    "mmsi": ("Yang", "ICLR 2026", "2505.23764"),
    "mmperspective": ("Tang", "2025", "2505.20426"),
}


@pytest.mark.parametrize("key", sorted(CITED))
def test_every_card_names_the_same_authors_venue_and_arxiv_id_in_its_text_and_its_citation(key):
    import re

    author, venue, arxiv = CITED[key]
    text = (REPO / "hub_cards" / key / "README.md").read_text()
    body, _, citation = text.partition("## Citation")
    line = citation.strip().splitlines()[0]
    assert line.startswith(f"{author} et al., {venue}, “") and f"arXiv:{arxiv} (https://arxiv.org/abs/{arxiv})" in line
    bibtex = citation.split("```bibtex")[1].split("```")[0]
    assert re.search(r"author\s*=\s*\{" + author + ",", bibtex), "the BibTeX's first author"
    year = venue.split()[-1]
    assert re.search(r"year\s*=\s*\{" + year + r"\}", bibtex)
    assert arxiv in bibtex
    if venue.startswith("ICLR"):
        assert "booktitle = {International Conference on Learning Representations (ICLR)}" in bibtex
    # the text names the paper as its citation does: every "<Name> et al." above the citation is the first author
    assert set(re.findall(r"(\w+) et al\.", body)) <= {author}
