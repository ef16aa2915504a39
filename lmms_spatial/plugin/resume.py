"""No answer is ever lost: lmms-eval's response cache, on by default in our runs, written as answers come.

lmms-eval's ``--use_cache DIR`` keys each deterministic answer on (model, model arguments, task
configuration, document, request text, generation kwargs) and stores it in SQLite plus a JSONL log
(fsync per answer). It is the store we use; three measured gaps stop it from saving a long run
(``tests/e2e/test_resume_cli.py``):

1. it is opt-in, and most users do not know it: in a run of ours it is on by default, in
   ``<output_path>/cache`` (``~/.cache/lmms_spatial/answers`` without ``--output_path``), announced in one
   line; ``LMMS_SPATIAL_RESUME=0`` switches the default off, ``--use_cache DIR`` picks another folder
   (``--model replay``, which answers from samples files, keeps nothing by default);
2. it writes an answer only after the model's ``generate_until`` returns, and lmms-eval calls it once with
   every request of the run: a kill at hour 30 leaves nothing on disk. Here the requests go to the
   model in chunks of ``LMMS_SPATIAL_SAVE_EVERY`` requests (default 64, rounded up to whole batches), in
   the order the model reads them (:func:`lmms_spatial.prefetch.predicted_order`), each chunk stored as
   soon as it returns; one progress bar counts the whole run. A resumed run cuts the same chunks (the
   order of a subset is the same order), so the model sees the same batches as in a run never stopped;
3. from lmms-eval 0.7.1 each process writes into ``runs/<random id>/`` and only a run that *succeeds*
   is merged into what the next run reads: a killed or failed run's answers are never found again. At
   start, the answers logged by earlier runs that were not merged are read into this run's store.

4. from lmms-eval 0.7.1 every key holds ``git describe`` run in the folder above lmms-eval's package: for a
   virtual environment inside a git checkout (ours, as the README makes it, or any project's), that is the
   *project's* commit, so a commit or a ``git pull`` between the kill and the resume drops every saved
   answer. Our runs key on the installed lmms-eval release instead, unless lmms-eval itself is a git
   checkout (lmms-eval's own intent: its code changes while its version does not).

And one gap of ours: our tasks read their data when lmms-eval loads it (a YAML names no path), so the
task configuration no longer tells two copies of a benchmark apart; each task's key also carries the
fingerprint ``datasets`` gives its loaded documents (it changes with the files).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ENV_SWITCH = "LMMS_SPATIAL_RESUME"
ENV_SAVE_EVERY = "LMMS_SPATIAL_SAVE_EVERY"
DEFAULT_SAVE_EVERY = 64
HOME_CACHE = Path("~/.cache/lmms_spatial/answers")
NOT_KEPT = {"replay"}  # models that answer from files already: nothing to keep, and nothing stale to serve
_OFF = {"0", "false", "no", "off"}


def enabled() -> bool:
    return os.environ.get(ENV_SWITCH, "1").strip().lower() not in _OFF


def _output_path(bound: Any) -> str | None:
    cli_args = bound.arguments.get("cli_args")
    tracker = bound.arguments.get("evaluation_tracker")
    for value in (getattr(cli_args, "output_path", None), getattr(tracker, "output_path", None)):
        if value:
            return str(value)
    return None


def default_dir(output_path: str | None) -> Path:
    if not output_path:
        return HOME_CACHE.expanduser()
    path = Path(output_path).expanduser()
    return (path.parent if path.suffix == ".json" else path) / "cache"


def choose_cache(bound: Any, run: Any) -> None:
    """Turn lmms-eval's response cache on for this run (unless switched off or already chosen); say where."""
    chosen = bound.arguments.get("use_cache")
    model = bound.arguments.get("model")
    if not chosen and "use_cache" in bound.signature.parameters and enabled() and model not in NOT_KEPT:
        chosen = str(default_dir(_output_path(bound)))
        bound.arguments["use_cache"] = chosen
        how = f"switch off with {ENV_SWITCH}=0"
    else:
        how = "--use_cache"
    if chosen:
        run.notes["answers"] = chosen
        print(f"lmms-spatial: answers are kept in {chosen} as they come ({how}); the same command run again asks "
              "the model only for the missing ones", file=sys.stderr, flush=True)  # fmt: skip


