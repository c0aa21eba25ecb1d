"""The commands of ``cascade-conformance`` (:mod:`conformance.cli` parses and dispatches): ``run`` the
catalogue against a target, ``replay`` one saved case, ``save-case`` out of a report."""

from __future__ import annotations

import argparse
import json
import logging
import shlex
import shutil
import sys
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from conformance.cases import read_case
from conformance.catalogue import CATALOGUE
from conformance.errors import GatewayGone
from conformance.example_db import ExampleDatabase
from conformance.interrupts import InterruptWatch
from conformance.jobs import jobs_for
from conformance.judging import judge
from conformance.known_failures import (
    KnownFailure,
    apply_known_failure,
    load_known_failures,
    pinned_case,
    pinned_cases,
)
from conformance.options import given_words, http_values
from conformance.parallel import WorkerSetup, judged_in_workers
from conformance.program import EXIT_INTERRUPTED, EXIT_OK, EXIT_UNEXPECTED, kit_program
from conformance.properties import Property, properties
from conformance.report import (
    RunInfo,
    counts_text,
    detail_line,
    kit_version,
    now_utc,
    replay_for,
    summary_line,
    target_callers,
    waiting_line,
)
from conformance.result_json import result_from_json, result_to_json
from conformance.run_reports import (
    RunRecord,
    WrittenReports,
    clear_report,
    run_exit_code,
    write_reports,
)
from conformance.runner import Result, RunOptions, Status, default_shrink_budget, replay_case, select
from conformance.shards import read_shards, write_shard_file
from conformance.targets import HttpOptions, Target, load_target


def _load_target(args: argparse.Namespace) -> Target:
    return load_target(args.target, call_timeout_s=args.call_timeout, http=_http_options(args))


def _http_options(args: argparse.Namespace) -> HttpOptions | None:
    # Loaded here, as the HttpTarget it builds: the HTTP target imports fakels and with it grpc, which reads
    # GRPC_VERBOSITY once, when it is imported, so only after main() has set it.
    from conformance.targets import http_options

    return http_options(args.target, **http_values(lambda flag: getattr(args, flag.dest)))


def _target_words(args: argparse.Namespace) -> tuple[str, ...]:
    """The command-line words that reach the target: ``--target`` and its options (none: the reference)."""
    if args.target is None:
        return ()
    return ("--target", args.target, *given_words("cli", lambda flag: getattr(args, flag.dest)))


def not_yet_implemented_line() -> str:
    registered = properties()
    missing = [inv for inv_id, inv in CATALOGUE.items() if inv_id not in registered]
    if not missing:
        return f"the kit has a property for every one of the {len(CATALOGUE)} catalogue invariants"
    named: dict[str, None] = {}  # a family none of whose invariants has a property, else the invariant
    for inv in missing:
        whole = all(other.id not in registered for other in CATALOGUE.values() if other.family == inv.family)
        named[inv.family if whole else inv.id] = None
    return (
        f"{len(missing)} of {len(CATALOGUE)} catalogue invariants are not yet implemented ({', '.join(named)}): "
        "`cascade-conformance list` shows them"
    )


def run(args: argparse.Namespace, watch: InterruptWatch) -> int:
    loggers = [logging.getLogger(name) for name in ("engine", "fakels")]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(args.log_level)
    try:
        return _run_with_logging_set(args, watch)
    finally:  # main() may run in a host process (tests, an embedding tool): leave its logging as found
        for logger, level in zip(loggers, levels, strict=True):
            logger.setLevel(level)


