"""``--model fast_vlm``: lmms-eval's ``qwen2_5_vl`` chat model, with our CPU work off the GPU's critical path.

::

    lmms-eval --model fast_vlm \\
      --model_args pretrained=Qwen/Qwen2.5-VL-7B-Instruct,workers=4 \\
      --tasks mmsi --batch_size 8

Same model arguments and defaults as lmms-eval 0.7.3's ``qwen2_5_vl`` (``pretrained``, ``device``,
``device_map``, ``batch_size``, ``use_cache``, ``attn_implementation``, ``min_pixels``,
``max_pixels``; bf16 weights), the same inputs for the same document and the same ``generate`` call,
so the answers are lmms-eval's. What differs is when the inputs are made: worker threads run the
task's ``doc_to_messages`` (our tasks decode images there), the qwen-vl-utils resize and the HF
processor one document at a time ahead of the GPU (:mod:`lmms_spatial.models.fast_pipeline`);
batches are cut from a look-ahead window sorted by token count (less padding), left-padded, in
pinned memory (CUDA) and copied with ``non_blocking=True``; the calling thread only copies, runs
``generate`` and decodes. Answers come back in request order.

Inputs, measured against lmms-eval's class on the same documents (tests/models/test_fast_vlm.py):

* ``input_ids`` of every document identical (padding aside);
* ``pixel_values`` identical with ``image_backend=torchvision`` (the default), which is also the
  backend lmms-eval's ``AutoProcessor.from_pretrained`` picks with transformers 5 when torchvision is
  installed (so lmms-eval's own runs use it). ``image_backend=pil`` (transformers' PIL image
  processor) differs only where the processor itself resizes. Measured by ``python -m lmms_spatial.bench.fast_vlm``
  on MMSI documents with two 1280x960 images: at lmms-eval's default bounds (200,704..1,605,632
  pixels) qwen-vl-utils has already made each image 1288x952 and the processor does not resize, so
  the two backends give identical values (max abs difference 0.0); at ``max_pixels=401408`` the
  processor resizes to 728x532 and they differ by at most 0.0150 (mean 0.00012) in normalized units,
  i.e. about one 8-bit grey level (1/255 / std 0.27 = 0.0145); token ids are the same either way;
* greedy answers of the tiny random Qwen2.5-VL on CPU identical at ``batch_size=1`` (both backends,
  each against lmms-eval with the same image processor), and on the test documents also at batch
  sizes 2 and 4 - although left padding and batch composition (lmms-eval sorts by prompt text, we by
  token count) can in general change float results and so a greedy token.

Other options: ``image_backend`` (``torchvision``|``pil``), ``workers`` (preparing threads, default 4),
``bucket_window`` (batches per look-ahead window sorted by length, default 4), ``prefetch`` (ready
batches queued, default 2), ``dtype`` (default ``bfloat16`` as lmms-eval), ``vision_attention``
(``batched``|``stock``: with non-flash attention, Qwen2.5-VL's vision tower runs its window attention
as one batched call per block through :mod:`lmms_spatial.models.vision_attention`). The default
``attn_implementation`` is ``flash_attention_2`` when ``flash_attn`` is importable, else ``sdpa``.

Any other ``AutoModelForImageTextToText`` with a chat template runs through the generic path:
images as the task gives them (no qwen-vl-utils resize, as lmms-eval's ``huggingface`` class), the
processor per document; batching needs its per-image tensors to concatenate (else ``batch_size=1``).
Tested with a tiny random LLaVA (CLIP + Qwen2); lmms-eval's own generic ``huggingface`` chat class
cannot serve as the reference there (with transformers 5.23 it passes ``audios=`` and the processor
refuses it).

As lmms-eval's class, it ignores ``until`` (stop strings) and the ``system_prompt`` argument.
``fast_vlm.timing`` holds the counters of the last ``generate_until`` (prep in workers, GPU-thread
wait, generate, the GPU thread's other host time), logged once at its end; ``timing_total`` sums
every call (``staged``/``omni_cot`` make one per round).
"""

