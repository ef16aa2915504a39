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
   start, the answers logged by earlier runs that were not merged are read into this run's store; a folder
   a live process is writing into (:mod:`.owners`) is left to it. (lmms-eval's own run id,
   ``LMMS_CACHE_RUN_ID``, reopens a killed run's folder only when the rerun has the same id and the same
   ranks, and makes live runs with one id share a folder: measured in docs/reliability.md.)

4. from lmms-eval 0.7.1 every key holds ``git describe`` run in the folder above lmms-eval's package: for a
   virtual environment inside a git checkout (ours, as the README makes it, or any project's), that is the
   *project's* commit, so a commit or a ``git pull`` between the kill and the resume drops every saved
   answer. Our runs key on the installed lmms-eval release instead, unless lmms-eval itself is a git
   checkout (lmms-eval's own intent: its code changes while its version does not).

And one gap of ours: our tasks read their data when lmms-eval loads it (a YAML names no path), so the
task configuration no longer tells two copies of a benchmark apart; each task's key also carries the
fingerprint ``datasets`` gives its loaded documents (it changes with the files).

5. lmms-eval keys the model on the ``model_args`` *string*: a checkpoint rebuilt at the same path would be
   served the old weights' answers. In our runs the model key also carries the weights' fingerprint
   (:mod:`.weights`: a local folder's file names, sizes, small files and sampled weight bytes; a Hub id's
   resolved commit; an API model's ``model_version``). Answers kept before that (an earlier lmms-spatial, or
   lmms-eval alone) are keyed without it: they are never served (their weights are unknown), and a run whose
   model has such answers in the store says how many in one line. The generation settings in effect are in
   every key already: each request's ``gen_kwargs`` (the keys that change an answer) and the task's
   configuration (``generation_kwargs`` after ``--gen_kwargs``), whose hash is the task's fingerprint.

Each run records, in its store, when it started, into which ``--output_path`` and with which weights
(``meta`` rows ``lmms_spatial_run:<run id>``, merged with its answers); at the end it says in one line how many
answers came from the store and from which earlier runs, and its conditions record it
(:func:`served_summary`: ``results["lmms_spatial"]["store"]``, per task ``answers_from_store``).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import sqlite3
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import lmms_spatial_startup
from lmms_spatial import run_state
from lmms_spatial.plugin import failed_requests, store_check

ENV_SWITCH = "LMMS_SPATIAL_RESUME"
ENV_SAVE_EVERY = "LMMS_SPATIAL_SAVE_EVERY"
DEFAULT_SAVE_EVERY = 64
HOME_CACHE = Path("~/.cache/lmms_spatial/answers")
NOT_KEPT = {"replay"}  # models that answer from files already: nothing to keep, and nothing stale to serve
_OFF = {"0", "false", "no", "off"}


def enabled() -> bool:
    return os.environ.get(ENV_SWITCH, "1").strip().lower() not in _OFF


def _output_path(arguments: dict, cli_args: Any) -> str | None:
    tracker = arguments.get("evaluation_tracker")
    for value in (getattr(cli_args, "output_path", None), getattr(tracker, "output_path", None)):
        if value:
            return str(value)
    return None


def default_dir(output_path: str | None) -> Path:
    if not output_path:
        return HOME_CACHE.expanduser()
    return Path(output_path).expanduser() / "cache"  # beside the results: lmms-eval makes out/x.json a folder too


def _announce(run: Any, where: str, how: str) -> None:
    run.notes.answers = where
    if int(os.environ.get("RANK", "0") or 0) != 0:  # data parallel: said once, by rank 0
        return
    print(f"lmms-spatial: answers are kept in {where} as they come ({how}); the same command run again asks "
          "the model only for the missing ones", file=sys.stderr, flush=True)  # fmt: skip


def keep_answers(bound: Any, run: Any) -> Any:
    """Called as a run of ours enters ``evaluate``: the response cache it was given is announced; without one
    (and unless switched off, or the model is ``replay``) lmms-eval's response cache is opened in the default
    folder and passed to ``evaluate``, as ``--use_cache`` would have. Returns the cache opened here (to close
    when ``evaluate`` ends), else ``None``.

    The cache is opened here, not before ``simple_evaluate``, because only the tasks lmms-eval resolved say
    whether the run is ours (a tag, a group, a YAML of the user's); opened after ``simple_evaluate`` adjusted
    the tasks (``--gen_kwargs``, ``--predict_only``), its keys are those ``--use_cache`` gives.
    """
    arguments = run.call.arguments if run.call is not None else {}
    cli_args = run.cli_args if run.cli_args is not None else bound.arguments.get("cli_args")
    given = bound.arguments.get("response_cache")
    if given is not None:
        asked = arguments.get("use_cache") or getattr(cli_args, "use_cache", None)
        where = getattr(given, "_cache_root", None) or asked or ""  # the folder lmms-eval 0.7.1+ keeps it in
        how = (
            "--use_cache"
            if not asked or os.path.abspath(str(asked)) == os.path.abspath(str(where))
            else f"--use_cache {asked}: lmms-eval keeps cache.db and runs/ in that file's folder"
        )
        _announce(run, str(where), how)
        return None
    model = arguments.get("model", getattr(cli_args, "model", None))
    if not enabled() or model is None or model in NOT_KEPT:
        return None
    if "response_cache" not in bound.signature.parameters:
        print("lmms-spatial: this lmms-eval's evaluate takes no response cache: answers are not kept as they come",
              file=sys.stderr)  # fmt: skip
        return None
    root = default_dir(_output_path(arguments, cli_args))
    model_args = arguments.get("model_args", getattr(cli_args, "model_args", "")) or ""
    world_size, rank = int(os.environ.get("WORLD_SIZE", 1)), int(os.environ.get("RANK", 0))  # as simple_evaluate
    _announce(run, str(root), f"switch off with {ENV_SWITCH}=0")
    cache = open_cache(str(root), model=model, model_args=model_args, task_dict=bound.arguments.get("task_dict"),
                       world_size=world_size, global_rank=rank)  # fmt: skip
    from lmms_eval.caching.response_cache import ResponseCache

    if not hasattr(ResponseCache, "create"):  # lmms-eval 0.7.0: one store per model, no run folders
        try:
            hold_run_dir(cache, run, folder=os.path.dirname(cache.db_path), rank=rank)
        except Exception:
            cache.close()
            raise
    bound.arguments["response_cache"] = cache
    return cache


def open_cache(root: str, *, model: Any, model_args: Any, task_dict: Any, world_size: int, global_rank: int) -> Any:
    """lmms-eval's response cache for these arguments, opened as ``simple_evaluate(use_cache=root)`` opens it."""
    from lmms_eval.caching.response_cache import ResponseCache

    if hasattr(ResponseCache, "create"):  # lmms-eval 0.7.1+
        return ResponseCache.create(root, model=model, model_args=model_args, task_dict=task_dict,
                                    world_size=world_size, global_rank=global_rank)  # fmt: skip
    # lmms-eval 0.7.0 builds it inside simple_evaluate (evaluator.py, `if use_cache is not None:`): the same here
    import re

    from lmms_eval.utils import hash_string, simple_parse_args_string

    function_address = re.compile(r" at 0x[0-9a-fA-F]+>")
    fingerprints = {}
    for name, task in (task_dict or {}).items():
        if hasattr(task, "dump_config"):
            text = function_address.sub(">", json.dumps(task.dump_config(), sort_keys=True, default=str))
            fingerprints[name] = hash_string(text)[:16]
    parsed = model_args
    if isinstance(model_args, str):
        try:
            parsed = simple_parse_args_string(model_args)
        except Exception:
            parsed = model_args
    arguments = (json.dumps(parsed, sort_keys=True, ensure_ascii=True, separators=(",", ":"), default=str)
                 if isinstance(parsed, dict) else str(model_args))  # fmt: skip
    from lmms_spatial.plugin import weights

    fingerprint = f"{model}|{arguments}|weights:{weights.fingerprint(model_args) or 'none'}"
    folder = os.path.join(root, hash_string(fingerprint)[:16])
    os.makedirs(folder, exist_ok=True)
    cache = ResponseCache(db_path=os.path.join(folder, f"rank{global_rank}.db"),
                          audit_path=os.path.join(folder, f"rank{global_rank}.jsonl"), model_fingerprint=fingerprint,
                          task_fingerprints=fingerprints)  # fmt: skip
    cache._lmms_spatial_weights = weights.fingerprint(model_args)
    return cache


def close_cache(cache: Any, succeeded: bool, bound: Any, lm: Any) -> None:
    """Close a cache :func:`keep_answers` opened, as ``simple_evaluate`` closes its own (merged on success)."""
    try:
        if hasattr(cache, "finalize"):
            cache.finalize(success=succeeded, dist_backend=bound.arguments.get("distributed_executor_backend")
                           or "accelerate", accelerator=getattr(lm, "accelerator", None))  # fmt: skip
        else:
            cache.close()
    except Exception as exc:  # the answers are on disk; the evaluation's own outcome must not be masked
        print(f"lmms-spatial: closing the answer store failed: {exc}", file=sys.stderr)


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
    """One bar over the whole run (requests, with rate and ETA); the model's own per-call bar (module-level
    ``tqdm``) is not drawn: its updates move this bar (:func:`lmms_spatial.progress.counting_into`)."""
    from lmms_spatial import progress

    rank = getattr(lm, "rank", 0)
    bar = progress.tqdm(total=total, desc="Model Responding (answers saved as they come)", disable=bool(rank),
                        dynamic_ncols=True)  # fmt: skip
    try:
        yield bar
    finally:
        bar.close()


def answered_chunk(lm: Any, bar: Any, size: int) -> Any:
    """While the model answers one chunk of ``size`` requests: its own bar's updates move ``bar`` (per request
    or per batch, as the model counts); what it did not count (answers from the cache) is added after."""
    from lmms_spatial import progress

    return progress.counting_into(bar, progress.modules_of(lm), cap=size)


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
        if not run_state.active() or not requests:
            return original(self, lm, reqtype, requests)
        from lmms_spatial.plugin.sampling import with_draws

        requests = with_draws(requests)  # a repeated request's draws, each kept on its own (sampled)
        _fold_data_fingerprints(self, lm, requests)
        count_served(self, reqtype, requests)
        size = save_every(lm)
        if len(requests) <= size:
            return original(self, lm, reqtype, requests)
        position = {id(r): i for i, r in enumerate(requests)}
        unanswered = object()
        answers: list = [unanswered] * len(requests)
        in_a_row, last = 0, ""  # requests failed in a row (failed_requests.STOP_AFTER of them: the server is down)
        with one_progress_bar(lm, len(requests)) as bar:
            for chunk in chunks(lm, requests, size):
                with answered_chunk(lm, bar, len(chunk)) as counted:
                    got = original(self, lm, reqtype, chunk)
                for request, answer in zip(chunk, got, strict=True):
                    answers[position[id(request)]] = answer
                    failed = failed_requests.failure_text(answer)
                    in_a_row, last = (in_a_row + 1, failed) if failed is not None else (0, last)
                counted.take(counted.left or 0)
                if in_a_row >= failed_requests.STOP_AFTER:
                    raise failed_requests.stop(lm, in_a_row, last, getattr(self, "_cache_root", None))
        missing = [i for i, answer in enumerate(answers) if answer is unanswered]
        if missing:  # never score a request the model was not asked
            raise RuntimeError(f"lmms-spatial: {len(missing)} requests got no answer from the chunked model calls")
        return answers

    execute._lmms_spatial = True
    return execute


def store_unwritable(folder: Any, exc: BaseException) -> BaseException:
    """The exception that ends a run whose answer store cannot be written (disk full, read-only, quota): its
    message, the run's last line, names the folder (SQLite's own message names none)."""
    from lmms_spatial.plugin import failures

    return failures.RunRefused(
        f"the answer store {folder} cannot be written ({failures.describe(exc)}): the answers saved before are kept "
        f"there; free space there (or give --use_cache another folder) and run the same command again: it asks the "
        "model only for the missing ones"
    )


def _store_folder(cache: Any) -> str:
    return str(getattr(cache, "_cache_root", None) or os.path.dirname(str(getattr(cache, "db_path", "")) or "."))


def _not_failures(original, name: str):
    """``ResponseCache._store`` / ``_log_to_audit`` / ``_lookup`` that keep a model class's failure marker
    (:mod:`.failed_requests`) out of the store in a run of ours: not stored, logged without a cache key (no
    read-back restores it), and one stored by an earlier version not served (asked again). A write that fails
    (``database or disk is full``) ends the run naming the store's folder."""

    import inspect

    parameters = list(inspect.signature(original).parameters)[1:]  # after self
    position = parameters.index("response") if "response" in parameters else None
    keyed = "cache_key" in parameters

    @functools.wraps(original)
    def method(self, *args, **kwargs):
        if not run_state.active():
            return original(self, *args, **kwargs)
        if name == "_lookup":
            found = original(self, *args, **kwargs)
            return None if failed_requests.failure_text(found) is not None else found
        response = kwargs.get("response", args[position] if position is not None and position < len(args) else None)
        if failed_requests.failure_text(response) is not None:
            if name == "_store":
                return None
            if keyed:
                kwargs = {**kwargs, "cache_key": ""}
        try:
            return original(self, *args, **kwargs)
        except (sqlite3.Error, OSError) as exc:
            raise store_unwritable(_store_folder(self), exc) from exc

    method._lmms_spatial = True
    return method


def replay_unmerged_runs(cache: Any) -> int:
    """Answers logged by earlier runs under the same cache root that were never merged (killed, crashed or
    failed), read into this run's store. A folder a live process is writing into (:mod:`.owners`) is left to
    it, and said. Returns how many answers were added."""
    from lmms_spatial.plugin import owners

    root, own, db = getattr(cache, "_cache_root", None), getattr(cache, "_run_dir", None), getattr(cache, "db", None)
    if not root or db is None:
        return 0
    added = 0
    runs = Path(root) / "runs"
    for run_dir in sorted(runs.iterdir()) if runs.is_dir() else []:
        if not run_dir.is_dir() or (own and run_dir.resolve() == Path(own).resolve()) or (run_dir / ".merged").exists():
            continue
        owner = owners.live_owner(run_dir)
        if owner is not None:
            print(f"lmms-spatial: {owners.describe(owner)} is writing answers into {root} now: this run keeps "
                  "its own apart and does not read that run's (if both evaluate the same, stop one)",
                  file=sys.stderr)  # fmt: skip
            continue
        for audit in sorted(run_dir.glob("rank_*.audit.jsonl")):
            added += store_check.replay_log(db, audit)
        _copy_run_records(db, run_dir)
    if added:
        db.commit()
        print(f"lmms-spatial: {added} answers of earlier interrupted runs found in {root}", file=sys.stderr)
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


_RUN_ID_VARIABLES = ("LMMS_CACHE_RUN_ID", "SLURM_JOB_ID", "TORCHELASTIC_RUN_ID")  # lmms-eval 0.7.3's, in its order


def hold_run_dir(cache: Any, run: Any, folder: str | None = None, rank: int | None = None) -> None:
    """This process's lock on its run folder (:mod:`.owners`), kept in ``run.notes`` until the run ends. A live
    process already holding it (the same run id, from the environment) stops this run in one line. lmms-eval
    0.7.0 has no run folders: its store is one folder per model (``folder``), which a second live run of the
    same model would share, so there the second run is refused."""
    from lmms_spatial.plugin import failures, owners

    run_dir = getattr(cache, "_run_dir", None) or folder
    if not run_dir:
        return
    rank = int(getattr(cache, "_global_rank", 0) or 0) if rank is None else rank
    handle, owner = owners.hold(Path(run_dir), rank)
    if owner is not None:
        if folder is not None:
            raise failures.RunRefused(
                f"{owners.describe(owner)} is writing answers into {run_dir}, this lmms-eval's one answer store for "
                "this model: two live runs cannot share one; wait for it to end, or give this run another "
                "--output_path"
            )
        named = next((f" ({name}={os.environ[name]})" for name in _RUN_ID_VARIABLES if os.environ.get(name)), "")
        raise failures.RunRefused(
            f"{owners.describe(owner)} is writing answers into {run_dir}, the folder of the same run id{named}: "
            "two live runs cannot share one; wait for it to end, or give this run its own (LMMS_CACHE_RUN_ID=<id>)"
        )
    run.notes.lock = handle


def release(run: Any) -> None:
    """The end of a run of ours: its run folder's lock is let go."""
    from lmms_spatial.plugin import owners

    lock, run.notes.lock = run.notes.lock, None
    owners.release(lock)


def _create(original):
    @functools.wraps(original)
    def create(cls, *args, **kwargs):
        from lmms_spatial.plugin import ranks
        from lmms_spatial.plugin.ours import recognise

        if run_state.active():  # a data-parallel run's ranks agree on its run id through the group
            ranks.start_group(None, _backend())
        try:
            cache = original(cls, *args, **kwargs)
        except (sqlite3.Error, OSError) as exc:
            if (run_state.current() or recognise(kwargs.get("task_dict"))) is None:
                raise
            raise store_unwritable(args[0] if args else kwargs.get("cache_root"), exc) from exc
        run = (
            recognise(kwargs.get("task_dict"))
            if run_state.in_call() or lmms_spatial_startup.late_installed()
            else run_state.current()
        )
        if run is not None:
            if isinstance(getattr(cache, "_eval_version", None), str):
                cache._eval_version = release_version(cache._eval_version)
            fold_weights(cache, kwargs.get("model_args", ""), run)
            hold_run_dir(cache, run)
            try:
                store_check.check(cache)
            except Exception as exc:  # never worse than lmms-eval's own cache
                print(f"lmms-spatial: the answer store was not checked: {exc}", file=sys.stderr)
            try:
                replay_unmerged_runs(cache)
            except Exception as exc:  # never worse than lmms-eval's own cache
                print(f"lmms-spatial: earlier runs' answers not read: {exc}", file=sys.stderr)
            ranks.check_sharing(cache)  # collectives: every rank, whatever happened above
            ranks.serve_from_main(cache)
        return cache

    create._lmms_spatial = True
    return classmethod(create)


def _backend() -> str:
    call = run_state.current_call()
    arguments = call.arguments if call is not None else {}
    return arguments.get("distributed_executor_backend") or "accelerate"


def _finalize(original):
    """``ResponseCache.finalize``: before rank 0 merges a successful run, the answers of ranks on other disks are
    sent to it (:func:`lmms_spatial.plugin.ranks.send_to_main`)."""

    @functools.wraps(original)
    def finalize(self, *args, **kwargs):
        from lmms_spatial.plugin import ranks

        if kwargs.get("success", args[0] if args else False) and run_state.active():
            try:
                ranks.send_to_main(self)
            except Exception as exc:  # the answers stay in that machine's own store (and its audit log)
                print(f"lmms-spatial: the answers of other machines were not sent to the main one: {exc}",
                      file=sys.stderr)  # fmt: skip
        return original(self, *args, **kwargs)

    finalize._lmms_spatial = True
    return finalize


def _merge_lock(original):
    """lmms-eval's merge lock, taken over at once when its owner is gone (:mod:`.owners`), and never left behind
    by a failure while it is taken (runs of ours; others keep lmms-eval's)."""

    @contextlib.contextmanager
    def merge_lock(lock_dir, *args, **kwargs):
        from lmms_spatial.plugin import owners

        if not run_state.active():
            with original(lock_dir, *args, **kwargs):
                yield
            return
        owner = owners.take_over_dead_merge_lock(Path(lock_dir))
        if owner is not None:
            left = f"left by {owners.describe(owner)}, which is no longer running" if owner else "left by a process " \
                   "that never recorded itself"  # fmt: skip
            print(f"lmms-spatial: the answer store's merge lock {lock_dir} was {left}: taken over", file=sys.stderr)
        with contextlib.ExitStack() as stack:
            try:
                stack.enter_context(original(lock_dir, *args, **kwargs))
            except TimeoutError:
                raise
            except OSError:
                owners.drop_half_made_merge_lock(Path(lock_dir))
                raise
            yield

    merge_lock._lmms_spatial = True
    return merge_lock


def patch_response_cache(module) -> None:
    from lmms_spatial.plugin import internal

    execute = internal(module, "ResponseCache.execute", "answers are saved only when the model returns all of them")
    if execute is None:
        return
    cls = module.ResponseCache
    if not getattr(execute, "_lmms_spatial", False):
        cls.execute = _execute(execute)
    for name in ("_store", "_log_to_audit", "_lookup"):
        method = cls.__dict__.get(name)
        if callable(method) and not getattr(method, "_lmms_spatial", False):
            setattr(cls, name, _not_failures(method, name))
    create = cls.__dict__.get("create")
    if isinstance(create, classmethod) and not getattr(create.__func__, "_lmms_spatial", False):
        cls.create = _create(create.__func__)
    extract, deterministic = getattr(module, "extract_gen_kwargs", None), getattr(module, "is_deterministic", None)
    if callable(extract) and callable(deterministic) and not getattr(extract, "_lmms_spatial", False):
        from lmms_spatial.plugin import sampling

        module.extract_gen_kwargs = sampling.extract_gen_kwargs(extract, deterministic)
        module.is_deterministic = sampling.is_deterministic_wrapper(deterministic)
        relevant = getattr(module, "CACHE_RELEVANT_KEYS", None)  # the keys canonicalize_gen_kwargs keys on
        if isinstance(relevant, (set, frozenset)):
            module.CACHE_RELEVANT_KEYS = frozenset(relevant) | {sampling.KEY}
    finalize = cls.__dict__.get("finalize")  # lmms-eval 0.7.1+
    if callable(finalize) and not getattr(finalize, "_lmms_spatial", False):
        cls.finalize = _finalize(finalize)
    resolve = getattr(module, "_resolve_cache_run_id", None)
    if callable(resolve) and not getattr(resolve, "_lmms_spatial", False):
        from lmms_spatial.plugin import ranks

        module._resolve_cache_run_id = ranks.run_id(resolve)
    lock = getattr(module, "_merge_lock", None)  # lmms-eval 0.7.1+ (0.7.0 merges nothing)
    if lock is not None and not getattr(lock, "_lmms_spatial", False):
        module._merge_lock = _merge_lock(lock)


# --- what answered: the weights in the key, and which earlier run each served answer came from ----------------

RUN_RECORD = "lmms_spatial_run:"  # meta rows of the store: one per run, merged with its answers (ranks.RUN_RECORDS)
PADDING = "__padding_only__"  # lmms-eval's mark on the requests that even out the ranks' counts (never scored)


def _short_hash(value: str) -> str:  # lmms-eval's response_cache._short_hash
    return hashlib.sha256(value.encode("utf-8")).hexdigest()[:16] if value else ""


def fold_weights(cache: Any, model_args: Any, run: Any = None) -> None:
    """The weights' fingerprint (:mod:`.weights`) joins the store's model key, before any answer is looked up;
    this run is recorded in the store (when, into which output, with which weights), and answers the store holds
    for the same ``model_args`` keyed without a fingerprint are counted and said (never served: see the module
    doc)."""
    from lmms_spatial.plugin import weights

    if getattr(cache, "_lmms_spatial_weights_folded", False) or not isinstance(
        getattr(cache, "model_fingerprint", None), str
    ):
        return
    value = weights.fingerprint(model_args)
    legacy = getattr(cache, "_model_fingerprint_hash", "")
    cache.model_fingerprint = f"{cache.model_fingerprint}|weights:{value or 'none'}"
    cache._model_fingerprint_hash = _short_hash(cache.model_fingerprint)
    cache._lmms_spatial_weights = value
    cache._lmms_spatial_weights_folded = True
    db = getattr(cache, "db", None)
    if db is None:
        return
    try:
        for key in ("model_fingerprint", "_model_fingerprint_hash"):
            db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key.lstrip("_"), getattr(cache, key)))
        run_id = getattr(cache, "_run_id", "") or "run"
        record = {"started": time.time(), "output_path": _run_output(run), "weights": value,
                  "model_hash": cache._model_fingerprint_hash}  # fmt: skip
        db.execute("INSERT OR IGNORE INTO meta (key, value) VALUES (?, ?)", (RUN_RECORD + run_id, json.dumps(record)))
        db.commit()
    except Exception as exc:  # the key is folded; only the record of this run is lost
        print(f"lmms-spatial: this run is not recorded in its answer store ({exc})", file=sys.stderr)
    if value is not None and value.endswith("@unresolved"):
        print(f"lmms-spatial: the weights of this model are not fingerprinted ({weights.describe(value)}): its kept "
              "answers are keyed on --model_args alone", file=sys.stderr)  # fmt: skip
    unkeyed = count_unfingerprinted(getattr(cache, "_cache_root", None), legacy)
    if unkeyed:
        print(f"lmms-spatial: {unkeyed} answers in {cache._cache_root} were kept for the same --model_args without a "
              "fingerprint of the weights (an earlier lmms-spatial, or lmms-eval alone): not served, since the "
              "weights that gave them are unknown; they are asked again", file=sys.stderr)  # fmt: skip


