"""The run-level wrapper around lmms-eval's ``simple_evaluate``, ``get_task_dict`` and ``evaluate``.

A run is *ours* when the tasks lmms-eval resolved for it include a task of ours: one whose code is ours
(:func:`lmms_spatial.plugin.ours.is_ours`), however it was asked for — by name, through a group or a tag (ours
or the user's), a YAML of the user's that includes ours (``--include_path``), or ``--tasks <file.yaml>``. It is
recognised where the task dict is first whole: when ``get_task_dict`` returns inside ``simple_evaluate``; when
the hook came late (``LMMS_SPATIAL_DISABLE_HOOK=1``: see :func:`lmms_spatial.plugin.install_late`), at
``ResponseCache.create`` or ``evaluate``. For such a run:

- its answers are kept as they come (:mod:`lmms_spatial.plugin.resume`: lmms-eval's response cache, on by
  default, opened here when the run did not name one, written chunk by chunk), so a kill, an OOM or a scoring
  error loses nothing and the same command resumes;
- ``--limit 0`` or a negative ``--limit`` other than -1 stops it before any model call, in one line;
- before generation, one notice names the tasks that need an LLM judge when none is configured or its server
  does not answer (:mod:`lmms_spatial.judge.preflight`); a key the judge refused ends the run with exit 1
  naming ``LMMS_SPATIAL_JUDGE_API_KEY``;
- a task whose scoring or aggregation raises is set aside (:mod:`lmms_spatial.plugin.isolation`): the other
  tasks' results and every sample are written, and the run exits 1 naming it
  (:mod:`lmms_spatial.plugin.failures`);
- an evaluation that raises anyway exits 1 with one line naming the task lmms-eval was building, or the stage.
  A run that stops while its tasks are built is ours when the task being built is ours, a task of ours was
  built before it, or ``--tasks`` names one of ours;
- the results carry the run's conditions (``results["lmms_spatial"]``: model label, documents of the split,
  judge, map source, run options, seed, weights' fingerprint, answers from the store, generation settings;
  :mod:`lmms_spatial.plugin.conditions`), and the run's last lines
  say when with-map tasks went unscored for want of a map or a judge's verdicts could not be read;
- a chat model asked for with-map tasks draws its own maps (:mod:`lmms_spatial.plugin.maps`), and a
  stage-drawing model keeps its stage outputs beside the kept answers, so a resumed run's answers still
  record the map they were given.

Every ``evaluate`` call (ours or not) decodes our tasks' inputs ahead of the model
(:mod:`lmms_spatial.prefetch`; a no-op for other tasks) and puts the model it evaluates, with the rule that sizes
images for an API model, in the run's state (:class:`lmms_spatial.run_state.Evaluation`: ODI-Bench's adapter reads
it there). Every ``get_task_dict`` leaves out a task of ours with no documents in the release, and
``simple_evaluate``'s results name it (:mod:`lmms_spatial.plugin.empty_tasks`). Runs with none of our tasks are
otherwise left exactly as lmms-eval runs them.

This module holds the one wrapper of each of those functions; the run itself (the call in progress, the run of
ours, the model evaluated) lives in :mod:`lmms_spatial.run_state`, which every other module reads.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lmms_spatial import run_state
from lmms_spatial.plugin import empty_tasks, failures, internal, store_check
from lmms_spatial.plugin.ours import is_yaml_file_of_ours, recognise
from lmms_spatial.run_state import Call, Run


def current() -> Run | None:
    return run_state.current()


def active() -> bool:
    return run_state.active()


def in_call() -> bool:
    """Whether a wrapped ``simple_evaluate`` is in progress (it names what fails while tasks are built)."""
    return run_state.in_call()


def task_entries(tasks: Any) -> list[str]:
    """The entries of ``--tasks`` in order: a comma-separated string, or the list a config file or Python gives."""
    items = tasks if isinstance(tasks, (list, tuple)) else [tasks]
    return [part.strip() for item in items if isinstance(item, str) for part in item.split(",") if part.strip()]


def requested_names(tasks: Any) -> set[str]:
    return set(task_entries(tasks))


def _end(run: Run) -> None:
    from lmms_spatial.plugin import resume

    resume.release(run)
    if run in run_state.STATE.runs:
        run_state.STATE.runs.remove(run)


def _bind(function: Callable, args: tuple, kwargs: dict) -> inspect.BoundArguments | None:
    try:
        return inspect.signature(function).bind_partial(*args, **kwargs)
    except (TypeError, ValueError):
        return None


def _wrap(
    module, name: str, make: Callable[[Callable], Callable], loss: str = "that part of our run handling is off"
) -> None:
    original = internal(module, name, loss)
    if original is None or getattr(original, "_lmms_spatial", False):
        return
    wrapper = functools.wraps(original)(make(original))
    wrapper._lmms_spatial = True
    setattr(module, name, wrapper)


def _our_tasks_of_failed_call(exc: BaseException, call: Call) -> list[str]:
    """Our tasks of a call that raised before its task dict was whole ([] when nothing says it is ours)."""
    named = sorted(requested_names(call.arguments.get("tasks")) & failures.our_task_names())
    found = list(dict.fromkeys([*named, *call.built_ours]))
    failing = failures.task_of(exc)
    if failing and failures.marked(exc, failures.EXC_OURS_ATTR) and failing not in found:
        found.append(failing)
    if not found and isinstance(failures.root_cause(exc), failures.RunRefused):
        found = ["this run"]
    return found


def _simple_evaluate(original: Callable) -> Callable:
    def simple_evaluate(*args, **kwargs):
        bound = _bind(original, args, kwargs)
        call = Call(dict(bound.arguments) if bound is not None else {})
        run_state.start_call(call)  # an outermost call forgets what an earlier evaluation left
        try:
            check_environment(call)
            results = original(*args, **kwargs)
        except Exception as exc:
            ours = call.run.ours if call.run is not None else _our_tasks_of_failed_call(exc, call)
            if ours:
                failures.run_failed(exc, ours)
                _exit_if_last_line_explains(exc)
            raise
        except KeyboardInterrupt as exc:  # Ctrl-C: one line, not a traceback (SystemExit prints none)
            if call.run is None and not _our_tasks_of_failed_call(exc, call):
                raise
            failures.interrupted(_what_interruption_keeps(call.run))
            raise SystemExit(failures.INTERRUPTED_STATUS) from None
        finally:
            run_state.end_call(call)
            if call.run is not None:
                _end(call.run)
        if call.run is not None:
            from lmms_spatial.plugin.samples import hash_documents

            hash_documents(results, call.run.notes.tasks)  # lmms-eval hashes null for every sample
            record_conditions(results, call.run)
        if call.run is not None and isinstance(results, dict):
            kept = call.run.notes.answers
            config = results.get("config")
            if kept and isinstance(config, dict) and not config.get("use_cache"):
                config["use_cache"] = kept  # the folder the answers are in, as lmms-eval records its own
        return empty_tasks.named(results)  # the tasks left out for want of documents, by name

    return simple_evaluate


def _last_line_explains(exc: BaseException) -> bool:
    """Whether a run of ours on the command line that raised ``exc`` is told in full by its last line: data it
    cannot read (``DataUnavailable``: the variable, the release, the fix), a row it cannot use
    (``BadDocumentError``: the document and the field), or what it was given cannot be done (``RunRefused``:
    ``--limit 0``, ``--model_args`` a model of ours cannot use, samples a replay cannot use). lmms-eval's handler
    would print its traceback (~60 lines of its task loading for data) and the message again above that line
    first (and go on to the next run of a ``--config`` list: the command ends here instead). A bug (any other
    error) keeps its traceback; ``--verbosity DEBUG`` keeps it for every error, as lmms-eval does; called from
    Python, the exception is raised as it is."""
    args = cli_arguments()
    if args is None or str(getattr(args, "verbosity", "")).upper() == "DEBUG":
        return False
    from lmms_spatial.data.hub_cache import DataUnavailable
    from lmms_spatial.data.images import BadDocumentError

    return isinstance(failures.root_cause(exc), (DataUnavailable, BadDocumentError, failures.RunRefused))


def _exit_if_last_line_explains(exc: BaseException) -> None:
    """End the command line now, exit 1, when its last line tells ``exc`` in full (:func:`_last_line_explains`):
    ``SystemExit`` is not an ``Exception``, so lmms-eval's handler prints no traceback over that line."""
    if _last_line_explains(exc):
        raise SystemExit(1) from None


