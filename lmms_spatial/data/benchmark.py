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
    # key in lmms_spatial.data.convert.CONVERTERS ("" = none)
    converter: str = ""
    # what of the release to download (None: everything), and the revision used unless
    # LMMS_SPATIAL_<NAME>_REVISION says otherwise: a commit where one was checked, else
    # "main" (the prepared copy is keyed by the commit it was made from either way)
    allow_patterns: tuple[str, ...] | None = None
    revision: str = "main"
    # run options (environment variables) that are seeds, not conditions: a report pools runs that differ only in
    # them as seeds of one model (e.g. an option-order seed), and names the seed by their values
    seed_options: tuple[str, ...] = ()

    @property
    def revision_var(self) -> str:
        return self.env_var.removesuffix("_PATH") + "_REVISION"

    @property
    def repo_var(self) -> str:
        """A published normalised copy (``<org>/<name>``) read instead of the release."""
        return self.env_var.removesuffix("_PATH") + "_REPO"

    @property
    def map_var(self) -> str:
        """A column mapping (``question=query,answer=gt``) for converting a release whose names changed."""
        return self.env_var.removesuffix("_PATH") + "_MAP"
