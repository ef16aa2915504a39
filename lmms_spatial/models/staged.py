"""``--model staged``: drive any lmms-eval chat model through multi-turn protocols, stage by stage.

lmms-eval asks a model one question per document; a protocol such as OSR-Bench's "build the
cognitive map, then answer with the map in the conversation" needs the model's own earlier
answer inside the prompt, and ``generate_until_multi_round`` exists for only a few old models.
This wrapper works with every chat model::

    lmms-eval --model staged \\
      --model_args base=qwen2_5_vl,pretrained=Qwen/Qwen2.5-VL-7B-Instruct,stage_cache=~/.cache/lmms_spatial/stages \\
      --tasks osr_qa_cogmap_standard_vanilla

``base`` is an lmms-eval model id or a ``package.module.Class`` path; every other argument
except ``stage_cache`` and ``chunk_size`` (documents per chunk, default 256: each chunk's
conversations are built, run and dropped in turn) goes to the base model. For a batch of
requests it reads each document's messages; an assistant turn made by
:func:`lmms_spatial.models.stages.stage_placeholder` stands for the model's answer to the
messages before it. Stage turns are generated round by round (a later stage may build on an
earlier one), each *distinct* (stage, key) once - one map per image, not one per question -
all of a round in one call to the base model's ``generate_until``, so the base model batches
them as usual; then the final turns are generated in one call. ``stage_cache`` (a SQLite file
or folder) keeps stage outputs across runs, keyed by base model, stage, key and the stage
prompt's text, so an interrupted or repeated run does not regenerate them. In a run of our tasks
that keeps its answers (:mod:`lmms_spatial.plugin.resume`) the stage cache defaults to
``lmms_spatial_stages.sqlite`` in the answers folder: a resumed run's answers taken from lmms-eval's
response cache still record the map they were given. Model calls per image for ``osr_qa_cogmap``:
1 + its number of questions.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lmms_eval.api.instance import Instance
from lmms_eval.api.model import lmms
from loguru import logger

from lmms_spatial import progress
from lmms_spatial.models import stages
from lmms_spatial.run_state import ModelArgsError

_OWN_ARGS = ("base", "stage_cache", "chunk_size")
DEFAULT_CHUNK_SIZE = 256


def _text(output: Any) -> str:
    text = getattr(output, "text", output)
    return text if isinstance(text, str) else ""


def _doc_order(request: Instance) -> tuple:
    _ctx, _doc_to_messages, _gen, doc_id, task, split = request.args
    return (str(task), str(split), int(doc_id))


def _prompt_fingerprint(messages: Sequence[dict]) -> str:
    """Hash of the text parts of a stage prompt (images are identified by the stage key)."""
    texts = [
        [
            m.get("role"),
            [c.get("text") for c in m.get("content", []) if isinstance(c, dict) and c.get("type") == "text"],
        ]
        for m in messages
    ]
    return hashlib.sha256(json.dumps(texts, sort_keys=True).encode()).hexdigest()


def _model_class(name: str) -> type:
    """An lmms-eval model id (``qwen2_5_vl``), or a ``package.module.Class`` path for your own class."""
    if "." in name:
        import importlib

        module, _, cls = name.rpartition(".")
        return getattr(importlib.import_module(module), cls)
    from lmms_eval.models import get_model

    return get_model(name)


class StageCache:
    """Stage outputs on disk (SQLite, WAL): one row per (model, stage, key, prompt hash)."""

    def __init__(self, path: str | Path) -> None:
        path = Path(path).expanduser()
        if path.suffix != ".sqlite":
            path = path / "stages.sqlite"
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._lock = threading.Lock()
        self._db = sqlite3.connect(str(path), check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("CREATE TABLE IF NOT EXISTS stages (id TEXT PRIMARY KEY, output TEXT NOT NULL)")
        # the last output per (model, stage, key), whatever its prompt: what a resumed run's answers were given
        self._db.execute("CREATE TABLE IF NOT EXISTS latest (model TEXT, stage TEXT, key TEXT, output TEXT NOT NULL, "
                         "PRIMARY KEY (model, stage, key))")  # fmt: skip
        self._db.commit()

    @staticmethod
    def key(model: str, stage: str, key: str, fingerprint: str) -> str:
        return hashlib.sha256(json.dumps([model, stage, key, fingerprint]).encode()).hexdigest()

    def get(self, cache_key: str) -> str | None:
        with self._lock:
            row = self._db.execute("SELECT output FROM stages WHERE id = ?", (cache_key,)).fetchone()
        return None if row is None else row[0]

    def put(self, cache_key: str, output: str, *, model: str | None = None, stage: str | None = None,
            key: str | None = None) -> None:  # fmt: skip
        with self._lock:
            self._db.execute("INSERT OR REPLACE INTO stages VALUES (?, ?)", (cache_key, output))
            if model is not None and stage is not None and key is not None:
                self._db.execute("INSERT OR REPLACE INTO latest VALUES (?, ?, ?, ?)", (model, stage, key, output))
            self._db.commit()

    def latest(self, model: str, stage: str, key: str) -> str | None:
        """The output last stored for ``(model, stage, key)``."""
        with self._lock:
            row = self._db.execute(
                "SELECT output FROM latest WHERE model = ? AND stage = ? AND key = ?", (model, stage, key)
            ).fetchone()
        return None if row is None else row[0]


@dataclass
class StageJob:
    """One stage prompt for :meth:`Staged.run_stage_jobs`: the request it belongs to, fixed messages,
    the stage name and a key naming its inputs that the text does not show (image, view, crop)."""

    request: Instance
    stage: str
    key: str
    messages: list[dict]
    gen: dict | None = None


class _OwnGenerate:
    """An lmms-eval model as a stage engine built around it sees it: its ``generate_until`` as it was before
    the run wrapped it, every other attribute its own."""

    def __init__(self, lm: Any, generate_until: Any) -> None:
        self._lm = lm
        self.generate_until = generate_until

    def __getattr__(self, name: str) -> Any:
        if name == "_lm":
            raise AttributeError(name)
        return getattr(self._lm, name)


class Staged(lmms):
    is_simple = False
    PROGRESS_NAME = "staged"  # its stage bars: ``staged: <stage>``

    def __init__(self, base: str, stage_cache: str = "", chunk_size: int | str = DEFAULT_CHUNK_SIZE,
                 **kwargs: Any) -> None:  # fmt: skip
        super().__init__()
        self.chunk_size = max(1, int(chunk_size))
        self.base_name = base
        base_args = {k: v for k, v in kwargs.items() if k not in _OWN_ARGS and v is not None}
        self.base = _model_class(base)(**base_args)
        if getattr(self.base, "is_simple", True):
            raise ModelArgsError(f"staged: base model {base!r} is a simple (non-chat) model; stages need chat messages")
        self.model_id = f"{base}:{base_args.get('pretrained', base_args.get('model_version', ''))}"
        self.cache: StageCache | None = None
        if stage_cache:
            self.use_stage_cache(stage_cache)
        self.calls = {"stage": 0, "final": 0, "stage_cache_hits": 0}

    @classmethod
    def around(cls, lm: Any, generate_until: Any, model_id: str) -> Staged:
        """A stage engine for a chat model lmms-eval already built (a run of ours that asks for a stage with a
        model that is not ``staged``: :mod:`lmms_spatial.plugin.maps`); ``generate_until`` is the model's own."""
        engine = cls.__new__(cls)
        lmms.__init__(engine)
        engine.chunk_size = DEFAULT_CHUNK_SIZE
        engine.base_name = model_id
        engine.base = _OwnGenerate(lm, generate_until)
        engine.task_dict = lm.task_dict
        engine.model_id = model_id
        engine.cache = None
        engine.calls = {"stage": 0, "final": 0, "stage_cache_hits": 0}
        return engine

    STAGES_FILE = "lmms_spatial_stages.sqlite"

    def use_stage_cache(self, path: str | Path) -> None:
        """Keep stage outputs in ``path`` (a ``.sqlite`` file or a folder), and let answers from lmms-eval's
        response cache find the map they were given there (:func:`lmms_spatial.models.stages.add_store`)."""
        self.cache = StageCache(path)
        stages.add_store(self._kept_stage)

    def keep_stages_with_answers(self, answers: str | Path) -> None:
        """The default stage cache of a run that keeps its answers in ``answers`` (a folder or a ``.db`` file):
        ``lmms_spatial_stages.sqlite`` beside them, unless ``stage_cache`` was given."""
        if self.cache is None:
            folder = Path(answers).expanduser()
            self.use_stage_cache((folder.parent if folder.suffix else folder) / self.STAGES_FILE)

    def _kept_stage(self, stage: str, key: str) -> str | None:
        return None if self.cache is None else self.cache.latest(self.model_id, stage, key)

    @property
    def resume_chunk_size(self) -> int:
        """Requests per saved chunk of a run of ours (lmms_spatial.plugin.resume): whole chunks of ours, so an
        image's questions share one stage turn (one map) instead of one per saved chunk."""
        return self.chunk_size

    # lmms-eval reads these for data parallelism
    @property
    def rank(self) -> int:
        return getattr(self.base, "rank", 0)

    @property
    def world_size(self) -> int:
        return getattr(self.base, "world_size", 1)

    def __getattr__(self, name: str) -> Any:  # accelerator, device, ... come from the base model
        if name == "base":
            raise AttributeError(name)
        return getattr(self.base, name)

    def clean(self) -> None:
        self.base.clean()
        super().clean()

    def loglikelihood(self, requests):
        return self.base.loglikelihood(requests)

    def generate_until_multi_round(self, requests):
        raise NotImplementedError("staged: multi-round requests are expressed with stage placeholders instead")

    # --- the stages ---------------------------------------------------------------------

    def _instance(self, request: Instance, messages: list[dict], gen_overrides: dict | None = None) -> Instance:
        """A request for the base model that carries fixed messages instead of the task's."""
        ctx, _doc_to_messages, gen_kwargs, doc_id, task, split = request.args
        if gen_overrides:
            gen_kwargs = {**(gen_kwargs or {}), **gen_overrides}
        return Instance(
            request_type="generate_until",
            arguments=(ctx, lambda _doc, m=messages: m, gen_kwargs, doc_id, task, split),
            idx=0,
            metadata={"task": task, "doc_id": doc_id, "repeats": 1},
        )

    def _run(self, instances: list[Instance], stage: str = "answers") -> list[str]:
        """The base model's answers to ``instances``, under a bar named for the stage (``staged: cogmap``), moved
        by the base model's own updates instead of a bar of its own called ``Model Responding``."""
        if not instances:
            return []
        with progress.stage(f"{self.PROGRESS_NAME}: {stage}", len(instances), progress.modules_of(self.base)):
            return [_text(o) for o in self.base.generate_until(instances)]

    def run_stage_jobs(self, jobs: Sequence[StageJob]) -> list[str]:
        """Outputs of stage jobs, all in one call to the base model: identical jobs (same stage, key and
        prompt text) are generated once, the stage cache is read and written, outputs are recorded."""
        outputs: dict[tuple[str, str, str], str] = {}
        pending: dict[tuple[str, str, str], tuple[StageJob, str | None]] = {}
        for job in jobs:
            fingerprint = _prompt_fingerprint(job.messages)
            ident = (job.stage, job.key, fingerprint)
            if ident in outputs or ident in pending:
                continue
            cache_key = None
            if self.cache is not None:
                cache_key = StageCache.key(self.model_id, job.stage, job.key, fingerprint)
                cached = self.cache.get(cache_key)
                if cached is not None:
                    outputs[ident] = cached
                    self.calls["stage_cache_hits"] += 1
                    continue
            pending[ident] = (job, cache_key)
        idents = list(pending)
        texts = self._run(
            [self._instance(pending[i][0].request, pending[i][0].messages, pending[i][0].gen) for i in idents],
            stage=" + ".join(dict.fromkeys(i[0].removeprefix(f"{self.PROGRESS_NAME}_") for i in idents)),
        )
        self.calls["stage"] += len(idents)
        for ident, text in zip(idents, texts, strict=True):
            outputs[ident] = text
            if pending[ident][1] is not None:
                self.cache.put(pending[ident][1], text, model=self.model_id, stage=ident[0], key=ident[1])
        return [outputs[(j.stage, j.key, _prompt_fingerprint(j.messages))] for j in jobs]

    # read by lmms_spatial.prefetch: documents are read in document order, a chunk at a time, so
    # the next chunk's documents are built while this chunk's stages run
    def prefetch_order(self, requests: Sequence[Instance]) -> list[int]:
        return sorted(range(len(requests)), key=lambda i: _doc_order(requests[i]))

    @property
    def prefetch_window(self) -> int:
        return self.chunk_size

    def generate_until(self, requests: list[Instance]) -> list[str]:
        """All requests, ``chunk_size`` documents at a time, in document order.

        Each chunk's conversations (with their decoded images) are built once and dropped after
        the chunk, so memory does not grow with the benchmark (OSR-Bench: 74K questions, each on
        a 1024x512 panorama). Document order keeps the questions of one image in one chunk,
        after its map; a stage made in an earlier chunk is reused, not regenerated.
        """
        self.base.task_dict = self.task_dict
        order = self.prefetch_order(requests)
        answers: list[str] = [""] * len(requests)
        outputs: dict[tuple[str, str], str] = {}
        from tqdm import tqdm

        progress = tqdm(total=len(order), desc="staged (maps + questions)", unit="doc", disable=None)
        for start in range(0, len(order), self.chunk_size):
            chunk = order[start : start + self.chunk_size]
            for i, answer in zip(chunk, self._generate_chunk([requests[i] for i in chunk], outputs), strict=True):
                answers[i] = answer
            progress.update(len(chunk))
        progress.close()
        logger.info(f"staged: {self.calls}")
        return answers

    def _generate_chunk(self, requests: list[Instance], outputs: dict[tuple[str, str], str]) -> list[str]:
        conversations = []
        for request in requests:
            _ctx, doc_to_messages, _gen, doc_id, task, split = request.args
            conversations.append(doc_to_messages(self.task_dict[task][split][doc_id]))
        while True:  # one round per stage depth
            pending: dict[tuple[str, str], tuple[Instance, list[dict], str | None]] = {}
            for request, messages in zip(requests, conversations, strict=True):
                for i, message in enumerate(messages):
                    spec = stages.placeholder_of(message)
                    if spec is None:
                        continue
                    ident = (spec["stage"], spec["key"])
                    prefix = messages[:i]
                    if ident in outputs or ident in pending:
                        continue
                    needs = [p for p in map(stages.placeholder_of, prefix) if p is not None]
                    if any((p["stage"], p["key"]) not in outputs for p in needs):
                        continue  # builds on a stage of this round: next round
                    prompt = stages.filled(prefix, outputs)
                    cache_key = None
                    if self.cache is not None:
                        cache_key = StageCache.key(self.model_id, *ident, _prompt_fingerprint(prompt))
                        cached = self.cache.get(cache_key)
                        if cached is not None:
                            outputs[ident] = cached
                            stages.record(*ident, cached)
                            self.calls["stage_cache_hits"] += 1
                            continue
                    pending[ident] = (request, prompt, cache_key)
            if not pending:
                break
            idents = list(pending)
            texts = self._run([self._instance(pending[i][0], pending[i][1]) for i in idents],
                              stage=" + ".join(dict.fromkeys(i[0] for i in idents)))  # fmt: skip
            self.calls["stage"] += len(idents)
            for ident, text in zip(idents, texts, strict=True):
                outputs[ident] = text
                stages.record(*ident, text)
                if self.cache is not None and pending[ident][2] is not None:
                    self.cache.put(pending[ident][2], text, model=self.model_id, stage=ident[0], key=ident[1])
        finals = [
            self._instance(request, stages.filled(messages, outputs))
            for request, messages in zip(requests, conversations, strict=True)
        ]
        answers = self._run(finals)
        self.calls["final"] += len(finals)
        return answers
