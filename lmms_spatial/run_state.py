"""What lmms-eval is running in this process now, in one typed place: the layer every other one may read.

The plugin (:mod:`lmms_spatial.plugin`) writes it from its wrappers around lmms-eval (``simple_evaluate``,
``get_task_dict``, ``evaluate``, ``ConfigurableTask.__init__``); code below the plugin (data loading, a task's
adapter, a model) reads it here and never imports the plugin. That is what keeps the package's imports one-way
(``tests/test_import_direction.py``):

- :class:`Call`: one ``simple_evaluate`` in progress (its arguments, the tasks of ours built so far);
- :class:`Run`: the run of ours in progress (a call whose resolved tasks include ours), with its notes;
- :class:`Evaluation`: the model ``evaluate`` was handed, and the rule that sizes images for it when it is
  served over an API (:mod:`lmms_spatial.data.api_images`): ODI-Bench's adapter reads the rule from here;
- :func:`documents_failed`: a lower layer's way to say "a task's documents failed to load" to whoever listens
  (the plugin registers :func:`on_documents_failed` when it patches lmms-eval).

Everything a run changes as it goes is a field of :data:`STATE`, and nowhere else in the package
(``tests/test_run_state.py`` fails on a module-level container that a function changes, outside this module). Each
field says how long it lives, because that is what decides when it is forgotten:

- for one ``simple_evaluate`` (:func:`start_call` forgets them when an outermost call starts): the call's
  :class:`Call`, the task dict's empty tasks (:class:`EmptyTasks`), the failed requests counted;
- for the whole command (every run of a ``--config`` list, printed at interpreter exit): the last lines and the exit
  status (:class:`LastLines`);
- for the process, as lmms-eval's own module state is: stage outputs a model recorded (:class:`StageOutputs`), what
  judges' servers said (:class:`JudgeEndpoints`), warnings already logged, the last prefetch's counters, the
  progress bars forwarding a model's counts.

:func:`reset` forgets all of it (tests; a process that runs several commands). One evaluation at a time per process
(lmms-eval's own rule); the lists are stacks only so that a nested call cannot leave a stale entry behind.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

# the results file's key and an empty task's entry: the conditions schema's (one spelling)
from lmms_spatial.conditions import DOCUMENTS_KEY, NO_DOCUMENTS, DataRecord, DeclaredTask  # noqa: F401
from lmms_spatial.conditions import KEY as RESULTS_KEY  # noqa: F401

if TYPE_CHECKING:  # for the annotations only: these modules read this one, never the other way at run time
    from lmms_spatial.data.api_images import ModelImages
    from lmms_spatial.judge.errors import JudgeUnavailableError
    from lmms_spatial.prefetch import Stats


# what a run of ours writes into lmms-eval's results that a report reads back (lmms_spatial.reports)


class RunRefused(Exception):
    """A run of ours that cannot do what was asked (``--limit 0``, ...): its message is the whole last line; on the
    command line the run ends in that line, exit 1, without a traceback (``plugin.run``)."""


class ModelArgsError(RunRefused, ValueError):
    """``--model_args`` a model of ours cannot use: the message names the argument and what it takes."""


@dataclass
class Call:
    """One ``simple_evaluate`` in progress: its arguments, the tasks of ours built so far, its run if ours."""

    arguments: dict[str, Any]
    built_ours: list[str] = field(default_factory=list)
    run: Run | None = None
    data: dict[str, DataRecord] = field(default_factory=dict)  # where each benchmark's documents came from


@dataclass
class RunNotes:
    """What a run of ours gathers as it goes, for its answer store and its conditions
    (:mod:`lmms_spatial.plugin.conditions`)."""

    model_id: str = ""  # "<model>:<model_args>", the key of the maps a chat model draws
    answers: str | None = None  # the folder its answers are kept in (None: not kept)
    lock: Any = None  # this process's lock on its run folder (lmms_spatial.plugin.owners)
    kept_answers: int | None = None  # answers kept when it was interrupted (None: not counted)
    tasks: dict[str, DeclaredTask] = field(default_factory=dict)  # what its tasks declare
    protocol: dict[str, dict[str, Any]] = field(default_factory=dict)  # each task's own generation settings
    generation: dict[str, dict[str, Any]] = field(default_factory=dict)  # ... in effect
    maps: bool = False  # whether the model drew its own maps
    store: dict[str, Any] | None = None  # the answers the store gave (lmms_spatial.plugin.resume.served_summary)
    model_seed: int | None = None  # the seed the model drew from (its ``seed`` attribute), given or by default
    own_seed_only: bool = False  # the model draws from model_seed alone (lmms-eval's --seed never reaches it)


@dataclass
class Run:
    """The run of ours in progress: its tasks of ours, how it was asked for, and what it learns as it goes
    (``notes``: the answer store, the tasks' declarations, generation settings; read by the conditions)."""

    ours: list[str]
    cli_args: Any = None
    predict_only: bool = False
    notes: RunNotes = field(default_factory=RunNotes)
    call: Call | None = None


@dataclass(frozen=True)
class Evaluation:
    """The model lmms-eval's ``evaluate`` is running, and its API-image rule (``None``: a local model's images
    are unchanged). Set for the duration of ``evaluate``, which covers every ``doc_to_visual`` /
    ``doc_to_messages`` call (prefetch workers included) and every ``process_results`` call."""

    model: Any
    images: ModelImages | None


@dataclass
class LastLines:
    """What a command of ours says last, and its exit status (:mod:`lmms_spatial.plugin.failures`). Kept for the
    whole command, not one ``simple_evaluate``: a ``--config`` list runs several in one process, and a failure of
    the first must still end the command with exit 1 after the last."""

    failures: list[str] = field(default_factory=list)  # one line per failure: the command exits 1 (or ``status``)
    notes: list[str] = field(default_factory=list)  # said before the failures, the exit status left alone
    failed_tasks: dict[str, str] = field(default_factory=dict)  # task -> "stage: cause" (its first failure only)
    status: int | None = None  # the exit status of a command with failures when it is not 1 (Ctrl-C: 130)


@dataclass
class EmptyTasks:
    """The tasks of ours the last task dict left out for want of documents (:mod:`lmms_spatial.plugin.empty_tasks`):
    replaced by every ``get_task_dict``, read when its ``simple_evaluate`` returns."""

    tasks: list[str] = field(default_factory=list)  # in the task dict's order
    coverage: dict[str, tuple[list[str], list[str]]] = field(default_factory=dict)  # group -> (covered, empty)


@dataclass
class StageOutputs:
    """What a stage-drawing model generated before the final answers (:mod:`lmms_spatial.models.stages`), read by
    the tasks' ``process_results``. Kept for the process: a model made before ``simple_evaluate`` (the Python API)
    registers its store then, and the tests that clear them say when a new process is meant."""

    outputs: dict[tuple[str, str], str] = field(default_factory=dict)  # (stage, key) -> the model's text
    artifacts: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)  # (stage, key) -> artefact
    stores: list[Callable[[str, str], str | None]] = field(default_factory=list)  # (stage, key) -> kept output


