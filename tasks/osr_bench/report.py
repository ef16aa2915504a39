"""OSR-Bench in ``lmms-spatial report``: Tables 2-5 (cognitive maps, QA with / without the map,
negative sampling, well-formatted maps).

Found by :mod:`lmms_spatial.reports.layouts` by its file name (the benchmark key); published rows
in ``tasks/osr_bench/published.json``.
"""

from __future__ import annotations

from typing import Any

from lmms_spatial.reports.citations import Citation, read_bibtex
from lmms_spatial.reports.tables import Column, Layout, Leaf

CITATION = Citation(
    "Dongfang et al., 2025",
    "Are Multimodal Large Language Models Ready for Omnidirectional Spatial Reasoning?",
    "2505.11907",
    read_bibtex(__file__),  # CITATION.bib beside this file: the one copy (tests/reports/test_citations_once.py)
)

_SKILLS = ("object_counting", "relative_distance", "relative_direction")
_NO_MAP_CHANCE = "cognitive maps: no chance level (a map is not a choice among options)"
_NO_COUNT_CHANCE = "object counting scores partial credit: no chance level"
_UNPARSED_MAPS = (
    "unparsed (map columns): share of maps that could not be parsed; such a map gets the official "
    "lowest score (F1 0, CHAIR 0), so read CHAIR and F1 with this rate beside them"
)
_UNPARSED_QA = "unparsed (QA columns): share of the skill's answers from which no answer could be read"


def layouts() -> list[Layout]:
    def cog(task: str, metric: str, sample: str | None = None, **kw: Any) -> Leaf:
        return Leaf(task, metric, sample_metric=sample, chance=None, no_chance=_NO_MAP_CHANCE, **kw)

    def qa(task: str, skill: str) -> Leaf:
        no_chance = _NO_COUNT_CHANCE if skill == "object_counting" else None
        return Leaf(task, skill, sample_metric="accuracy", where=("skill", skill), no_chance=no_chance)

    std, neg = "osr_cogmap_standard", "osr_cogmap_negative"
    t2 = (
        Column("avg_distance", "Avg dist.", cog(std, "avg_distance"), scaled=False),
        Column("precision", "Precision", cog(std, "cogmap_precision")),
        Column("recall", "Recall", cog(std, "cogmap_recall")),
        Column("f1", "F1", cog(std, "cogmap_f1")),
    )
    t3 = tuple(
        Column(f"{s}{suffix}", f"{s.split('_')[1]} {label}", qa(task, s))
        for s in _SKILLS
        for suffix, label, task in (
            ("_cogmap", "w/ map", "osr_qa_cogmap_standard_vanilla"),
            ("", "w/o map", "osr_qa_standard_vanilla"),
        )
    )
    t4 = (
        Column("precision", "Precision", cog(neg, "cogmap_precision")),
        Column("recall", "Recall", cog(neg, "cogmap_recall")),
        Column("chair_s", "CHAIR_S", cog(neg, "chair_s")),
        Column("chair_i", "CHAIR_I", cog(neg, "chair_i")),
        Column("chair_instance", "CHAIR_ins", cog(neg, "chair_instance")),
        *(Column(s, s.replace("_", " "), qa("osr_qa_negative_vanilla", s)) for s in _SKILLS),
    )
    t5 = (Column("format_success_rate", "Success rate (%)", cog(std, "format_success_rate")),)
    return [
        Layout("osr_table2", "osr_bench", "OSR-Bench Table 2: cognitive map generation", t2, "table2", digits=3,
               notes=(_UNPARSED_MAPS,)),
        Layout("osr_table3", "osr_bench", "OSR-Bench Table 3: QA with / without the map", t3, "table3", digits=3,
               notes=("QA in the vanilla (non-think) prompt; counting scores partial credit", _UNPARSED_QA)),
        Layout("osr_table4", "osr_bench", "OSR-Bench Table 4: negative sampling", t4, "table4", digits=3,
               notes=("map metrics from osr_cogmap_negative, QA from osr_qa_negative_vanilla", _UNPARSED_MAPS,
                      _UNPARSED_QA)),
        Layout("osr_table5", "osr_bench", "OSR-Bench Table 5: well-formatted cognitive maps", t5, "table5", digits=2,
               notes=("unparsed: share of maps that could not be parsed",)),
    ]  # fmt: skip
