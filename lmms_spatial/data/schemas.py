"""``datasets`` features of the normalised layouts (SPEC section 4), shared by converters and fixtures
(MMPerspective keeps its features beside its row checks, in ``tasks/mmperspective/schema.py``).

A hub card's ``dataset_info.features`` must equal these (tests/test_contract.py checks the
fixture against the card), so converters, demo data and card cannot drift apart.
"""

from __future__ import annotations

import datasets

# MMSI-Bench: the official parquet already is the layout (hub_cards/mmsi/README.md).
MMSI_FEATURES = datasets.Features(
    {
        "id": datasets.Value("int64"),
        "images": datasets.Sequence(datasets.Image()),
        "question_type": datasets.Value("string"),
        "question": datasets.Value("string"),
        "answer": datasets.Value("string"),
        "thought": datasets.Value("string"),
        # also in the release (MMSI_Bench.parquet, per independent loaders); not read by the tasks
        "mean_normed_duration_seconds": datasets.Value("float64"),
        "difficulty": datasets.Value("string"),
    }
)

DORI_FEATURES = datasets.Features(
    {
        "id": datasets.Value("string"),
        "images": datasets.Sequence(datasets.Image()),
        "task": datasets.Value("string"),
        "granularity": datasets.Value("string"),
        "question": datasets.Value("string"),
        "context": datasets.Value("string"),
        "instructions": datasets.Sequence(datasets.Value("string")),
        "examples": datasets.Sequence(datasets.Value("string")),
        "options": datasets.Sequence(datasets.Value("string")),
        "answer": datasets.Value("string"),
        "source": datasets.Value("string"),
        "category": datasets.Value("string"),
        "data_type": datasets.Value("string"),
    }
)

# OSR-Bench: one row per question; configs `standard` and `negative` are two folders of this layout.
OSR_FEATURES = datasets.Features(
    {
        "id": datasets.Value("string"),
        "image": datasets.Image(),
        "scene_id": datasets.Value("string"),
        "turn_id": datasets.Value("int64"),
        "skill": datasets.Value("string"),
        "question": datasets.Value("string"),
        "answer": datasets.Value("string"),
        "object_pool": datasets.Sequence(datasets.Value("string")),
        "cogmap": datasets.Value("string"),
    }
)

# ODI-Bench: one row per question on an ERP image; ``options`` empty for yes/no questions.
ODI_FEATURES = datasets.Features(
    {
        "id": datasets.Value("string"),
        "image": datasets.Image(),
        "task": datasets.Value("string"),
        "question": datasets.Value("string"),
        "options": datasets.Sequence(datasets.Value("string")),
        "answer": datasets.Value("string"),
        "answer_text": datasets.Value("string"),
    }
)
