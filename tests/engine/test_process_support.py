"""The engine tests' safety net for LS processes a broken stop path leaves running."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from engine.cascade import spawn as ls_spawn
from tests.engine.process_support import gone, kill_group_left_running, sh_script

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX process groups and shebang scripts")


def _group_with_grandchild(tmp_path: Path) -> tuple[subprocess.Popen[bytes], int]:
    """A leader in its own session (as the spawner starts an LS) that starts a sleeper and waits."""
    pid_file = tmp_path / "sleeper.pid"
    script = sh_script(tmp_path / "leader", f'sleep 60 &\necho $! > "{pid_file}"\nwait\n')
    with (tmp_path / "out.log").open("wb") as out:
        leader = ls_spawn._popen([str(script)], out, tmp_path)
    deadline = time.monotonic() + 10
    while not pid_file.exists() or not pid_file.read_text().strip():
        assert time.monotonic() < deadline, "the leader never started its sleeper"
        time.sleep(0.02)
    return leader, int(pid_file.read_text())


def test_a_group_left_running_is_killed_with_its_grandchildren(tmp_path: Path) -> None:
    leader, sleeper = _group_with_grandchild(tmp_path)
    assert not gone(sleeper)
    kill_group_left_running(leader)
    assert leader.returncode == -signal.SIGKILL
    deadline = time.monotonic() + 10
    while not gone(sleeper):
        assert time.monotonic() < deadline, f"sleeper {sleeper} outlived its group's SIGKILL"
        time.sleep(0.02)


def test_a_group_already_reaped_is_not_signalled(tmp_path: Path) -> None:
    leader, sleeper = _group_with_grandchild(tmp_path)
    leader.kill()
    assert leader.wait() == -signal.SIGKILL
    kill_group_left_running(leader)  # reaped by its owner: its pid may name another group by now
    time.sleep(0.3)  # a SIGKILL wrongly sent would have ended the sleeper by now
    try:
        assert not gone(sleeper), "a reaped leader's pid was signalled as a group"
    finally:
        os.kill(sleeper, signal.SIGKILL)


def test_a_process_outside_its_own_group_is_killed_alone(tmp_path: Path) -> None:
    lone = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    kill_group_left_running(lone)  # no group of that id: the process itself
    assert lone.returncode == -signal.SIGKILL
