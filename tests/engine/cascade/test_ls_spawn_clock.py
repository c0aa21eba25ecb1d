"""The spawner's default deadlines, read on a scripted clock: ``start`` gives the child 20 s to serve and
``stop`` gives it 5 s after SIGTERM, to the tick, without a test that waits that long in real time."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from engine.cascade import spawn as ls_spawn
from engine.cascade.spawn import LsProcess, LsSpawnError
from fakels.standin import write_standin
from tests.engine.process_support import sh_script

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX process groups and shell scripts")


class ScriptedClock:
    """Answers the scripted readings in order. Past the script it fails the test (``step=None``) or runs on by
    ``step`` per reading, so a deadline that came too late still ends instead of hanging."""

    def __init__(self, readings: list[float], *, step: float | None = None) -> None:
        self._readings = list(readings)
        self._step = step
        self._last = readings[-1]
        self.reads = 0

    def __call__(self) -> float:
        self.reads += 1
        if self._readings:
            self._last = self._readings.pop(0)
        elif self._step is None:
            raise AssertionError(f"the spawner read its clock again after {self._last}: it kept waiting")
        else:
            self._last += self._step
        return self._last


@contextlib.contextmanager
def _group_killed_afterwards(pid_file: Path) -> Iterator[None]:
    """Whatever a failing run leaves behind is killed: the test never leaks a child."""
    try:
        yield
    finally:
        if pid_file.exists():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(int(pid_file.read_text().split()[0]), signal.SIGKILL)


def test_start_by_default_stops_waiting_exactly_twenty_seconds_after_it_began(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pid_file = tmp_path / "pid"
    binary = sh_script(tmp_path / "mute", f'echo $$ > "{pid_file}"\nexec sleep 30\n')
    # start reads 100.0, so its deadline is 120.0; at 119.999 it still probes, at 120.0 it gives up
    clock = ScriptedClock([100.0, 119.999, 120.0], step=1.0)
    monkeypatch.setattr(ls_spawn, "_clock", clock)
    with _group_killed_afterwards(pid_file), pytest.raises(LsSpawnError) as info:
        LsProcess.start(binary)
    message = str(info.value)
    assert message.startswith(f"language server {binary} did not answer on 127.0.0.1:")
    assert " within 20 s (stopped, code " in message


def test_stop_by_default_sends_sigkill_exactly_five_seconds_after_sigterm(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    standin = write_standin(tmp_path / "standin" / "ls")
    pid_file = tmp_path / "pids"
    stubborn = sh_script(tmp_path / "stubborn", f'trap \'\' TERM\necho $$ > "{pid_file}"\n"{standin}" "$@" &\nwait\n')
    with _group_killed_afterwards(pid_file):
        lsp = LsProcess.start(stubborn)  # on the real clock
        # SIGTERM at 1000.0 (deadline 1005.0); still waiting at 1004.999; SIGKILL on reading 1005.0, no later
        clock = ScriptedClock([1000.0, 1004.999, 1005.0])
        monkeypatch.setattr(ls_spawn, "_clock", clock)
        assert lsp.stop() == -signal.SIGKILL
        assert clock.reads == 3