def save_every(lm: Any) -> int:
    raw = os.environ.get(ENV_SAVE_EVERY, "").strip()
    try:
        wanted = max(1, int(raw)) if raw else DEFAULT_SAVE_EVERY
    except ValueError:
        raise ValueError(f"{ENV_SAVE_EVERY}={raw!r}: expected a positive integer") from None
    wanted = max(wanted, int(getattr(lm, "resume_chunk_size", 0) or 0))
    try:
        batch = max(1, int(getattr(lm, "batch_size", 1)))
    except (TypeError, ValueError):
        batch = 1
    return -(-wanted // batch) * batch


def chunks(lm: Any, requests: list, size: int) -> list[list]:
    """``requests`` in the order the model reads them, cut into runs of ``size``; every request exactly once.

    A model's own ``prefetch_order`` may list only the requests whose documents it reads; the others follow
    in request order.
    """
    from lmms_spatial.prefetch import predicted_order

    order = list(dict.fromkeys(i for i in predicted_order(lm, requests) if 0 <= i < len(requests)))
    placed = set(order)
    order += [i for i in range(len(requests)) if i not in placed]
    ordered = [requests[i] for i in order]
    return [ordered[start : start + size] for start in range(0, len(ordered), size)]


@contextmanager
def one_progress_bar(lm: Any, total: int) -> Iterator[Any]:
    """One bar over the whole run; the model's own per-call bar (module-level ``tqdm``) is silenced meanwhile."""
    from tqdm import tqdm

    module = sys.modules.get(type(lm).__module__)
    own = getattr(module, "tqdm", None) if module is not None else None
    swap = own is tqdm

    def silent(*args, **kwargs):
        kwargs["disable"] = True
        return tqdm(*args, **kwargs)

    rank = getattr(lm, "rank", 0)
    bar = tqdm(total=total, desc="Model Responding (answers saved as they come)", disable=bool(rank))
    if swap:
        module.tqdm = silent
    try:
        yield bar
    finally:
        if swap:
            module.tqdm = own
        bar.close()


def data_fingerprints(lm: Any, task_names: set[str]) -> dict[str, str]:
    """``datasets``' fingerprint of each task's loaded documents (``lm.task_dict``), where there is one."""
    found: dict[str, str] = {}
    for name in sorted(task_names):
        splits = (getattr(lm, "task_dict", None) or {}).get(name)
        if splits is None:
            continue
        try:
            found[name] = ",".join(f"{split}:{splits[split]._fingerprint}" for split in sorted(splits))
        except Exception:  # not a DatasetDict of Datasets: no fingerprint to add
            continue
    return found


def _fold_data_fingerprints(cache: Any, lm: Any, requests: list) -> None:
    fingerprints = getattr(cache, "_task_fingerprints", None)
    if not isinstance(fingerprints, dict) or getattr(cache, "_lmms_spatial_data_folded", False):
        return
    names = {getattr(r, "task_name", None) for r in requests} - {None}
    for name, data in data_fingerprints(lm, names).items():
        fingerprints[name] = hashlib.sha256(f"{fingerprints.get(name, '')}|data:{data}".encode()).hexdigest()[:16]
    cache._lmms_spatial_data_folded = True


def _execute(original):
    @functools.wraps(original)
    def execute(self, lm, reqtype, requests):
        from lmms_spatial.plugin.run import active

        if not active() or not requests:
            return original(self, lm, reqtype, requests)
        _fold_data_fingerprints(self, lm, requests)
        size = save_every(lm)
        if len(requests) <= size:
            return original(self, lm, reqtype, requests)
        position = {id(r): i for i, r in enumerate(requests)}
        unanswered = object()
        answers: list = [unanswered] * len(requests)
        with one_progress_bar(lm, len(requests)) as bar:
            for chunk in chunks(lm, requests, size):
                for request, answer in zip(chunk, original(self, lm, reqtype, chunk), strict=True):
                    answers[position[id(request)]] = answer
                bar.update(len(chunk))
        missing = [i for i, answer in enumerate(answers) if answer is unanswered]
        if missing:  # never score a request the model was not asked
            raise RuntimeError(f"lmms-spatial: {len(missing)} requests got no answer from the chunked model calls")
        return answers

    execute._lmms_spatial = True
    return execute


def replay_unmerged_runs(cache: Any) -> int:
    """Answers logged by earlier runs under the same cache root that were never merged (killed or failed),
    read into this run's store. Returns how many were added."""
    root, own, db = getattr(cache, "_cache_root", None), getattr(cache, "_run_dir", None), getattr(cache, "db", None)
    if not root or db is None:
        return 0
    added = 0
    runs = Path(root) / "runs"
    for run_dir in sorted(runs.iterdir()) if runs.is_dir() else []:
        if not run_dir.is_dir() or (own and run_dir.resolve() == Path(own).resolve()) or (run_dir / ".merged").exists():
            continue
        for audit in sorted(run_dir.glob("rank_*.audit.jsonl")):
            added += _replay_log(db, audit)
    if added:
        db.commit()
        print(f"lmms-spatial: {added} answers of earlier interrupted runs found in {root}", file=sys.stderr)
    return added


def _replay_log(db: Any, audit: Path) -> int:
    added = 0
    with open(audit, encoding="utf-8", errors="replace") as handle:
        for line in handle:
            try:
                rec = json.loads(line)
                if not rec.get("deterministic", True) or not rec.get("cache_key"):
                    continue
                cursor = db.execute(
                    "INSERT OR IGNORE INTO responses (cache_key, request_type, task_name, doc_id, idx, gen_kwargs, "
                    "response, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (rec["cache_key"], rec["request_type"], rec["task_name"], rec["doc_id"], rec.get("idx", 0),
                     rec.get("gen_kwargs", "{}"), rec["response"], rec.get("created_at", 0.0)),
                )  # fmt: skip
                added += cursor.rowcount
            except (ValueError, KeyError, TypeError):  # a line cut short by the kill
                continue
    return added


