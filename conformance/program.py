"""The kit's own command as the user can run it (light: the command line imports it before anything else)."""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from pathlib import Path

PROGRAM = "cascade-conformance"

# What the command exits with; a stop signal adds its own: 130 (SIGINT), 143 (SIGTERM).
EXIT_OK, EXIT_UNEXPECTED, EXIT_USAGE = 0, 1, 2
EXIT_INTERRUPTED = 130  # a run a SIGINT stopped


def kit_program() -> str:
    """The kit's command as the user can run it, so the commands a report prints run as printed:
    ``python -m conformance.cli`` when this process was started that way; else the bare name when that name
    finds this environment's copy on PATH; else the copy's full path (a venv that is not activated)."""
    script = Path(sys.argv[0]) if sys.argv and sys.argv[0] else Path()
    if script.name == "cli.py" and script.parent.name == "conformance":
        return shlex.join([sys.executable, "-m", "conformance.cli"])
    own = Path(os.path.abspath(script)) if script.name == PROGRAM else Path(sys.executable).parent / PROGRAM
    found = shutil.which(PROGRAM)
    if not own.is_file() or (found is not None and Path(found).resolve() == own.resolve()):
        return PROGRAM
    return shlex.quote(str(own))
