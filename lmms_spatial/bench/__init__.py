"""``lmms-spatial bench``: what our code costs per document, next to what the model costs.

One run, one machine, one JSON file (``--json``), so runs can be compared (``--compare A B``):

* **tasks**: for every task (default: every demo task, on the embedded fixture data; or the data the
  ``LMMS_SPATIAL_*_PATH`` variables name with ``--use-env-data``), in-process through lmms-eval's
  ``TaskManager``: dataset load (``get_task_dict``), then per document ``doc_to_visual`` (image decode
  / resize / projection), ``doc_to_text`` (prompt), ``doc_to_messages`` (what a chat model calls:
  prompt + images) and ``process_results`` on the target as reply (scoring), plus the task's
  aggregations. CPU seconds (``time.process_time``) and wall seconds; peak RSS (``ru_maxrss``).
  ``our_cpu_ms_per_doc`` = messages + scoring + aggregation/doc: what a chat-model run pays us per doc.
  Judged tasks use ``LMMS_SPATIAL_JUDGE=none`` (rule-based fallback) unless the variable is set; the
  judge's own cost is measured from a checkout (``python -m tools.bench_judge``, against a fake server).
* **odi_decode**: a 12,000 × 6,000 JPEG ERP brought to the model's pixel budget: naive
  (``Image.open().convert("RGB").resize(BICUBIC)``) vs ours (:func:`lmms_spatial.data.erp_image.decode_erp`:
  JPEG draft-mode reduced decode, then ``reducing_gap`` resize); speed-up and image difference.
* **osr_scoring**: all metrics of the full OSR-Bench size (4,100 maps, 153,312 QAs) from a samples
  file (written, read back, ``process_results`` + every aggregation of ``osr_cogmap_standard`` and
  ``osr_qa_standard_vanilla``), single process.
* **osr_calls**: ``--model staged`` over an instant counting model on ``osr_qa_cogmap_standard_vanilla``:
  base-model calls per image (should be 1 map + questions, not 2 × questions).
* **end_to_end** (``--model``): lmms-eval as a subprocess on the tasks with ``--limit L``; wall
  seconds, docs/s, the child's peak RSS and our CPU ms/doc as a share of the model's ms/doc
  (``our_share_of_wall``: an upper bound, the wall time includes process start and model load).
  **Steady state** (``--steady``, on by default; needs ``--limit L``): two more runs, ``--limit 2L``
  and ``--limit L`` again (the first run warms the page cache, the datasets cache and the like, so
  both runs of the pair start warm); the marginal time per document
  ``marginal_ms_per_doc = (wall(2L) - wall(L)) / (docs(2L) - docs(L))`` (docs from
  ``n-samples.<task>.effective``) cancels start-up and model load; ``our_share_of_steady`` = our CPU
  ms/doc (weighted by each task's marginal documents) / ``marginal_ms_per_doc``, checked against
  5% in the summary. That budget is meant for a 7B model on one GPU: on CPU with a tiny model the
  flag is informative only. When every task has at most L documents (docs(2L) == docs(L)) or the
  wall time did not grow, the marginal is None and ``steady_reason`` says why. ``--no-steady``: the
  single run only.

``--image-size real``: before the phases, the demo data is copied with every image re-encoded at a
realistic size in its own format (OSR-Bench 1024 × 512, MMSI-Bench / DORI / MMPerspective
1280 × 960, ODI-Bench kept; :data:`lmms_spatial.bench.real_images.REAL_IMAGE_SIZES`, with mild
seeded noise so files and decode costs are photo-like) for every benchmark the run reads (the tasks'
benchmarks, and OSR-Bench for ``osr_calls`` / ``osr_scoring``), and every phase runs on that copy. The
JSON report's ``image_sizes`` says, per benchmark, the sizes, formats, mean file size and decode cost of
the images used (``--image-size demo``, the default: the embedded images, listed the same way).

``--tiny``: a few documents per task, small ODI image, 1/100 of OSR size: for CI (not timed).

Modules, by what they measure: :mod:`~lmms_spatial.bench.tasks` (per-task CPU cost),
:mod:`~lmms_spatial.bench.odi_decode`, :mod:`~lmms_spatial.bench.osr` (scoring and calls),
:mod:`~lmms_spatial.bench.end_to_end` (single run and steady state), with
:mod:`~lmms_spatial.bench.measure` (clocks, RSS) and :mod:`~lmms_spatial.bench.lmms_eval_process` (the child
process) under them; :mod:`~lmms_spatial.bench.report` (checks, text, compare) and
:mod:`~lmms_spatial.bench.cli` (arguments, the run, ``main``) on top. Developers' standalone benchmarks live in
the checkout's ``tools/`` (``python -m tools.bench_odi_image_memory``: peak RSS of one 12K ERP through the task;
``python -m tools.bench_omni_cot_preprocessing``: Omni-CoT's views and crops), not in the package.
"""

from lmms_spatial.bench.cli import add_arguments, main, main_args, run
from lmms_spatial.bench.end_to_end import STEADY_NOTE, STEADY_SHARE_BUDGET, bench_end_to_end, steady_state
from lmms_spatial.bench.odi_decode import (
    ODI_MAX_MEAN_ABS_DIFF,
    ODI_MIN_PSNR_DB,
    ODI_MIN_SPEEDUP,
    QWEN_MAX_PIXELS,
    bench_odi_decode,
)
from lmms_spatial.bench.osr import OSR_BUDGET_S, bench_osr_calls, bench_osr_scoring
from lmms_spatial.bench.report import compare, format_report, summary
from lmms_spatial.bench.tasks import NON_ODI_BUDGET_MS, bench_tasks, to_messages

__all__ = [
    "NON_ODI_BUDGET_MS",
    "ODI_MAX_MEAN_ABS_DIFF",
    "ODI_MIN_PSNR_DB",
    "ODI_MIN_SPEEDUP",
    "OSR_BUDGET_S",
    "QWEN_MAX_PIXELS",
    "STEADY_NOTE",
    "STEADY_SHARE_BUDGET",
    "add_arguments",
    "bench_end_to_end",
    "bench_odi_decode",
    "bench_osr_calls",
    "bench_osr_scoring",
    "bench_tasks",
    "compare",
    "format_report",
    "main",
    "main_args",
    "run",
    "steady_state",
    "summary",
    "to_messages",
]
