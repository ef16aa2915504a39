"""``--model until_splitter``: a chain-of-thought reply in three paragraphs, the document's right answer on its last
line, cut at every stop string of the request as lmms-eval 0.7.3's ``glm4v``, ``llama4_scout``, ``qwen_vl`` and
``cambrian`` cut theirs (``for term in until: ans = ans.split(term)[0]``, glm4v.py lines 305-308)."""

from __future__ import annotations

from lmms_spatial.models.random_choice import RandomChoice

REPLY = "Let me look at the images first.\n\nThe second view is turned to the left of the first.\n\nThe answer is {}."


class UntilSplitter(RandomChoice):
    def generate_until(self, requests) -> list[str]:
        answers = []
        for request in requests:
            task, doc_id, split = request.task_name, int(request.doc_id), request.args[-1]
            reply = REPLY.format(self._text_docs(task, split)[doc_id]["answer"])
            until = request.args[1].get("until", [])
            for term in [until] if isinstance(until, str) else until:
                if term:
                    reply = reply.split(term)[0]
            answers.append(reply)
        return answers
