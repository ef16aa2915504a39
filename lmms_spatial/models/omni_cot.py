"""``--model omni_cot``: ODI-Bench's Omni-CoT (paper sec. 5) and its baselines, for any lmms-eval chat model.

::

    lmms-eval --model omni_cot \\
      --model_args base=qwen2_5_vl,pretrained=Qwen/Qwen2.5-VL-7B-Instruct,fov=90,margin=10 \\
      --tasks odi_bench_close --log_samples

``base`` and ``stage_cache`` are as for ``--model staged`` (:mod:`lmms_spatial.models.staged`); the
options below are this wrapper's, every other argument goes to the base model. Documents are taken
``chunk_size`` at a time; within a chunk every stage is one ``generate_until`` call of the base model
for all documents (batched as the base model batches):

1. round 1: six ``fov``° views per ERP captioned (``viewpoint``) and the grounding question
   (``grounding``): boxes on the ERP;
2. round 2: the first answer (the task's question with the captions as text when ``viewpoint``,
   else the task's own prompt) and, when ``crop_filter``, a yes/no relevance question per crop;
3. round 3 (``grounding``, and at least one crop kept): response refinement with the ERP, the
   captions, the kept crops with their direction words and the first answer. Otherwise the
   first answer is the final answer.

Each document's ERP is decoded once (by the task's ``doc_to_messages``), and its views and crops
are rendered by one :class:`~lmms_spatial.data.projection.ErpProjector`. Every intermediate step
is recorded per document (:func:`lmms_spatial.models.stages.record_artifact`, stage
``omni_cot``) and logged by ODI-Bench's ``process_results`` as ``record["omni_cot"]``; replay
restores it. ``python -m lmms_spatial.tasks.odi_bench.omni_cot_table report RUN_DIR`` (the
benchmark's table, in its folder) prints the crop filter ratio per task (Table 10). Options and
prompts: ``docs/omni_cot.md``.
"""

from __future__ import annotations

import hashlib
import inspect
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from lmms_eval.api.instance import Instance
from loguru import logger
from PIL import Image

from lmms_spatial.data import projection as proj
from lmms_spatial.data.erp_image import parse_size
from lmms_spatial.data.images import doc_id_of
from lmms_spatial.metrics.extraction import extract_yes_no
from lmms_spatial.models import omni_cot_prompts as P
from lmms_spatial.models import stages
from lmms_spatial.models.staged import Staged, StageJob
from lmms_spatial.run_state import ModelArgsError

ARTIFACT = "omni_cot"
METHODS = ("omni_cot", "direct", "multiview", "video")
BOX_FORMATS = ("auto", "normalized", "pixel", "thousand")