@dataclass
class JudgeEndpoints:
    """What the LLM judges' servers said in this process (:mod:`lmms_spatial.judge.client`), keyed by base URL:
    facts about a server, shared by every judge sending there, forgotten with the judges (``reset_judges``)."""

    outages: dict[str, tuple[float, JudgeUnavailableError]] = field(default_factory=dict)  # -> (monotonic time, error)
    refused_keys: dict[str, int] = field(default_factory=dict)  # -> the HTTP status that refused the API key


@dataclass
class RunState:
    """Everything a call, a run, the command and the process change as they go (each field's lifetime: the module
    doc); one instance, :data:`STATE`, renewed in place: whole by :func:`reset`, a call's fields by
    :func:`start_call`."""

    calls: list[Call] = field(default_factory=list)  # simple_evaluate calls in progress
    runs: list[Run] = field(default_factory=list)  # the run of ours in progress
    evaluation: Evaluation | None = None
    documents_failed: list[Callable[[str, BaseException], None]] = field(default_factory=list)
    # (results file, the command that pushes it) of a run asked to push to the Hub, once its results are written
    written_for_hub: tuple[str, str] | None = None
    push_failure_said: bool = False  # its push failed, and one line said so
    last_lines: LastLines = field(default_factory=LastLines)
    empty_tasks: EmptyTasks = field(default_factory=EmptyTasks)
    # task -> (documents whose request failed, the first such reply): rank 0, the evaluation of ours in progress
    failed_requests: dict[str, tuple[int, str | None]] = field(default_factory=dict)
    prefetch_stats: Stats | None = None  # the counters of the last prefetching call (benchmarks and tests)
    progress_sinks: list[Any] = field(default_factory=list)  # where a model's progress counts go, innermost last
    stages: StageOutputs = field(default_factory=StageOutputs)
    judges: JudgeEndpoints = field(default_factory=JudgeEndpoints)
    warned: set[str] = field(default_factory=set)  # the keys of the warnings logged once, already logged


