"""Data parallel keeps every guarantee of one process: every rank's answers kept, counted and served again.

lmms-eval runs one process per GPU (``accelerate launch``, ``torchrun``), each with its own answer store shard
(``<cache>/runs/<run id>/rank_<r>.db``), merged into ``<cache>/cache.db`` by rank 0 when the run succeeds. Three
things of that design break a run's record past one process (measured with lmms-eval 0.7.3, gloo on CPU):

1. **The run id repeats.** lmms-eval names the run folder after ``LMMS_CACHE_RUN_ID``, ``SLURM_JOB_ID`` or
   ``TORCHELASTIC_RUN_ID``, else ``MASTER_ADDR-MASTER_PORT-ws<N>``. ``torchrun`` and ``accelerate launch`` set
   ``TORCHELASTIC_RUN_ID=none`` for every standalone launch, so every data-parallel run writes into ``runs/none``:
   the next run reopens the last one's shards, and cannot tell its own run record from the earlier run's ("a run that
   did not record itself"). In a run of ours without an id of the user's (``LMMS_CACHE_RUN_ID``, ``SLURM_JOB_ID``, a
   ``--rdzv_id`` other than ``none``), the run id is rank 0's random one, sent to every rank (:func:`run_id`).
2. **Counts are rank 0's.** What came from the store and what was asked is counted in each process; the results,
   written by rank 0, counted rank 0's alone. Every rank's summary is gathered (:func:`gather_summaries`).
3. **Machines without a shared disk.** Rank 0 merges the shards it can see: a second machine's shards stay on that
   machine, never merged, and a re-run there finds none of the answers the first run gave. At the start of a run of
   ours, rank 0 leaves a mark in its run folder; a rank that cannot see it works on another disk
   (:func:`check_sharing`). Those ranks get rank 0's kept answers through ``torch.distributed`` (a re-run there asks
   the model only for what no machine kept: :func:`serve_from_main`), and send theirs to rank 0 before it merges
   (:func:`send_to_main`), so the main machine's store holds every answer. Both travel as pickled rows through the
   process group (gloo or NCCL's object collectives): a store of 150,000 answers of ~1 KB is ~150 MB once per run.

Every function here is a collective: every rank of the run calls it at the same point, or none does; each is a
no-op in one process.
"""

from __future__ import annotations

import os
import sqlite3
import sys
import uuid
from pathlib import Path
from typing import Any

MERGED = ".merged"  # lmms-eval's mark of a run folder whose answers are in the merged store
SHARE_MARK = ".lmms_spatial_main"  # rank 0's mark in its run folder: a rank that sees it shares rank 0's disk
_EXPLICIT_IDS = ("LMMS_CACHE_RUN_ID", "SLURM_JOB_ID")  # the user's: lmms-eval's meaning is kept
_ROWS = "cache_key, request_type, task_name, doc_id, idx, gen_kwargs, response, created_at"
RUN_RECORDS = "lmms_spatial_run:%"  # the run records of lmms_spatial.plugin.resume (RUN_RECORD), as a LIKE pattern


def _dist() -> Any | None:
    """``torch.distributed`` when this process is one of several in an initialised group, else None."""
    try:
        import torch.distributed as dist
    except ImportError:
        return None
    if not (dist.is_available() and dist.is_initialized()) or dist.get_world_size() < 2:
        return None
    return dist


def rank() -> int:
    dist = _dist()
    return dist.get_rank() if dist is not None else 0


def broadcast(value: Any) -> Any:
    """Rank 0's ``value`` on every rank."""
    dist = _dist()
    if dist is None:
        return value
    box = [value]
    dist.broadcast_object_list(box, src=0)
    return box[0]


def all_gather(value: Any) -> list[Any]:
    """Every rank's ``value``, in rank order (``[value]`` in one process)."""
    dist = _dist()
    if dist is None:
        return [value]
    out: list[Any] = [None] * dist.get_world_size()
    dist.all_gather_object(out, value)
    return out


def start_group(lm: Any, backend: Any) -> None:
    """The process group of a data-parallel run, started now if nothing has: lmms-eval's ``evaluate`` gives a
    model without one an ``Accelerator()`` (the same call), but only after the answer store is opened, which needs
    the group (:func:`run_id`). Not for ``--distributed_executor_backend torchrun``, which starts its own only when
    it must."""
    if int(os.environ.get("WORLD_SIZE", "1") or 1) < 2 or (backend or "accelerate") != "accelerate":
        return
    try:
        import torch.distributed as dist
        from accelerate import Accelerator, PartialState
    except ImportError:
        return
    if lm is not None and not hasattr(lm, "accelerator"):
        lm.accelerator = Accelerator()
    elif not (dist.is_available() and dist.is_initialized()):
        PartialState()


def run_id(original):
    """lmms-eval's ``_resolve_cache_run_id``: in a run of ours across processes, a new id for every run (rank 0's,
    sent to every rank) unless the user named one (see the module doc)."""
    import functools

    @functools.wraps(original)
    def resolve(world_size: int, *args, **kwargs):
        from lmms_spatial import run_state

        named = any(os.environ.get(k) for k in _EXPLICIT_IDS) or os.environ.get("TORCHELASTIC_RUN_ID", "none") not in (
            "",
            "none",
        )
        if world_size < 2 or named or not run_state.active() or _dist() is None:
            return original(world_size, *args, **kwargs)
        return broadcast(uuid.uuid4().hex)

    resolve._lmms_spatial = True
    return resolve


# --- counts ------------------------------------------------------------------------------------------------------


