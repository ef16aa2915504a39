"""What names a benchmark's data: its key, its Hub release and the environment variable of a local copy.

A leaf module (it imports nothing of ours), so the registry, the data sources, the demo fixtures
and a new benchmark's own declaration can all use :class:`Benchmark` without importing each other.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Benchmark:
    key: str
    hub_id: str
    env_var: str
    # the Hub release is already the layout the tasks read (else it must be converted first)
    hub_is_normalised: bool = True
    # converter module in lmms_spatial.data.convert, by key ("" = none)
    converter: str = ""
    # what of the release to download (None: everything), and the revision used unless
    # LMMS_SPATIAL_<NAME>_REVISION says otherwise (no commit of these releases could be checked
    # from here: "main", and the prepared copy is keyed by the commit it was made from)
    allow_patterns: tuple[str, ...] | None = None
    revision: str = "main"

    @property
    def revision_var(self) -> str:
        return self.env_var.removesuffix("_PATH") + "_REVISION"
