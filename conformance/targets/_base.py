"""The target interface the properties call, and result checking shared by every kind."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

import jsonschema

from conformance.operations import operation


class TargetError(Exception):
    """The target misbehaved: crashed, timed out, or answered outside the protocol."""


class TargetSpecError(ValueError):
    """The ``--target`` string cannot be understood."""


class Target(Protocol):
    @property
    def description(self) -> str:
        """What the report calls this target."""
        ...

    @property
    def kind(self) -> str:
        """``python``, ``exec`` or ``http``."""
        ...

    def operations(self) -> frozenset[str]:
        """The operations this target implements."""
        ...

    def capabilities(self, op: str) -> Mapping[str, Any]:
        """Extra facts an operation declares (e.g. which methods a decoder knows); may be empty."""
        ...

    def call(self, op: str, **params: Any) -> dict[str, Any]:
        """Run one operation; raises TargetError when the target misbehaves."""
        ...

    def close(self) -> None: ...


def check_params(op: str, params: Mapping[str, Any]) -> None:
    """Arguments the suite sends must match the operation's schema (a kit bug otherwise)."""
    jsonschema.validate(dict(params), operation(op).params)


def check_result(op: str, result: Any, who: str) -> dict[str, Any]:
    errors = list(jsonschema.Draft202012Validator(operation(op).result).iter_errors(result))
    if errors:
        where = "/".join(str(p) for p in errors[0].absolute_path) or "<result>"
        raise TargetError(f"{who}: {op} returned a result outside its schema at {where}: {errors[0].message}")
    assert isinstance(result, dict)
    return result
