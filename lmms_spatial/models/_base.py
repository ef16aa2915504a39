"""Shared plumbing for our non-neural models (replay, random_choice)."""

from __future__ import annotations

from lmms_eval.api.model import lmms


class TextOnlyModel(lmms):
    """A model that answers ``generate_until`` requests without looking at images."""

    def __init__(self, batch_size: int | str = 1, **_ignored) -> None:
        super().__init__()
        self.batch_size_per_gpu = int(batch_size) if str(batch_size).isdigit() else 1

    @property
    def device(self):
        """Where lmms-eval puts the tensors it gathers across processes (data parallel: each rank's request count).
        These models compute nothing on a device: the accelerator's (CPU under gloo, the rank's GPU under NCCL),
        which lmms-eval's ``evaluate`` gives a model that has none, else the CPU."""
        import torch

        accelerator = getattr(self, "accelerator", None)
        return accelerator.device if accelerator is not None else torch.device("cpu")

    def prefetch_order(self, requests) -> list[int]:
        """None: these models never call a task's document functions, so nothing is built ahead
        (read by :mod:`lmms_spatial.prefetch`)."""
        return []

    def loglikelihood(self, requests):
        raise NotImplementedError(f"{type(self).__name__} only answers generate_until tasks")

    def generate_until_multi_round(self, requests):
        raise NotImplementedError(f"{type(self).__name__} only answers generate_until tasks")
