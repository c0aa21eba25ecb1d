"""In-process targets: ``python:package.module:factory``."""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any

from conformance.operations import OPERATIONS, operation
from conformance.targets._base import TargetError, TargetSpecError, check_params, check_result


class PythonTarget:
    """Wraps an object whose methods are named after operations (``ls.serve`` -> ``ls_serve``)."""

    kind = "python"

    def __init__(self, implementation: Any, description: str) -> None:
        self._impl = implementation
        self._description = description
        self._ops = frozenset(
            op.name for op in OPERATIONS.values() if callable(getattr(implementation, op.method_name, None))
        )

    @classmethod
    def from_spec(cls, spec: str) -> PythonTarget:
        module_name, sep, factory_name = spec.partition(":")
        if not sep or not module_name or not factory_name:
            raise TargetSpecError(f"python:{spec!r}: expected python:PACKAGE.MODULE:FACTORY")
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            raise TargetSpecError(f"python:{spec}: cannot import {module_name}: {exc}") from exc
        factory = getattr(module, factory_name, None)
        if not callable(factory):
            raise TargetSpecError(f"python:{spec}: {module_name} has no callable {factory_name}")
        return cls(factory(), f"python:{spec}")

    @property
    def description(self) -> str:
        return self._description

    def operations(self) -> frozenset[str]:
        return self._ops

    def capabilities(self, op: str) -> Mapping[str, Any]:
        declared = getattr(self._impl, "capabilities", None)
        caps = declared(op) if callable(declared) else {}
        return dict(caps or {})

    def call(self, op: str, **params: Any) -> dict[str, Any]:
        if op not in self._ops:
            raise TargetError(f"{self._description} does not implement {op}")
        check_params(op, params)
        method = getattr(self._impl, operation(op).method_name)
        return check_result(op, method(**params), self._description)

    def close(self) -> None:
        closer = getattr(self._impl, "close", None)
        if callable(closer):
            closer()
