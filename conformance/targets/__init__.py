"""How the suite reaches an implementation: in-process Python, an adapter process, or (later) HTTP.

load_target("python:pkg.module:factory")   # an object with methods named after operations
load_target("exec:node my-adapter.mjs")    # JSON lines over stdin/stdout (adapter_protocol.schema.json)
load_target(None)                          # the reference: fakels (and the engine, as it lands)
"""

from __future__ import annotations

from conformance.targets._base import Target, TargetError, TargetSpecError
from conformance.targets._exec import ExecTarget
from conformance.targets._python import PythonTarget

REFERENCE_TARGET = "python:conformance.targets.reference:make_target"

__all__ = ["REFERENCE_TARGET", "ExecTarget", "PythonTarget", "Target", "TargetError", "TargetSpecError", "load_target"]


def load_target(spec: str | None, *, call_timeout_s: float | None = None) -> Target:
    """Open the target named by ``spec`` (None: the embedded reference)."""
    text = spec or REFERENCE_TARGET
    kind, sep, rest = text.partition(":")
    if not sep or not rest.strip():
        raise TargetSpecError(_usage(text))
    if kind == "python":
        return PythonTarget.from_spec(rest)
    if kind == "exec":
        return ExecTarget.start(rest, call_timeout_s=call_timeout_s)
    if kind in ("http", "https"):
        raise TargetSpecError(
            f"{text!r}: black-box HTTP targets arrive with the engine's HTTP front; use python: or exec: for now"
        )
    raise TargetSpecError(_usage(text))


def _usage(text: str) -> str:
    return (
        f"{text!r} is not a target. Use python:PACKAGE.MODULE:FACTORY (an in-process object), "
        "exec:COMMAND (an adapter speaking JSON lines), or leave --target out for the reference"
    )
