"""Ordered parallel execution for ``cascade-mutations verify``: tasks run on a fixed set of
disposable copies (one worker thread per copy, each copy used by one task at a time), and their
results are handed back strictly in task order, so what is printed and recorded is the same
whatever order the runs finish in.

A task may depend on an earlier one (a mutation on its spec's baseline): it starts only after that
one succeeded. A result that ends the run (an exception, or one ``ends_run`` says is final) makes
every later task unnecessary: those not started never start, those running are cancelled (their
child processes killed), and the earlier ones still run to completion, exactly as a serial run
would have reached the same stopping point.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Generic, TypeVar

R = TypeVar("R")


class Cancelled(Exception):
    """The task's result is no longer needed: the run ends before it."""


@dataclass(frozen=True)
class Task(Generic[R]):
    run: Callable[[Path, threading.Event], R]
    """Called with the copy to use and an event set when the result is no longer needed."""
    after: int | None = None
    """The index of an earlier task that must have succeeded before this one starts."""


@dataclass(frozen=True)
class Done(Generic[R]):
    index: int
    result: R | None
    error: BaseException | None
    started: float
    ended: float


def run_ordered(
    tasks: Sequence[Task[R]],
    copies: Sequence[Path],
    consume: Callable[[Done[R]], None],
    ends_run: Callable[[R], bool],
) -> None:
    """Run ``tasks`` on ``copies`` (lowest ready index first) and call ``consume`` with each result
    in index order, up to the first that ends the run; an exception is re-raised in its place."""
    cond = threading.Condition()
    done: dict[int, Done[R]] = {}
    started: set[int] = set()
    running: dict[int, threading.Event] = {}
    limit = [len(tasks) - 1]  # tasks after this index are not needed
    aborted = threading.Event()

    def stop_after(index: int) -> None:
        limit[0] = min(limit[0], index)
        for i, cancel in running.items():
            if i > limit[0]:
                cancel.set()

    def next_task() -> int | None:
        """Under ``cond``: the task to start next, or None when no task is left for a worker."""
        while not aborted.is_set():
            pending = [i for i in range(limit[0] + 1) if i not in started]
            if not pending:
                return None
            for i in pending:
                after = tasks[i].after
                if after is None or (after in done and done[after].error is None):
                    started.add(i)
                    running[i] = threading.Event()
                    return i
            cond.wait()
        return None

    def worker(copy: Path) -> None:
        while True:
            with cond:
                index = next_task()
                if index is None:
                    return
                cancel = running[index]
            begin = time.monotonic()
            result: R | None = None
            error: BaseException | None = None
            try:
                result = tasks[index].run(copy, cancel)
            except Cancelled:
                pass
            except BaseException as exc:  # handed to the main thread, in order
                error = exc
            with cond:
                del running[index]
                if not cancel.is_set():
                    done[index] = Done(index, result, error, begin, time.monotonic())
                    if error is not None or (result is not None and ends_run(result)):
                        stop_after(index)
                cond.notify_all()

    threads = [threading.Thread(target=worker, args=(c,), name=f"mutations-{n}") for n, c in enumerate(copies)]
    for thread in threads:
        thread.start()
    try:
        index = 0
        while index <= limit[0]:
            with cond:
                while index not in done:
                    if not any(t.is_alive() for t in threads):
                        raise RuntimeError(f"every worker stopped before task {index} finished")
                    cond.wait(timeout=1.0)
                item = done[index]
            if item.error is not None:
                raise item.error
            assert item.result is not None
            consume(item)
            if ends_run(item.result):
                break
            index += 1
    finally:
        with cond:
            aborted.set()
            stop_after(-1)
            cond.notify_all()
        for thread in threads:
            thread.join()


def run_child(
    command: list[str], cwd: Path, env: dict[str, str], timeout_s: float, cancel: threading.Event | None, log: Path
) -> int | None:
    """Run ``command`` in its own process group, output (both streams) to ``log``; its exit status,
    or None when it exceeded ``timeout_s``. When ``cancel`` is set the group is killed and
    :class:`Cancelled` raised."""
    deadline = time.monotonic() + timeout_s
    with log.open("wb") as out:
        child = subprocess.Popen(
            command,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            while True:
                try:
                    return child.wait(timeout=max(0.0, min(0.1, deadline - time.monotonic())))
                except subprocess.TimeoutExpired:
                    pass
                if cancel is not None and cancel.is_set():
                    raise Cancelled
                if time.monotonic() >= deadline:
                    return None
        finally:
            if child.returncode is None:
                _kill_group(child)


def _kill_group(child: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(child.pid, signal.SIGKILL)
    child.wait()