def _run_with_logging_set(args: argparse.Namespace, watch: InterruptWatch) -> int:
    chosen = select(args.only.split(",") if args.only is not None else None)
    args.selection = [prop.invariant.id for prop in chosen]
    if args.shard is not None:
        share = set(args.shard.share(args.selection))
        chosen = [prop for prop in chosen if prop.invariant.id in share]
    known = load_known_failures(args.known_failures) if args.known_failures else {}
    info = RunInfo(
        kit_version(),
        args.profile,
        args.seed,
        args.shrink,
        args.max_examples,
        now_utc(),
        command=args.command_line,
    )
    watch.stage = "while the target started"
    clear_report(args.report)
    try:
        target = _load_target(args)
    except KeyboardInterrupt:  # what the start had launched is reaped by now; nothing ran
        never_started = f"interrupted while the target started: 0 of {len(chosen)} finished"
        with watch.shield():
            return _report(args, None, [], replace(info, interrupted=never_started), False, watch)
    examples = ExampleDatabase(args.example_db or args.report / "examples", _target_words(args))
    budget = args.shrink_budget if args.shrink_budget is not None else default_shrink_budget(target.kind)
    options = RunOptions(
        profile=args.profile,
        seed=args.seed,
        database=examples.hypothesis_folder,
        max_examples=args.max_examples,
        shrink=args.shrink,
        shrink_budget_s=budget,
    )
    info = replace(info, shrink_budget_s=budget)
    jobs = min(jobs_for(args.jobs, target.kind), len(chosen))
    setup = _worker_setup(args, options, known, examples) if jobs > 1 else None
    results, stopped, gone = _run_chosen(chosen, target, options, known, examples, watch, (setup, jobs))
    with watch.shield():  # a signal now must not cut short the report of what finished
        return _report(args, target, results, replace(info, interrupted=stopped), gone, watch)


def _run_chosen(
    chosen: list[Property],
    target: Target,
    options: RunOptions,
    known: dict[str, KnownFailure],
    examples: ExampleDatabase,
    watch: InterruptWatch,
    workers: tuple[WorkerSetup | None, int] = (None, 1),
) -> tuple[list[Result], str | None, bool]:
    """The verdicts of the invariants that finished, and ``interrupted during SO-2: 1 of 7 finished``
    when a stop signal ended the run (the verdict in progress then is dropped: the signal may have
    reached the target too), or what became of the launched gateway when it ended during the run
    (then True: the run exits 2). The target is closed, and what it launched reaped, either way."""
    results: list[Result] = []
    current: Property | None = None
    stopped = None
    gone = False
    setup, jobs = workers
    in_workers = judged_in_workers(setup, [p.invariant.id for p in chosen], jobs) if setup is not None else None
    try:
        print(f"target: {target.description}", file=sys.stderr)
        callers = target_callers(target)
        if callers:
            print(f"callers: {callers}", file=sys.stderr)
        for index, prop in enumerate(chosen, start=1):
            current = prop
            watch.stage = f"during {prop.invariant.id}"
            line = _ProgressLine(f"[{index}/{len(chosen)}] {prop.invariant.id} ...", watch)
            try:
                if in_workers is not None:
                    result = next(in_workers)  # in the catalogue's order, as a serial run gives them
                else:
                    result = _run_one(prop, target, options, known.get(prop.invariant.id), examples, line.example)
                watch.check()
            except BaseException:
                print(file=sys.stderr, flush=True)  # what stops the run gets a line of its own
                raise
            results.append(result)
            current = None
            watch.stage = "between invariants"
            waited = f", {result.waited_s:.1f}s waiting for the gateway" if result.waits else ""
            line.end(f"{result.line} ({result.seconds:.1f}s{waited})")
    except KeyboardInterrupt:
        where = f"during {current.invariant.id}" if current is not None else "between invariants"
        stopped = f"interrupted {where}: {len(results)} of {len(chosen)} finished"
    except GatewayGone as ended:
        where = f"during {current.invariant.id}" if current is not None else "between invariants"
        stopped = f"stopped {where}: {ended}; {len(results)} of {len(chosen)} finished, none judged after it ended"
        gone = True
    finally:
        watch.stage = "while the target was closed"
        with watch.shield():
            if in_workers is not None:
                in_workers.close()  # every worker ends, its target closed
            target.close()
    return results, stopped, gone


def _worker_setup(
    args: argparse.Namespace,
    options: RunOptions,
    known: dict[str, KnownFailure],
    examples: ExampleDatabase,
) -> WorkerSetup:
    return WorkerSetup(
        target_spec=args.target,
        call_timeout_s=args.call_timeout,
        http=_http_options(args),
        options=options,
        known=known,
        pinned=pinned_cases(known),
        examples=examples,
        cache_dir=args.cache_dir or args.report / "hypothesis",
        log_level=args.log_level,
    )


