"""WIRE-3, the protobuf layer: malformed protobuf gets a clean gRPC error, the server stays up,
and the journal records the rejected request.

A real grpcio client makes generic calls (raw bytes in, raw bytes out) to every RPC of the
service: arbitrary bytes and bytes that are wrong on purpose (truncated varints, length prefixes
past the end, wire types 6 and 7, field number 0, deeply nested groups, invalid UTF-8 in string
fields). The framing and HTTP/2 layer is ``test_wire_garbage_frames.py``; both mixed in one
sequence, ``test_wire_garbage_mixed.py``.
"""

from __future__ import annotations

import grpc
import pytest
from hypothesis import event, given

from conformance import wire_bytes as wb
from fakels.proto.exa.language_server_pb import language_server_pb2 as ls
from fakels.proto.exa.language_server_pb import language_server_pb2_grpc as ls_grpc
from fakels.rpcs import RPCS
from fakels.server import FakeLSThread
from tests.support.grpc_garbage import (
    CALL_TIMEOUT,
    PROTO_ERROR,
    STRUCTURED_KINDS,
    Garbage,
    assert_still_serving,
    garbage,
    invoke_raw,
    one_new_entry,
    parses_as_request,
)


def _check_garbage_call(
    fake_ls: FakeLSThread, channel: grpc.Channel, csrf: list[tuple[str, str]], item: Garbage
) -> None:
    """Either the bytes parse (OK, or an LS-level error such as an unknown cascade) or the call
    fails with INVALID_ARGUMENT and the real LS's text; never UNKNOWN or INTERNAL. Exactly one
    journal entry holds the bytes sent and the status the client saw; the server keeps serving."""
    parseable = parses_as_request(item.rpc, item.body)
    if item.must_fail:
        assert not parseable, f"generator bug: {item.kind} body parses"
    since = len(fake_ls.journal)

    code, details = invoke_raw(channel, item.rpc, item.body, csrf)
    event(f"{item.kind}: {code}")

    entry = one_new_entry(fake_ls, since)
    assert (entry.method, entry.path, entry.transport) == (item.rpc.name, item.rpc.path, "grpc")
    assert entry.raw == item.body
    assert (entry.status, entry.error) == (code, details)
    if parseable:
        assert code in {"OK", "NOT_FOUND"}, (code, details)
        assert entry.request is not None
    else:
        assert code == "INVALID_ARGUMENT"
        full_name = item.rpc.request_type.DESCRIPTOR.full_name
        assert details.startswith(f"{PROTO_ERROR} for {full_name} ({len(item.body)} bytes): ")
        assert entry.request is None

    # The server still answers a valid call on the same channel.
    stub = ls_grpc.LanguageServerServiceStub(channel)
    assert stub.StartCascade(ls.StartCascadeRequest(), metadata=csrf, timeout=CALL_TIMEOUT).cascade_id


@pytest.mark.invariant("WIRE-3")
@given(item=garbage(STRUCTURED_KINDS))
def test_structured_garbage_protobuf_gets_clean_status_and_one_journal_entry(
    fake_ls: FakeLSThread, channel: grpc.Channel, csrf: list[tuple[str, str]], item: Garbage
) -> None:
    """Bytes built to be wrong: truncated varints and tags, LEN past the end, wire types 6/7,
    field 0, unbalanced or deeply nested groups, invalid UTF-8 in string fields."""
    _check_garbage_call(fake_ls, channel, csrf, item)


@pytest.mark.invariant("WIRE-3")
@given(item=garbage(("arbitrary",)))
def test_arbitrary_bytes_get_clean_status_and_one_journal_entry(
    fake_ls: FakeLSThread, channel: grpc.Channel, csrf: list[tuple[str, str]], item: Garbage
) -> None:
    """Arbitrary bytes to every RPC: some parse (unknown fields), most do not."""
    _check_garbage_call(fake_ls, channel, csrf, item)


@pytest.mark.invariant("WIRE-3")
def test_invalid_utf8_in_cascade_id_is_rejected_with_the_ls_text(
    fake_ls: FakeLSThread, channel: grpc.Channel, csrf: list[tuple[str, str]]
) -> None:
    """The case real gateways hit: a cascade_id that is not UTF-8 (wire.md 4 quotes the LS)."""
    rpc = RPCS["GetCascadeTrajectory"]
    body = wb.key(1, wb.LEN) + wb.varint(4) + b"ab\xff\xfe"
    code, details = invoke_raw(channel, rpc, body, csrf)
    assert code == "INVALID_ARGUMENT"
    assert details.startswith(f"{PROTO_ERROR} for exa.language_server_pb.GetCascadeTrajectoryRequest (6 bytes)")
    assert "UTF-8" in details
    entry = fake_ls.journal.last("GetCascadeTrajectory")
    assert (entry.raw, entry.status, entry.request) == (body, "INVALID_ARGUMENT", None)
    assert_still_serving(fake_ls)
