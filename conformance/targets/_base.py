"""The target interface the properties call, and result checking shared by every kind."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Protocol

import jsonschema

from conformance.operations import OPERATIONS, capability_schema, operation, result_schema


class TargetError(Exception):
    """The target misbehaved: crashed, timed out, or answered outside the protocol."""


class TargetHung(TargetError):
    """The target gave no answer within the per-call timeout. Every further call may wait as long,
    so the runner stops the property at this example (no more examples, no shrinking)."""


class TargetSpecError(ValueError):
    """The ``--target`` string cannot be understood."""


class PreconditionNotMet(Exception):
    """This example cannot judge the invariant: the target never did what the statement is about, or
    (raised by a target's operation) it cannot be asked for this example at all, e.g. a black-box
    gateway launched with other limits than the example sets."""

    # How the runner counts the example: ``unmet`` (the precondition), ``refused`` (the target refused
    # the input), ``transient`` (rate-limited past the wait budget), ``declined`` (a feature the target
    # says it does not implement). None of them is judged; a property whose examples all end so is
    # not checkable, with the reasons.
    kind = "unmet"

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class InputRefused(PreconditionNotMet):
    """The target refused the example's input (a 4xx answer): its right, recorded, not judged."""

    kind = "refused"


class TransientRefusal(PreconditionNotMet):
    """The target kept rate-limiting (429, 503) past the kit's wait budget: the example is not judged."""

    kind = "transient"


class FeatureDeclined(PreconditionNotMet):
    """The target says it does not implement what the example needs (501): not checkable for it."""

    kind = "declined"


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
    jsonschema.validate(dict(params), operation(op).params)


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
    errors = list(jsonschema.Draft202012Validator(result_schema(definition, observes)).iter_errors(result))
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


def excerpt(value: Any) -> Any:
    """``value`` with long strings shortened, so an error shows the shape of a big answer."""
    if isinstance(value, str) and len(value) > 80:
        return f"{value[:40]}... ({len(value)} characters)"
    if isinstance(value, dict):
        return {k: excerpt(v) for k, v in value.items()}
    if isinstance(value, list):
        return [excerpt(v) for v in value[:20]] + ([f"... ({len(value)} items)"] if len(value) > 20 else [])
    return value