def _what_interruption_keeps(run: Run | None) -> str:
    """What an interrupted run keeps, and how to go on."""
    where = run.notes.answers if run is not None else None
    if not where:
        return ("no answer was kept (the model had not answered, or answers are not kept: LMMS_SPATIAL_RESUME=0); "
                "run the same command again")  # fmt: skip
    count = run.notes.kept_answers
    answers = f"{count} answers are" if isinstance(count, int) else "the answers so far are"
    return f"{answers} kept in {where}; the same command resumes, asking the model only for the missing ones"


def _count_kept(cache: Any, run: Run) -> None:
    """The answers an interrupted run keeps, counted before its store is closed. lmms-eval logs each answer (fsync'd)
    before its store row is written, and Ctrl-C can fall between the two: the answers the run's own audit log holds
    are put into the store first (what the same command would read back from the log anyway), so the count is what
    the next run will not ask again, whenever the signal came."""
    try:
        audit = getattr(cache, "audit_path", None)
        if audit and os.path.isfile(audit) and store_check.replay_log(cache.db, Path(audit)):
            cache.db.commit()
        run.notes.kept_answers = int(cache.db.execute("SELECT COUNT(*) FROM responses").fetchone()[0])
    except Exception:  # no count: the line says "the answers so far"
        pass


