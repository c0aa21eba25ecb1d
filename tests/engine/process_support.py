"""Helpers for tests whose code under test starts or stops processes."""

from __future__ import annotations

import os
from pathlib import Path


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
