"""Helpers for tests whose code under test starts or stops processes."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
from pathlib import Path

from fakels.standin import read_ports


def gone(pid: int) -> bool:
    """The pid names no process, or only a zombie left for init to reap."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return True


def sh_script(path: Path, body: str) -> Path:
    """An executable ``/bin/sh`` script at ``path`` (parents created) running ``body``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\n{body}", encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def kill_standin_left_running(binary: Path) -> None:
    """SIGKILL the stand-in written at ``binary`` if it still runs. A test whose engine failed to stop
    its LS must not leave it serving for the rest of the session (under mutation: every later mutant's)."""
    try:
        pid = int(read_ports(binary, wait_s=0)["pid"])
        if not gone(pid) and str(binary).encode() in Path(f"/proc/{pid}/cmdline").read_bytes():
            os.kill(pid, signal.SIGKILL)
    except (OSError, ValueError, KeyError, TypeError):
        pass  # no report (it never started), or the process is gone: nothing left to stop


def kill_group_left_running(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL the process group led by ``proc`` (started in a session of its own) unless something
    already reaped it. Unreaped, its pid cannot have been handed to another group."""
    if proc.returncode is not None:
        return
    if sys.platform == "win32":
        proc.kill()
    else:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):  # not a group leader (a broken spawn): the process alone
            proc.kill()
    proc.wait()
