"""Helpers for tests whose code under test starts or stops processes."""

from __future__ import annotations

import os
import stat
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


def sh_script(path: Path, body: str) -> Path:
    """An executable ``/bin/sh`` script at ``path`` (parents created) running ``body``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\n{body}", encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path
