"""A published normalised copy (``lmms-spatial export`` uploaded to the Hub), read as published.

``LMMS_SPATIAL_<NAME>_REPO=<org>/<name>`` (and ``LMMS_SPATIAL_<NAME>_REVISION``, default
``main``) makes a benchmark's tasks read that dataset repository instead of its release: no
conversion, the same code path as a release published in the normalised layout
(:func:`~lmms_spatial.data.sources.dataset_source`
reads it through ``hub_source``; this module only names it, and imports nothing of the data sources).
Online ``datasets`` downloads it; offline (``HF_HUB_OFFLINE=1``) a snapshot in the Hugging Face
cache (a copied ``HF_HUB_CACHE``) is read as a local folder. A group that shares one copy thus
converts nothing on any cluster.

A local copy (``LMMS_SPATIAL_<NAME>_PATH``) still wins over a published one.
"""

from __future__ import annotations

import os
import re
from dataclasses import replace

from lmms_spatial.benchmark import Benchmark
from lmms_spatial.data.hub_cache import DataUnavailable

_REPO_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")


def published_benchmark(bench: Benchmark) -> Benchmark | None:
    """``bench`` re-pointed at the repository its ``_REPO`` variable names (read as published), or None."""
    repo = os.environ.get(bench.repo_var, "").strip()
    if not repo:
        return None
    if not _REPO_ID.match(repo):
        raise DataUnavailable(f"{bench.repo_var}={repo!r}: expected a Hub dataset id, <org>/<name>")
    # revision "main" unless LMMS_SPATIAL_<NAME>_REVISION says otherwise: a release's pinned commit
    # (a declaration's revision) is not a commit of the copy
    return replace(bench, hub_id=repo, hub_is_normalised=True, revision="main", allow_patterns=None)
