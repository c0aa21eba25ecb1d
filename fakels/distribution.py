"""The distribution's optional parts, checked before an entry point imports them.

``pip install cascade-conformance`` installs fakels alone (grpcio, protobuf, h2, jsonschema,
PyYAML). The reference engine, the conformance suite and the project's tests are extras (see
``[project.optional-dependencies]`` in pyproject.toml; :data:`EXTRA_MODULES` names the modules
each extra provides, and a test keeps the two in step). An entry point whose extra is missing
prints one line saying what to install, never a traceback.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Sequence

DISTRIBUTION = "cascade-conformance"

_ENGINE = ("PIL", "pypdf", "starlette", "uvicorn", "prometheus_client")
_CONFORMANCE = (*_ENGINE, "hypothesis", "openai", "httpx")

EXTRA_MODULES: dict[str, tuple[str, ...]] = {
    "engine": _ENGINE,
    "conformance": _CONFORMANCE,
    "test": (*_CONFORMANCE, "pytest", "pytest_timeout", "xdist", "grpc_tools"),
}


def missing_modules(extra: str) -> list[str]:
    """The modules of ``extra`` that cannot be imported here, in :data:`EXTRA_MODULES` order."""
    missing = []
    for name in EXTRA_MODULES[extra]:
        try:
            found = importlib.util.find_spec(name) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            missing.append(name)
    return missing


def extra_problem(extra: str, command: str) -> str | None:
    """One line for ``command``'s user when ``extra`` is not installed; None when it is."""
    missing = missing_modules(extra)
    if not missing:
        return None
    return (
        f"{command}: needs the '{extra}' extra, which is not installed (missing: {', '.join(missing)}); "
        f"install it with: pip install '{DISTRIBUTION}[{extra}]'"
    )


def guarded_main(extra: str, command: str, cli_module: str, argv: Sequence[str] | None = None) -> int:
    """A console script's body: ``cli_module.main(argv)`` when ``extra`` is installed, else the one line
    saying what to install (exit 2). The CLI module is imported only after the check."""
    problem = extra_problem(extra, command)
    if problem is not None:
        print(problem, file=sys.stderr)
        return 2
    main = importlib.import_module(cli_module).main
    return int(main(None if argv is None else list(argv)))