def release_version(found: str) -> str:
    """The cache version of our runs: lmms-eval's own ``found`` (a git commit) only when lmms-eval is a git
    checkout; else its installed release (the folder above site-packages is somebody else's repository)."""
    import lmms_eval

    from lmms_spatial.plugin import lmms_eval_version

    if (Path(lmms_eval.__file__).resolve().parents[1] / ".git").exists():
        return found
    version = lmms_eval_version()
    return found if version == "unknown" else version


def _create(original):
    @functools.wraps(original)
    def create(cls, *args, **kwargs):
        cache = original(cls, *args, **kwargs)
        from lmms_spatial.plugin.run import active

        if active():
            if isinstance(getattr(cache, "_eval_version", None), str):
                cache._eval_version = release_version(cache._eval_version)
            try:
                replay_unmerged_runs(cache)
            except Exception as exc:  # never worse than lmms-eval's own cache
                print(f"lmms-spatial: earlier runs' answers not read: {exc}", file=sys.stderr)
        return cache

    create._lmms_spatial = True
    return classmethod(create)


def patch_response_cache(module) -> None:
    from lmms_spatial.plugin import internal

    execute = internal(module, "ResponseCache.execute", "answers are saved only when the model returns all of them")
    if execute is None:
        return
    cls = module.ResponseCache
    if not getattr(execute, "_lmms_spatial", False):
        cls.execute = _execute(execute)
    create = cls.__dict__.get("create")
    if isinstance(create, classmethod) and not getattr(create.__func__, "_lmms_spatial", False):
        cls.create = _create(create.__func__)
