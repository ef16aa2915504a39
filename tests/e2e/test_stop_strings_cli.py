"""Our tasks read the reply whole in every lmms-eval model class: no stop string cuts it.

lmms-eval gives a task without ``until`` the stop string ``"\\n\\n"`` (``api/task.py`` line 186), and its ``glm4v``,
``llama4_scout``, ``qwen_vl`` and ``cambrian`` classes cut the reply at it: a chain-of-thought reply lost everything
after its first blank line, the answer with it. Our tasks declare ``until: []`` (the papers read the whole reply).
Through the real CLI with ``--model until_splitter`` (the test plugin: a three-paragraph reply ending in the right
letter, cut as those classes cut).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

PLUGIN = Path(__file__).parent / "plugin"
TASKS = ["mmsi_cot", "mmperspective_cot_vpp"]


def test_a_chain_of_thought_in_paragraphs_is_scored_on_its_last_line(lmms_eval, offline_env):
    path = os.pathsep.join(p for p in (str(PLUGIN), offline_env.get("PYTHONPATH", "")) if p)
    run = lmms_eval("--model", "until_splitter", "--tasks", ",".join(TASKS), "--limit", "3",
                    env={"PYTHONPATH": path, "LMMS_EVAL_PLUGINS": "lmms_spatial_test_models"})  # fmt: skip
    for task in TASKS:
        samples = run.samples[task]
        assert len(samples) == run.results["n-samples"][task]["effective"] >= 2, task
        for sample in samples:
            reply = sample["resps"][0] if "resps" in sample else sample["filtered_resps"]
            reply = reply[0] if isinstance(reply, list) else reply
            assert reply.count("\n\n") == 2 and reply.startswith("Let me look"), (task, reply)  # whole
        assert run.results["results"][task]["accuracy,none"] == 1.0, task  # read on the last line: right
        generation = run.results["lmms_spatial"]["tasks"][task]["generation"]
        assert generation["protocol"]["until"] == generation["in_effect"]["until"] == []
