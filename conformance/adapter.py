"""Serve an in-process target over the adapter protocol (JSON lines on stdin/stdout).

    python -m conformance.adapter [python:PKG.MODULE:FACTORY]

With no argument it serves the reference. This is how the kit tests its own exec: protocol,
and a template for adapters in other languages (see adapter_protocol.schema.json).
"""

from __future__ import annotations

import json
import sys
from typing import Any, TextIO

from conformance.errors import TargetError
from conformance.operations import PROTOCOL_VERSION
from conformance.targets import REFERENCE_TARGET, PythonTarget


def serve(target: PythonTarget, stdin: TextIO, stdout: TextIO) -> int:
    for line in stdin:
        if not line.strip():
            continue
        try:
            request = json.loads(line)
            request_id = int(request["id"])
            op, params = request["op"], request.get("params", {})
        except (ValueError, KeyError, TypeError) as exc:
            print(f"adapter: unreadable request {line[:200]!r}: {exc}", file=sys.stderr)
            return 2
        reply: dict[str, Any] = {"id": request_id}
        try:
            if op == "hello":
                reply["result"] = _hello(target, params)
            else:
                reply["result"] = target.call(op, **params)
        except (TargetError, TypeError, ValueError, RuntimeError) as exc:
            reply = {"id": request_id, "error": {"message": f"{type(exc).__name__}: {exc}"}}
        stdout.write(json.dumps(reply, ensure_ascii=False) + "\n")
        stdout.flush()
    return 0


def _hello(target: PythonTarget, params: dict[str, Any]) -> dict[str, Any]:
    if params.get("protocol") != PROTOCOL_VERSION:
        raise ValueError(f"this adapter speaks protocol {PROTOCOL_VERSION}, not {params.get('protocol')!r}")
    ops = sorted(target.operations())
    caps = {op: dict(target.capabilities(op)) for op in ops if target.capabilities(op)}
    return {"protocol": PROTOCOL_VERSION, "name": target.description, "operations": ops, "capabilities": caps}


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    spec = args[0] if args else REFERENCE_TARGET
    if not spec.startswith("python:"):
        print(f"adapter: expected python:PKG.MODULE:FACTORY, got {spec!r}", file=sys.stderr)
        return 2
    target = PythonTarget.from_spec(spec.removeprefix("python:"))
    try:
        return serve(target, sys.stdin, sys.stdout)
    finally:
        target.close()


if __name__ == "__main__":
    sys.exit(main())
