"""Helpers for tests that run processes: fakels as a separate process, and what a stopped kit left behind."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from engine.cascade.spawn import answers_h2c


def start_in_session(
    argv: Sequence[str], folder: Path, *, cwd: Path, env: Mapping[str, str], stderr_to_stdout: bool = False
) -> subprocess.Popen[bytes]:
    """``argv`` in a session of its own (a signal to it reaches it alone), its stdout written to
    ``folder/stdout`` and its stderr to ``folder/stderr`` (or to stdout). Only the child keeps the files open."""
    with (folder / "stdout").open("wb") as stdout, (folder / "stderr").open("wb") as stderr:
        return subprocess.Popen(
            list(argv),
            cwd=cwd,
            env=dict(env),
            stdout=stdout,
            stderr=subprocess.STDOUT if stderr_to_stdout else stderr,
            start_new_session=True,
        )


def wait_for_grpc(address: str, proc: subprocess.Popen[bytes] | None = None, timeout_s: float = 25.0) -> None:
    """Wait until an h2c handshake succeeds, as gateways probe a freshly spawned LS; fail at once
    with the child's stderr if it exits first."""
    deadline = time.monotonic() + timeout_s
    while True:
        if proc is not None and proc.poll() is not None:
            err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
            raise RuntimeError(f"the LS process exited with {proc.returncode} before serving: {err}")
        if answers_h2c(address, 0.5):
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"nothing answered on {address} within {timeout_s} s")
        time.sleep(0.02)


def alive(pid: int) -> bool:
    """Running, and not a zombie waiting for a parent to reap it."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except OSError:
        return False
    return state != "Z"


def descendants(pid: int) -> set[int]:
    """Every process below ``pid``, read from /proc (the kit's own checks are not the oracle here)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            parent = int((entry / "stat").read_text().rpartition(")")[2].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(parent, []).append(int(entry.name))
    found: set[int] = set()
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.add(child)
            todo.append(child)
    return found