def _run_output(run: Any) -> str | None:
    if run is None:
        return None
    arguments = run.call.arguments if getattr(run, "call", None) is not None else {}
    return _output_path(arguments, getattr(run, "cli_args", None))


def count_unfingerprinted(root: str | None, legacy_hash: str) -> int:
    """Answers logged under ``root`` (its merged log, and runs never merged) with the model key lmms-eval gives
    ``model_args`` alone: lines naming ``legacy_hash``, counted without parsing them."""
    if not root or not legacy_hash:
        return 0
    needle = f'"model_fingerprint_hash": "{legacy_hash}"'.encode()
    logs = [Path(root) / "cache.audit.jsonl"]
    runs = Path(root) / "runs"
    if runs.is_dir():
        logs += [a for d in sorted(runs.iterdir()) if d.is_dir() and not (d / ".merged").exists()
                 for a in sorted(d.glob("rank_*.audit.jsonl"))]  # fmt: skip
    found = 0
    for log in logs:
        try:
            with open(log, "rb") as handle:
                found += sum(needle in line for line in handle)
        except OSError:
            continue
    return found


def _copy_run_records(db: Any, run_dir: Path) -> None:
    """The run records of a run never merged (killed), so its answers, read back, still name it."""
    import sqlite3

    for rank_db in sorted(run_dir.glob("rank_*.db")):
        try:
            source = sqlite3.connect(f"file:{rank_db}?mode=ro", uri=True, timeout=5)
            try:
                rows = source.execute("SELECT key, value FROM meta WHERE key LIKE ?", (RUN_RECORD + "%",)).fetchall()
            finally:
                source.close()
            for key, value in rows:
                db.execute("INSERT OR IGNORE INTO meta (key, value) VALUES (?, ?)", (key, value))
        except Exception:  # a damaged shard: its answers may still be read back, without their run's name
            continue