def record_conditions(results: Any, run: Run) -> None:
    """``results["lmms_spatial"]`` gets the run's conditions, and the run's last lines what they call for.
    Never fails the run: a problem here costs the record, said in one line."""
    if not isinstance(results, dict):  # ranks other than 0 return nothing
        return
    try:
        from lmms_spatial.plugin import conditions, empty_tasks

        value = conditions.build(results, run.notes.tasks, lm_draws_maps=run.notes.maps, empty=empty_tasks.left_out())
        conditions.add_what_answered(value, results, run.notes)
        value.data = dict(run.call.data) if run.call is not None else None
        from lmms_spatial.plugin.failed_requests import counts

        failed = counts()
        for name, entry in value.tasks.items():
            entry.requests_failed = failed.get(name, 0)
        results[conditions.KEY] = {**value.to_json(), **(results.get(conditions.KEY) or {})}
        conditions.annotate(results, value)
        conditions.name_data(results, run.notes.tasks, run.call.data if run.call is not None else None)
        for line in conditions.notes(value, results.get("samples"), example=conditions.unparsed_example):
            failures.add_note(line)
        from lmms_spatial.judge.preflight import unjudged_line

        unjudged = unjudged_line(value.tasks)
        if unjudged:
            failures.add_note(unjudged)
    except Exception as exc:
        print(f"lmms-spatial: the run's conditions were not recorded in its results ({failures.describe(exc)})",
              file=sys.stderr)  # fmt: skip


def _get_task_dict(original: Callable) -> Callable:
    def get_task_dict(*args, **kwargs):
        try:
            task_dict = original(*args, **kwargs)
        except KeyError as exc:  # a name lmms-eval has no task for (the Python API; the CLI checks names first)
            from lmms_spatial.plugin.names import unknown_task_error

            bound = _bind(original, args, kwargs)
            given = bound.arguments if bound is not None else {}
            error = unknown_task_error(exc, given.get("task_name_list"), given.get("task_manager"))
            if error is None:
                raise
            raise error from exc
        if run_state.in_call():  # inside simple_evaluate: the run's tasks, whole
            run = recognise(task_dict)
            if run is not None:
                _note_protocol(task_dict, run)
        return empty_tasks.leave_out(task_dict)  # a task of ours with no documents is left out by name

    return get_task_dict


