"""Helpers for tests that run processes: fakels as a separate process, and what a stopped kit left behind."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

from engine.cascade.spawn import answers_h2c


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
