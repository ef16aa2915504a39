"""Model inputs for ``--model fast_vlm``, one document at a time (on worker threads), and their batching.

Everything here reproduces what lmms-eval 0.7.3's chat ``qwen2_5_vl`` class feeds the model, split
so that the expensive part (decode, resize, processor) runs per document ahead of the GPU:

* messages: the task's ``doc_to_messages(doc)`` through lmms-eval's own ``ChatMessages.to_hf_messages``;
* text: ``processor.apply_chat_template(..., tokenize=False, add_generation_prompt=True)``;
* images (Qwen2-VL / Qwen2.5-VL): ``qwen_vl_utils.process_vision_info``'s resize, reimplemented below
  (:func:`fetch_image`, checked equal to qwen-vl-utils 0.0.14 by the tests): RGB, then
  ``smart_resize`` to a multiple of 28 with qwen-vl-utils' own pixel bounds (4..16384 tokens: lmms-eval
  passes no image kwargs, so the model's ``min_pixels``/``max_pixels`` act only in the processor);
* tensors: the HF processor on that one document; :func:`collate` then pads on the left and
  concatenates exactly as the processor does for a batch, so each document's ``input_ids`` (padding
  aside), ``pixel_values`` and ``image_grid_thw`` equal lmms-eval's.

Batches are made by :func:`bucket`: documents of a look-ahead window sorted by token count, so a
batch pads to similar lengths.
"""

from __future__ import annotations

import base64
import io
import math
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from PIL import Image

from lmms_spatial.data.images import BadDocumentError, doc_id_of

# qwen-vl-utils 0.0.14 (vision_process.py), the resize lmms-eval's Qwen classes apply before the processor
MAX_RATIO = 200
IMAGE_MIN_TOKEN_NUM = 4
IMAGE_MAX_TOKEN_NUM = 16384
QWEN_VL_UTILS_PATCH_SIZE = 14  # lmms-eval calls process_vision_info without image_patch_size
SPATIAL_MERGE_SIZE = 2

# per-token tensors the processor pads (padding value; anything else pads with 0)
SEQUENCE_KEYS = ("input_ids", "attention_mask", "mm_token_type_ids", "token_type_ids")


def smart_resize(height: int, width: int, factor: int, min_pixels: int, max_pixels: int) -> tuple[int, int]:
    """qwen-vl-utils' ``smart_resize``: both sides multiples of ``factor``, area within the bounds,
    aspect ratio kept as closely as possible (Python's ``round``, half to even, as there)."""
    if max(height, width) / min(height, width) > MAX_RATIO:
        raise ValueError(
            f"absolute aspect ratio must be smaller than {MAX_RATIO}, got {max(height, width) / min(height, width)}"
        )
    h_bar = max(factor, round(height / factor) * factor)
    w_bar = max(factor, round(width / factor) * factor)
    if h_bar * w_bar > max_pixels:
        beta = math.sqrt((height * width) / max_pixels)
        h_bar = math.floor(height / beta / factor) * factor
        w_bar = math.floor(width / beta / factor) * factor
    elif h_bar * w_bar < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h_bar = math.ceil(height * beta / factor) * factor
        w_bar = math.ceil(width * beta / factor) * factor
    return h_bar, w_bar


def _to_rgb(image: Image.Image) -> Image.Image:
    if image.mode == "RGBA":  # qwen-vl-utils composes transparency on white
        white = Image.new("RGB", image.size, (255, 255, 255))
        white.paste(image, mask=image.split()[3])
        return white
    return image.convert("RGB")


def _open(value: Any) -> Image.Image:
    if isinstance(value, Image.Image):
        return value
    if isinstance(value, str):
        if value.startswith("data:image") and "base64," in value:
            return Image.open(io.BytesIO(base64.b64decode(value.split("base64,", 1)[1])))
        if value.startswith(("http://", "https://")):
            raise ValueError("fast_vlm does not download images; give a PIL image or a local path")
        return Image.open(value[7:] if value.startswith("file://") else value)
    raise ValueError(f"unrecognized image input {type(value).__name__}")


def fetch_image(element: Mapping[str, Any], patch_size: int = QWEN_VL_UTILS_PATCH_SIZE) -> Image.Image:
    """qwen-vl-utils' ``fetch_image`` for local inputs: RGB, then resized (PIL's default resample,
    bicubic) to ``smart_resize`` of its size, with the element's ``min_pixels``/``max_pixels`` or
    qwen-vl-utils' defaults."""
    factor = patch_size * SPATIAL_MERGE_SIZE
    image = _to_rgb(_open(element["image"] if "image" in element else element["image_url"]))
    if "resized_height" in element and "resized_width" in element:
        height, width = smart_resize(
            element["resized_height"], element["resized_width"], factor,
            IMAGE_MIN_TOKEN_NUM * factor**2, IMAGE_MAX_TOKEN_NUM * factor**2,
        )  # fmt: skip
    else:
        height, width = smart_resize(
            image.size[1], image.size[0], factor,
            element.get("min_pixels", IMAGE_MIN_TOKEN_NUM * factor**2),
            element.get("max_pixels", IMAGE_MAX_TOKEN_NUM * factor**2),
        )  # fmt: skip
    return image.resize((width, height))


