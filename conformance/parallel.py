"""Invariants judged in parallel worker processes (``cascade-conformance run --jobs N``).

Each worker loads the target itself, from the same command-line words, and judges one invariant at a time
exactly as a serial run does (:func:`conformance.judging.judge`: the same derandomized examples, the same
example database, the same known failures); the verdicts come back in the catalogue's order, so the output,
the reports and the case files are those of a serial run. Workers ignore SIGINT (a terminal's Ctrl-C reaches
the whole group): the command decides, and ends every worker with SIGTERM, on which a worker closes its target
(reaping what it launched) before it exits.
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import os
import queue
import signal
from collections.abc import Generator
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

from conformance.errors import GatewayGone, TargetError
from conformance.example_db import ExampleDatabase
from conformance.judging import judge
from conformance.known_failures import KnownFailure, apply_known_failure
from conformance.properties import Case, properties
from conformance.result_json import result_from_json, result_to_json
from conformance.runner import Result, RunOptions, hypothesis_storage
from conformance.targets import HttpOptions, Target, load_target


@dataclass(frozen=True)
class WorkerSetup:
    """What a worker needs to judge as the command would: the target as the command line names it, the run's
    options, the known failures (with their pinned cases), the example database and Hypothesis's storage."""

    target_spec: str | None
    call_timeout_s: float | None
    http: HttpOptions | None
    options: RunOptions
    known: dict[str, KnownFailure]
    pinned: dict[str, Case]
    examples: ExampleDatabase
    cache_dir: Path
    log_level: str


def judged_in_workers(setup: WorkerSetup, invariants: list[str], jobs: int) -> Generator[Result, None, None]:
    """The verdict on each of ``invariants``, in that order, judged by ``jobs`` workers (known failures read).
    Leaving the iteration early (an interrupt, an error) ends every worker, and each closes its target."""
    context = multiprocessing.get_context("spawn")
    tasks: Any = context.Queue()
    answers: Any = context.Queue()
    for invariant in invariants:
        tasks.put(invariant)
    workers = [
        context.Process(target=_work, args=(setup, tasks, answers), daemon=True)
        for _ in range(min(jobs, len(invariants)))
    ]
    for worker in workers:
        tasks.put(None)  # one "no more" per worker
        worker.start()
    done: dict[str, Result] = {}
    try:
        for invariant in invariants:
            while invariant not in done:
                done.update(_answer(answers, workers))
            yield done.pop(invariant)
    finally:
        _end(workers)


def _answer(answers: Any, workers: list[Any]) -> dict[str, Result]:
    """The next verdict a worker sends; a worker that could not judge raises its error here."""
    while True:
        try:
            invariant, kind, data = answers.get(timeout=_POLL_S)
        except queue.Empty:
            if not any(worker.is_alive() for worker in workers):
                codes = ", ".join(str(worker.exitcode) for worker in workers)
                raise TargetError(f"every worker ended before the run did (exit codes {codes})") from None
            continue
        if kind == "gone":
            raise GatewayGone(data)
        if kind == "error":
            raise TargetError(f"a worker judging {invariant} failed: {data}")
        return {invariant: result_from_json(data)}


def _end(workers: list[Any]) -> None:
    """Every worker ended: SIGTERM first (a worker then closes its target), SIGKILL for one that hangs."""
    for worker in workers:
        if worker.is_alive():
            worker.terminate()
    for worker in workers:
        worker.join(_END_WAIT_S)
        if worker.is_alive():
            worker.kill()
            worker.join()


_POLL_S = 0.5
_END_WAIT_S = 30.0


# --------------------------------------------------------------------------- in the worker


def _work(setup: WorkerSetup, tasks: Any, answers: Any) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the command decides; it ends the workers with SIGTERM
    signal.signal(signal.SIGTERM, _exit_on_term)
    os.environ.setdefault("GRPC_VERBOSITY", "NONE")
    for name in ("engine", "fakels"):
        logging.getLogger(name).setLevel(setup.log_level)
    target = _OPEN["target"] = load_target(setup.target_spec, call_timeout_s=setup.call_timeout_s, http=setup.http)
    try:
        while (invariant := tasks.get()) is not None:
            answers.put(_judged(setup, target, invariant))
    finally:
        _OPEN.clear()
        target.close()


_OPEN: dict[str, Target] = {}  # the worker's target while it is open


def _exit_on_term(signum: int, frame: FrameType | None) -> None:
    """Close the target (reaping what it launched) and exit at once: an exception raised here could be
    caught on its way out of a property, and the worker would go on."""
    target = _OPEN.pop("target", None)
    if target is not None:
        with contextlib.suppress(Exception):
            target.close()
    os._exit(128 + signum)


def _judged(setup: WorkerSetup, target: Target, invariant: str) -> tuple[str, str, Any]:
    try:
        with hypothesis_storage(setup.cache_dir):
            result = judge(
                properties()[invariant],
                target,
                setup.options,
                pinned=setup.pinned.get(invariant),
                examples=setup.examples,
            )
    except GatewayGone as gone:
        return invariant, "gone", str(gone)
    except Exception as exc:  # the command reports it; the worker goes on to the next
        return invariant, "error", f"{type(exc).__name__}: {exc}"
    return invariant, "result", result_to_json(apply_known_failure(result, setup.known.get(invariant)))