def check_limit(limit: Any) -> None:
    """``--limit`` 0, or negative other than lmms-eval's -1 (every document), evaluates nothing: say so now."""
    if limit is None or isinstance(limit, bool):
        return
    try:
        value = float(limit)
    except (TypeError, ValueError):
        return
    if value > 0 or value == -1:
        return
    problem = "leaves no document to evaluate" if value == 0 else "is no number of documents (-1 means all of them)"
    raise failures.RunRefused(
        f"--limit {value:g} {problem}: give a number of documents per task (--limit 8), a fraction of each task "
        "(--limit 0.1), or no --limit for all of them"
    )


def _evaluate(original: Callable) -> Callable:
    def evaluate(*args, **kwargs):
        # the model being evaluated, with its API-image rule, is the run state's for the whole call: every
        # doc_to_visual / doc_to_messages (prefetch workers included) and process_results call reads it there
        set_model(kwargs.get("lm", args[0] if args else None))
        try:
            return _evaluate_with_model(original, args, kwargs)
        finally:
            set_model(None)

    return evaluate


def set_model(lm: Any) -> None:
    """The run state's :class:`~lmms_spatial.run_state.Evaluation`: ``lm`` and the rule that sizes its images."""
    from lmms_spatial.data import api_images

    api_images.set_model(lm)


def _evaluate_with_model(original: Callable, args: tuple, kwargs: dict):
    from lmms_spatial.prefetch import prefetching_model

    bound = _bind(original, args, kwargs)
    lm = bound.arguments.get("lm") if bound is not None else (args[0] if args else None)
    run = recognise(bound.arguments.get("task_dict")) if bound is not None else current()
    if run is None or bound is None:
        with prefetching_model(lm):
            return original(*args, **kwargs)
    try:
        return _evaluate_ours(original, bound, lm, run)
    except Exception as exc:
        if run.call is None:  # no wrapped simple_evaluate around this one to say it
            failures.run_failed(exc, run.ours)
        raise
    finally:
        if run.call is None:
            _end(run)


def _evaluate_ours(original: Callable, bound: inspect.BoundArguments, lm: Any, run: Run):
    from lmms_spatial.plugin import failed_requests, resume
    from lmms_spatial.plugin.isolation import set_aside_failed, tasks_needing_judge
    from lmms_spatial.prefetch import prefetching_model

    check_limit(bound.arguments.get("limit"))
    failed_requests.reset()
    task_dict = bound.arguments.get("task_dict") or {}
    judged = tasks_needing_judge(task_dict)
    if not run.predict_only:
        from lmms_spatial.judge.preflight import notice

        message = notice(judged)
        if message:
            print(message, file=sys.stderr, flush=True)
    from lmms_spatial.plugin import ranks

    ranks.start_group(lm, bound.arguments.get("distributed_executor_backend"))  # before the store: its run id
    cache = resume.keep_answers(bound, run)
    _keep_stages(lm, run)  # after the answer store is chosen: the stages are kept beside it
    _note_tasks(task_dict, run)
    _note_generation(task_dict, run)
    seed = getattr(lm, "seed", None)  # a model that draws from a seed of its own (random_choice: seed=, default 0)
    run.notes.model_seed = seed if isinstance(seed, int) and not isinstance(seed, bool) else None
    run.notes.own_seed_only = bool(getattr(type(lm), "own_seed_only", False))
    succeeded = False
    try:
        with prefetching_model(lm), _own_maps(lm, run) as drawing:
            results = original(*bound.args, **bound.kwargs)
        succeeded = True
        _note_served(bound.arguments.get("response_cache"), run)
    except KeyboardInterrupt:
        _count_kept(bound.arguments.get("response_cache"), run)
        raise
    finally:
        if cache is not None:
            resume.close_cache(cache, succeeded, bound, lm)
    set_aside_failed(results)
    from lmms_spatial.conditions import evaluated

    offset = bound.arguments.get("offset")
    documents = {task: evaluated(n or {}, offset) for task, n in ((results or {}).get("n-samples") or {}).items()}
    failed_line = failed_requests.closing_line(lm, documents)
    if failed_line:
        failures.add_line(failed_line)
    run.notes.maps = bool(drawing or _draws_maps(lm))
    if judged and not run.predict_only:
        from lmms_spatial.judge.preflight import refused_key_line

        line = refused_key_line(judged)
        if line:
            failures.add_line(line)
    return results


