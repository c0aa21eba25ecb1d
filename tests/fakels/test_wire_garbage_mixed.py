"""WIRE-3, mixed: whatever the mix of well-formed calls, protobuf garbage through grpcio and
frame-level garbage through raw HTTP/2, the journal loses no entry and keeps call order."""

from __future__ import annotations

from dataclasses import dataclass

import grpc
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fakels.server import FakeLSThread
from tests.support.fake_ls import CSRF_TOKEN
from tests.support.grpc_garbage import (
    CSRF_HEADER,
    RPC_LIST,
    SERVICE,
    garbage,
    grpc_frame,
    grpc_headers,
    grpc_status,
    invoke_raw,
    status_name,
)
from tests.support.h2client import request


@dataclass(frozen=True)
class MixedCall:
    """A call for the mixed sequence: through grpcio (``framed is None``) or raw h2 (``framed``
    is the DATA sent), with the path, raw bytes and status the journal must show."""

    label: str
    path: str
    body: bytes
    framed: bytes | None = None
    csrf: bool = True


@st.composite
def valid_calls(draw: st.DrawFn) -> MixedCall:
    rpc = draw(st.sampled_from(RPC_LIST))
    strings = {fd.name for fd in rpc.request_type.DESCRIPTOR.fields} & {"cascade_id", "workspace"}
    message = rpc.request_type(**{name: draw(st.text(max_size=12)) for name in sorted(strings)})
    return MixedCall(f"valid {rpc.name}", rpc.path, message.SerializeToString())


@st.composite
def garbage_calls(draw: st.DrawFn) -> MixedCall:
    item = draw(garbage())
    return MixedCall(f"garbage {item.kind} {item.rpc.name}", item.rpc.path, item.body)


@st.composite
def frame_garbage_calls(draw: st.DrawFn) -> MixedCall:
    rpc = draw(st.sampled_from(RPC_LIST))
    payload = draw(st.binary(max_size=16))
    kind = draw(st.sampled_from(["truncated", "empty", "two-messages", "unknown-method", "no-csrf"]))
    if kind == "truncated":
        return MixedCall(kind, rpc.path, b"", framed=grpc_frame(payload)[: 4 + len(payload)])
    if kind == "empty":
        return MixedCall(kind, rpc.path, b"", framed=b"")
    if kind == "two-messages":
        return MixedCall(kind, rpc.path, payload * 2, framed=grpc_frame(payload) * 2)
    if kind == "unknown-method":
        return MixedCall(kind, f"{SERVICE}/{rpc.name}Nope", payload, framed=grpc_frame(payload))
    return MixedCall(kind, rpc.path, payload, framed=grpc_frame(payload), csrf=False)


def _send_mixed(fake: FakeLSThread, channel: grpc.Channel, call: MixedCall) -> tuple[str, str]:
    if call.framed is None:
        rpc = next(rpc for rpc in RPC_LIST if rpc.path == call.path)
        return invoke_raw(channel, rpc, call.body, [(CSRF_HEADER, CSRF_TOKEN)])
    port = fake.ports.grpc
    response = request(port, grpc_headers(port, call.path, csrf=CSRF_TOKEN if call.csrf else None), call.framed)
    code, text = grpc_status(response)
    assert code is not None, response
    return status_name(code), text


@pytest.mark.invariant("WIRE-3")
@given(calls=st.lists(st.one_of(valid_calls(), garbage_calls(), frame_garbage_calls()), min_size=1, max_size=8))
def test_mixed_valid_and_garbage_calls_lose_no_journal_entry(
    fake_ls: FakeLSThread, channel: grpc.Channel, calls: list[MixedCall]
) -> None:
    """Whatever the mix of well-formed and malformed calls, the journal grows by exactly one entry
    per call, in call order, each with the path, bytes and status of its call."""
    since = len(fake_ls.journal)
    outcomes: list[tuple[str, str]] = []
    for call in calls:
        outcomes.append(_send_mixed(fake_ls, channel, call))
        assert outcomes[-1][0] not in {"UNKNOWN", "INTERNAL"}, (call, outcomes[-1])
    entries = fake_ls.journal.entries(since=since)
    assert len(entries) == len(calls), [(c.label, o) for c, o in zip(calls, outcomes, strict=True)]
    for call, (code, text), entry in zip(calls, outcomes, entries, strict=True):
        assert (entry.path, entry.raw, entry.status, entry.error) == (call.path, call.body, code, text), call.label
    assert [e.seq for e in entries] == list(range(since, since + len(calls)))
