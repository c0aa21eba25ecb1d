"""Targets that stop at a known point, for the interrupt tests (``python:tests.support.stalling_targets:...``).

Each writes its process id to the file that ``CASCADE_TEST_STALL_MARKER`` names when it reaches its stall,
then waits: the test waits for that file, then sends the signal. ``stalls_on_serve`` decodes as the
reference does (WIRE-1 and WIRE-2 pass on it) and stalls in its first ``ls.serve`` until the process is
interrupted; the others stall while Hypothesis shrinks a failure, or while the kit closes the target.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from conformance.targets.reference import ReferenceTarget
from tests.support.broken_targets import ForgetsFields

MARKER_ENV = "CASCADE_TEST_STALL_MARKER"


class StallsOnServe(ReferenceTarget):
    def ls_serve(self, scenario: dict[str, Any], manual_clock: bool) -> dict[str, Any]:
        marker = Path(os.environ[MARKER_ENV])
        marker.write_text(str(os.getpid()), encoding="utf-8")
        while True:  # until a signal ends the process or interrupts the kit
            time.sleep(0.05)


def stalls_on_serve() -> StallsOnServe:
    return StallsOnServe()


def _stall(seconds: float | None) -> None:
    """Write this process's id to the marker file, then wait: ``seconds``, or until a signal ends the process."""
    Path(os.environ[MARKER_ENV]).write_text(str(os.getpid()), encoding="utf-8")
    until = None if seconds is None else time.monotonic() + seconds
    while until is None or time.monotonic() < until:
        time.sleep(0.05)


class StallsWhileShrinking(ForgetsFields):
    """Fails WIRE-1 on every example (it forgets known fields), and stalls in the first call after its first
    failing one: Hypothesis is shrinking by then."""

    def __init__(self) -> None:
        super().__init__()
        self._failed = False

    def ls_decode_request(self, method: str, raw_b64: str) -> dict[str, Any]:
        if self._failed:
            _stall(None)
        result = super().ls_decode_request(method, raw_b64)
        self._failed = True
        return result


class StallsOnClose(ReferenceTarget):
    """Decodes as the reference does, and takes 3 s to close (served over the adapter: the kit waits for it)."""

    def close(self) -> None:
        _stall(3.0)


def stalls_while_shrinking() -> StallsWhileShrinking:
    return StallsWhileShrinking()


def stalls_on_close() -> StallsOnClose:
    return StallsOnClose()