def _report(
    args: argparse.Namespace,
    target: Target | None,
    results: list[Result],
    info: RunInfo,
    gone: bool,
    watch: InterruptWatch,
) -> int:
    """The reports of the run, printed and written; ``target`` None: it never started. A signal that arrived
    once every invariant had finished (while the target was closed, or while this writes) is said in the
    report too: it is written again when the signal came while it was written."""
    watch.stage = "while the report was written"
    written, record = _write(args, target, results, info, gone, watch)
    if watch.received and record.info.interrupted is None:
        written, record = _write(args, target, results, info, gone, watch)
    _print_verdicts(results, written, record)
    if record.info.interrupted is not None:
        print(f"\n{record.info.interrupted}", file=sys.stderr)
        return record.exit_code
    if results and not any(r.judged for r in results):
        print(
            f"\nnothing was judged: all {len(results)} invariant(s) were not checkable on this target (the reasons "
            "are above); a run that judges nothing is not a pass"
        )
    return record.exit_code


def _write(
    args: argparse.Namespace,
    target: Target | None,
    results: list[Result],
    info: RunInfo,
    gone: bool,
    watch: InterruptWatch,
) -> tuple[WrittenReports, RunRecord]:
    if info.interrupted is None and watch.received:
        info = replace(info, interrupted=f"interrupted {watch.stage_at_signal}: every invariant had finished")
    stopped = info.interrupted is not None
    code = run_exit_code(results, stopped=stopped, gone=gone, interrupt_code=watch.exit_code)
    record = RunRecord(
        results,
        target.description if target is not None else (args.target or "reference"),
        _target_words(args),
        info,
        code,
        callers=target_callers(target) if target is not None else None,
        gateway_output=_gateway_output(target) if target is not None else None,
        program=kit_program(),
    )
    written = write_reports(record, args.report)
    if getattr(args, "shard", None) is not None:
        write_shard_file(
            args.report, args.shard, args.selection, _shard_run(record), [result_to_json(r) for r in results]
        )
    return written, record


def _shard_run(record: RunRecord) -> dict[str, Any]:
    """How a shard's run was made, as ``merge`` reads it back (:func:`merge`)."""
    info = record.info
    return {
        "target": record.target,
        "target_words": list(record.target_words),
        "callers": record.callers,
        "kit_version": info.version,
        "profile": info.profile,
        "seed": info.seed,
        "shrink": info.shrink,
        "max_examples": info.max_examples,
        "shrink_budget_s": info.shrink_budget_s,
        "started": info.started,
        "command": info.command,
        "interrupted": info.interrupted,
    }


def merge(args: argparse.Namespace) -> int:
    """The shards' report folders joined into the report one machine would have written."""
    shards = read_shards(args.shards)
    first = shards[0].run
    results = [result_from_json(verdict) for shard in shards for verdict in shard.verdicts]
    order = {inv_id: index for index, inv_id in enumerate(CATALOGUE)}
    results.sort(key=lambda result: order[result.invariant.id])
    stopped = [f"shard {s.shard}: {s.run['interrupted']}" for s in shards if s.run.get("interrupted")]
    info = RunInfo(
        first["kit_version"],
        first["profile"],
        first["seed"],
        first["shrink"],
        first["max_examples"],
        min(s.run["started"] for s in shards),
        interrupted="; ".join(stopped) or None,
        shrink_budget_s=first["shrink_budget_s"],
        command=args.command_line,
    )
    code = run_exit_code(results, stopped=bool(stopped), gone=False, interrupt_code=EXIT_INTERRUPTED)
    record = RunRecord(
        results, first["target"], tuple(first["target_words"]), info, code, callers=first["callers"],
        program=kit_program(),
    )  # fmt: skip
    clear_report(args.report)
    written = write_reports(record, args.report)
    print(f"merged {len(shards)} shards: {', '.join(str(s.folder) for s in shards)}")
    _print_verdicts(results, written, record)
    return code


def _print_verdicts(results: list[Result], written: WrittenReports, record: RunRecord) -> None:
    """Each verdict's line, the counts, the waits, the reports, and every unexpected verdict's failures with
    the commands that replay them."""
    for result in results:
        print(summary_line(result))
        detail = detail_line(result)
        if detail is not None:
            print(detail)
    print(counts_text(results))
    waiting = waiting_line(results)
    if waiting is not None:
        print(waiting)
    print(f"reports: {' '.join(str(path) for path in written.paths())}")
    for result in (r for r in results if not r.status.ok):
        messages = [f.message for f in result.failures] or [result.message]
        for number, message in enumerate(messages, start=1):
            counter = f" [{number}/{len(messages)}]" if len(messages) > 1 else ""
            print(f"\n{result.invariant.id} {result.status.value}{counter}: {message}")
        for path in written.cases.get(result.invariant.id, []):
            print(f"  replay: {record.replay(path)}")


