"""Small deliberately built targets for the pytest plugin's meta-tests
(``python:tests.support.plugin_targets:...``).

Each implements as little as its test needs, so a verdict has one obvious cause.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from typing import Any

from conformance.targets.reference import ReferenceTarget
from fakels.decoder import RequestDecodeError, decode
from fakels.rpcs import RPCS


class ForgetsFields:
    """Implements only ``ls.decode_request``, and decodes wrongly: it reports the unknown fields but
    forgets every known one. WIRE-1 fails on it; WIRE-2 (unknown fields only) passes."""

    def ls_decode_request(self, method: str, raw_b64: str) -> dict[str, Any]:
        rpc = RPCS.get(method)
        if rpc is None:
            return {"rejected": f"unknown method {method!r}"}
        try:
            decoded = decode(rpc.request_type, base64.b64decode(raw_b64))
        except RequestDecodeError as exc:
            return {"rejected": str(exc)}
        return {"fields": {}, "unknown": [u.to_json() for u in decoded.unknown]}


class ImplementsNothing:
    """Implements no operation of the suite: every invariant is not checkable on it."""

    def greet(self) -> str:
        return "hello"


class RaisesOnEveryCall:
    """Implements ``ls.decode_request`` and crashes on every call: an error, never a pass."""

    def ls_decode_request(self, method: str, raw_b64: str) -> dict[str, Any]:
        raise RuntimeError("this gateway's decoder is broken")


class NoCounters(ReferenceTarget):
    """The reference engine without attached/dropped counters: it declares that it does not observe
    them and leaves them out, so IMG properties can only give partial passes."""

    def capabilities(self, op: str) -> Mapping[str, Any]:
        if op == "engine.build_send_request":
            return {}
        return super().capabilities(op)

    def engine_build_send_request(
        self,
        messages: Sequence[Mapping[str, Any]],
        model_uid: str,
        tool_preamble: str,
        native_mode: bool,
        is_resume: bool,
        env: Mapping[str, str],
    ) -> dict[str, Any]:
        result = super().engine_build_send_request(messages, model_uid, tool_preamble, native_mode, is_resume, env)
        return {"request_b64": result["request_b64"]}


def forgets_fields() -> ForgetsFields:
    return ForgetsFields()


def implements_nothing() -> ImplementsNothing:
    return ImplementsNothing()


def raises_on_every_call() -> RaisesOnEveryCall:
    return RaisesOnEveryCall()


def no_counters() -> NoCounters:
    return NoCounters()
