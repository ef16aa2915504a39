"""A model that answers instantly and counts what it is asked (``lmms-spatial bench``: calls per image).

Used as the base of ``--model staged`` so the harness counts the base-model requests the wrapper
makes for ``osr_qa_cogmap``: every request is appended to the JSONL file ``log`` (task, doc id).
"""

from __future__ import annotations

import json

from lmms_eval.api.model import lmms


class CountingChat(lmms):
    is_simple = False

    def __init__(self, log: str = "", reply: str = "A", **_kwargs) -> None:
        super().__init__()
        self.log, self.reply = log, reply
        self.task_dict = {}

    def generate_until(self, requests):
        if self.log:
            with open(self.log, "a") as fh:
                for request in requests:
                    fh.write(json.dumps({"task": request.args[4], "doc_id": request.args[3]}) + "\n")
        return [self.reply] * len(requests)

    def loglikelihood(self, requests):
        raise NotImplementedError

    def generate_until_multi_round(self, requests):
        raise NotImplementedError
