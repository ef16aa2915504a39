"""The weights fingerprint (lmms_spatial/plugin/weights.py), byte for byte (issue 42): the digest a local checkpoint
gets is written out here from the module's rule (each file's relative name and size, then its whole content, or a
safetensors header and 64 blocks of 4 KiB), so a changed order, a skipped file or a shifted block fails; and which
argument names the weights, the Hub ref read, the adapters joined. Fast: hand-made files of at most 1 MiB + 4 KiB."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from lmms_spatial.plugin import weights

COMMIT = "0123456789abcdef0123456789abcdef01234567"
OTHER = "fedcba9876543210fedcba9876543210fedcba98"
MIB = 1 << 20


@pytest.fixture(autouse=True)
def fresh():
    weights._local.cache_clear()
    yield
    weights._local.cache_clear()


def _data(size: int, seed: int = 0) -> bytes:
    return bytes((i * 7 + seed) % 251 for i in range(size))


def _blocks(data: bytes, start: int) -> bytes:
    """The 64 blocks of 4096 bytes the rule reads from ``start``, spread evenly so that the last ends the file."""
    span = max(0, len(data) - start - 4096)
    return b"".join(data[start + span * i // 63 : start + span * i // 63 + 4096] for i in range(64))


def _digest(*parts: bytes) -> str:
    return hashlib.sha256(b"".join(parts)).hexdigest()[:16]


def test_a_folder_is_each_file_s_relative_name_size_and_content_in_name_order_hidden_ones_skipped(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / ".git").mkdir()
    (tmp_path / "config.json").write_bytes(b'{"a": 1}')
    (tmp_path / "a" / "tok.txt").write_bytes(b"xy")  # "a/tok.txt" sorts before "b.txt", though walked after it
    (tmp_path / "a-b.txt").write_bytes(b"w")  # and after "a-b.txt" ("-" < "/"), though "a" < "a-b.txt" as parts
    (tmp_path / "b.txt").write_bytes(b"z")
    (tmp_path / ".hidden").write_bytes(b"never read")
    (tmp_path / ".git" / "HEAD").write_bytes(b"never read")
    expected = _digest(
        b"a-b.txt\x001\x00w", b"a/tok.txt\x002\x00xy", b"b.txt\x001\x00z", b"config.json\x008\x00", b'{"a": 1}'
    )
    assert weights.local(str(tmp_path)) == expected


def test_one_file_is_named_by_its_own_name(tmp_path):
    (tmp_path / "model.bin").write_bytes(b"abc")
    assert weights.local(str(tmp_path / "model.bin")) == _digest(b"model.bin\x003\x00abc")


def test_a_file_of_exactly_one_mib_is_read_whole_and_one_byte_more_is_sampled(tmp_path):
    whole = _data(MIB)
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "w.bin").write_bytes(whole)
    assert weights.local(str(tmp_path / "a")) == _digest(f"w.bin\x00{MIB}\x00".encode(), whole)
    sampled = _data(MIB + 1)
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "w.bin").write_bytes(sampled)
    assert weights.local(str(tmp_path / "b")) == _digest(f"w.bin\x00{MIB + 1}\x00".encode(), _blocks(sampled, 0))


def test_a_safetensors_file_is_its_header_then_blocks_of_what_follows(tmp_path):
    header = b'{"w": {"dtype": "F32"}}'
    body = _data(MIB + 100)
    data = len(header).to_bytes(8, "little") + header + body
    (tmp_path / "m.safetensors").write_bytes(data)
    expected = _digest(
        f"m.safetensors\x00{len(data)}\x00".encode(), data[: 8 + len(header)], _blocks(data, 8 + len(header))
    )
    assert weights.local(str(tmp_path / "m.safetensors")) == expected


@pytest.mark.parametrize("length", [0, MIB + 101, MIB + 1000])  # none, or longer than the MIB + 100 bytes after it
def test_a_safetensors_file_whose_header_length_is_impossible_is_sampled_from_its_start(tmp_path, length):
    data = length.to_bytes(8, "little") + _data(MIB + 100)
    (tmp_path / "m.safetensors").write_bytes(data)
    expected = _digest(f"m.safetensors\x00{len(data)}\x00".encode(), _blocks(data, 0))
    assert weights.local(str(tmp_path / "m.safetensors")) == expected


def test_a_safetensors_header_that_leaves_less_than_a_block_reads_the_rest_in_every_block(tmp_path):
    header = b"{" + b" " * (MIB + 10) + b"}"
    rest = _data(100)
    data = len(header).to_bytes(8, "little") + header + rest
    (tmp_path / "m.safetensors").write_bytes(data)
    # 100 bytes after the header, under one block: each of the 64 blocks reads those 100 bytes
    expected = _digest(f"m.safetensors\x00{len(data)}\x00".encode(), data[: 8 + len(header)], rest * 64)
    assert weights.local(str(tmp_path / "m.safetensors")) == expected


def test_a_safetensors_header_that_fills_the_file_to_its_last_byte_is_read(tmp_path):
    header = b"{" + b" " * (MIB + 10) + b"}"
    data = len(header).to_bytes(8, "little") + header
    (tmp_path / "m.safetensors").write_bytes(data)
    # the header ends the file (its length is size - 8, the largest allowed): every block read after it is empty
    assert weights.local(str(tmp_path / "m.safetensors")) == _digest(f"m.safetensors\x00{len(data)}\x00".encode(), data)


def test_a_safetensors_header_of_one_byte_is_read(tmp_path):
    data = (1).to_bytes(8, "little") + b"{" + _data(MIB + 100)
    (tmp_path / "m.safetensors").write_bytes(data)
    expected = _digest(f"m.safetensors\x00{len(data)}\x00".encode(), data[:9], _blocks(data, 9))
    assert weights.local(str(tmp_path / "m.safetensors")) == expected


def test_an_unreadable_file_is_named_by_its_error_never_skipped(tmp_path):
    (tmp_path / "a.txt").write_bytes(b"a")
    os.symlink(tmp_path / "gone", tmp_path / "b.bin")  # a dangling link: listed, not readable
    assert weights.local(str(tmp_path)) == _digest(b"a.txt\x001\x00a", b"unreadable:FileNotFoundError")


def test_only_the_first_max_files_names_are_read(tmp_path, monkeypatch):
    monkeypatch.setattr(weights, "MAX_FILES", 2)
    for name in ("a", "b", "c"):
        (tmp_path / name).write_bytes(name.encode())
    assert weights.local(str(tmp_path)) == _digest(b"a\x001\x00a", b"b\x001\x00b")


def test_a_file_rewritten_with_another_size_is_read_again(tmp_path):
    (tmp_path / "w.bin").write_bytes(b"ab")
    first = weights.local(str(tmp_path))
    (tmp_path / "w.bin").write_bytes(b"abc")
    assert (first, weights.local(str(tmp_path))) == (_digest(b"w.bin\x002\x00ab"), _digest(b"w.bin\x003\x00abc"))


# --- which argument names the weights ---------------------------------------------------------------------------


def _folder(path: Path, content: bytes) -> Path:
    path.mkdir(parents=True)
    (path / "w.bin").write_bytes(content)
    return path


def test_the_first_weights_argument_given_names_them_and_adapters_are_joined_after_it(tmp_path):
    base, other, lora = (
        _folder(tmp_path / "base", b"1"),
        _folder(tmp_path / "other", b"2"),
        _folder(tmp_path / "l", b"3"),
    )
    one, two, three = (_digest(b"w.bin\x001\x00" + x) for x in (b"1", b"2", b"3"))
    assert weights.fingerprint(f"checkpoint={other},model_path={base}") == f"local:{one}"  # model_path comes first
    assert weights.fingerprint(f"pretrained={base},lora={lora}") == f"local:{one};lora=local:{three}"
    assert weights.fingerprint(f"peft={lora},adapter={other}") == f"peft=local:{three};adapter=local:{two}"
    assert weights.fingerprint(f"model_version=v1,pretrained={base}") == "api:v1"  # the server's name wins


def test_a_path_under_the_home_folder_is_read_there(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    _folder(tmp_path / "ckpt", b"1")
    expected = _digest(b"w.bin\x001\x001")
    assert weights.fingerprint("pretrained=~/ckpt") == f"local:{expected}"


def _hub(root: Path, repo: str, ref: str, commit: str) -> None:
    refs = root / f"models--{repo.replace('/', '--')}" / "refs"
    refs.mkdir(parents=True, exist_ok=True)
    (refs / ref).write_text(commit + "\n", encoding="utf-8")


def test_a_hub_id_is_resolved_in_the_given_cache_dir_at_the_given_revision(tmp_path, monkeypatch):
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_CACHE", str(tmp_path / "default"))
    _hub(tmp_path / "mine", "Org/m", "main", COMMIT)
    _hub(tmp_path / "mine", "Org/m", "v2", OTHER)
    _hub(tmp_path / "mine", "Org/ad", "main", OTHER)
    assert weights.fingerprint(f"pretrained=Org/m,cache_dir={tmp_path / 'mine'}") == f"hub:Org/m@{COMMIT}"
    assert weights.fingerprint(f"pretrained=Org/m,revision=v2,cache_dir={tmp_path / 'mine'}") == f"hub:Org/m@{OTHER}"
    assert weights.fingerprint(f"model_name=x,lora=Org/ad,cache_dir={tmp_path / 'mine'}") == (
        f"name:x;lora=hub:Org/ad@{OTHER}"
    )
    assert weights.fingerprint("pretrained=Org/m") == "hub:Org/m@unresolved"  # not in the default cache
    _hub(tmp_path / "default", "Org/ad", "main", COMMIT)
    assert weights.fingerprint("model_name=x,peft=Org/ad") == f"name:x;peft=hub:Org/ad@{COMMIT}"


def test_a_model_name_is_a_name_even_when_the_cache_holds_it(tmp_path, monkeypatch):
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_CACHE", str(tmp_path))
    _hub(tmp_path, "Org/m", "main", COMMIT)
    assert weights.fingerprint("model_name=Org/m") == "name:Org/m"
    assert weights.fingerprint("model=Org/m") == f"hub:Org/m@{COMMIT}"


def test_a_ref_that_does_not_hold_a_commit_resolves_to_none(tmp_path):
    _hub(tmp_path, "Org/m", "main", "not a commit")
    assert weights.hub_commit("Org/m", cache_dir=str(tmp_path)) is None
    assert weights.hub_commit("Org/m", revision=OTHER, cache_dir=str(tmp_path)) == OTHER  # a commit given is taken
    _hub(tmp_path, "Org/n", "main", COMMIT.upper())
    assert weights.hub_commit("Org/n", cache_dir=str(tmp_path)) is None


def test_a_hub_cache_without_huggingface_hub_is_under_hf_home(tmp_path, monkeypatch):
    import builtins

    real = builtins.__import__

    def without_hub(name, *args, **kwargs):
        if name.startswith("huggingface_hub"):
            raise ImportError(name)
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", without_hub)
    monkeypatch.setenv("HF_HOME", str(tmp_path))
    _hub(tmp_path / "hub", "Org/m", "main", COMMIT)
    assert weights.hub_commit("Org/m") == COMMIT
    monkeypatch.delenv("HF_HOME")  # then ~/.cache/huggingface/hub
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    _hub(tmp_path / "home" / ".cache" / "huggingface" / "hub", "Org/m", "main", OTHER)
    assert weights.hub_commit("Org/m") == OTHER


def test_the_run_line_names_the_weights_or_says_none_are_named():
    assert weights.describe("local:ab12") == "weights local:ab12"
    assert weights.describe(None) == "no weights named in --model_args"
