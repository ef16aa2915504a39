"""Our samples in Weights & Biases (``--wandb_args ... --wandb_log_samples``).

lmms-eval 0.7.x's ``WandbLogger.log_eval_samples`` builds one table per task from the samples with
``x[metric]`` for every metric of the task's ``metric_list``, ``x["arguments"][0][0]`` for the prompt and
``x["resps"][0][0]`` / ``x["filtered_resps"][0]`` for the reply; it looks up ``task_configs[name]`` for every name of
the results table. With our tasks each of those fails and the whole call is lost behind an INFO line
(``Logging to Weights and Biases failed due to 'Positional Relationship (Cam.–Cam.)'``): a per-category metric
is on the samples of its category only, lmms-eval 0.7.x's samples hold neither ``arguments`` nor (for one answer)
``resps``, a reply is a string (``[0]`` is its first character), and a group without an aggregate metric is a row
of the results table with no config.

The one wrapper of ``log_eval_samples`` hands it, for our tasks, copies shaped as it reads them: every metric key
on every sample (``None`` where the category does not apply, a score record as its score), the prompt as
``arguments``, the whole reply as ``resps`` and ``filtered_resps``; our groups with no config are left out of its
task list (their tasks are logged). The samples files are untouched. If the logger fails anyway, one line at the
end of the run says that the samples were not logged and why.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from typing import Any

from lmms_spatial.plugin import failures


def _reply(sample: Mapping) -> str:
    value = sample.get("filtered_resps", sample.get("resps"))
    while isinstance(value, (list, tuple)) and value:
        value = value[0]
    return "" if value is None or isinstance(value, (list, tuple)) else str(value)


def _cell(value: Any) -> Any:
    """A metric value as a table cell: a score record (a mapping with ``score``) as its score (``None``: unscored);
    any other mapping as its JSON text."""
    if isinstance(value, Mapping):
        score = value.get("score")
        if "score" in value and (score is None or isinstance(score, (int, float))):
            return score
        return json.dumps(value, default=str)
    return value


def for_table(samples: list[dict], config: Mapping) -> list[dict]:
    """Copies of one task's samples with what ``WandbLogger._generate_dataset`` reads."""
    metrics = [m.get("metric") for m in config.get("metric_list") or [] if isinstance(m, Mapping)]
    shaped = []
    for sample in samples:
        copy = dict(sample)
        reply = _reply(sample)
        for metric in metrics:
            copy[metric] = _cell(sample.get(metric))
        if "arguments" not in copy:
            copy["arguments"] = [[str(sample.get("input", ""))]]
        copy["resps"] = [[reply]]
        copy["filtered_resps"] = [reply]
        shaped.append(copy)
    return shaped


def _log_eval_samples(original):
    @functools.wraps(original)
    def log_eval_samples(self, samples, *args, **kwargs):
        ours = failures.our_task_names()
        configs = getattr(self, "task_configs", None) or {}
        if not isinstance(samples, Mapping) or not ours & set(samples):
            return original(self, samples, *args, **kwargs)
        shaped = {
            task: for_table(rows, configs.get(task) or {}) if task in ours and isinstance(rows, list) else rows
            for task, rows in samples.items()
        }
        names = list(getattr(self, "task_names", []) or [])
        self.task_names = [name for name in names if name in configs or name not in ours]
        try:
            return original(self, shaped, *args, **kwargs)
        except Exception as exc:
            failures.add_note(
                f"lmms-spatial: the samples were not logged to Weights & Biases "
                f"({failures.describe(exc)}); they are in the run's samples files"
            )
            raise
        finally:
            self.task_names = names

    log_eval_samples._lmms_spatial = True
    return log_eval_samples


def patch_wandb_samples(module) -> None:
    """The one wrapper of ``WandbLogger.log_eval_samples`` (see the module doc; docs/plugin.md)."""
    from lmms_spatial.plugin import internal

    cls = internal(module, "WandbLogger", "our samples are not logged to Weights & Biases")
    original = internal(module, "WandbLogger.log_eval_samples", "our samples are not logged to Weights & Biases")
    if cls is None or original is None or getattr(original, "_lmms_spatial", False):
        return
    cls.log_eval_samples = _log_eval_samples(original)
