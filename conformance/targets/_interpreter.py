"""Which Python a launched gateway or an ``exec:`` adapter runs, and the hint when it lacks a module.

The docs print commands such as ``--launch "python -m mygw"`` and ``exec:python -m conformance.adapter``.
Without an activated venv, a bare ``python`` on the PATH is the system's, which lacks the kit's packages,
and the process dies with ``ModuleNotFoundError``. So ``{python}`` names the kit's own interpreter, and a
bare leading ``python`` or ``python3`` runs it too, unless an activated virtual environment
(``VIRTUAL_ENV``, as ``source .venv/bin/activate`` sets it) has that name on the PATH: then the venv's,
which the person chose.
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Mapping
from pathlib import Path

PYTHON_PLACEHOLDER = "{python}"
_BARE_NAMES = frozenset({"python", "python3"})
# What Python writes for a module it cannot import: "ModuleNotFoundError: No module named 'x'" from an
# import, "/usr/bin/python3: No module named x" from ``-m x``.
_MISSING_MODULE = "No module named "


def kit_python(program: str, env: Mapping[str, str]) -> str:
    """``program``, or the kit's own interpreter when it is a bare ``python`` or ``python3`` that
    ``env``'s PATH does not find inside ``env``'s active virtual environment."""
    if program not in _BARE_NAMES:
        return program
    venv = env.get("VIRTUAL_ENV")
    found = shutil.which(program, path=env.get("PATH"))
    if venv and found is not None and Path(found).absolute().is_relative_to(Path(venv).absolute()):
        return program
    return sys.executable


def missing_module_hint(output: str, program: str, env: Mapping[str, str]) -> str:
    """A hint for an error message when the process's ``output`` shows a module it could not import
    (``ModuleNotFoundError``): which interpreter ran, and how to run the kit's; empty otherwise."""
    if _MISSING_MODULE not in output:
        return ""
    ran = shutil.which(program, path=env.get("PATH")) or program
    return (
        f"; the command ran {ran}: is the module installed there? use {PYTHON_PLACEHOLDER} (the kit's own "
        "interpreter) or the venv's full path"
    )