def gather_summaries(summary: dict | None) -> dict | None:
    """Every rank's :func:`lmms_spatial.plugin.resume.served_summary` as one: answers, asked, per task and per
    source run summed (None when any rank's count is unknown: never a partial count)."""
    summaries = all_gather(summary)
    if len(summaries) == 1:
        return summary
    if any(s is None for s in summaries):
        return None
    tasks: dict[str, int] = {}
    sources: dict[str, int] = {}
    for s in summaries:
        for task, n in s["tasks"].items():
            tasks[task] = tasks.get(task, 0) + n
        for source in s["from"]:
            sources[source["run"]] = sources.get(source["run"], 0) + source["answers"]
    first = summaries[0]
    return {
        **first,
        "answers": sum(s["answers"] for s in summaries),
        "asked": sum(s["asked"] for s in summaries),
        "tasks": dict(sorted(tasks.items())),
        "from": [{"run": name, "answers": n} for name, n in sorted(sources.items(), key=lambda kv: (-kv[1], kv[0]))],
    }


# --- machines without a shared disk --------------------------------------------------------------------------------


def check_sharing(cache: Any) -> list[bool]:
    """Which ranks see rank 0's run folder (``[True]`` in one process); kept on the cache for the other steps."""
    run_dir = getattr(cache, "_run_dir", None)
    if _dist() is None or not run_dir:
        return [True]
    token = None
    if rank() == 0:
        token = uuid.uuid4().hex
        Path(run_dir, SHARE_MARK).write_text(token, encoding="utf-8")
    token = broadcast(token)
    try:
        mine = Path(run_dir, SHARE_MARK).read_text(encoding="utf-8") == token
    except OSError:
        mine = False
    sharing = all_gather(mine)
    cache._lmms_spatial_sharing = sharing
    if not all(sharing) and rank() == 0:
        apart = [r for r, shared in enumerate(sharing) if not shared]
        names = ", ".join(map(str, apart))
        who, them, their = (f"rank {names} does", "it", "its") if len(apart) == 1 else \
            (f"ranks {names} do", "them", "their")  # fmt: skip
        print(f"lmms-spatial: {who} not share this machine's disk ({getattr(cache, '_cache_root', '')}): this "
              f"machine's kept answers are sent to {them} now, and {their} answers to this machine's store before it "
              "is merged", file=sys.stderr, flush=True)  # fmt: skip
    return sharing


def _rows(db: Any, table: str = "responses") -> list[tuple]:
    """A store's answers, or its run records (``meta`` rows ``lmms_spatial_run:<id>``: which run gave them)."""
    if db is None:
        return []
    try:
        if table == "responses":
            return db.execute(f"SELECT {_ROWS} FROM responses").fetchall()
        return db.execute("SELECT key, value FROM meta WHERE key LIKE ?", (RUN_RECORDS,)).fetchall()
    except sqlite3.Error:
        return []


def _insert(db: Any, responses: list[tuple], records: list[tuple]) -> int:
    added = 0
    for row in responses:
        added += db.execute(f"INSERT OR IGNORE INTO responses ({_ROWS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)", row).rowcount
    for key, value in records:
        db.execute("INSERT OR IGNORE INTO meta (key, value) VALUES (?, ?)", (key, value))
    db.commit()
    return added


def serve_from_main(cache: Any) -> int:
    """Rank 0's kept answers (its merged store and this run's own shard) into the shard of every rank that does not
    share its disk, so a re-run there serves them; returns how many this rank added."""
    sharing = getattr(cache, "_lmms_spatial_sharing", [True])
    if all(sharing):
        return 0
    payload = None
    if rank() == 0:
        shared = getattr(cache, "_shared_db", None)
        payload = (_rows(shared) + _rows(cache.db), _rows(shared, "meta") + _rows(cache.db, "meta"))
    payload = broadcast(payload)
    if sharing[rank()]:
        return 0
    return _insert(cache.db, *payload)


def send_to_main(cache: Any) -> None:
    """Before rank 0 merges the run: the shard and audit log of every rank that does not share its disk, written
    into rank 0's run folder as ``rank_<r>.db`` / ``rank_<r>.audit.jsonl`` (what rank 0's merge reads)."""
    sharing = getattr(cache, "_lmms_spatial_sharing", [True])
    if all(sharing):
        return
    mine = None
    if not sharing[rank()]:
        audit = getattr(cache, "audit_path", None)
        try:
            lines = Path(audit).read_text(encoding="utf-8", errors="replace") if audit else ""
        except OSError:
            lines = ""
        mine = (_rows(cache.db), _rows(cache.db, "meta"), lines)
    gathered = all_gather(mine)
    if rank() == 0:
        _write_shards(Path(cache._run_dir), gathered)
    all_gather(None)  # rank 0 holds them on its disk before the others mark them merged
    if mine is not None:  # in rank 0's run folder, merged there: never read back here as an interrupted run's
        import time

        Path(cache._run_dir, MERGED).write_text(f"{time.time():.6f} sent to rank 0\n", encoding="utf-8")


def _write_shards(run_dir: Path, gathered: list) -> None:
    from lmms_eval.caching.response_cache import _SCHEMA_SQL

    for r, shard in enumerate(gathered):
        if shard is None:
            continue
        responses, meta, lines = shard
        db = sqlite3.connect(str(run_dir / f"rank_{r}.db"), timeout=30)
        try:
            db.executescript(_SCHEMA_SQL)
            _insert(db, responses, meta)
        finally:
            db.close()
        (run_dir / f"rank_{r}.audit.jsonl").write_text(lines, encoding="utf-8")
