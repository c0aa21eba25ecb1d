"""Targets that stop at a known point, for the interrupt tests (``python:tests.support.stalling_targets:...``).

Each decodes as the reference does (WIRE-1 and WIRE-2 pass on it) and stalls in its first
``ls.serve`` until the process is interrupted, after writing its process id to the file that
``CASCADE_TEST_STALL_MARKER`` names: the test waits for that file, then sends the signal.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from conformance.targets.reference import ReferenceTarget

MARKER_ENV = "CASCADE_TEST_STALL_MARKER"


class StallsOnServe(ReferenceTarget):
    def ls_serve(self, scenario: dict[str, Any], manual_clock: bool) -> dict[str, Any]:
        marker = Path(os.environ[MARKER_ENV])
        marker.write_text(str(os.getpid()), encoding="utf-8")
        while True:  # until a signal ends the process or interrupts the kit
            time.sleep(0.05)


def stalls_on_serve() -> StallsOnServe:
    return StallsOnServe()