def _keep_stages(lm: Any, run: Run) -> None:
    """A stage-drawing model keeps its stage outputs beside the run's kept answers (resumed answers find them)."""
    keep = getattr(type(lm), "keep_stages_with_answers", None)
    if keep is not None and run.notes.answers:
        try:
            keep(lm, run.notes.answers)
        except Exception as exc:  # never worse than before: the maps are still drawn, only not kept
            print(f"lmms-spatial: stage outputs are not kept with the answers ({failures.describe(exc)})",
                  file=sys.stderr)  # fmt: skip


def _note_tasks(task_dict: dict, run: Run) -> None:
    """What the tasks declare about their judge, map and settings, read while the model is known."""
    try:
        from lmms_spatial.plugin import conditions

        run.notes.tasks = {**run.notes.tasks, **conditions.declared(task_dict)}
    except Exception as exc:
        print(f"lmms-spatial: the tasks' conditions were not read ({failures.describe(exc)})", file=sys.stderr)


def _note_generation(task_dict: dict, run: Run) -> None:
    """Each task's generation settings in effect: its own, updated by ``--gen_kwargs`` (as lmms-eval sends them)."""
    try:
        from lmms_spatial.plugin import conditions

        run.notes.generation = {**run.notes.generation, **conditions.generation_kwargs_of(task_dict)}
    except Exception as exc:
        print(f"lmms-spatial: the tasks' generation settings were not read ({failures.describe(exc)})", file=sys.stderr)


def _note_protocol(task_dict: Any, run: Run) -> None:
    """Each task's own generation settings (its YAML's), read before ``--gen_kwargs`` updates them in place."""
    try:
        from lmms_spatial.plugin import conditions

        run.notes.protocol = {**run.notes.protocol, **conditions.generation_kwargs_of(task_dict)}
    except Exception as exc:
        print(f"lmms-spatial: the tasks' own generation settings were not read ({failures.describe(exc)})",
              file=sys.stderr)  # fmt: skip


def _note_served(cache: Any, run: Run) -> None:
    """How many answers the store gave and which earlier runs gave them: one line, and the run's notes."""
    from lmms_spatial.plugin import ranks, resume

    try:
        summary = resume.served_summary(cache)
    except Exception as exc:  # never fails a finished run: the count is left unknown
        print(f"lmms-spatial: answers from the store not counted ({failures.describe(exc)})", file=sys.stderr)
        summary = None
    summary = ranks.gather_summaries(summary)  # every rank's count (a collective: every rank calls it)
    if summary is not None and ranks.rank() == 0:
        run.notes.store = summary
        line = resume.served_line(summary)
        if line:
            print(line, file=sys.stderr, flush=True)


def _draws_maps(lm: Any) -> bool:
    from lmms_spatial.plugin import conditions

    return conditions.draws_maps(lm)


def _own_maps(lm: Any, run: Run | None):
    """A chat model asked for with-map tasks draws its own maps (:mod:`lmms_spatial.plugin.maps`)."""
    if run is None:
        return contextlib.nullcontext(False)
    from lmms_spatial.plugin.maps import map_tasks, own_maps

    tasks = map_tasks(run.notes.tasks)
    return own_maps(lm, tasks, run.notes.model_id, run.notes.answers)


def _group_results(original: Callable) -> Callable:
    """Group aggregation that raises costs the group's scores, not the run's results."""

    def consolidate_group_results(results, versions, task_dict, *args, **kwargs):
        if not active():
            return original(results, versions, task_dict, *args, **kwargs)
        try:
            return original(results, versions, task_dict, *args, **kwargs)
        except Exception as exc:
            failures.add_line(f"lmms-spatial: group scores were not computed: {failures.describe(exc)}; every "
                              "task's own results and samples were written")  # fmt: skip
            return results, versions, False, {}

    return consolidate_group_results


