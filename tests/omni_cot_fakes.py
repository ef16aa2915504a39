"""A scripted chat model for Omni-CoT tests (``base=omni_cot_fakes.ScriptedChat``; tests/ on the path).

It answers each stage by recognising its prompt, and writes every request it gets (texts, image
sizes, the call it came in) to the JSONL file named by ``$OMNI_COT_TRANSCRIPT`` (when set) and to
``self.transcript``, so tests can check the exact prompts and the batching:

* caption ("This image is the <view> view ...") -> ``"<view> caption"``;
* grounding ("Here is an ERP-formatted ...") -> two boxes: one around yaw 90° (the right) and one
  up at the back-left; for existence questions in the 0-1000 format, else normalised;
* relevance ("This image is a crop ...") -> ``"Yes."`` for the crop looking right, ``"No"`` otherwise;
* first answer (prompt with the view captions, no crops) -> a wrong answer;
* refinement (prompt with crops) and anything else -> the right answer.
"""

from __future__ import annotations

import io
import json
import os
import re

from lmms_eval.api.model import lmms

from lmms_spatial.data.demo.erp import draw_object, erp_canvas

BOXES_NORMALISED = "[[0.70, 0.40, 0.80, 0.60], [0.10, 0.0, 0.20, 0.30]]"
BOXES_THOUSAND = "Boxes: [700, 400, 800, 600] and [100, 0, 200, 300]"


def red_square_jpeg(yaw: float) -> bytes:
    """A 256 x 128 ERP with a red square at ``yaw`` degrees (8 degrees below the horizon), as JPEG bytes."""
    image, draw = erp_canvas(256, 128)
    draw_object(draw, "square", "red", yaw, -8.0, 9, 256, 128)
    buffer = io.BytesIO()
    image.save(buffer, format="JPEG", quality=90)
    return buffer.getvalue()


def wrong(doc) -> str:
    if not doc.get("options"):
        return "No" if doc["answer"] == "Yes" else "Yes"
    return "ABCD"[("ABCD".index(doc["answer"]) + 1) % len(doc["options"])]


class ScriptedChat(lmms):
    is_simple = False

    def __init__(self, **kwargs) -> None:
        super().__init__()
        self.kwargs = kwargs
        self.task_dict = {}
        self.transcript: list[dict] = []
        self.n_calls = 0

    @property
    def device(self):
        """Where lmms-eval gathers the ranks' request counts under data parallel (a real chat model has one)."""
        import torch

        return torch.device("cpu")

    def loglikelihood(self, requests):
        raise NotImplementedError

    def generate_until_multi_round(self, requests):
        raise NotImplementedError

    def _reply(self, doc, text: str) -> str:
        view = re.match(r"This image is the (\w+) view", text)
        if view:
            return f"{view.group(1)} caption"
        if text.startswith("Here is an ERP-formatted"):
            return BOXES_THOUSAND if doc.get("task") == "existence" else BOXES_NORMALISED
        if text.startswith("This image is a crop"):
            return "Yes." if "looking right" in text else "No"
        if "Crops of the panorama" in text:
            return doc["answer"]
        if "described view by view" in text:
            return wrong(doc)
        return doc["answer"]

    def generate_until(self, requests):
        self.n_calls += 1
        replies, lines = [], []
        for r in requests:
            _ctx, doc_to_messages, gen, doc_id, task, split = r.args
            doc = self.task_dict[task][split][doc_id]
            messages = doc_to_messages(doc)
            content = [c for m in messages for c in m["content"]]
            texts = [c["text"] for c in content if c["type"] == "text"]
            entry = {
                "call": self.n_calls,
                "task": task,
                "doc_id": doc_id,
                "texts": texts,
                "images": [list(c["url"].size) for c in content if c["type"] == "image"],
                "max_new_tokens": (gen or {}).get("max_new_tokens"),
            }
            self.transcript.append(entry)
            lines.append(json.dumps(entry))
            replies.append(self._reply(doc, texts[-1] if texts else ""))
        path = os.environ.get("OMNI_COT_TRANSCRIPT")
        if path:
            with open(path, "a", encoding="utf-8") as fh:
                fh.write("".join(line + "\n" for line in lines))
        return replies


class TaskOfSetting:
    """What lmms-eval hands a chat model as ``doc_to_messages``: a method of the task, whose resolved
    ``lmms_eval_specific_kwargs`` carry its prompt setting (an ODI-Bench YAML's ``setting: close``)."""

    def __init__(self, messages, setting: str | None) -> None:
        self._messages = messages
        self.lmms_eval_specific_kwargs = {"setting": setting} if setting is not None else {}

    def doc_to_messages(self, doc):
        return self._messages(doc)
