"""Samples files written whatever a reply holds, each sample naming its document.

lmms-eval writes samples with ``json.dumps(..., ensure_ascii=False)`` into a UTF-8 file: one reply
holding a lone surrogate (``"\\ud800"``, which models do emit) raises there and leaves an empty
samples file. The evaluation tracker's ``json`` is replaced by :class:`EncodableJson`.

lmms-eval 0.7.x hashes ``requests[0].doc`` into each sample's ``doc_hash``, but builds its requests without
their document (``# doc=doc`` in ``ConfigurableTask.construct_requests``): every sample of every task gets the
hash of ``null`` (:data:`NULL_DOC_HASH`), and joins on it pair every answer with every other. For our tasks
:func:`hash_documents` puts the hash of the document's logged fields there instead (:func:`document_hash`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

NULL_DOC_HASH = hashlib.sha256(b"null").hexdigest()  # what lmms-eval 0.7.x writes for every sample


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


def _stable(value: Any) -> Any:
    """A JSON value for what ``json`` cannot write, the same in every run (never an object's address)."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        return "sha256:" + hashlib.sha256(bytes(value)).hexdigest()  # image bytes: their content, not their repr
    if isinstance(value, (set, frozenset)):
        return sorted(value, key=repr)
    if hasattr(value, "item") and callable(value.item):  # numpy scalars
        try:
            return value.item()
        except (TypeError, ValueError):
            pass
    if hasattr(value, "tolist") and callable(value.tolist):  # numpy arrays
        return value.tolist()
    return type(value).__name__


def document_hash(doc: Mapping[str, Any]) -> str:
    """sha256 of a document's fields (as lmms-eval logs them: media left out), keys sorted: the same document
    gives the same hash in every run, and two documents of a task differ (our tasks require unique ids)."""
    text = json.dumps(dict(doc), sort_keys=True, ensure_ascii=False, default=_stable)
    return hashlib.sha256(text.encode("utf-8", "backslashreplace")).hexdigest()


def hash_documents(results: Any, tasks: Any) -> None:
    """Give each sample of ``tasks`` (ours) in ``results["samples"]`` its document's hash (in place), where
    lmms-eval hashed ``null``; lmms-eval's own tasks, and a sample it did hash a document for, stay as they are.
    Runs when ``simple_evaluate`` returns: before the evaluation tracker writes the hashes (``task_hashes`` in
    the results file, ``doc_hash`` in the samples) and pops each sample's ``doc``."""
    samples = results.get("samples") if isinstance(results, Mapping) else None
    if not isinstance(samples, Mapping):
        return
    for task in tasks:
        for sample in samples.get(task) or []:
            doc = sample.get("doc") if isinstance(sample, dict) else None
            if sample.get("doc_hash") == NULL_DOC_HASH and isinstance(doc, Mapping):
                sample["doc_hash"] = document_hash(doc)
