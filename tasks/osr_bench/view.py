"""OSR-Bench in ``lmms-spatial view``: the model's cognitive map and the true one, side by side as 10×10 grids.

Each point is marked as the scorer sees it (:mod:`lmms_spatial.metrics.osr_bench`, in the rotation the record
kept): ``matched`` (assigned to a true object of its class within 2 cells), ``extra`` (of a class in the scene,
left unmatched), ``hallucinated`` (a class absent from the scene), and on the true map ``missed``. The map the
model drew is the reply of a map task, or the map stage's reply of a QA-after-map task (``stage_outputs``); the
true map is the dataset's ``cogmap`` column of the same document (the samples file does not hold it).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

DATA_COLUMNS = ("cogmap",)


def data_config(task: str) -> str:
    """The data subfolder (Hub config) whose rows the task reads."""
    return "negative" if "negative" in task else "standard"


def truth(line: Mapping[str, Any], record: Mapping[str, Any]) -> str | None:
    """A map task's truth is the true map (the line's ``target`` is its image's first question's answer)."""
    return "the true map (the grid below)" if "tp" in record else None


def evidence(line: Mapping[str, Any], record: Mapping[str, Any], row: Mapping[str, Any] | None) -> list[dict]:
    from lmms_spatial.metrics.osr_bench import (
        GRID,
        MATCH_THRESHOLD,
        grid_positions,
        last_json_object,
        predicted_positions,
        rotate,
        score_cogmap,
    )
    from lmms_spatial.view.evidence import reply_text

    if "tp" in record:
        drawn = reply_text(line)
    else:
        stages = record.get("stage_outputs")
        if not isinstance(stages, Mapping):
            return []
        drawn = next((v for v in stages.values() if isinstance(v, str)), None)
        if drawn is None:
            return [{"type": "note", "title": "Cognitive map", "text": "no map drawn by the model for this answer"}]
    if row is None or not row.get("cogmap"):
        return [{"type": "note", "title": "Cognitive map", "text": "the true map needs the dataset (--data)"}]
    truth = grid_positions(str(row["cogmap"]))
    obj, _ = last_json_object(drawn)
    pred = predicted_positions(obj)[0] if obj is not None else None
    rotation = int(record.get("rotation") or score_cogmap(truth_grid_of(row), drawn).get("rotation") or 0)
    true_cells = [{"r": r, "c": c, "label": name, "status": "missed"} for name, pts in truth.items() for r, c in pts]
    model_cells: list[dict[str, Any]] = []
    if pred:
        import numpy as np
        from scipy.optimize import linear_sum_assignment

        turned = rotate(pred, rotation)
        for name, pts in sorted(turned.items()):
            mine = [{"r": r, "c": c, "label": name, "status": "hallucinated" if name not in truth else "extra"}
                    for r, c in pts]  # fmt: skip
            model_cells.extend(mine)
            if name not in truth:
                continue
            theirs = [t for t in true_cells if t["label"] == name]
            cost = np.array([[math.dist((t["r"], t["c"]), (m["r"], m["c"])) for m in mine] for t in theirs])
            for i, j in zip(*linear_sum_assignment(cost), strict=True):
                if cost[i, j] <= MATCH_THRESHOLD:
                    theirs[i]["status"] = mine[j]["status"] = "matched"
    title = f"rotated {rotation}°, as scored" if rotation else "as scored"
    return [{
        "type": "grid",
        "size": GRID,
        "title": "Cognitive map: the model's and the true one",
        "grids": [{"title": f"model's map ({title})" if pred else "model's map (unparsed)", "cells": model_cells},
                  {"title": "true map", "cells": true_cells}],
        "legend": ["matched", "extra", "hallucinated", "missed"],
    }]  # fmt: skip


def truth_grid_of(row: Mapping[str, Any]) -> Any:
    import json

    return json.loads(str(row["cogmap"]))
