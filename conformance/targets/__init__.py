"""How the suite reaches an implementation: in-process Python, an adapter process, or black-box HTTP.
The errors a target raises (TargetError, PreconditionNotMet, ...) are in :mod:`conformance.errors`.

load_target("python:pkg.module:factory")   # an object with methods named after operations
load_target("exec:node my-adapter.mjs")    # JSON lines over stdin/stdout (adapter_protocol.schema.json)
load_target("http://127.0.0.1:0", http=HttpOptions(launch=LaunchSpec("my-gateway --port {port} ...")))
load_target(None)                          # the reference: fakels and the engine
"""

from __future__ import annotations

import importlib
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from conformance.errors import TargetSpecError
from conformance.targets._base import Target
from conformance.targets._exec import ExecTarget
from conformance.targets._python import PythonTarget

if TYPE_CHECKING:
    from conformance.targets._http import HttpTarget
    from conformance.targets._http_options import HttpOptions, http_options
    from conformance.targets._launch import LaunchedGateway, LaunchSpec
    from conformance.targets._scope import Caller, CallerScope, ReadScope

# The HTTP target imports fakels (it serves or spawns the fake); it is loaded on first use, so the
# pytest plugin, which imports this package in every pytest run, never imports fakels at start-up.
_HTTP_NAMES = {
    "HttpOptions": "conformance.targets._http_options",
    "HttpTarget": "conformance.targets._http",
    "http_options": "conformance.targets._http_options",
    "LaunchSpec": "conformance.targets._launch",
    "LaunchedGateway": "conformance.targets._launch",
    "Caller": "conformance.targets._scope",
    "CallerScope": "conformance.targets._scope",
    "ReadScope": "conformance.targets._scope",
}


def __getattr__(name: str) -> Any:
    module = _HTTP_NAMES.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


REFERENCE_TARGET = "python:conformance.targets.reference:make_target"

__all__ = [
    "REFERENCE_TARGET",
    "Caller",
    "CallerScope",
    "ExecTarget",
    "HttpOptions",
    "HttpTarget",
    "LaunchSpec",
    "LaunchedGateway",
    "PythonTarget",
    "ReadScope",
    "Target",
    "http_options",
    "load_target",
]


def load_target(spec: str | None, *, call_timeout_s: float | None = None, http: HttpOptions | None = None) -> Target:
    """Open the target named by ``spec`` (None or ``reference``: the embedded reference). ``http`` says how
    to reach an ``http://`` target (default: already running, the default key and model, no ledger)."""
    text = REFERENCE_TARGET if spec is None or spec.strip().lower() == "reference" else spec
    kind, sep, rest = text.partition(":")
    if not sep or not rest.strip():
        raise TargetSpecError(_usage(text))
    if http is not None and kind not in ("http", "https"):
        raise TargetSpecError(f"{text!r}: the HTTP target options (--launch, --api-key, ...) apply only to http://")
    if kind == "python":
        return PythonTarget.from_spec(rest)
    if kind == "exec":
        return ExecTarget.start(rest, call_timeout_s=call_timeout_s)
    if kind in ("http", "https"):
        from conformance.targets._http import HttpTarget
        from conformance.targets._http_options import HttpOptions

        options = http or HttpOptions()
        if call_timeout_s is not None:
            options = replace(options, request_timeout_s=call_timeout_s)
        return HttpTarget(text, options)
    raise TargetSpecError(_usage(text))


def _usage(text: str) -> str:
    return (
        f"{text!r} is not a target. Use python:PACKAGE.MODULE:FACTORY (an in-process object), "
        "exec:COMMAND (an adapter speaking JSON lines), http://127.0.0.1:PORT (a gateway over HTTP), "
        "or reference (the kit's own reference, the default)"
    )
