"""The model a run names: lmms-eval's ``--model_args`` parsed, and the short label a run and a report show.

Below the plugin, so that a model (``replay`` reads earlier runs' results), the plugin's conditions and its
weights' fingerprint parse model arguments one way, with no import of the plugin.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

LABEL_ARGS = ("pretrained", "model_version", "model")


def parse_model_args(args: Any) -> dict[str, str]:
    """``a=b,c=d`` (lmms-eval's ``--model_args``) as a dict; a dict as is."""
    if isinstance(args, Mapping):
        return {str(k): str(v) for k, v in args.items()}
    found: dict[str, str] = {}
    for part in str(args or "").split(","):
        name, sep, value = part.partition("=")
        if sep and name.strip():
            found[name.strip()] = value.strip()
    return found


def short_name(value: str) -> str:
    """The last part of a Hub id or a path (``Qwen/Qwen2.5-VL-7B-Instruct`` -> ``Qwen2.5-VL-7B-Instruct``)."""
    parts = [p for p in str(value).replace("\\", "/").split("/") if p]
    return parts[-1] if parts else str(value)


def model_label(name: str | None, args: Any) -> str:
    """A short label: the basename of ``pretrained=`` / ``model_version=`` / ``model=``, else the model name."""
    parsed = parse_model_args(args)
    for key in LABEL_ARGS:
        if parsed.get(key):
            return short_name(parsed[key])
    return str(name or "model")