def cli_arguments() -> Any:
    """The arguments of the lmms-eval command line being run (``cli_evaluate_single``'s ``args``), if this is one.

    lmms-eval checks ``--limit`` and resolves ``--tasks`` inside that function, before anything of ours is
    called with them; its frame is where they are. ``None`` outside the CLI.
    """
    frame = sys._getframe(1)
    marker = os.path.join("lmms_eval", "__main__.py")
    while frame is not None:
        code = frame.f_code
        if code.co_name == "cli_evaluate_single" and code.co_filename.endswith(marker):
            return frame.f_locals.get("args")
        frame = frame.f_back
    return None


def names_ours(tasks: Any) -> list[str]:
    """The entries of ``--tasks`` (a string, or a config file's list) that are ours by their name, or YAML files
    that run code of ours."""
    ours = failures.our_task_names()
    return [entry for entry in task_entries(tasks) if entry in ours or is_yaml_file_of_ours(entry)]


_LAUNCHERS = ("accelerate.commands.launch", "accelerate-launch")


def processes_lost(parent_argv: list[str], world_size: int) -> tuple[int, bool] | None:
    """``(N, cpu)`` for an ``accelerate launch --num_processes N`` that started fewer than N processes (this one
    among ``world_size``), else ``None``; ``cpu``: it was given ``--cpu``. accelerate 1.x sends ``--cpu`` to its
    single-process launcher whatever N, and so it does ``--num_processes N`` without ``--multi_gpu`` on a machine
    with no GPU (both measured, docs/running.md). ``parent_argv`` is the launching process's command line."""
    start = None
    for i, arg in enumerate(parent_argv):
        name = os.path.basename(arg)
        if name in _LAUNCHERS or arg in _LAUNCHERS:
            start = i + 1
        elif name == "accelerate" and parent_argv[i + 1 : i + 2] == ["launch"]:
            start = i + 2
        if start is not None:
            break
    if start is None:
        return None
    cpu, wanted = False, 1
    options = parent_argv[start:]
    for i, arg in enumerate(options):
        if arg in {"-m", "--module"} or arg.endswith(".py"):
            break  # the program launched: its own arguments follow
        key, _, value = arg.partition("=")
        if key in {"--cpu", "--use_cpu", "--use-cpu"}:
            cpu = True
        elif key in {"--num_processes", "--num-processes"}:
            value = value or (options[i + 1] if i + 1 < len(options) else "")
            wanted = int(value) if value.isdigit() else wanted
    return (wanted, cpu) if world_size < wanted else None


def _parent_argv() -> list[str]:
    try:
        raw = Path(f"/proc/{os.getppid()}/cmdline").read_bytes()
    except OSError:  # not Linux: nothing to check
        return []
    return [part.decode("utf-8", "replace") for part in raw.split(b"\0") if part]


def check_data_parallel() -> None:
    """``accelerate launch --num_processes N`` that started fewer processes: said before the model loads, not run."""
    found = processes_lost(_parent_argv(), int(os.environ.get("WORLD_SIZE", "1") or 1))
    if found is None:
        return
    wanted, cpu = found
    if cpu:
        raise failures.RunRefused(
            f"accelerate launch --cpu --num_processes {wanted} starts one process, not {wanted} (accelerate sends "
            "--cpu to its single-process launcher): drop --num_processes to run on CPU in one process, or run "
            f"accelerate launch --multi_gpu --num_processes {wanted} without --cpu (GPUs, or CPU processes over gloo "
            "where there is none)"
        )
    raise failures.RunRefused(
        f"accelerate launch --num_processes {wanted} started {os.environ.get('WORLD_SIZE', '1') or 1} process(es), "
        f"not {wanted} (without --multi_gpu, accelerate starts one where it finds no GPU): add --multi_gpu (data "
        f"parallel over {wanted} GPUs, or {wanted} CPU processes over gloo), or drop --num_processes"
    )


SEED_VALUES = 4  # lmms-eval's --seed: python's random, numpy, torch, few-shot sampling


