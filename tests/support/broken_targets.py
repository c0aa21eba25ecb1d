"""Deliberately broken targets for the runner's meta-tests (``python:tests.support.broken_targets:...``)."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from conformance.targets.reference import ReferenceTarget
from engine.chat.cache import ResponseCache
from engine.http.chat_request import ChatRequest
from engine.http.front import Caller, Sink
from engine.http.gateway import Gateway
from engine.reuse.pool import ConversationPool, PoolEntry


class DropsUnknownFields(ReferenceTarget):
    """A decoder that forgets unknown fields: WIRE-2 must fail on it."""

    def ls_decode_request(self, method: str, raw_b64: str) -> dict[str, Any]:
        result = super().ls_decode_request(method, raw_b64)
        if "unknown" in result:
            result["unknown"] = []
        return result


class DecodeOnly(ReferenceTarget):
    """Implements only decoding: the served-LS invariants are not checkable on it."""

    ls_serve = None  # type: ignore[assignment]
    ls_journal = None  # type: ignore[assignment]
    ls_advance_clock = None  # type: ignore[assignment]
    ls_stop = None  # type: ignore[assignment]

    def close(self) -> None:
        pass


def drops_unknown_fields() -> DropsUnknownFields:
    return DropsUnknownFields()


def decode_only() -> DecodeOnly:
    return DecodeOnly()


# ---------------------------------------------------------------------------- verdict meta-tests


class ForgetsFields:
    """Implements only ``ls.decode_request``, and decodes wrongly: it reports the unknown fields but
    forgets every known one. WIRE-1 fails on it; WIRE-2 (unknown fields only) passes."""

    def __init__(self) -> None:
        self._decoder = ReferenceTarget()

    def ls_decode_request(self, method: str, raw_b64: str) -> dict[str, Any]:
        result = self._decoder.ls_decode_request(method, raw_b64)
        if "fields" in result:
            result["fields"] = {}
        return result


class ImplementsNothing:
    """Implements no operation of the suite: every invariant is not checkable on it."""

    def greet(self) -> str:
        return "hello"


class RaisesOnEveryCall(ReferenceTarget):
    """Every operation crashes: every invariant it can be asked about must end as an error."""

    def ls_decode_request(self, method: str, raw_b64: str) -> dict[str, Any]:
        raise RuntimeError("this target crashes on every call")

    def engine_parse_generator_metadata(self, raw_b64: str) -> dict[str, Any]:
        raise RuntimeError("this target crashes on every call")


class RejectsEverything(ReferenceTarget):
    """A decoder that rejects every request, valid or not: WIRE-1 must fail."""

    def ls_decode_request(self, method: str, raw_b64: str) -> dict[str, Any]:
        return {"rejected": "proto: cannot parse invalid wire-format data"}


class TwoDecoderBugs(ReferenceTarget):
    """Two distinct WIRE-1 defects: SendUserCascadeMessage is rejected, and StartCascade loses its
    metadata. The run must show both, each with its own minimal case."""

    def ls_decode_request(self, method: str, raw_b64: str) -> dict[str, Any]:
        if method == "SendUserCascadeMessage":
            return {"rejected": "unsupported message"}
        result = super().ls_decode_request(method, raw_b64)
        if method == "StartCascade" and "fields" in result:
            result["fields"].pop("metadata", None)
        return result


class _ZeroingPool(ConversationPool):
    """Checks every entry in with generator offset 0: each resumed turn reads its cascade's
    generator metadata from 0 again (the seed's coerced-to-0 defect, billing records twice)."""

    def checkin(self, fps: Any, entry: PoolEntry | None, *args: Any, **kwargs: Any) -> None:
        super().checkin(fps, None if entry is None else replace(entry, generator_offset=0), *args, **kwargs)


class _ForgetfulPool(ConversationPool):
    """Never finds a conversation again: every turn starts a fresh cascade."""

    def checkout(self, *args: Any, **kwargs: Any) -> PoolEntry | None:
        return None


def _resumes_once(pool: ConversationPool) -> None:
    """``pool`` finds a conversation again only once: every later turn starts a fresh cascade, as a gateway
    whose pooling gives out does (turns cut at its wait limit on a slow machine are not pooled)."""
    checkout = pool.checkout
    found: list[PoolEntry] = []

    def once(*args: Any, **kwargs: Any) -> PoolEntry | None:
        entry = checkout(*args, **kwargs)
        if entry is not None:
            found.append(entry)
        return entry if len(found) == 1 else None

    pool.checkout = once  # type: ignore[method-assign]


class DoubleBills(ReferenceTarget):
    def _new_pool(self) -> ConversationPool:
        return _ZeroingPool()


class NeverResumes(ReferenceTarget):
    def _new_pool(self) -> ConversationPool:
        return _ForgetfulPool()


class ResumesOnce(ReferenceTarget):
    def _new_gateway(self, ls_address: str, csrf_token: str) -> Gateway:
        gateway = super()._new_gateway(ls_address, csrf_token)
        _resumes_once(gateway.pool)
        return gateway


class ReportsNullOffsets(ReferenceTarget):
    """Reads its windows correctly but reports every generator offset as null: the OFF verdicts come
    from the wire, so OFF-2..4 must still pass."""

    def engine_play_turns(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        played = super().engine_play_turns(*args, **kwargs)
        return {"turns": [{**turn, "generator_offset_next": None} for turn in played["turns"]]}


class WithoutCounters(ReferenceTarget):
    """Builds correctly but has no history-image counters: it declares it observes none and leaves
    them out, so the counter parts are reported as not exposed (partial), never judged."""

    def capabilities(self, op: str) -> Mapping[str, Any]:
        if op == "engine.build_send_request":
            return {}
        return super().capabilities(op)

    def engine_build_send_request(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        built = super().engine_build_send_request(*args, **kwargs)
        return {"request_b64": built["request_b64"]}


class InventsZeroCounters(WithoutCounters):
    """Declares no counters yet returns them: an undeclared field is an error, never silently used."""

    def engine_build_send_request(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        built = super().engine_build_send_request(*args, **kwargs)
        return {
            **built,
            "attached": 0,
            "drops": dict.fromkeys(("cap", "bytes", "truncated", "no_vision", "unextractable"), 0),
        }


class UnknownCapability(ReferenceTarget):
    def capabilities(self, op: str) -> Mapping[str, Any]:
        return {"observe": ["attached"]} if op == "engine.build_send_request" else super().capabilities(op)


class PrintsToStdout(ReferenceTarget):
    """Served through ``python -m conformance.adapter``, it writes a log line to stdout mid-run."""

    def ls_decode_request(self, method: str, raw_b64: str) -> dict[str, Any]:
        print(f"decoding {method}", flush=True)
        return super().ls_decode_request(method, raw_b64)


def raises_on_every_call() -> RaisesOnEveryCall:
    return RaisesOnEveryCall()


def rejects_everything() -> RejectsEverything:
    return RejectsEverything()


def two_decoder_bugs() -> TwoDecoderBugs:
    return TwoDecoderBugs()


def double_bills() -> DoubleBills:
    return DoubleBills()


def resumes_once() -> ResumesOnce:
    return ResumesOnce()


def never_resumes() -> NeverResumes:
    return NeverResumes()


def reports_null_offsets() -> ReportsNullOffsets:
    return ReportsNullOffsets()


def without_counters() -> WithoutCounters:
    return WithoutCounters()


def invents_zero_counters() -> InventsZeroCounters:
    return InventsZeroCounters()


def unknown_capability() -> UnknownCapability:
    return UnknownCapability()


def prints_to_stdout() -> PrintsToStdout:
    return PrintsToStdout()


class HangsOnDecode(ReferenceTarget):
    """Served through ``python -m conformance.adapter``, it never answers a decode in time."""

    def ls_decode_request(self, method: str, raw_b64: str) -> dict[str, Any]:
        print(f"hanging on {method}", file=sys.stderr, flush=True)
        time.sleep(60)
        return super().ls_decode_request(method, raw_b64)


def hangs_on_decode() -> HangsOnDecode:
    return HangsOnDecode()


def forgets_fields() -> ForgetsFields:
    return ForgetsFields()


def implements_nothing() -> ImplementsNothing:
    return ImplementsNothing()


# ---------------------------------------------------------------------------- gateways (SO, ACC)


class GatewayWithoutCache(ReferenceTarget):
    """A legitimate gap: a gateway with no response cache never serves a hit."""

    def _new_gateway(self, ls_address: str, csrf_token: str) -> Gateway:
        gateway = super()._new_gateway(ls_address, csrf_token)
        gateway.cache = ResponseCache(enabled=False)
        gateway.service.cache = gateway.cache
        return gateway


class GatewayWithoutLedger(ReferenceTarget):
    """A gateway that does not expose its ledger (no gateway.ledger operation)."""

    gateway_ledger = None  # type: ignore[assignment]


class StreamsViolations(ReferenceTarget):
    """Seed 001 D2 as found: the stream arm does not validate, so non-conforming JSON completes."""

    def _new_gateway(self, ls_address: str, csrf_token: str) -> Gateway:
        gateway = super()._new_gateway(ls_address, csrf_token)
        original = gateway.service.run

        def run(
            request: ChatRequest,
            caller: Caller,
            emit: Sink,
            abort: threading.Event | None = None,
            *,
            use_cache: bool = True,
        ) -> None:
            original(
                replace(request, schema=None) if request.stream else request, caller, emit, abort, use_cache=use_cache
            )

        gateway.service.run = run  # type: ignore[method-assign]
        return gateway


def gateway_without_cache() -> GatewayWithoutCache:
    return GatewayWithoutCache()


def gateway_without_ledger() -> GatewayWithoutLedger:
    return GatewayWithoutLedger()


def streams_violations() -> StreamsViolations:
    return StreamsViolations()