def _gateway_output(target: Target) -> str | None:
    """What a launched gateway wrote to stdout and stderr, kept beside the report."""
    from conformance.targets import HttpTarget

    return target.launch_output() if isinstance(target, HttpTarget) else None


class _ProgressLine:
    """One invariant's line on stderr: ``[2/7] SO-2 ...``, then its verdict. On a terminal it also
    counts the examples as they run (``[2/7] SO-2 ... example 14``), rewritten in place; into a pipe
    or a file nothing more is written than the line and its verdict."""

    def __init__(self, head: str, watch: InterruptWatch) -> None:
        self._head, self._watch = head, watch
        self._live = sys.stderr.isatty()
        self._examples = 0
        print(head, end="", file=sys.stderr, flush=True)

    def example(self) -> None:
        """Called before each example: stops the run after a signal, and counts on a terminal."""
        self._watch.check()
        self._examples += 1
        if self._live:
            print(f"\r{self._head} example {self._examples}\x1b[K", end="", file=sys.stderr, flush=True)

    def end(self, verdict: str) -> None:
        start = f"\r{self._head}" if self._live and self._examples else ""
        tail = "\x1b[K" if start else ""
        print(f"{start} {verdict}{tail}", file=sys.stderr, flush=True)


def _run_one(
    prop: Property,
    target: Target,
    options: RunOptions,
    known: KnownFailure | None,
    examples: ExampleDatabase,
    checkpoint: Callable[[], None],
) -> Result:
    result = judge(prop, target, options, pinned=pinned_case(known), examples=examples, checkpoint=checkpoint)
    return apply_known_failure(result, known)


def replay(args: argparse.Namespace) -> int:
    saved = read_case(args.case)
    prop = properties().get(saved.invariant)
    if prop is None:
        raise KeyError(f"{saved.invariant} has no property in this kit")
    target = _load_target(args)
    if args.target is None and saved.found_on and saved.found_on != target.description:
        if saved.target_args:
            how = f"add {shlex.join(saved.target_args)} to replay it there"
        else:  # a case file written before target_args were kept
            how = f"add --target {shlex.quote(saved.found_on)} (and its options) to replay it there"
        print(f"replaying on the reference; this case was found on {saved.found_on}: {how}")
    info = RunInfo(
        kit_version(), "replay", None, False, 1, now_utc(), command=args.command_line, replayed=str(args.case)
    )
    try:
        result = replay_case(prop, target, saved.case)
    finally:
        target.close()
    print(summary_line(result))
    if result.status in (Status.FAIL, Status.ERROR, Status.NOT_CHECKABLE, Status.PARTIAL):
        print(result.message)
        if result.evidence:
            print(json.dumps(result.evidence, indent=2, ensure_ascii=False, default=str)[:20000])
    code = EXIT_UNEXPECTED if not result.status.ok else EXIT_OK  # a case the target cannot take is no failure
    clear_report(args.report)
    record = RunRecord([result], target.description, _target_words(args), info, code, program=kit_program())
    written = write_reports(record, args.report)
    print(f"reports: {' '.join(str(path) for path in written.paths())}")
    return code


def save_case(args: argparse.Namespace) -> int:
    source = args.report / "cases" / f"{args.invariant.lower()}.json"
    if not source.exists():
        if not (args.report / "report.md").is_file() and not (args.report / "cases").is_dir():
            raise ValueError(
                f"no report in {args.report}: run `cascade-conformance run` first, or name its folder with --report"
            )
        raise ValueError(
            f"{args.invariant.upper()} has no case in {args.report}: it did not fail in that run (only failures are "
            "saved as cases; `ls` the folder's cases/ to see which are)"
        )
    saved = read_case(source)  # refuses anything that is not a case file
    args.out.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, args.out)
    print(f"saved {args.out} (replay: {replay_for(args.out, saved.target_args, kit_program())})")
    return EXIT_OK
