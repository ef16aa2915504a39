"""Samples files written whatever a reply holds.

lmms-eval writes samples with ``json.dumps(..., ensure_ascii=False)`` into a UTF-8 file: one reply
holding a lone surrogate (``"\\ud800"``, which models do emit) raises there and leaves an empty
samples file. The evaluation tracker's ``json`` is replaced by :class:`EncodableJson`.
"""

from __future__ import annotations

import json


class EncodableJson:
    """The ``json`` module, except that ``dumps`` never returns text UTF-8 cannot encode.

    Lone surrogates become JSON escapes, which read back to the same string; every other text is unchanged.
    """

    def __getattr__(self, name: str):
        return getattr(json, name)

    @staticmethod
    def dumps(*args, **kwargs) -> str:
        text = json.dumps(*args, **kwargs)
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            text = text.encode("utf-8", "backslashreplace").decode("utf-8")
        return text


def patch_sample_encoding(module) -> None:
    """Make lmms-eval's evaluation tracker write every sample, lone surrogates included."""
    if getattr(module, "json", None) is not None and not isinstance(module.json, EncodableJson):
        module.json = EncodableJson()
