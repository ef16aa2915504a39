"""Exceptions of the judge layer. They fail a run loudly: a silent 0 for every item would
look like a model result."""

from __future__ import annotations


class JudgeError(RuntimeError):
    """Base class for judge failures."""


class JudgeUnavailableError(JudgeError):
    """The judge endpoint could not produce a reply (unreachable after retries, or refused the request)."""

    def __init__(self, message: str, *, base_url: str, model: str | None) -> None:
        super().__init__(message)
        self.base_url = base_url
        self.model = model


class JudgeNotConfiguredError(JudgeUnavailableError):
    """No judge model chosen: set ``LMMS_SPATIAL_JUDGE`` to a model name or to ``none``."""