def check_seed(argv: list[str]) -> None:
    """``--seed`` as lmms-eval takes it, one value for all four seeds or four values: lmms-eval accepts three
    (``--seed 1,2,3``) and fills the fourth from its defaults with a warning only."""
    for i, arg in enumerate(argv):
        key, equals, value = arg.partition("=")
        if key != "--seed":
            continue
        value = value if equals else (argv[i + 1] if i + 1 < len(argv) else "")
        count = len(value.split(","))
        if count not in (1, SEED_VALUES):
            raise failures.RunRefused(
                f"--seed {value} gives {count} values: give one integer for all four seeds (--seed 42) or four, for "
                "python's random, numpy, torch and few-shot sampling (--seed 0,1234,1234,1234; None leaves one unset)"
            )


def refuse_cli_mistakes() -> None:
    """At the start of an lmms-eval command line that names tasks of ours: a ``--limit`` that evaluates nothing
    ends it before the model loads. (lmms-eval refuses a negative one itself, but with exit status 0; 0 it runs.)"""
    args = cli_arguments()
    tasks = getattr(args, "tasks", None)
    if args is None or not isinstance(tasks, str) or not names_ours(tasks):
        return
    refuse_broken_environment()
    try:
        check_data_parallel()
        check_seed(sys.argv[1:])
    except failures.RunRefused as exc:
        failures.add_line(f"lmms-spatial: {exc}")
        _exit_if_last_line_explains(exc)
        raise
    try:
        check_limit(getattr(args, "limit", None))
    except failures.RunRefused as exc:
        failures.add_line(f"lmms-spatial: {exc}")
        _exit_if_last_line_explains(exc)  # a negative one too: lmms-eval's own refusal is a traceback
        if getattr(args, "limit", None) == 0:  # lmms-eval would go on: load the model, build every task
            raise


def refuse_broken_environment() -> None:
    """An installed package known to stop lmms-eval before its first document (filelock 4 under lmms-eval 0.7.3:
    :func:`lmms_spatial.environment.problems`) ends the command line now, with one line per package naming the
    version found and the command that fixes it, instead of lmms-eval's traceback after the model has loaded."""
    from lmms_spatial import environment

    found = environment.problems()
    if not found:
        return
    for problem in found:
        failures.add_line(problem.line())
    raise SystemExit(1)  # not an Exception: lmms-eval's handler would print a traceback over the line


def check_environment(call: Call) -> None:
    """The same check for ``simple_evaluate`` called from Python with a task of ours named: a
    :class:`~lmms_spatial.plugin.failures.RunRefused` naming the fix, before lmms-eval fails inside."""
    if not requested_names(call.arguments.get("tasks")) & failures.our_task_names():
        return
    from lmms_spatial import environment

    found = environment.problems()
    if found:
        raise failures.RunRefused("; ".join(p.line().removeprefix("lmms-spatial: ") for p in found))


API_IMAGES_LOST = (
    "our run handling is off, and ODI-Bench cannot tell an API model from a local one and sends panoramas at "
    "full resolution; set LMMS_SPATIAL_ODI_API_IMAGES=<provider> (openai, gemini, anthropic, qwen-vl) for an API "
    "model"
)


def documents_failed(key: str, exc: BaseException) -> None:
    """A task of ``key`` failed while its documents were loaded (:func:`lmms_spatial.run_state.documents_failed`):
    with the hook come late and no wrapped ``simple_evaluate`` around the call to name the failure, say it here."""
    import lmms_spatial_startup

    if lmms_spatial_startup.late_installed() and not in_call():
        failures.add_line(f"lmms-spatial: a task of {key} failed: {failures.describe(exc)}")


def patch_evaluator(module) -> None:
    """The one wrapper of each of ``simple_evaluate``, ``get_task_dict``, ``evaluate`` and
    ``consolidate_group_results`` (see the module doc; docs/plugin.md lists what each depends on)."""
    failures.register_exit()  # before lmms-eval registers its own exit handlers: ours runs after them
    run_state.on_documents_failed(documents_failed)
    _wrap(module, "simple_evaluate", _simple_evaluate)
    _wrap(module, "get_task_dict", _get_task_dict)
    _wrap(module, "evaluate", _evaluate, API_IMAGES_LOST)
    _wrap(module, "consolidate_group_results", _group_results)
    module._lmms_spatial_patched = True