from __future__ import annotations

import copy
import importlib.util
import json
import os
import time
from dataclasses import asdict, dataclass
from typing import Any

from lmms_eval.api.instance import GenerationResult, Instance, TokenCounts
from lmms_eval.api.model import lmms
from loguru import logger

from lmms_spatial.models.fast_inputs import DocPreparer, collate, windows
from lmms_spatial.models.fast_pipeline import Pipeline
from lmms_spatial.run_state import ModelArgsError

QWEN_RESIZE_MODEL_TYPES = ("qwen2_5_vl", "qwen2_vl")  # lmms-eval resizes their images with qwen-vl-utils
IMAGE_BACKENDS = ("torchvision", "pil")
VISION_ATTENTION = ("batched", "stock")
DEFAULT_GEN_KWARGS = {"max_new_tokens": 128, "temperature": 0.0, "top_p": None, "num_beams": 1}
# one JSON line of this call's counters per generate_until is appended to the file this names
STATS_ENV = "LMMS_SPATIAL_RUNNER_STATS"
_IGNORED_LMMS_EVAL_ARGS = ("max_num_frames", "fps", "system_prompt", "interleave_visuals", "reasoning_prompt")


@dataclass
class FastVLMTiming:
    """Counters of one ``generate_until`` call, in seconds (``prep_s`` summed over the workers)."""

    docs: int = 0
    batches: int = 0
    workers: int = 0
    prep_s: float = 0.0  # per-document preparation + batching, on worker/batcher threads
    wait_s: float = 0.0  # the GPU thread waiting for a prepared batch
    generate_s: float = 0.0  # model.generate
    host_s: float = 0.0  # the GPU thread's own work outside generate: copies, decoding, bookkeeping

    @property
    def critical_path_s(self) -> float:
        """Our share of the critical path: what the GPU thread spent not generating."""
        return self.wait_s + self.host_s

    def summary(self) -> str:
        n = max(self.docs, 1)
        ms = lambda s: f"{1000 * s / n:.1f} ms/doc"  # noqa: E731
        return (
            f"fast_vlm: {self.docs} docs in {self.batches} batches, prep {ms(self.prep_s)} in {self.workers} "
            f"workers, GPU waited {ms(self.wait_s)}, host {ms(self.host_s)}, generate {ms(self.generate_s)}"
        )

    def add(self, other: FastVLMTiming) -> None:
        for name in ("docs", "batches", "prep_s", "wait_s", "generate_s", "host_s"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.workers = other.workers

    def as_dict(self) -> dict[str, float]:
        return {**asdict(self), "critical_path_s": self.critical_path_s}


def write_stats_line(timing: FastVLMTiming, rank: int) -> None:
    """Append this call's counters (ms) to the file ``LMMS_SPATIAL_RUNNER_STATS`` names, if any.

    ``lmms-spatial bench --runners`` reads them to split a run's time (see lmms_spatial.bench.runners).
    """
    path = os.environ.get(STATS_ENV)
    if not path:
        return
    line = {"rank": rank, "docs": timing.docs, "batches": timing.batches, "workers": timing.workers}
    seconds = {k: v for k, v in timing.as_dict().items() if k.endswith("_s")}
    line.update({f"{k.removesuffix('_s')}_ms": round(1000 * v, 3) for k, v in seconds.items()})
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(line) + "\n")


def default_attn_implementation() -> str:
    return "flash_attention_2" if importlib.util.find_spec("flash_attn") is not None else "sdpa"


def patch_vision_attention(model: Any) -> str:
    """Batched window attention in Qwen2.5-VL's vision tower (module from the ``attn`` branch); a line to log."""
    try:
        from lmms_spatial.models.vision_attention import patch_qwen2_5_vl_vision_attention
    except ImportError as exc:
        return f"vision attention: stock (batched window attention unavailable: {exc})"
    report = patch_qwen2_5_vl_vision_attention(model)
    if not report.patched:
        return f"vision attention: stock ({report.reason})"
    return f"vision attention: batched window attention in {report.patched} blocks ({report.reason})"


