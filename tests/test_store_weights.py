"""The answer store's key carries what answered (lmms_spatial/plugin/weights.py, resume.fold_weights).

The CLI pin (a tiny checkpoint rebuilt at one path) is tests/e2e/test_store_weights_cli.py; here each kind of
fingerprint, the weight files too large to hash whole (the tiny checkpoint is not), and answers kept before
the fingerprint existed.
"""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

import pytest
from lmms_eval.api.instance import Instance

from lmms_spatial.plugin import resume, weights

COMMIT = "0123456789abcdef0123456789abcdef01234567"


@pytest.fixture(autouse=True)
def fresh():
    weights._local.cache_clear()
    yield
    weights._local.cache_clear()


def _checkpoint(folder: Path, seed: int, config: dict | None = None) -> Path:
    """A checkpoint-shaped folder: config.json and a 2 MiB .safetensors (one F32 tensor, random data)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(config or {"hidden_size": 64}))
    data_bytes = 2 * 1024 * 1024
    header = json.dumps({"w": {"dtype": "F32", "shape": [data_bytes // 4], "data_offsets": [0, data_bytes]}}).encode()
    data = random.Random(seed).randbytes(data_bytes)
    (folder / "model.safetensors").write_bytes(len(header).to_bytes(8, "little") + header + data)
    return folder


def test_weights_of_the_same_names_sizes_and_header_but_other_bytes_have_another_fingerprint(tmp_path):
    a = weights.fingerprint(f"pretrained={_checkpoint(tmp_path / 'a', seed=0)}")
    b = weights.fingerprint(f"pretrained={_checkpoint(tmp_path / 'b', seed=1)}")
    assert a.startswith("local:") and len(a) == len("local:") + 16
    sizes = {(tmp_path / name / "model.safetensors").stat().st_size for name in ("a", "b")}
    assert len(sizes) == 1
    assert a != b


def test_the_same_bytes_elsewhere_or_touched_later_have_the_same_fingerprint(tmp_path):
    a = weights.fingerprint(f"pretrained={_checkpoint(tmp_path / 'a', seed=0)},device=cpu")
    copy = _checkpoint(tmp_path / "copy", seed=0)
    os.utime(copy / "model.safetensors", (1, 1))  # an old modification time: not part of the fingerprint
    assert weights.fingerprint(f"pretrained={copy}") == a


def test_a_checkpoint_rewritten_in_one_process_is_read_again(tmp_path):
    """A training script calling simple_evaluate after each save: the second call sees the new weights."""
    folder = tmp_path / "latest"
    before = weights.fingerprint(f"pretrained={_checkpoint(folder, seed=0)}")
    after = weights.fingerprint(f"pretrained={_checkpoint(folder, seed=1)}")
    assert after != before and after == weights.fingerprint(f"pretrained={_checkpoint(tmp_path / 'b', seed=1)}")


def test_a_config_of_the_same_size_with_another_value_has_another_fingerprint(tmp_path):
    a = weights.fingerprint(f"pretrained={_checkpoint(tmp_path / 'a', 0, {'hidden_size': 64})}")
    b = weights.fingerprint(f"pretrained={_checkpoint(tmp_path / 'b', 0, {'hidden_size': 32})}")
    assert a != b


def test_a_hub_id_is_the_commit_the_local_cache_resolved_it_to(tmp_path, monkeypatch):
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_CACHE", str(tmp_path))
    refs = tmp_path / "models--Qwen--Qwen2.5-VL-7B-Instruct" / "refs"
    refs.mkdir(parents=True)
    (refs / "main").write_text(COMMIT)
    assert weights.fingerprint("pretrained=Qwen/Qwen2.5-VL-7B-Instruct") == f"hub:Qwen/Qwen2.5-VL-7B-Instruct@{COMMIT}"
    pinned = "b" * 40
    assert weights.fingerprint(f"pretrained=Qwen/Qwen2.5-VL-7B-Instruct,revision={pinned}").endswith(f"@{pinned}")
    assert weights.fingerprint("pretrained=Org/not-downloaded") == "hub:Org/not-downloaded@unresolved"
    # model= is vLLM's Hub id or LiteLLM's API model: a Hub id when the cache has it, else a name
    assert weights.fingerprint("model=Qwen/Qwen2.5-VL-7B-Instruct") == f"hub:Qwen/Qwen2.5-VL-7B-Instruct@{COMMIT}"
    assert weights.fingerprint("model=anthropic/claude-3-5-sonnet") == "name:anthropic/claude-3-5-sonnet"


def test_an_api_model_is_its_model_version_and_a_model_without_weights_has_none():
    assert weights.fingerprint("model_version=gpt-4o-2024-08-06,max_size_in_mb=20") == "api:gpt-4o-2024-08-06"
    assert weights.fingerprint("seed=4") is None
    assert weights.fingerprint("") is None


# --- the store: answers kept without a fingerprint are never served to a checkpoint -------------------------


class Echo:
    """A 'model' answering with its name, counting the requests it was asked."""

    def __init__(self, name: str):
        self.name, self.asked = name, 0

    def generate_until(self, requests):
        self.asked += len(requests)
        return [f"{self.name} answers {r.doc_id}" for r in requests]


def _request(doc_id: int) -> Instance:
    return Instance("generate_until", ("question", {"max_new_tokens": 8}, None, doc_id, "mmsi_vanilla", "test"), 0,
                    {"task": "mmsi_vanilla", "doc_id": doc_id, "repeats": 1})  # fmt: skip


def _open(root: Path, args: str):
    from lmms_eval.caching.response_cache import ResponseCache

    return ResponseCache.create(str(root), model="qwen2_5_vl", model_args=args)


needs_run_folders = pytest.mark.skipif(
    not hasattr(__import__("lmms_eval.caching.response_cache", fromlist=["ResponseCache"]).ResponseCache, "create"),
    reason="lmms-eval 0.7.0's answer store has no create() nor run folders: the served count and the runs that "
    "answered are read from 0.7.1+'s (on 0.7.0 they are recorded as null)",
)


@needs_run_folders
def test_answers_kept_without_a_fingerprint_are_not_served_and_the_run_says_how_many(tmp_path, capsys):
    args = f"pretrained={_checkpoint(tmp_path / 'latest', seed=0)}"
    old = _open(tmp_path / "cache", args)  # as lmms-eval alone (or an earlier lmms-spatial) keeps them
    assert old.execute(Echo("old weights"), "generate_until", [_request(0), _request(1)]) == [
        "old weights answers 0", "old weights answers 1"]  # fmt: skip
    old.finalize(success=True)

    new = _open(tmp_path / "cache", args)
    resume.fold_weights(new, args)
    model = Echo("new weights")
    assert new.execute(model, "generate_until", [_request(0), _request(1)]) == [
        "new weights answers 0", "new weights answers 1"]  # fmt: skip
    assert model.asked == 2
    new.finalize(success=True)
    assert (f"lmms-spatial: 2 answers in {tmp_path / 'cache'} were kept for the same --model_args without a "
            "fingerprint of the weights") in capsys.readouterr().err  # fmt: skip


@needs_run_folders
def test_answers_of_a_fingerprinted_run_are_served_to_the_same_weights_and_name_that_run(tmp_path):
    args = f"pretrained={_checkpoint(tmp_path / 'latest', seed=0)}"
    first = _open(tmp_path / "cache", args)
    resume.fold_weights(first, args)
    first.execute(Echo("first"), "generate_until", [_request(0), _request(1)])
    first.finalize(success=True)

    again = _open(tmp_path / "cache", args)
    resume.fold_weights(again, args)
    resume.count_served(again, "generate_until", [_request(0), _request(1), _request(2)])
    model = Echo("again")
    assert again.execute(model, "generate_until", [_request(0), _request(1), _request(2)]) == [
        "first answers 0", "first answers 1", "again answers 2"]  # fmt: skip
    summary = resume.served_summary(again)
    again.finalize(success=True)
    assert model.asked == 1
    assert (summary["answers"], summary["asked"], summary["tasks"]) == (2, 3, {"mmsi_vanilla": 2})
    assert summary["weights"] == weights.fingerprint(args)
    [source] = summary["from"]
    assert source["answers"] == 2 and source["run"].endswith(f"(run id {first._run_id})")
