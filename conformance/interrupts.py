"""SIGINT and SIGTERM stop a run the same way: an interrupt in the main thread, so every ``finally``
on the way out runs and whatever the kit launched (a gateway, its LS, an adapter, pytest children)
is reaped. Without this, SIGTERM (what ``timeout`` and CI runners send) ends the process at once
and leaves the launched processes running, orphaned.

The first signal raises :class:`Interrupted` (a :class:`KeyboardInterrupt`, so Hypothesis and
pytest treat it as the interrupt it is); later ones are remembered but do not raise, so the
clean-up they would cut short finishes. A signal can land where an exception cannot propagate (a
garbage-collector callback): long loops call :meth:`InterruptWatch.check` between steps, so the
run still stops, one step later; loops in parts that are not handed the watch (a launched gateway's
wait until it answers) call :func:`raise_if_stopping`. Used by the ``cascade-conformance`` command,
the pytest plugin and ``cascade-mutations``.
"""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from types import FrameType
from typing import Any

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Interrupted(KeyboardInterrupt):
    """The run was stopped by ``signum`` (SIGINT or SIGTERM)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


@dataclass
class InterruptWatch:
    """Which stop signal arrived first, if any, and at which stage of the run (``stage``, as the command
    names it: ``while the target started``, ``during SO-2``, ``while the report was written``)."""

    signum: int | None = None
    shielded: bool = False
    stage: str = ""
    stage_at_signal: str | None = None

    @property
    def received(self) -> bool:
        return self.signum is not None

    @property
    def exit_code(self) -> int:
        """What a shell reports for a process that signal ended: 130 for SIGINT, 143 for SIGTERM."""
        return 128 + (self.signum if self.signum is not None else signal.SIGINT)

    def check(self) -> None:
        """Raise :class:`Interrupted` when a stop signal has arrived: work that finished after it (a
        verdict on a target the signal may have reached too) is not to be trusted."""
        if self.signum is not None:
            raise Interrupted(self.signum)

    @contextmanager
    def shield(self) -> Iterator[None]:
        """A stop signal arriving in the block is remembered but does not raise: clean-up (reaping what
        was launched) and the report of what finished are not cut short."""
        before, self.shielded = self.shielded, True
        try:
            yield
        finally:
            self.shielded = before


# The watches of the stop_signals_interrupt blocks now running, innermost last.
_ACTIVE: list[InterruptWatch] = []


def raise_if_stopping() -> None:
    """In the main thread, raise :class:`Interrupted` when a stop signal arrived in the innermost running
    :func:`stop_signals_interrupt` block outside a shield: for waiting loops that are not handed its
    watch, so a signal that landed where it could not raise still stops them."""
    if _ACTIVE and not _ACTIVE[-1].shielded and threading.current_thread() is threading.main_thread():
        _ACTIVE[-1].check()


def exit_code_of(exc: KeyboardInterrupt) -> int:
    """128 + the signal behind ``exc`` (a plain KeyboardInterrupt: SIGINT's 130)."""
    return 128 + (exc.signum if isinstance(exc, Interrupted) else signal.SIGINT)


def signal_name(exc: KeyboardInterrupt) -> str:
    """``SIGTERM`` for an :class:`Interrupted` by it; ``SIGINT`` for a plain KeyboardInterrupt."""
    return signal.Signals(exc.signum).name if isinstance(exc, Interrupted) else "SIGINT"


@contextmanager
def stop_signals_interrupt(on_repeat: Callable[[int], None] | None = None) -> Iterator[InterruptWatch]:
    """While the block runs, SIGINT and SIGTERM raise :class:`Interrupted` in the main thread (the first
    one; ``on_repeat`` is told of later ones). The previous handlers come back afterwards. Outside the
    main thread (where Python cannot set handlers) the block runs unchanged."""
    watch = InterruptWatch()
    if threading.current_thread() is not threading.main_thread():
        yield watch
        return

    def handler(signum: int, frame: FrameType | None) -> None:
        if watch.signum is None:
            watch.signum, watch.stage_at_signal = signum, watch.stage
            if not watch.shielded:
                raise Interrupted(signum)
            return
        if on_repeat is not None:
            on_repeat(signum)

    def unraisable(info: Any) -> None:
        # A signal that lands in a garbage-collector callback or a __del__ raises where Python can only
        # print the exception and carry on: the interrupt is then not lost, only late (watch.check()).
        if not isinstance(info.exc_value, Interrupted):
            previous_hook(info)

    previous: dict[int, Any] = {sig: signal.signal(sig, handler) for sig in STOP_SIGNALS}
    previous_hook, sys.unraisablehook = sys.unraisablehook, unraisable
    _ACTIVE.append(watch)
    try:
        yield watch
    finally:
        _ACTIVE.remove(watch)
        sys.unraisablehook = previous_hook
        for sig, old in previous.items():
            signal.signal(sig, old)


def say_still_stopping(signum: int) -> None:
    """``on_repeat`` for a command: a second Ctrl-C gets an answer instead of a second traceback."""
    name = signal.Signals(signum).name
    print(f"({name} again: still stopping, ending what the kit launched)", file=sys.stderr, flush=True)