def _gen_key(gen_kwargs: Any) -> Any:
    """lmms-eval's ``Collator`` grouping key for generation arguments (hashable)."""
    import collections.abc

    if isinstance(gen_kwargs, dict):
        try:
            return tuple(
                (k, tuple(v) if isinstance(v, collections.abc.Iterable) else v) for k, v in sorted(gen_kwargs.items())
            )
        except TypeError:
            return repr(sorted(gen_kwargs.items(), key=lambda kv: kv[0]))
    return repr(gen_kwargs)


class FastVLM(lmms):
    is_simple = False

    def __init__(
        self,
        pretrained: str = "Qwen/Qwen2.5-VL-3B-Instruct",
        device: str | None = None,
        device_map: str | None = None,
        batch_size: int | str = 1,
        use_cache: bool | str = True,
        attn_implementation: str | None = None,
        min_pixels: int = 256 * 28 * 28,
        max_pixels: int = 1605632,
        image_backend: str = "torchvision",
        vision_attention: str = "batched",
        workers: int | str = 4,
        bucket_window: int | str = 4,
        prefetch: int | str = 2,
        dtype: str = "bfloat16",
        trust_remote_code: bool | str = False,
        **kwargs: Any,
    ) -> None:
        super().__init__()
        import torch
        from accelerate import Accelerator, DistributedType
        from transformers import AutoConfig, AutoImageProcessor, AutoModelForImageTextToText, AutoProcessor

        unknown = sorted(set(kwargs) - set(_IGNORED_LMMS_EVAL_ARGS))
        if unknown:
            raise ModelArgsError(f"fast_vlm: unknown model arguments {unknown}")
        if image_backend not in IMAGE_BACKENDS:
            raise ModelArgsError(f"fast_vlm: image_backend must be one of {IMAGE_BACKENDS}, got {image_backend!r}")
        if vision_attention not in VISION_ATTENTION:
            raise ModelArgsError(
                f"fast_vlm: vision_attention must be one of {VISION_ATTENTION}, got {vision_attention!r}"
            )

        # device and data parallelism exactly as lmms-eval's qwen2_5_vl (plus CPU processes, for tests)
        accelerator = Accelerator()
        self.accelerator = accelerator
        if device is None:
            device = "cuda" if torch.cuda.is_available() else "cpu"
        if accelerator.num_processes > 1:
            if accelerator.distributed_type == DistributedType.MULTI_CPU:
                self._device, self.device_map = torch.device("cpu"), "cpu"
            else:
                self._device = torch.device(f"cuda:{accelerator.local_process_index}")
                self.device_map = f"cuda:{accelerator.local_process_index}"
        else:
            self._device = torch.device(device)
            self.device_map = device_map if device_map else ("auto" if self._device.type == "cuda" else device)

        self.attn_implementation = attn_implementation or default_attn_implementation()
        remote = str(trust_remote_code).lower() in ("1", "true", "yes")
        config = AutoConfig.from_pretrained(pretrained, trust_remote_code=remote)
        self.model_type = getattr(config, "model_type", "")
        self._model = AutoModelForImageTextToText.from_pretrained(
            pretrained, dtype=dtype, device_map=self.device_map, attn_implementation=self.attn_implementation,
            trust_remote_code=remote,
        ).eval()  # fmt: skip
        self.vision_attention = "stock"
        if self.attn_implementation == "flash_attention_2":
            vision_line = "vision attention: flash_attention_2"
        elif vision_attention == "stock":
            vision_line = "vision attention: stock (vision_attention=stock)"
        elif self.model_type != "qwen2_5_vl":
            vision_line = f"vision attention: stock (no batched window attention for {self.model_type})"
        else:
            vision_line = patch_vision_attention(self._model)
            self.vision_attention = "batched" if vision_line.startswith("vision attention: batched") else "stock"

        self.min_pixels, self.max_pixels = int(min_pixels), int(max_pixels)
        self.qwen_resize = self.model_type in QWEN_RESIZE_MODEL_TYPES
        pixel_args = {"min_pixels": self.min_pixels, "max_pixels": self.max_pixels} if self.qwen_resize else {}
        self.processor = AutoProcessor.from_pretrained(pretrained, trust_remote_code=remote, **pixel_args)
        self.image_backend = image_backend
        current = type(getattr(self.processor, "image_processor", None)).__name__
        if hasattr(self.processor, "image_processor") and current.endswith("Pil") != (image_backend == "pil"):
            self.processor.image_processor = AutoImageProcessor.from_pretrained(
                pretrained, backend=image_backend, trust_remote_code=remote, **pixel_args
            )
        self._tokenizer = self.processor.tokenizer
        self._config = self._model.config
        self.batch_size_per_gpu = int(batch_size)
        self.use_cache = str(use_cache).lower() not in ("0", "false", "no")
        self.workers, self.bucket_window, self.prefetch = int(workers), int(bucket_window), int(prefetch)
        self.timing = FastVLMTiming()  # the last generate_until call
        self.timing_total = FastVLMTiming()  # every call so far (staged / omni_cot call it once per round)
        self._processor_copies: list[Any] = []

        if accelerator.num_processes > 1:
            if accelerator.distributed_type == DistributedType.FSDP:
                self._model = accelerator.prepare(self._model)
            elif accelerator.distributed_type == DistributedType.MULTI_GPU:
                self._model = accelerator.prepare_model(self._model, evaluation_mode=True)
            elif accelerator.distributed_type != DistributedType.MULTI_CPU:
                raise ValueError(f"fast_vlm: unsupported distributed type {accelerator.distributed_type}")
            self._rank, self._world_size = accelerator.process_index, accelerator.num_processes
        else:
            self._rank, self._world_size = 0, 1
        if self._rank == 0:
            resize = "qwen-vl-utils resize, " if self.qwen_resize else ""
            logger.info(
                f"fast_vlm: {self.model_type} on {self._device} (device_map={self.device_map}), "
                f"attn_implementation={self.attn_implementation}, {vision_line}, image_backend={image_backend} "
                f"({type(self.processor.image_processor).__name__}), {resize}"
                f"{self.workers} workers, batch {self.batch_size_per_gpu}, window {self.bucket_window} batches, "
                f"world size {self._world_size}"
            )

    # --- what lmms-eval reads -------------------------------------------------------------------

    @property
    def config(self):
        return self._config

    @property
    def tokenizer(self):
        return self._tokenizer

    @property
    def model(self):
        return self.accelerator.unwrap_model(self._model)

    @property
    def eot_token_id(self):
        return self.tokenizer.eos_token_id

    @property
    def batch_size(self) -> int:
        return self.batch_size_per_gpu

    @property
    def device(self):
        return self._device

    @property
    def rank(self) -> int:
        return self._rank

    @property
    def world_size(self) -> int:
        return self._world_size

    def loglikelihood(self, requests):
        raise NotImplementedError("fast_vlm only answers generate_until requests")

    def generate_until_multi_round(self, requests):
        raise NotImplementedError("fast_vlm: use --model staged for multi-round protocols")

    # --- generation -----------------------------------------------------------------------------

    def _generate_kwargs(self, gen_kwargs: dict) -> dict:
        """lmms-eval's qwen2_5_vl defaults and greedy/sampling switch, unchanged."""
        current = {**DEFAULT_GEN_KWARGS, **(gen_kwargs or {})}
        if current["temperature"] > 0:
            current["do_sample"] = True
        else:
            current.update(do_sample=False, temperature=None, top_p=None, top_k=None)
        return {
            "eos_token_id": self.tokenizer.eos_token_id,
            "pad_token_id": self.tokenizer.pad_token_id,
            "do_sample": current["do_sample"],
            "temperature": current["temperature"],
            "top_p": current["top_p"],
            "num_beams": current["num_beams"],
            "max_new_tokens": current["max_new_tokens"],
            "top_k": current.get("top_k", None),
            "use_cache": self.use_cache,
        }

    def pipeline(self, requests: list[Instance]) -> Pipeline:
        """Batches of ``requests`` prepared on worker threads (grouped by generation arguments)."""
        import torch

        segments: dict[Any, list[int]] = {}
        for i, request in enumerate(requests):
            segments.setdefault(_gen_key(request.args[2]), []).append(i)
        window = max(1, self.bucket_window) * self.batch_size
        jobs = [
            [(i, requests[i].args) for i in w] for w in windows(list(segments.values()), window, first=self.batch_size)
        ]
        if len(self._processor_copies) < max(1, self.workers):  # made once, reused by every call
            self._processor_copies = [copy.deepcopy(self.processor) for _ in range(max(1, self.workers))]
        preparer = DocPreparer(
            self._processor_copies, self.task_dict, self.qwen_resize,
            video_kwargs={"max_pixels": self.max_pixels, "min_pixels": self.min_pixels},
        )  # fmt: skip
        pin = self._device.type == "cuda" and torch.cuda.is_available()
        pad = self.tokenizer.pad_token_id
        return Pipeline(
            jobs, preparer, lambda docs: collate(docs, pad, pin=pin), self.batch_size,
            workers=self.workers, queue_batches=self.prefetch,
        )  # fmt: skip

    def prefetch_order(self, requests: list[Instance]) -> list[int]:
        """Read by :mod:`lmms_spatial.prefetch`: nothing for it to do, our own workers read ahead."""
        return []

    def generate_until(self, requests: list[Instance]) -> list[GenerationResult]:
        import torch
        from tqdm import tqdm

        results: list[GenerationResult | None] = [None] * len(requests)
        timing = FastVLMTiming(workers=self.workers)
        target = self.model.device if self.device_map == "auto" else self._device
        pbar = tqdm(total=len(requests), disable=(self.rank != 0), desc="Model Responding (fast_vlm)")
        start = time.perf_counter()
        try:
            with self.pipeline(requests) as batches, torch.inference_mode():
                for batch in batches:
                    inputs = {k: v.to(target, non_blocking=True) for k, v in batch.tensors.items()}
                    gen_kwargs = requests[batch.docs[0].position].args[2] or {}
                    t0 = time.perf_counter()
                    out = self.model.generate(**inputs, **self._generate_kwargs(gen_kwargs))
                    if out.is_cuda:  # the GPU's tail belongs to generate, not to the host work that follows
                        torch.cuda.synchronize(out.device)
                    timing.generate_s += time.perf_counter() - t0
                    trimmed = [o[len(i) :] for i, o in zip(inputs["input_ids"], out, strict=True)]
                    answers = self.processor.batch_decode(
                        trimmed, skip_special_tokens=True, clean_up_tokenization_spaces=False
                    )
                    for doc, ids, answer in zip(batch.docs, trimmed, answers, strict=True):
                        results[doc.position] = GenerationResult(
                            text=answer, token_counts=TokenCounts(output_tokens=len(ids))
                        )
                        self.cache_hook.add_partial("generate_until", (doc.context, gen_kwargs), answer)
                    timing.batches += 1
                    pbar.update(len(batch.docs))
        finally:
            pbar.close()
        total = time.perf_counter() - start
        stats = batches.timing
        timing.docs, timing.wait_s = stats.docs, stats.wait_s
        timing.prep_s = stats.prep_s + stats.collate_s
        timing.host_s = max(0.0, total - timing.wait_s - timing.generate_s)
        self.timing = timing
        self.timing_total.add(timing)
        if requests:
            logger.info(timing.summary())
            write_stats_line(timing, self.rank)
        missing = [i for i, r in enumerate(results) if r is None]
        if missing:  # cannot happen unless the pipeline lost a document: never return a silent hole
            raise RuntimeError(f"fast_vlm: no answer for requests {missing[:10]}")
        return results  # type: ignore[return-value]
