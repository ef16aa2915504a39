"""Row checks of the normalised MMPerspective layout (SPEC §4, ``hub_cards/mmperspective/README.md``).

Its ``datasets`` features are declared once, in ``tasks/mmperspective/__init__.py``.

One parquet split ``test``; one row per question:

- ``id`` str (unique), ``images`` list[Image] (1, or 2 in order for PTS), ``task`` str (one
  of the 9 task codes), ``question`` str, ``options`` list[str] (letters A, B, ... in list
  order), ``answer`` str (the letter);
- ``robust_group`` str or null, ``perturbation`` str (original, crop, flip, mask, rotate).

A row with a null ``robust_group`` is an accuracy item (P'Percep / P'Reason; its
``perturbation`` is ``original`` or empty). A row with a ``robust_group`` is a robustness
item: all rows sharing it are the variants of one seed question, at most one row per
perturbation, and the group's expected variants are ``original`` plus every perturbation
the file holds for it. The two sets are disjoint: a seed that is also an accuracy item is
published twice (the paper's counts: 2,118 accuracy QAs + 593 seeds x 5 variants = 5,083).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from lmms_spatial.data.images import BadDocumentError
from lmms_spatial.metrics.extraction import LETTERS
from lmms_spatial.metrics.mmperspective import ORIGINAL, PERTURBATIONS, TASKS, normalise_perturbation, normalise_task
from lmms_spatial.tasks.mmperspective import features  # the one schema source


def is_robust(group: Any) -> bool:
    return group is not None and str(group).strip() != ""


def check_row(row: Mapping[str, Any]) -> None:
    """Raise :class:`BadDocumentError` (naming the id and field) if a row breaks the layout."""
    doc_id = row.get("id", "<no id>")
    for field in ("id", "task", "question", "options", "answer"):
        if field not in row or row[field] is None or (isinstance(row[field], str) and not row[field].strip()):
            raise BadDocumentError(doc_id, field, "missing")
    if normalise_task(row["task"]) is None:
        raise BadDocumentError(doc_id, "task", f"{row['task']!r} is not one of {list(TASKS)}")
    options = row["options"]
    if isinstance(options, str) or not isinstance(options, (list, tuple)) or not 2 <= len(options) <= len(LETTERS):
        raise BadDocumentError(doc_id, "options", f"expected a list of 2-{len(LETTERS)} option texts, got {options!r}")
    answer = str(row["answer"]).strip().upper()
    if len(answer) != 1 or answer not in LETTERS[: len(options)]:
        raise BadDocumentError(doc_id, "answer", f"{row['answer']!r} is not a letter A-{LETTERS[len(options) - 1]}")
    perturbation = normalise_perturbation(row.get("perturbation"))
    if perturbation is None:
        raise BadDocumentError(doc_id, "perturbation", f"{row['perturbation']!r} is not one of {list(PERTURBATIONS)}")
    if not is_robust(row.get("robust_group")) and perturbation != ORIGINAL:
        raise BadDocumentError(doc_id, "robust_group", f"missing for a {perturbation!r} variant")


def check_rows(rows: Iterable[Mapping[str, Any]]) -> dict[str, list[str]]:
    """Check every row and the robust groups; returns {robust_group: expected variants}.

    Expected variants of a group: ``original`` plus every perturbation present for it.
    Fails on duplicate ids and on two rows for the same (group, perturbation).
    """
    seen_ids: set[str] = set()
    groups: dict[str, dict[str, Any]] = {}
    for row in rows:
        check_row(row)
        doc_id = str(row["id"])
        if doc_id in seen_ids:
            raise BadDocumentError(row["id"], "id", "duplicate id")
        seen_ids.add(doc_id)
        if is_robust(row.get("robust_group")):
            group = str(row["robust_group"]).strip()
            variant = normalise_perturbation(row.get("perturbation"))
            variants = groups.setdefault(group, {})
            if variant in variants:
                raise BadDocumentError(
                    row["id"],
                    "perturbation",
                    f"robust group {group!r} already has a {variant!r} row ({variants[variant]!r})",
                )
            variants[variant] = row["id"]
    return {g: [v for v in PERTURBATIONS if v in variants or v == ORIGINAL] for g, variants in groups.items()}


def check_dataset(dataset) -> dict[str, list[str]]:
    """:func:`check_rows` on a ``datasets.Dataset`` without decoding any image."""
    columns = list(features())
    missing = [c for c in columns if c not in dataset.column_names]
    if missing:
        has_id = len(dataset) and "id" in dataset.column_names
        first = dataset.select_columns(["id"])[0]["id"] if has_id else "<every row>"
        raise BadDocumentError(first, ",".join(missing), "column missing from the dataset")
    return check_rows(dataset.select_columns([c for c in columns if c != "images"]).to_list())
