"""The papers behind each benchmark: how reports, reference tables, cards and the README cite them.

Checked against the arXiv listings (titles, identifiers, authors) on 2026-11-22. DORI's arXiv
entry was later retitled ("Seeing Isn't Orienting: ..."); the tasks follow the version below.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Citation:
    short: str  # "Yang et al., 2025"
    title: str
    arxiv: str
    bibtex: str

    @property
    def url(self) -> str:
        return f"https://arxiv.org/abs/{self.arxiv}"

    def text(self) -> str:
        """One line for a report: authors, year, title, arXiv id."""
        return f"{self.short}, \u201c{self.title}\u201d, arXiv:{self.arxiv}"


CITATIONS: dict[str, Citation] = {
    "mmsi": Citation(
        "Yang et al., 2025",
        "MMSI-Bench: A Benchmark for Multi-Image Spatial Intelligence",
        "2505.23764",
        """@article{yang2025mmsibench,
  title   = {{MMSI-Bench}: A Benchmark for Multi-Image Spatial Intelligence},
  author  = {Yang, Sihan and Xu, Runsen and Xie, Yiman and Yang, Sizhe and Li, Mo and Lin, Jingli and Zhu, Chenming
             and Chen, Xiaochen and Duan, Haodong and Yue, Xiangyu and Lin, Dahua and Wang, Tai and Pang, Jiangmiao},
  journal = {arXiv preprint arXiv:2505.23764},
  year    = {2025}
}""",
    ),
    "dori": Citation(
        "Tasnim et al., 2025",
        "Right Side Up? Disentangling Orientation Understanding in MLLMs with Fine-grained Multi-axis Perception Tasks",
        "2505.21649",
        """@article{tasnim2025dori,
  title   = {Right Side Up? Disentangling Orientation Understanding in {MLLMs} with Fine-grained Multi-axis
             Perception Tasks},
  author  = {Tasnim, Nazia and Nichols, Keanu and Yang, Yuting and Ikechukwu, Nicholas and Zou, Elva
             and Ghadiyaram, Deepti and Plummer, Bryan A.},
  journal = {arXiv preprint arXiv:2505.21649},
  year    = {2025}
}""",
    ),
    "mmperspective": Citation(
        "Tang et al., 2025",
        "MMPerspective: Do MLLMs Understand Perspective? A Comprehensive Benchmark for Perspective Perception, "
        "Reasoning, and Robustness",
        "2505.20426",
        """@article{tang2025mmperspective,
  title   = {{MMPerspective}: Do {MLLMs} Understand Perspective? A Comprehensive Benchmark for Perspective
             Perception, Reasoning, and Robustness},
  author  = {Tang, Yunlong and Liu, Pinxin and Feng, Mingqian and Tan, Zhangyun and Mao, Rui and Huang, Chao
             and Bi, Jing and Xiao, Yunzhong and Liang, Susan and Hua, Hang and Vosoughi, Ali and Song, Luchuan
             and Zhang, Zeliang and Xu, Chenliang},
  journal = {arXiv preprint arXiv:2505.20426},
  year    = {2025}
}""",
    ),
    "odi_bench": Citation(
        "Yang et al., 2025",
        "ODI-Bench: Can MLLMs Understand Immersive Omnidirectional Environments?",
        "2510.11549",
        """@article{yang2025odibench,
  title   = {{ODI-Bench}: Can {MLLMs} Understand Immersive Omnidirectional Environments?},
  author  = {Yang, Liu and Duan, Huiyu and Tao, Ran and Cheng, Juntao and Wu, Sijing and Li, Yunhao and Liu, Jing
             and Min, Xiongkuo and others},
  journal = {arXiv preprint arXiv:2510.11549},
  year    = {2025}
}""",
    ),
    "osr_bench": Citation(
        "Dongfang et al., 2025",
        "Are Multimodal Large Language Models Ready for Omnidirectional Spatial Reasoning?",
        "2505.11907",
        """@article{dongfang2025osrbench,
  title   = {Are Multimodal Large Language Models Ready for Omnidirectional Spatial Reasoning?},
  author  = {Dongfang, Zihao and Zheng, Xu and Weng, Ziqiao and Lyu, Yuanhuiyi and Paudel, Danda Pani
             and Van Gool, Luc and Yang, Kailun and Hu, Xuming},
  journal = {arXiv preprint arXiv:2505.11907},
  year    = {2025}
}""",
    ),
}