def vision_elements(hf_messages: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The image/video parts of one conversation, in order (qwen-vl-utils' ``extract_vision_info``)."""
    found = []
    for message in hf_messages:
        if isinstance(message["content"], list):
            for element in message["content"]:
                if (
                    "image" in element
                    or "image_url" in element
                    or "video" in element
                    or element.get("type", "text") in ("image", "image_url", "video")
                ):
                    found.append(element)
    return found


@dataclass
class PreparedDoc:
    """One document's model inputs (batch dimension 1) and what it cost to make them."""

    position: int  # index of its request in the generate_until call
    tensors: dict[str, Any]
    context: str  # the chat-template text (lmms-eval's cache key)
    seconds: float = 0.0

    @property
    def n_tokens(self) -> int:
        return int(self.tensors["input_ids"].shape[-1])


@dataclass
class DocPreparer:
    """Builds :class:`PreparedDoc` from a request's arguments; called concurrently by worker threads.

    Each thread uses its own copy of the processor (``processors``, one per worker, reused across
    calls): a fast tokenizer refuses concurrent calls that set padding ("Already borrowed").
    """

    processors: Sequence[Any]
    task_dict: Mapping[str, Any]
    qwen_resize: bool
    patch_size: int = QWEN_VL_UTILS_PATCH_SIZE
    video_kwargs: dict[str, Any] = field(default_factory=dict)
    _local: threading.local = field(default_factory=threading.local, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _next: int = 0

    def _processor(self) -> Any:
        proc = getattr(self._local, "processor", None)
        if proc is None:
            with self._lock:  # the n-th thread to ask takes the n-th copy
                proc = self._local.processor = self.processors[self._next % len(self.processors)]
                self._next += 1
        return proc

    def __call__(self, position: int, args: tuple) -> PreparedDoc:
        from lmms_eval.protocol import ChatMessages

        start = time.perf_counter()
        _ctx, doc_to_messages, _gen, doc_id, task, split = args
        doc = self.task_dict[task][split][doc_id]
        messages = ChatMessages(messages=doc_to_messages(doc))
        hf_messages = messages.to_hf_messages(video_kwargs=self.video_kwargs)
        elements = vision_elements(hf_messages)
        if any("video" in e or e.get("type") == "video" for e in elements):
            raise NotImplementedError(f"fast_vlm: {task} document {doc_id} has a video; videos are not supported")
        images = []
        for k, element in enumerate(elements):
            try:
                if self.qwen_resize:
                    images.append(fetch_image(element, self.patch_size))
                else:
                    image = _open(element.get("image", element.get("image_url")))
                    image.load()
                    images.append(image)
            except BadDocumentError:
                raise
            except Exception as exc:  # a corrupt or unreadable image: name the document and the image
                name = doc_id_of(doc) if isinstance(doc, Mapping) else doc_id
                raise BadDocumentError(name, f"image {k} of {task} document {doc_id}", repr(exc)) from exc
        proc = self._processor()
        text = proc.apply_chat_template(hf_messages, tokenize=False, add_generation_prompt=True)
        inputs = proc(text=[text], images=images or None, return_tensors="pt")
        return PreparedDoc(position, dict(inputs), text, time.perf_counter() - start)


def bucket(docs: Sequence[PreparedDoc], batch_size: int) -> list[list[PreparedDoc]]:
    """Batches of ``batch_size`` from one window, longest first (ties: request order), so padding is small."""
    ordered = sorted(docs, key=lambda d: (-d.n_tokens, d.position))
    return [ordered[i : i + batch_size] for i in range(0, len(ordered), batch_size)]


def windows(segments: Sequence[Sequence[int]], size: int, first: int | None = None) -> list[list[int]]:
    """Each segment (requests with the same generation arguments) cut into windows of ``size``;
    a window never spans two segments, so a batch never mixes generation arguments. ``first``: the
    size of the very first window (one batch), so the GPU starts as soon as one batch is ready
    instead of after a whole window."""
    out: list[list[int]] = []
    for segment in segments:
        start = 0
        if not out and first:
            out.append(list(segment[:first]))
            start = len(out[0])
        out.extend(list(segment[i : i + size]) for i in range(start, len(segment), size))
    return [w for w in out if w]


def collate(docs: Sequence[PreparedDoc], pad_token_id: int, pin: bool = False) -> dict[str, Any]:
    """One batch as the processor would make it with ``padding_side="left"``: per-token tensors
    left-padded to the longest document (``input_ids`` with ``pad_token_id``, the rest with 0), every
    other tensor (pixel values, grids) concatenated in document order. ``pin``: page-locked memory,
    so the host-to-device copy can be asynchronous."""
    import torch

    length = max(d.n_tokens for d in docs)
    keys = list(dict.fromkeys(key for d in docs for key in d.tensors))  # a text-only document has no pixels
    batch: dict[str, Any] = {}
    for key in keys:
        values = [d.tensors[key] for d in docs if key in d.tensors]
        if not all(isinstance(v, torch.Tensor) for v in values):
            raise ValueError(f"fast_vlm: processor output {key!r} is not a tensor; use batch_size=1")
        sequence = key in SEQUENCE_KEYS or (
            len(values) == len(docs)
            and all(v.ndim == 2 and v.shape == (1, d.n_tokens) for v, d in zip(values, docs, strict=True))
        )
        if sequence:
            fill = pad_token_id if key == "input_ids" else 0
            out = torch.full((len(docs), length), fill, dtype=values[0].dtype)
            for row, d in enumerate(docs):
                if key in d.tensors:
                    out[row, length - d.n_tokens :] = d.tensors[key][0]
        else:
            try:
                out = torch.cat(values, dim=0)
            except RuntimeError as exc:
                raise ValueError(
                    f"fast_vlm: processor output {key!r} has shapes {[tuple(v.shape) for v in values]} that "
                    "cannot be batched by concatenation; use batch_size=1 for this model"
                ) from exc
        batch[key] = out.pin_memory() if pin else out
    return batch


def positions(batch: Sequence[PreparedDoc]) -> list[int]:
    return [d.position for d in batch]


PrepareFn = Callable[[int, tuple], PreparedDoc]