def _lookup_created(cache: Any, key: str) -> float | None:
    for db in (getattr(cache, "db", None), getattr(cache, "_shared_db", None)):
        if db is None:
            continue
        try:
            row = db.execute("SELECT created_at FROM responses WHERE cache_key = ?", (key,)).fetchone()
        except Exception:
            continue
        if row is not None:
            return float(row[0] or 0.0)
    return None


def count_served(cache: Any, reqtype: str, requests: list) -> None:
    """Before lmms-eval's ``execute`` looks them up: which of ``requests`` the store will answer, per task, and
    when each kept answer was written (to name the run that gave it). Keys as lmms-eval computes them; a
    lmms-eval whose key functions differ leaves the count unknown."""
    try:
        from lmms_eval.caching import response_cache as rc

        served = cache.__dict__.setdefault("_lmms_spatial_served", {})
        asked = cache.__dict__.setdefault("_lmms_spatial_asked", {})
        for request in requests:
            if (getattr(request, "metadata", None) or {}).get(PADDING):  # data parallel: a copy evening the ranks
                continue
            task = getattr(request, "task_name", None) or "?"
            asked[task] = asked.get(task, 0) + 1
            gen_kwargs = rc.extract_gen_kwargs(request)
            if not rc.is_deterministic(reqtype, gen_kwargs):
                continue
            key = rc.compute_cache_key(
                request_type=reqtype, task_name=request.task_name, doc_id=request.doc_id, gen_kwargs=gen_kwargs,
                idx=request.idx, content_hash=rc._extract_content_hash(request),
                task_fingerprint=cache._task_fingerprints.get(request.task_name, ""),
                model_fingerprint_hash=cache._model_fingerprint_hash, eval_version=cache._eval_version,
            )  # fmt: skip
            created = _lookup_created(cache, key)
            if created is not None:
                served.setdefault(task, []).append(created)
    except Exception:
        cache._lmms_spatial_served = None  # unknown, never a wrong count


