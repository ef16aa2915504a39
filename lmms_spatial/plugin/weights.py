"""What answered: a short fingerprint of the weights a run's ``--model_args`` name, for the answer store's key
(:mod:`.resume`) and the run's conditions (``model.fingerprint``, :mod:`.conditions`).

lmms-eval keys its response cache on the ``model_args`` *string*: a checkpoint rebuilt at the same path
(``pretrained=checkpoints/latest`` during training) would be served the old weights' answers. The fingerprint,
by what the argument names:

- a local folder (or file): ``local:<16 hex>``, a SHA-256 over every file in it (hidden ones and folders
  named ``.*`` skipped): its relative name and size; for a file up to :data:`WHOLE_FILE_BYTES` (``config.json``,
  ``generation_config.json``, tokenizer and processor files), its whole content; for a larger one (the weights),
  a ``.safetensors`` header (tensor names, dtypes, shapes, offsets) and :data:`SAMPLED_BLOCKS` blocks of
  :data:`BLOCK_BYTES` spread evenly over the file. Names, sizes and headers alone are not enough: a retrained or
  re-initialised checkpoint of the same architecture has the same names, sizes and headers, only other bytes;
  modification times are not used at all (a copy or ``git checkout`` changes them, a rewrite in the same second
  may not). Cost: the small files plus 64 x 4 KiB per weight file, whatever its size. What it can miss: a change
  confined to bytes between the sampled blocks of every file (a training step changes nearly every tensor);
- a Hub id: ``hub:<id>@<commit>``, the commit the local Hugging Face cache resolved it to (``refs/<revision>``,
  ``main`` by default: what an offline run loads; the model is loaded before the store is opened, so an online
  run has just resolved it too); ``hub:<id>@<revision>`` for a 40-hex ``revision=``; ``hub:<id>@unresolved`` when
  the cache holds no ref for it (weights from elsewhere: the key then tells the id only, and the run says so);
- an API model (``model_version=``): ``api:<model_version>``, the server's name for its weights; ``model=``
  (vLLM's Hub id, or LiteLLM's API model) not found locally: ``name:<model>``;
- nothing that names weights (``random_choice``, ``replay``): ``None``.

Adapters named next to the base (``peft=``, ``lora=``, ``adapter=``, ``adapter_path=``) are fingerprinted the same
way and joined with ``;``. A folder is read again only when a file's name, size or modification time changed
since its last reading in this process.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
from pathlib import Path
from typing import Any

WEIGHT_ARGS = ("pretrained", "model_path", "checkpoint", "model", "model_name")  # the first one given names them
API_ARG = "model_version"
ADAPTER_ARGS = ("peft", "lora", "adapter", "adapter_path")
NAME_ARGS = ("model", "model_name")  # a Hub id only when the local cache resolves it, else a name
WHOLE_FILE_BYTES = 1 << 20
SAMPLED_BLOCKS = 64
BLOCK_BYTES = 4096
MAX_FILES = 10_000  # a folder of more files is not a checkpoint: its first MAX_FILES names, sizes and samples
_COMMIT = re.compile(r"^[0-9a-f]{40}$")


def _parse(model_args: Any) -> dict[str, str]:
    from lmms_spatial.conditions import parse_model_args

    return parse_model_args(model_args)


def fingerprint(model_args: Any) -> str | None:
    """The weights ``model_args`` name, as one short string (see the module doc); None when they name none."""
    args = _parse(model_args)
    parts = []
    if args.get(API_ARG):
        parts.append(f"api:{args[API_ARG]}")
    else:
        key = next((k for k in WEIGHT_ARGS if args.get(k)), None)
        if key is not None:
            parts.append(_of(args[key], args.get("revision", ""), args.get("cache_dir", ""), key))
    for key in ADAPTER_ARGS:
        if args.get(key):
            parts.append(f"{key}={_of(args[key], '', args.get('cache_dir', ''), key)}")
    return ";".join(parts) or None


def _of(value: str, revision: str, cache_dir: str, key: str) -> str:
    """``model=`` names a Hub id (vLLM) or an API model (LiteLLM): a Hub id only when the local cache has it;
    ``model_name=`` is a name."""
    path = Path(value).expanduser()
    if path.exists():
        return f"local:{local(str(path.resolve()))}"
    commit = hub_commit(value, revision, cache_dir) if key != "model_name" else None
    if commit is None and key in NAME_ARGS:
        return f"name:{value}"
    return f"hub:{value}@{commit or 'unresolved'}"


def local(path: str) -> str:
    """16 hex digits over a local checkpoint folder or file (see the module doc). Read again whenever a file's
    name, size or modification time changed since the last reading in this process (a checkpoint rewritten
    between two ``simple_evaluate`` calls of one training script); the times only say when to read again."""
    root = Path(path)
    files = tuple([root] if root.is_file() else _files(root))[:MAX_FILES]
    seen = []
    for file in files:
        try:
            stat = file.stat()
            seen.append((str(file), stat.st_size, stat.st_mtime_ns))
        except OSError:
            seen.append((str(file), -1, -1))
    return _local(path, tuple(seen))


@functools.lru_cache(maxsize=32)
def _local(path: str, seen: tuple) -> str:
    root = Path(path)
    digest = hashlib.sha256()
    files = [Path(name) for name, _size, _time in seen]
    for file in files:
        name = file.name if file == root else file.relative_to(root).as_posix()
        try:
            size = file.stat().st_size
            digest.update(f"{name}\0{size}\0".encode())
            with open(file, "rb") as handle:
                _content(handle, size, file.suffix == ".safetensors", digest)
        except OSError as exc:  # unreadable: its name and the error, never a silent pass
            digest.update(f"unreadable:{type(exc).__name__}".encode())
    return digest.hexdigest()[:16]


def _files(root: Path) -> list[Path]:
    found = []
    for folder, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        found.extend(Path(folder) / n for n in sorted(names) if not n.startswith("."))
    return sorted(found, key=lambda p: p.relative_to(root).as_posix())


def _content(handle: Any, size: int, safetensors: bool, digest: Any) -> None:
    if size <= WHOLE_FILE_BYTES:
        digest.update(handle.read())
        return
    start = 0
    if safetensors:
        head = handle.read(8)
        length = int.from_bytes(head, "little") if len(head) == 8 else 0
        if 0 < length <= size - 8:
            digest.update(head + handle.read(length))
            start = 8 + length
    span = max(0, size - start - BLOCK_BYTES)
    for i in range(SAMPLED_BLOCKS):
        handle.seek(start + span * i // (SAMPLED_BLOCKS - 1))
        digest.update(handle.read(BLOCK_BYTES))


def hub_commit(repo_id: str, revision: str = "", cache_dir: str = "") -> str | None:
    """The commit the local Hugging Face cache resolves ``repo_id`` at ``revision`` (default ``main``) to."""
    if _COMMIT.match(revision or ""):
        return revision
    try:
        from huggingface_hub.constants import HF_HUB_CACHE
    except ImportError:
        HF_HUB_CACHE = os.path.join(os.environ.get("HF_HOME", "~/.cache/huggingface"), "hub")  # noqa: N806
    folder = Path(cache_dir or HF_HUB_CACHE).expanduser() / f"models--{repo_id.replace('/', '--')}"
    try:
        commit = (folder / "refs" / (revision or "main")).read_text(encoding="utf-8").strip()
    except (OSError, ValueError):
        return None
    return commit if _COMMIT.match(commit) else None


def describe(value: str | None) -> str:
    """A few words for the run's lines: ``weights local:ab12..`` or ``no weights named``."""
    return f"weights {value}" if value else "no weights named in --model_args"
