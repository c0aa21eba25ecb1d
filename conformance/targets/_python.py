"""In-process targets: ``python:package.module:factory``."""

from __future__ import annotations

import contextlib
import importlib
import os
import sys
import traceback
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from conformance.errors import TargetError, TargetSpecError
from conformance.operations import OPERATIONS, operation
from conformance.targets._base import DeclaredOperations, check_capabilities, check_result, observed

_CRASH_FRAMES = 3  # a crash report's frames: enough to show where, few enough for a verdict's text


class PythonTarget(DeclaredOperations):
    """Wraps an object whose methods are named after operations (``ls.serve`` -> ``ls_serve``)."""

    kind = "python"

    def __init__(self, implementation: Any, description: str) -> None:
        self._impl = implementation
        self._description = description
        self._ops = frozenset(
            op.name for op in OPERATIONS.values() if callable(getattr(implementation, op.method_name, None))
        )
        declared = getattr(implementation, "capabilities", None)
        if declared is not None and not callable(declared):
            raise TargetSpecError(f"{description}: 'capabilities' must be a method capabilities(op) -> dict")
        self._caps = check_capabilities(
            description, self._ops, _declared_capabilities(description, declared, self._ops) if declared else {}
        )

    @classmethod
    def from_spec(cls, spec: str) -> PythonTarget:
        module_name, sep, factory_name = spec.partition(":")
        if not sep or not module_name or not factory_name:
            raise TargetSpecError(f"python:{spec!r}: expected python:PACKAGE.MODULE:FACTORY")
        _search_the_working_folder()
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            raise TargetSpecError(f"python:{spec}: cannot import {module_name}: {exc}") from exc
        except Exception as exc:  # found, but its own code crashed while it was imported
            raise TargetError(f"python:{spec}: importing {module_name} raised {_crash(exc)}") from exc
        factory = getattr(module, factory_name, None)
        if not callable(factory):
            raise TargetSpecError(f"python:{spec}: {module_name} has no callable {factory_name}")
        try:
            implementation = factory()
        except (TargetError, TargetSpecError):
            raise  # the factory's own word on why there is no target
        except Exception as exc:
            raise TargetError(f"python:{spec}: {factory_name}() raised {_crash(exc)}") from exc
        return cls(implementation, f"python:{spec}")

    @property
    def description(self) -> str:
        return self._description

    def call(self, op: str, **params: Any) -> dict[str, Any]:
        self._before_call(op, params)
        method = getattr(self._impl, operation(op).method_name)
        try:
            result = method(**params)
        except Exception as exc:  # the implementation crashed: the target's fault, reported with its traceback
            raise TargetError(f"{self._description}: {op} raised {_crash(exc)}") from exc
        return check_result(op, result, self._description, observed(self.capabilities(op)))

    @contextlib.contextmanager
    def impatient(self) -> Iterator[None]:
        """Calls in the block get the gateway's first answer to a rate limit, when the implementation itself
        waits rate limits out (the reference reaches its gateway over HTTP, through the kit's HTTP client):
        its own ``impatient()`` context manager, if it has one."""
        own = getattr(self._impl, "impatient", None)
        with own() if callable(own) else contextlib.nullcontext():
            yield

    def close(self) -> None:
        closer = getattr(self._impl, "close", None)
        if callable(closer):
            closer()


def _declared_capabilities(
    description: str, declared: Callable[[str], Any], ops: Iterable[str]
) -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}
    for op in sorted(ops):
        try:
            answer = declared(op)
        except Exception as exc:
            raise TargetError(f"{description}: capabilities({op!r}) raised {_crash(exc)}") from exc
        if answer and not isinstance(answer, Mapping):
            raise TargetSpecError(
                f"{description}: capabilities({op!r}) returned {type(answer).__name__}, not a dict (or None)"
            )
        found[op] = dict(answer or {})
    return found


def _crash(exc: Exception) -> str:
    """``Type: message``, then the implementation's last frames: where in it the exception was raised.
    The kit's own frame (where it called in and caught) is left out, and the message is said once."""
    frames = traceback.extract_tb(exc.__traceback__)[1:][-_CRASH_FRAMES:]
    where = "".join(traceback.format_list(frames)).rstrip()
    return f"{type(exc).__name__}: {exc}\nTraceback (most recent call last):\n{where}"


def _search_the_working_folder() -> None:
    """Find a target module in the folder the command runs in, as ``python -m`` does: the console scripts
    (``cascade-conformance``, ``pytest``) do not put that folder on the path, so ``python:mygw:make`` with
    ``mygw.py`` beside the user would not import. Appended, so nothing installed is shadowed."""
    here = os.getcwd()
    if not any(os.path.abspath(entry or os.curdir) == here for entry in sys.path):
        sys.path.append(here)