def _run_records(cache: Any) -> list[dict]:
    records = []
    for db in (getattr(cache, "db", None), getattr(cache, "_shared_db", None)):
        if db is None:
            continue
        try:
            rows = db.execute("SELECT key, value FROM meta WHERE key LIKE ?", (RUN_RECORD + "%",)).fetchall()
        except Exception:
            continue
        for key, value in rows:
            try:
                record = json.loads(value)
            except ValueError:
                continue
            if isinstance(record, dict) and isinstance(record.get("started"), (int, float)):
                records.append({**record, "run_id": key[len(RUN_RECORD) :]})
    own = getattr(cache, "_run_id", None)
    unique = {r["run_id"]: r for r in records if r["run_id"] != own}
    return sorted(unique.values(), key=lambda r: r["started"])


def describe_run(record: dict | None) -> str:
    """``the run of 2026-11-25 22:10:03 UTC into runs/a (run id 1a2b)``, or that it was not recorded."""
    if record is None:
        return "a run that did not record itself (an earlier lmms-spatial, or lmms-eval alone)"
    when = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(record["started"]))
    into = f" into {record['output_path']}" if record.get("output_path") else ""
    return f"the run of {when}{into} (run id {record['run_id']})"


def served_summary(cache: Any) -> dict | None:
    """This process's requests: ``{"root", "weights", "answers", "asked", "tasks": {task: answers from the store},
    "from": [{"run", "answers"}]}``; None when the cache is not one of ours or the count is unknown."""
    served = getattr(cache, "_lmms_spatial_served", None)
    if cache is None or served is None:
        return None
    records = [r for r in _run_records(cache) if r.get("model_hash") == getattr(cache, "_model_fingerprint_hash", None)]
    by_run: dict[str, int] = {}
    for times in served.values():
        for created in times:
            earlier = [r for r in records if r["started"] <= created]
            name = describe_run(earlier[-1] if earlier else None)
            by_run[name] = by_run.get(name, 0) + 1
    asked = getattr(cache, "_lmms_spatial_asked", {}) or {}
    return {
        "root": getattr(cache, "_cache_root", None) or os.path.dirname(getattr(cache, "db_path", "") or ""),
        "weights": getattr(cache, "_lmms_spatial_weights", None),
        "answers": sum(len(t) for t in served.values()),
        "asked": sum(asked.values()),
        "tasks": {task: len(served.get(task, [])) for task in sorted(asked)},
        "from": [{"run": name, "answers": n} for name, n in sorted(by_run.items(), key=lambda kv: (-kv[1], kv[0]))],
    }


def served_line(summary: dict | None) -> str | None:
    """The run's one line on its kept answers (None when none came from the store)."""
    if not summary or not summary["answers"]:
        return None
    sources = "; ".join(f"{s['answers']} from {s['run']}" for s in summary["from"])
    return (f"lmms-spatial: {summary['answers']} of {summary['asked']} answers came from the answer store in "
            f"{summary['root']}: {sources}; {summary['asked'] - summary['answers']} asked of the model")  # fmt: skip