def _bool(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip().lower() not in {"", "0", "false", "no", "off", "none"}
    return bool(value)


# ---------------------------------------------------------------------------------------
# boxes
# ---------------------------------------------------------------------------------------

_NUM = r"-?\d+(?:\.\d+)?"
_BOX = re.compile(rf"[\[(]\s*({_NUM})\s*,\s*({_NUM})\s*,\s*({_NUM})\s*,\s*({_NUM})\s*[\])]")


@dataclass
class ParsedBoxes:
    raw: list[list[float]]  # the numbers as the model wrote them
    boxes: list[list[float]]  # normalised [x1, y1, x2, y2], clipped, ordered, non-empty
    format: str  # normalized | pixel | thousand | none
    dropped: int = 0  # empty boxes after clipping


def box_format_of(raw: Sequence[Sequence[float]], width: int, height: int) -> str:
    """Which coordinate system boxes are in (``box_format=auto``).

    All values <= 1 -> ``normalized``. Otherwise ``pixel`` if every box fits in the ERP and
    either some value exceeds 1000 or the whole ERP is at most 1000 × 1000 (then both readings
    fit; pixels win); otherwise ``thousand`` (0-1000, Qwen2-VL / InternVL style) if every value
    is <= 1000; anything else is read as ``pixel`` and clipped.
    """
    values = [v for box in raw for v in box]
    if not values:
        return "none"
    if max(values) <= 1.0:
        return "normalized"
    fits = all(b[0] <= width and b[2] <= width and b[1] <= height and b[3] <= height for b in raw)
    if fits and (max(values) > 1000 or (width <= 1000 and height <= 1000)):
        return "pixel"
    if max(values) <= 1000:
        return "thousand"
    return "pixel"


def parse_boxes(text: str, width: int, height: int, box_format: str = "auto", max_boxes: int = 4) -> ParsedBoxes:
    """Boxes ``[x1, y1, x2, y2]`` (or ``(...)``) found in a reply, normalised to [0, 1].

    Corners are put in order, values clipped to the image; boxes with no area are dropped;
    the first ``max_boxes`` are kept. ``box_format`` forces a coordinate system (see :func:`box_format_of`).
    """
    raw = [[float(v) for v in m.groups()] for m in _BOX.finditer(text or "")]
    if box_format not in BOX_FORMATS:
        raise ValueError(f"box_format must be one of {BOX_FORMATS}, got {box_format!r}")
    fmt = box_format_of(raw, width, height) if box_format == "auto" else box_format
    sx, sy = {"normalized": (1.0, 1.0), "pixel": (float(width), float(height)), "thousand": (1000.0, 1000.0)}.get(
        fmt, (1.0, 1.0)
    )
    boxes, dropped = [], 0
    for x1, y1, x2, y2 in raw:
        xs = sorted(min(max(v / sx, 0.0), 1.0) for v in (x1, x2))
        ys = sorted(min(max(v / sy, 0.0), 1.0) for v in (y1, y2))
        if xs[1] - xs[0] <= 0 or ys[1] - ys[0] <= 0:
            dropped += 1
            continue
        boxes.append([round(xs[0], 6), round(ys[0], 6), round(xs[1], 6), round(ys[1], 6)])
    return ParsedBoxes(raw, boxes[: max(0, int(max_boxes))], fmt if raw else "none", dropped)


# ---------------------------------------------------------------------------------------
# options
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Options:
    method: str = "omni_cot"
    viewpoint: bool = True
    grounding: bool = True
    crop_filter: bool = True
    fov: float = 90.0
    view_size: int = 512
    crop_size: int = 512
    margin: float = 10.0
    min_fov: float = 30.0
    max_fov: float = 120.0
    max_crops: int = 4
    box_format: str = "auto"
    erp_resize: tuple[int, int] | None = None  # (width, height)
    oversample: float | None = 1.0
    multiview_fov: float = 90.0
    video_duration: float = 12.0
    video_fps: float = 1.0
    video_size: int = 448
    chunk_size: int = 16
    caption_tokens: int = 256
    grounding_tokens: int = 256
    relevance_tokens: int = 16

    @classmethod
    def from_args(cls, **kwargs: Any) -> Options:
        out: dict[str, Any] = {}
        for name, f in cls.__dataclass_fields__.items():
            if name not in kwargs or kwargs[name] is None:
                continue
            value = kwargs[name]
            if name == "erp_resize":
                text = str(value).strip().lower()
                out[name] = None if text in {"", "none", "off", "full"} else parse_size(value)
            elif name == "oversample":
                out[name] = None if str(value).strip().lower() in {"none", "off", "full"} else float(value)
            elif f.type == "bool":
                out[name] = _bool(value)
            elif f.type == "int":
                out[name] = int(value)
            elif f.type == "float":
                out[name] = float(value)
            else:
                out[name] = str(value).strip().lower()
        options = cls(**out)
        if options.method not in METHODS:
            raise ModelArgsError(f"omni_cot: method must be one of {METHODS}, got {options.method!r}")
        if options.box_format not in BOX_FORMATS:
            raise ModelArgsError(f"omni_cot: box_format must be one of {BOX_FORMATS}, got {options.box_format!r}")
        return options

    def logged(self) -> dict[str, Any]:
        d = dict(self.__dict__)
        d["erp_resize"] = None if self.erp_resize is None else f"{self.erp_resize[1]}x{self.erp_resize[0]}"
        return d


# ---------------------------------------------------------------------------------------
# per-document state
# ---------------------------------------------------------------------------------------


def setting_of(doc_to_messages: Any, task: str) -> str:
    """The prompt setting of a request's task: its YAML's ``lmms_eval_specific_kwargs`` ``setting`` (``close``,
    ``open``, ``cot``), read from the task that ``doc_to_messages`` is a method of, else the task name. The
    artefacts of a document are shared by every task of one setting (a category's task and the whole setting's)."""
    method = inspect.unwrap(doc_to_messages)  # through the prefetcher's stand-in (lmms_spatial.prefetch)
    kwargs = getattr(getattr(method, "__self__", None), "lmms_eval_specific_kwargs", None)
    setting = kwargs.get("setting") if isinstance(kwargs, Mapping) else None
    return str(setting) if setting else str(task)


def artifact_key(doc: Mapping[str, Any], setting: str) -> str:
    return f"{setting}:{doc_id_of(doc)}"


def lookup(doc: Mapping[str, Any], setting: str) -> dict[str, Any] | None:
    """The artefact recorded for ``doc`` in ``setting`` (for ``process_results``), or None."""
    return stages.artifact(ARTIFACT, artifact_key(doc, setting))


def image_key(doc: Mapping[str, Any], fallback: str) -> str:
    """A short content hash of the document's undecoded image (bytes or path), else ``fallback``."""
    value = doc.get("image")
    if isinstance(value, Mapping):
        value = value.get("bytes") or value.get("path")
    if isinstance(value, (bytes, bytearray)):
        return hashlib.sha1(bytes(value)).hexdigest()[:16]
    if isinstance(value, str):
        return "path:" + value
    return fallback


def _texts(content: Sequence[Any]) -> list[str]:
    return [c["text"] for c in content if isinstance(c, Mapping) and c.get("type") == "text"]


def _images(content: Sequence[Any]) -> list[Any]:
    return [c.get("url") for c in content if isinstance(c, Mapping) and c.get("type") == "image"]


def _user(*parts: Any) -> list[dict]:
    """One user turn from images (PIL) and strings, in order."""
    content = [{"type": "text", "text": p} if isinstance(p, str) else {"type": "image", "url": p} for p in parts]
    return [{"role": "user", "content": content}]


@dataclass
class DocState:
    request: Instance
    doc: Mapping[str, Any]
    key: str  # artefact key
    image_key: str
    erp: Any  # the ERP the model sees (PIL image) or None
    text: str  # the task's question text (its last text part)
    question: str  # the bare question, for grounding / relevance prompts
    projector: proj.ErpProjector | None = None
    captions: dict[str, str] | None = None
    crops: list[dict[str, Any]] = field(default_factory=list)
    crop_images: list[Image.Image] = field(default_factory=list)
    art: dict[str, Any] = field(default_factory=dict)


class OmniCoT(Staged):
    """See the module docstring; options: :class:`Options` and ``docs/omni_cot.md``."""

    PROGRESS_NAME = "omni_cot"

    def __init__(self, base: str, stage_cache: str = "", **kwargs: Any) -> None:
        own = {k: kwargs.pop(k) for k in list(kwargs) if k in Options.__dataclass_fields__}
        self.options = Options.from_args(**own)
        super().__init__(base=base, stage_cache=stage_cache, **kwargs)
        self.calls.update(caption=0, grounding=0, first=0, relevance=0, refine=0, documents=0)

    # --- helpers ---------------------------------------------------------------------------

    def _state(self, request: Instance) -> DocState:
        _ctx, doc_to_messages, _gen, doc_id, task, split = request.args
        doc = self.task_dict[task][split][doc_id]
        messages = doc_to_messages(doc)
        content = [c for m in messages if m.get("role") == "user" for c in m.get("content", [])]
        images, texts = _images(content), _texts(content)
        erp = images[0] if images and isinstance(images[0], Image.Image) else None
        if erp is not None and self.options.erp_resize is not None:
            erp = proj.resized(erp, self.options.erp_resize)
        text = texts[-1] if texts else ""
        question = str(doc.get("question") or text).strip()
        state = DocState(
            request=request,
            doc=doc,
            key=artifact_key(doc, setting_of(doc_to_messages, task)),
            image_key=image_key(doc, f"{task}:{doc_id}"),
            erp=erp,
            text=text,
            question=question,
        )
        state.art = {
            "prompt_version": P.PROMPT_VERSION,
            "method": self.options.method,
            "options": self.options.logged(),
            "erp_size": list(erp.size) if erp is not None else None,
        }
        return state

    def _projector(self, state: DocState) -> proj.ErpProjector:
        if state.projector is None:
            state.projector = proj.ErpProjector(state.erp, oversample=self.options.oversample)
        return state.projector

    def _erp_first(self, state: DocState, *parts: Any) -> list[dict]:
        return _user(*([state.erp] if state.erp is not None else []), *parts)

    def _direct(self, state: DocState) -> list[dict]:
        return self._erp_first(state, state.text)

    # --- baselines -------------------------------------------------------------------------

    def _multiview(self, state: DocState) -> list[dict]:
        o = self.options
        vs = proj.views(proj.TWELVE_VIEWS, o.multiview_fov, o.view_size)
        images = self._projector(state).project(vs)
        parts: list[Any] = [P.MULTIVIEW_HEADER.format(n=len(vs), fov=o.multiview_fov)]
        for v, image in zip(vs, images, strict=True):
            parts += [P.MULTIVIEW_LINE.format(View=v.name.capitalize(), yaw=v.yaw, pitch=v.pitch), image]
        state.art["views"] = [{"name": v.name, "yaw": v.yaw, "pitch": v.pitch, "fov": v.fov} for v in vs]
        return _user(*parts, state.text)

    def _video(self, state: DocState) -> list[dict]:
        o = self.options
        schedule = proj.rotation_schedule(o.video_duration, o.video_fps)
        size = (o.video_size, o.video_size)
        frames = self._projector(state).project(
            [proj.View(f"t={t:g}s", yaw, pitch, o.multiview_fov, size) for t, yaw, pitch in schedule]
        )
        state.art["frames"] = [{"t": t, "yaw": yaw, "pitch": pitch} for t, yaw, pitch in schedule]
        header = P.VIDEO_HEADER.format(n=len(frames), fps=o.video_fps, duration=o.video_duration)
        return _user(header, *frames, state.text)

    # --- Omni-CoT ----------------------------------------------------------------------------

    def _caption_jobs(self, state: DocState) -> list[tuple[str, StageJob]]:
        o = self.options
        vs = proj.views(proj.SIX_VIEWS, o.fov, o.view_size)
        images = self._projector(state).project(vs)
        gen = {"max_new_tokens": o.caption_tokens}
        return [
            (
                v.name,
                StageJob(
                    state.request,
                    "omni_cot_caption",
                    f"{state.image_key}|{v.name}|{v.fov:g}|{o.view_size}|{o.erp_resize}",
                    _user(image, P.CAPTION.format(view=v.name, fov=v.fov)),
                    gen,
                ),
            )
            for v, image in zip(vs, images, strict=True)
        ]

    def _grounding_job(self, state: DocState) -> StageJob:
        text = P.GROUNDING.format(question=state.question, max_crops=self.options.max_crops)
        gen = {"max_new_tokens": self.options.grounding_tokens}
        return StageJob(
            state.request,
            "omni_cot_grounding",
            f"{state.image_key}|{self.options.erp_resize}",
            self._erp_first(state, text),
            gen,
        )

    def _captions_text(self, state: DocState) -> str:
        lines = [P.VIEWPOINT_HEADER]
        lines += [
            P.VIEWPOINT_LINE.format(View=name.capitalize(), caption=c.strip()) for name, c in state.captions.items()
        ]
        return "\n".join(lines)

    def _first_messages(self, state: DocState) -> list[dict]:
        if state.captions is None:
            return self._direct(state)
        return self._erp_first(state, f"{self._captions_text(state)}\n\n{state.text}")

    def _make_crops(self, state: DocState, reply: str) -> None:
        o = self.options
        w, h = state.erp.size
        parsed = parse_boxes(reply, w, h, o.box_format, o.max_crops)
        state.art.update(
            grounding_reply=reply,
            box_format=parsed.format,
            boxes_raw=parsed.raw,
            boxes=parsed.boxes,
            boxes_dropped_empty=parsed.dropped,
        )
        size = (o.crop_size, o.crop_size)
        for box in parsed.boxes:
            c = proj.box_to_crop(box, o.margin, o.min_fov, o.max_fov)
            state.crops.append(
                {
                    "box": box,
                    "theta": round(c.theta, 4),
                    "phi": round(c.phi, 4),
                    "fov": round(c.fov, 4),
                    "direction": proj.direction_words(c.theta, c.phi),
                }
            )
        views = [proj.View(f"crop{i}", c["theta"], c["phi"], c["fov"], size) for i, c in enumerate(state.crops)]
        state.crop_images = self._projector(state).project(views)

    def _relevance_job(self, state: DocState, i: int) -> StageJob:
        c = state.crops[i]
        text = P.RELEVANCE.format(question=state.question, **{k: c[k] for k in ("direction", "theta", "phi", "fov")})
        key = f"{state.image_key}|{c['theta']}|{c['phi']}|{c['fov']}|{self.options.crop_size}|{self.options.erp_resize}"
        return StageJob(
            state.request,
            "omni_cot_relevance",
            key,
            _user(state.crop_images[i], text),
            {"max_new_tokens": self.options.relevance_tokens},
        )

    def _refine_messages(self, state: DocState, kept: list[int], previous: str) -> list[dict]:
        lines = []
        if state.captions is not None:
            lines += [self._captions_text(state), ""]
        lines.append(P.REFINE_HEADER)
        for n, i in enumerate(kept, 1):
            c = state.crops[i]
            lines.append(P.REFINE_LINE.format(i=n, **{k: c[k] for k in ("direction", "theta", "phi", "fov")}))
        lines += ["", P.REFINE_PREVIOUS.format(previous=previous.strip()), "", state.text]
        return self._erp_first(state, *[state.crop_images[i] for i in kept], "\n".join(lines))

    def _omni_cot(self, states: list[DocState]) -> list[str]:
        o = self.options
        # round 1: captions of six views + grounding boxes, all documents in one call
        caption_jobs: list[tuple[DocState, str, StageJob]] = []
        grounding_jobs: list[tuple[DocState, StageJob]] = []
        for s in states:
            if s.erp is None:
                continue
            if o.viewpoint:
                caption_jobs += [(s, name, job) for name, job in self._caption_jobs(s)]
            if o.grounding:
                grounding_jobs.append((s, self._grounding_job(s)))
        outs = self.run_stage_jobs([j for *_, j in caption_jobs] + [j for _, j in grounding_jobs])
        self.calls["caption"] += len(caption_jobs)
        self.calls["grounding"] += len(grounding_jobs)
        for (s, name, _), text in zip(caption_jobs, outs[: len(caption_jobs)], strict=True):
            s.captions = {**(s.captions or {}), name: text}
        for (s, _), text in zip(grounding_jobs, outs[len(caption_jobs) :], strict=True):
            self._make_crops(s, text)
        for s in states:
            s.art["captions"] = s.captions
            if s.projector is not None:
                s.art["levels_used"] = sorted(s.projector.levels_used)
                s.projector = None  # the padded arrays are no longer needed

        # round 2: first answers (+ relevance questions per crop)
        relevance: list[tuple[DocState, int, StageJob]] = []
        if o.grounding and o.crop_filter:
            relevance = [(s, i, self._relevance_job(s, i)) for s in states for i in range(len(s.crops))]
        first_jobs = [
            StageJob(s.request, "omni_cot_first", f"{s.image_key}|{s.key}|{o.erp_resize}", self._first_messages(s))
            for s in states
        ]
        outs = self.run_stage_jobs(first_jobs + [j for *_, j in relevance])
        self.calls["first"] += len(first_jobs)
        self.calls["relevance"] += len(relevance)
        firsts = outs[: len(first_jobs)]
        for s in states:
            for c in s.crops:
                c["kept"] = not o.crop_filter  # without the filter every crop is kept
        for (s, i, _), text in zip(relevance, outs[len(first_jobs) :], strict=True):
            verdict = extract_yes_no(text)
            s.crops[i].update(relevance_reply=text, relevance=verdict.value, kept=verdict.value == "Yes")

        # round 3: response refinement where a crop was kept
        finals = list(firsts)
        refine: list[tuple[int, list[dict]]] = []
        for n, (s, first) in enumerate(zip(states, firsts, strict=True)):
            s.art["first_answer"] = first
            kept = [i for i, c in enumerate(s.crops) if c.get("kept")]
            s.art.update(crops=s.crops, crops_kept=len(kept), crops_dropped=len(s.crops) - len(kept))
            if o.grounding and kept:
                refine.append((n, self._refine_messages(s, kept, first)))
        if refine:
            answers = self._run([self._instance(states[n].request, m) for n, m in refine], stage="refined answers")
            self.calls["refine"] += len(refine)
            for (n, _), text in zip(refine, answers, strict=True):
                finals[n] = text
        for n, s in enumerate(states):
            s.art["refined"] = any(n == m for m, _ in refine)
        return finals

    # --- lmms-eval entry point ---------------------------------------------------------------

    # read by lmms_spatial.prefetch: documents are read in request order, a chunk at a time
    def prefetch_order(self, requests: Sequence[Instance]) -> list[int]:
        return list(range(len(requests)))

    @property
    def prefetch_window(self) -> int:
        return max(1, self.options.chunk_size)

    def generate_until(self, requests: list[Instance]) -> list[str]:
        self.base.task_dict = self.task_dict
        o = self.options
        answers: list[str] = []
        for start in range(0, len(requests), max(1, o.chunk_size)):
            states = [self._state(r) for r in requests[start : start + max(1, o.chunk_size)]]
            if o.method == "omni_cot":
                finals = self._omni_cot(states)
            else:
                build = {"direct": self._direct, "multiview": self._multiview, "video": self._video}[o.method]
                prompts = [build(s) if s.erp is not None else self._direct(s) for s in states]
                finals = self._run([self._instance(s.request, m) for s, m in zip(states, prompts, strict=True)],
                                   stage=f"{o.method} answers")  # fmt: skip
            self.calls["final"] += len(states)
            self.calls["documents"] += len(states)
            for s, final in zip(states, finals, strict=True):
                s.art["final_answer"] = final
                stages.record_artifact(ARTIFACT, s.key, s.art)
            answers += finals
        logger.info(f"omni_cot ({o.method}): {self.calls}")
        return answers