STATE = RunState()
_lock = threading.Lock()


def reset() -> None:
    """Forget everything every run so far left (tests; a process that runs several commands). The same
    :data:`STATE` object stays, so modules that hold it see the fresh values; so do the listeners of
    :func:`documents_failed`: the plugin's wiring, registered once when it patches lmms-eval, not a run's."""
    with _lock:
        vars(STATE).update(vars(RunState(documents_failed=STATE.documents_failed)))


def start_call(call: Call) -> None:
    """``call`` (a ``simple_evaluate``) is in progress. An outermost call starts from what no earlier evaluation
    left: its empty tasks and failed requests are forgotten (the command's last lines stay: :class:`LastLines`)."""
    with _lock:
        if not STATE.calls:
            STATE.empty_tasks = EmptyTasks()
            STATE.failed_requests = {}
        STATE.calls.append(call)


def end_call(call: Call) -> None:
    """``call`` returned or raised."""
    with _lock:
        if call in STATE.calls:
            STATE.calls.remove(call)


def first_time(key: str) -> bool:
    """Whether the warning named ``key`` is logged now for the first time in this process (then it is marked
    logged): one line per kind of trouble, however many documents share it, from any thread."""
    with _lock:
        if key in STATE.warned:
            return False
        STATE.warned.add(key)
        return True


def current() -> Run | None:
    return STATE.runs[-1] if STATE.runs else None


def active() -> bool:
    """Whether a run of ours is in progress (the plugin's wrappers change nothing for other runs)."""
    return bool(STATE.runs)


def in_call() -> bool:
    """Whether a wrapped ``simple_evaluate`` is in progress (it names what fails while tasks are built)."""
    return bool(STATE.calls)


def current_call() -> Call | None:
    return STATE.calls[-1] if STATE.calls else None


def built(task_name: str) -> None:
    """A task of ours was built (``ConfigurableTask.__init__`` returned): a later failure is a run of ours."""
    if STATE.calls:
        STATE.calls[-1].built_ours.append(task_name)


def data_read(name: str, record: DataRecord) -> None:
    """Benchmark ``name`` (``<key>`` or ``<key>/<config>``) read its documents from ``record`` in the call in
    progress (tasks are built, and their documents loaded, before the run of ours is recognised)."""
    if STATE.calls:
        STATE.calls[-1].data[name] = record


def set_evaluation(evaluation: Evaluation | None) -> Evaluation | None:
    with _lock:
        STATE.evaluation = evaluation
    return evaluation


def evaluation() -> Evaluation | None:
    return STATE.evaluation


@contextmanager
def evaluating(value: Evaluation) -> Iterator[Evaluation]:
    """``value`` is the evaluation in progress for the ``with`` block, forgotten after it (raised or not)."""
    set_evaluation(value)
    try:
        yield value
    finally:
        set_evaluation(None)


def on_documents_failed(callback: Callable[[str, BaseException], None]) -> None:
    """Call ``callback(benchmark key, exception)`` when a task's documents fail to load (once per callback)."""
    if callback not in STATE.documents_failed:
        STATE.documents_failed.append(callback)


def documents_failed(key: str, exc: BaseException) -> None:
    """A task of benchmark ``key`` failed while its documents were loaded (the exception is raised on anyway)."""
    for callback in list(STATE.documents_failed):
        callback(key, exc)
