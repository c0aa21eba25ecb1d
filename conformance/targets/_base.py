"""The target interface the properties call, and result checking shared by every kind."""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import cache
from typing import Any, Protocol

import jsonschema

from conformance.errors import TargetError, TargetSpecError, excerpt
from conformance.operations import OPERATIONS, capability_schema, operation, result_schema


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


class DeclaredOperations:
    """What every target kind shares: the operations and capabilities it declared, and the checks
    before a call (the operation is implemented; the kit's own arguments match the schema)."""

    _ops: frozenset[str] = frozenset()
    _caps: dict[str, dict[str, Any]]

    @property
    def description(self) -> str:
        raise NotImplementedError

    def operations(self) -> frozenset[str]:
        return self._ops

    def capabilities(self, op: str) -> Mapping[str, Any]:
        return dict(self._caps.get(op, {}))

    def _before_call(self, op: str, params: Mapping[str, Any]) -> None:
        if op not in self._ops:
            raise TargetError(f"{self.description} does not implement {op}")
        check_params(op, params)


def check_params(op: str, params: Mapping[str, Any]) -> None:
    """Arguments the suite sends must match the operation's schema (a kit bug otherwise)."""
    error = jsonschema.exceptions.best_match(_params_validator(op).iter_errors(dict(params)))
    if error is not None:
        raise error


@cache
def _params_validator(op: str) -> jsonschema.Draft202012Validator:
    """Built (and its schema checked) once per operation: checking the schema on every call was a
    fifth of a whole run's time."""
    schema = operation(op).params
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


@cache
def _result_validator(op: str, observes: frozenset[str]) -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(result_schema(operation(op), observes))


def check_capabilities(who: str, implemented: frozenset[str], declared: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """The capabilities a target declares, validated: only for operations it implements, only the
    keys each operation knows (``observes`` and the operation's own facts)."""
    checked: dict[str, dict[str, Any]] = {}
    for op_name, caps in declared.items():
        if op_name not in OPERATIONS:
            raise TargetSpecError(
                f"{who}: declares capabilities for {op_name!r}, which is no operation "
                f"(see `cascade-conformance operations`)"
            )
        if op_name not in implemented:
            raise TargetSpecError(f"{who}: declares capabilities for {op_name}, which it does not implement")
        schema = capability_schema(operation(op_name))
        errors = list(jsonschema.Draft202012Validator(schema).iter_errors(caps))
        if errors:
            known = ", ".join(sorted(schema["properties"])) or "none"
            where = "/".join(str(p) for p in errors[0].absolute_path)
            raise TargetSpecError(
                f"{who}: bad capabilities for {op_name}{' at ' + where if where else ''}: {errors[0].message} "
                f"(capabilities {op_name} knows: {known})"
            )
        checked[op_name] = dict(caps)
    return checked


def observed(capabilities: Mapping[str, Any]) -> frozenset[str]:
    return frozenset(capabilities.get("observes", ()))


def check_result(op: str, result: Any, who: str, observes: frozenset[str] = frozenset()) -> dict[str, Any]:
    """``result`` must match the operation's schema for what the target observes: an optional field
    it did not declare is an error, as is a declared one it left out."""
    definition = operation(op)
    errors = list(_result_validator(op, observes).iter_errors(result))
    if errors:
        where = "/".join(str(p) for p in errors[0].absolute_path) or "<result>"
        hint = ""
        if definition.optional:
            shown = ", ".join(sorted(observes)) or "none"
            hint = (
                f" (optional fields of {op}: {', '.join(definition.optional)}; this target declares it observes: "
                f"{shown}; declare them in the capability 'observes' or leave them out)"
            )
        shown = json.dumps(excerpt(result), ensure_ascii=False, default=repr)
        shown = shown if len(shown) <= 600 else shown[:600] + f"... ({len(shown)} characters)"
        raise TargetError(
            f"{who}: {op} returned a result outside its schema at {where}: {errors[0].message}{hint}\n"
            f"the answer was: {shown}"
        )
    assert isinstance(result, dict)
    return result
