"""WIRE-3: malformed frames or protobuf get a clean gRPC error, the server stays up, and the
journal records the rejected request.

Two layers are attacked:

* the protobuf, with a real grpcio client making generic calls (raw bytes in, raw bytes out) to
  every RPC of the service: arbitrary bytes and bytes that are wrong on purpose (truncated varints,
  length prefixes past the end, wire types 6 and 7, field number 0, deeply nested groups, invalid
  UTF-8 in string fields);
* the gRPC framing and the HTTP/2 request, with the raw client of :mod:`tests.support.h2client`.

What grpcio (1.85) does before our handler runs, measured and pinned here:

* it never shows the handler the ``content-type``, and accepts ``application/json``, ``text/plain``
  or none at all as if it were ``application/grpc``;
* a truncated frame (length prefix longer than the body), an empty body and a frame cut by a
  disconnect reach the handler as zero messages; the partial bytes are lost, so the journal holds
  ``raw == b""`` for them;
* a frame with the compressed flag and no ``grpc-encoding`` is answered by grpc core with
  INTERNAL "Compression bit set but no encoding configured"; the handler still runs, sees zero
  messages and journals INVALID_ARGUMENT with the pipeline's text (the client never sees it);
* two frames in one unary request reach the handler as two messages (journaled concatenated);
* GET, a missing ``te: trailers`` header and bytes that are not HTTP/2 are refused by grpc core
  (RST_STREAM INTERNAL_ERROR, or the connection is closed) without calling any handler, so
  nothing can be journaled;
* a client that resets the stream or disconnects mid-request cancels the handler; the transport
  journals the call as CANCELLED before the cancellation completes.
"""

from __future__ import annotations

import struct
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import grpc
import pytest
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import DecodeError
from hypothesis import event, given
from hypothesis import strategies as st

from conformance import wire_bytes as wb
from fakels.journal import JournalEntry
from fakels.proto.exa.language_server_pb import language_server_pb2 as ls
from fakels.proto.exa.language_server_pb import language_server_pb2_grpc as ls_grpc
from fakels.rpcs import RPCS, SERVICE_NAME, Rpc
from fakels.server import FakeLSThread
from tests.support.fake_ls import CSRF_TOKEN
from tests.support.h2client import H2Client, H2Response, request, send_raw

CSRF_HEADER = "x-codeium-csrf-token"
PROTO_ERROR = "proto: cannot parse invalid wire-format data"
NO_MESSAGE = "takes exactly one request message, got no complete request message"
CANCELLED_TEXT = "the client cancelled the call or closed the connection before the request was complete"
RPC_LIST: tuple[Rpc, ...] = tuple(sorted(RPCS.values(), key=lambda rpc: rpc.name))
START = RPCS["StartCascade"]
CALL_TIMEOUT = 10.0

# ---------------------------------------------------------------------------------------- helpers


def _frame(payload: bytes, flag: int = 0) -> bytes:
    """One gRPC length-prefixed message."""
    return bytes([flag]) + struct.pack(">I", len(payload)) + payload


def _headers(
    port: int,
    path: str,
    *,
    csrf: str | None = CSRF_TOKEN,
    content_type: str | None = "application/grpc",
    method: str = "POST",
    te: bool = True,
) -> list[tuple[str, str]]:
    """Request headers as grpc.js sends them (wire.md 1.2), with the parts a test wants changed."""
    headers = [(":method", method), (":scheme", "http"), (":authority", f"127.0.0.1:{port}"), (":path", path)]
    if te:
        headers.append(("te", "trailers"))
    if content_type is not None:
        headers.append(("content-type", content_type))
    headers.append(("user-agent", "grpc-node/1.108.2"))
    if csrf is not None:
        headers.append((CSRF_HEADER, csrf))
    return headers


def _grpc_status(response: H2Response) -> tuple[int | None, str]:
    """``grpc-status`` and the percent-decoded ``grpc-message``; trailers win (wire.md 1.4)."""
    source = response.trailers if "grpc-status" in response.trailers else response.headers
    status = source.get("grpc-status")
    return (int(status) if status is not None else None), urllib.parse.unquote(source.get("grpc-message", ""))


def _status_name(code: int) -> str:
    return str(next(status.name for status in grpc.StatusCode if status.value[0] == code))


def _new_entries(fake: FakeLSThread, since: int, expected: int = 1, wait: float = 5.0) -> list[JournalEntry]:
    """The journal entries after ``since``, once there are ``expected`` of them (handlers that
    run after grpc core already answered, or after the client left, journal a moment later)."""
    deadline = time.monotonic() + wait
    while len(fake.journal) - since < expected and time.monotonic() < deadline:
        time.sleep(0.005)
    time.sleep(0.02)  # a surplus entry would show up now
    return fake.journal.entries(since=since)


def _one_new_entry(fake: FakeLSThread, since: int) -> JournalEntry:
    entries = _new_entries(fake, since)
    assert len(entries) == 1, [(e.method, e.status, e.error) for e in entries]
    return entries[0]


def _assert_still_serving(fake: FakeLSThread) -> None:
    """A well-formed StartCascade from a real grpcio client succeeds and is journaled OK."""
    since = len(fake.journal)
    with grpc.insecure_channel(fake.address) as channel:
        stub = ls_grpc.LanguageServerServiceStub(channel)
        reply = stub.StartCascade(ls.StartCascadeRequest(), metadata=[(CSRF_HEADER, CSRF_TOKEN)], timeout=CALL_TIMEOUT)
    assert reply.cascade_id.startswith("fakels-cascade-")
    entry = _one_new_entry(fake, since)
    assert (entry.method, entry.status) == ("StartCascade", "OK")


def _invoke(channel: grpc.Channel, rpc: Rpc, body: bytes, metadata: list[tuple[str, str]]) -> tuple[str, str]:
    """Send ``body`` unframed-by-us to ``rpc`` with a generic grpcio call; (status name, details)."""
    try:
        if rpc.server_streaming:
            stream = channel.unary_stream(rpc.path, request_serializer=None, response_deserializer=None)
            for _ in stream(body, metadata=metadata, timeout=CALL_TIMEOUT):
                pass
        else:
            unary = channel.unary_unary(rpc.path, request_serializer=None, response_deserializer=None)
            unary(body, metadata=metadata, timeout=CALL_TIMEOUT)
    except grpc.RpcError as exc:
        return exc.code().name, exc.details() or ""
    return "OK", ""


def _parses(rpc: Rpc, body: bytes) -> bool:
    try:
        rpc.request_type().ParseFromString(body)
    except DecodeError:
        return False
    return True


# ------------------------------------------------------------------------------ garbage strategies

BAD_UTF8: tuple[bytes, ...] = (
    b"\xff",  # never valid
    b"\xc3\x28",  # bad continuation byte
    b"\xc0\xaf",  # overlong encoding of "/"
    b"\xed\xa0\x80",  # UTF-16 surrogate half
    b"\xf4\x90\x80\x80",  # above U+10FFFF
    b"\xe2\x82",  # truncated sequence
)


@dataclass(frozen=True)
class Garbage:
    """A request body for ``rpc``; ``must_fail`` says the generator built it to be unparseable."""

    rpc: Rpc
    body: bytes
    kind: str
    must_fail: bool


def _string_paths(descriptor: Any, depth: int = 2) -> list[tuple[int, ...]]:
    """Field-number paths to string fields, at most ``depth`` messages down."""
    paths: list[tuple[int, ...]] = []
    for fd in descriptor.fields:
        if fd.type == FieldDescriptor.TYPE_STRING:
            paths.append((fd.number,))
        elif fd.type == FieldDescriptor.TYPE_MESSAGE and depth > 1:
            paths.extend((fd.number, *rest) for rest in _string_paths(fd.message_type, depth - 1))
    return paths


STRING_PATHS: dict[str, list[tuple[int, ...]]] = {
    rpc.name: _string_paths(rpc.request_type.DESCRIPTOR) for rpc in RPC_LIST
}


def _nest(path: tuple[int, ...], payload: bytes) -> bytes:
    """``payload`` as the LEN field at ``path``, wrapped in its enclosing messages."""
    for number in reversed(path):
        payload = wb.key(number, wb.LEN) + wb.varint(len(payload)) + payload
    return payload


field_numbers = st.integers(min_value=1, max_value=(1 << 29) - 1)
small_field_numbers = st.integers(min_value=1, max_value=20)
valid_prefixes = st.sampled_from([b"", wb.field(1, "fakels"), wb.field(2, 7), wb.field(15, b"\x00\x01")])


STRUCTURED_KINDS: tuple[str, ...] = (
    "truncated-varint", "truncated-tag", "len-past-end", "bad-wire-type", "field-zero", "nested-groups",
    "unbalanced-group", "bad-utf8",
)
ALL_KINDS: tuple[str, ...] = ("arbitrary", *STRUCTURED_KINDS)


@st.composite
def garbage(draw: st.DrawFn, kinds: tuple[str, ...] = ALL_KINDS) -> Garbage:
    rpc = draw(st.sampled_from(RPC_LIST))
    kind = draw(st.sampled_from(kinds))
    prefix = draw(valid_prefixes)
    number = draw(small_field_numbers)
    if kind == "arbitrary":
        return Garbage(rpc, draw(st.binary(max_size=200)), kind, must_fail=False)
    if kind == "truncated-varint":
        cut = wb.varint(draw(st.integers(min_value=1 << 7, max_value=(1 << 64) - 1)))
        body = prefix + wb.key(number, wb.VARINT) + cut[: draw(st.integers(min_value=1, max_value=len(cut) - 1))]
    elif kind == "truncated-tag":
        body = prefix + b"\x80" * draw(st.integers(min_value=1, max_value=4))
    elif kind == "len-past-end":
        payload = draw(st.binary(max_size=40))
        declared = len(payload) + draw(st.integers(min_value=1, max_value=1 << 31))
        body = prefix + wb.key(number, wb.LEN) + wb.varint(declared) + payload
    elif kind == "bad-wire-type":
        body = prefix + wb.key(draw(field_numbers), draw(st.sampled_from([6, 7]))) + draw(st.binary(max_size=20))
    elif kind == "field-zero":
        body = prefix + wb.key(0, draw(st.sampled_from([0, 1, 2, 5]))) + draw(st.binary(min_size=8, max_size=20))
    elif kind == "nested-groups":
        # upb refuses more than 100 levels; the real LS (Go) has its own limit: not pinned.
        depth = draw(st.one_of(st.integers(min_value=1, max_value=100), st.integers(min_value=101, max_value=400)))
        outer = draw(st.integers(min_value=1000, max_value=2000))
        body = prefix + wb.key(outer, 3) * depth + wb.key(outer, 4) * depth
        return Garbage(rpc, body, kind, must_fail=False)
    elif kind == "unbalanced-group":
        end = draw(st.sampled_from(["none", "other-number", "end-only"]))
        start = wb.key(number, 3) if end != "end-only" else b""
        close = {"none": b"", "other-number": wb.key(number + 1, 4), "end-only": wb.key(number, 4)}[end]
        body = prefix + start + close
    else:  # bad-utf8
        paths = STRING_PATHS[rpc.name]
        assert paths, f"{rpc.name} has no string field within two levels"
        text = draw(st.text(alphabet=st.characters(codec="ascii"), max_size=8)).encode()
        bad = text + draw(st.sampled_from(BAD_UTF8)) + text
        body = _nest(draw(st.sampled_from(paths)), bad)
    return Garbage(rpc, body, kind, must_fail=True)


# ----------------------------------------------------------------------- protobuf garbage (grpcio)


def _check_garbage_call(
    fake_ls: FakeLSThread, channel: grpc.Channel, csrf: list[tuple[str, str]], item: Garbage
) -> None:
    """Either the bytes parse (OK, or an LS-level error such as an unknown cascade) or the call
    fails with INVALID_ARGUMENT and the real LS's text; never UNKNOWN or INTERNAL. Exactly one
    journal entry holds the bytes sent and the status the client saw; the server keeps serving."""
    parses = _parses(item.rpc, item.body)
    if item.must_fail:
        assert not parses, f"generator bug: {item.kind} body parses"
    since = len(fake_ls.journal)

    code, details = _invoke(channel, item.rpc, item.body, csrf)
    event(f"{item.kind}: {code}")

    entry = _one_new_entry(fake_ls, since)
    assert (entry.method, entry.path, entry.transport) == (item.rpc.name, item.rpc.path, "grpc")
    assert entry.raw == item.body
    assert (entry.status, entry.error) == (code, details)
    if parses:
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
    code, details = _invoke(channel, rpc, body, csrf)
    assert code == "INVALID_ARGUMENT"
    assert details.startswith(f"{PROTO_ERROR} for exa.language_server_pb.GetCascadeTrajectoryRequest (6 bytes)")
    assert "UTF-8" in details
    entry = fake_ls.journal.last("GetCascadeTrajectory")
    assert (entry.raw, entry.status, entry.request) == (body, "INVALID_ARGUMENT", None)
    _assert_still_serving(fake_ls)


# ------------------------------------------------------------------- frame-level garbage (raw h2)

SERVICE = f"/{SERVICE_NAME}"
WORKSPACE = ls.AddTrackedWorkspaceRequest(workspace="/home/user/project").SerializeToString()
CASCADE = ls.GetCascadeTrajectoryRequest(cascade_id="fakels-cascade-9999").SerializeToString()


@dataclass(frozen=True)
class FrameCase:
    """One raw HTTP/2 request, what the client must see, and what the journal must hold."""

    id: str
    path: str
    body: bytes
    grpc_status: grpc.StatusCode
    client_text: str
    journal_status: str
    journal_raw: bytes
    journal_text: str
    csrf: str | None = CSRF_TOKEN
    content_type: str | None = "application/grpc"
    decoded: bool = False


FRAME_CASES: tuple[FrameCase, ...] = (
    FrameCase(
        "truncated-frame", START.path, b"\x00\x00\x00\x00\x64" + b"\x0a\x05hello",
        grpc.StatusCode.INVALID_ARGUMENT, NO_MESSAGE, "INVALID_ARGUMENT", b"", NO_MESSAGE,
    ),
    FrameCase(
        "truncated-length-prefix", START.path, b"\x00\x00\x00",
        grpc.StatusCode.INVALID_ARGUMENT, NO_MESSAGE, "INVALID_ARGUMENT", b"", NO_MESSAGE,
    ),
    # grpc core answers first; the handler still runs and journals its own view (zero messages).
    FrameCase(
        "compressed-flag-without-encoding", START.path, _frame(wb.field(1, [(1, "key")]), flag=1),
        grpc.StatusCode.INTERNAL, "Compression bit set but no encoding configured", "INVALID_ARGUMENT", b"",
        NO_MESSAGE,
    ),
    FrameCase(
        "empty-body", START.path, b"",
        grpc.StatusCode.INVALID_ARGUMENT, NO_MESSAGE, "INVALID_ARGUMENT", b"", NO_MESSAGE,
    ),
    FrameCase(
        "two-messages-to-unary", RPCS["AddTrackedWorkspace"].path, _frame(WORKSPACE) + _frame(wb.field(1, "/tmp")),
        grpc.StatusCode.INVALID_ARGUMENT, "AddTrackedWorkspace takes exactly one request message, got 2 request",
        "INVALID_ARGUMENT", WORKSPACE + wb.field(1, "/tmp"), "got 2 request messages",
    ),
    FrameCase(
        "garbage-protobuf-in-frame", START.path, _frame(b"\x0f\xff"),
        grpc.StatusCode.INVALID_ARGUMENT, PROTO_ERROR, "INVALID_ARGUMENT", b"\x0f\xff", PROTO_ERROR,
    ),
    FrameCase(
        "unknown-method-in-service", f"{SERVICE}/NoSuchMethod", _frame(WORKSPACE),
        grpc.StatusCode.UNIMPLEMENTED, f"fakels: unknown method '{SERVICE}/NoSuchMethod'", "UNIMPLEMENTED", WORKSPACE,
        "unknown method",
    ),
    FrameCase(
        "unknown-service", "/grpc.health.v1.Health/Check", _frame(b""),
        grpc.StatusCode.UNIMPLEMENTED, "fakels: unknown method '/grpc.health.v1.Health/Check'", "UNIMPLEMENTED", b"",
        "unknown method",
    ),
    FrameCase(
        "missing-csrf-token", RPCS["GetCascadeTrajectory"].path, _frame(CASCADE),
        grpc.StatusCode.UNAUTHENTICATED, f"fakels: missing CSRF token: send the {CSRF_HEADER} header",
        "UNAUTHENTICATED", CASCADE, "missing CSRF token", csrf=None, decoded=True,
    ),
    FrameCase(
        "wrong-csrf-token", RPCS["GetCascadeTrajectory"].path, _frame(CASCADE),
        grpc.StatusCode.UNAUTHENTICATED, f"fakels: invalid CSRF token in {CSRF_HEADER}",
        "UNAUTHENTICATED", CASCADE, "invalid CSRF token", csrf="not-the-token", decoded=True,
    ),
    FrameCase(
        "json-content-type-garbage-body", START.path, _frame(b"\x0a\xff"),
        grpc.StatusCode.INVALID_ARGUMENT, PROTO_ERROR, "INVALID_ARGUMENT", b"\x0a\xff", PROTO_ERROR,
        content_type="application/json",
    ),
)


@pytest.mark.invariant("WIRE-3")
@pytest.mark.parametrize("case", FRAME_CASES, ids=[case.id for case in FRAME_CASES])
def test_malformed_request_gets_clean_status_and_is_journaled(fake_ls: FakeLSThread, case: FrameCase) -> None:
    port = fake_ls.ports.grpc
    since = len(fake_ls.journal)

    response = request(port, _headers(port, case.path, csrf=case.csrf, content_type=case.content_type), case.body)

    assert response.ended
    assert response.reset is None
    assert response.status == 200
    code, text = _grpc_status(response)
    assert code is not None
    assert code == case.grpc_status.value[0], (code, text)
    assert case.client_text in text
    assert response.data == b""
    entry = _one_new_entry(fake_ls, since)
    assert entry.path == case.path
    assert entry.method == case.path.rsplit("/", 1)[-1]
    assert entry.raw == case.journal_raw
    assert entry.status == case.journal_status
    assert case.journal_text in entry.error
    assert (entry.request is not None) == case.decoded
    if case.journal_status == _status_name(code):
        assert entry.error == text  # the journal holds exactly what the client read
    _assert_still_serving(fake_ls)


@pytest.mark.invariant("WIRE-3")
@pytest.mark.parametrize("content_type", ["application/json", "text/plain", None])
def test_wrong_content_type_is_not_checked_by_grpcio(fake_ls: FakeLSThread, content_type: str | None) -> None:
    """grpcio neither rejects a non-gRPC ``content-type`` nor shows it to the handler: the call
    is served as gRPC and the journal sees it only through its path and body (no content-type
    among the recorded headers). The real LS (grpc-go) would answer 415; fakels cannot."""
    port = fake_ls.ports.grpc
    since = len(fake_ls.journal)
    response = request(port, _headers(port, START.path, content_type=content_type), _frame(b""))
    assert response.status == 200
    assert _grpc_status(response) == (0, "")
    assert response.data[5:] == ls.StartCascadeResponse(cascade_id="fakels-cascade-0001").SerializeToString()
    entry = _one_new_entry(fake_ls, since)
    assert (entry.method, entry.raw, entry.status) == ("StartCascade", b"", "OK")
    assert "content-type" not in entry.headers
    assert entry.headers[CSRF_HEADER] == CSRF_TOKEN
    _assert_still_serving(fake_ls)


@pytest.mark.invariant("WIRE-3")
@pytest.mark.xfail(
    strict=False,  # grpc core is not even consistent: now and then the handler sees zero messages instead
    reason="known gap: grpc core (grpcio 1.85) mostly ignores the reserved flag bits and never shows the flag byte "
    "to the handler, so fakels serves such a frame; grpc-go (the real LS) answers INTERNAL 'unexpected payload format'",
)
@pytest.mark.parametrize("flag", [0x02, 0x80, 0xFE], ids=["0x02", "0x80", "0xfe"])
def test_reserved_flag_bits_are_rejected(fake_ls: FakeLSThread, flag: int) -> None:
    port = fake_ls.ports.grpc
    response = request(port, _headers(port, START.path), _frame(b"", flag))
    code, _ = _grpc_status(response)
    _assert_still_serving(fake_ls)
    assert code not in (None, 0)


@pytest.mark.invariant("WIRE-3")
def test_oversized_request_is_refused_with_resource_exhausted() -> None:
    """ServerConfig.max_request_bytes bounds the protobuf: at the limit the call is served, one
    byte over (and far over) it is RESOURCE_EXHAUSTED with both sizes in the text, journaled
    with every byte."""

    def workspace_request(size: int) -> bytes:
        body = ls.AddTrackedWorkspaceRequest(workspace="w" * (size - 3)).SerializeToString()
        assert len(body) == size
        return body

    rpc = RPCS["AddTrackedWorkspace"]
    with FakeLSThread(csrf_token=CSRF_TOKEN, max_request_bytes=1024) as fake:
        port = fake.ports.grpc
        for size, want in ((1024, 0), (1025, 8), (4096, 8)):
            body = workspace_request(size)
            since = len(fake.journal)
            response = request(port, _headers(port, rpc.path), _frame(body))
            code, text = _grpc_status(response)
            entry = _one_new_entry(fake, since)
            assert (code, entry.raw, entry.method) == (want, body, "AddTrackedWorkspace")
            if want:
                assert text == f"fakels: request of {size} bytes exceeds the limit of 1024 bytes"
                assert (entry.status, entry.error, entry.request) == ("RESOURCE_EXHAUSTED", text, None)
            else:
                assert entry.status == "OK"
        # The same through grpcio's own client.
        with grpc.insecure_channel(fake.address) as channel:
            big = workspace_request(4096)
            assert _invoke(channel, rpc, big, [(CSRF_HEADER, CSRF_TOKEN)]) == (
                "RESOURCE_EXHAUSTED",
                "fakels: request of 4096 bytes exceeds the limit of 1024 bytes",
            )
        assert fake.journal.last("AddTrackedWorkspace").raw == big
        _assert_still_serving(fake)


def _close_at_once(client: H2Client, stream_id: int) -> None:
    client.close()


def _reset_stream(client: H2Client, stream_id: int) -> None:
    client.reset_stream(stream_id)
    client.close()


def _close_later(client: H2Client, stream_id: int) -> None:
    time.sleep(0.2)  # the handler is waiting for the rest of the frame by now
    client.close()


ABANDON: dict[str, Callable[[H2Client, int], None]] = {
    "disconnect-at-once": _close_at_once,
    "rst-stream": _reset_stream,
    "disconnect-while-handler-waits": _close_later,
}


@pytest.mark.invariant("WIRE-3")
@pytest.mark.parametrize("leave", list(ABANDON), ids=list(ABANDON))
@pytest.mark.parametrize("sent", [b"\x00\x00\x00\x00\x10\x0a\x04ab", b""], ids=["half-frame", "headers-only"])
def test_client_leaving_mid_request_is_journaled(fake_ls: FakeLSThread, leave: str, sent: bytes) -> None:
    """A client that sends the headers and part of a frame, then goes away. grpcio either cancels
    the handler (journaled CANCELLED by the transport) or ends its request stream with zero
    messages (journaled INVALID_ARGUMENT), depending on timing; either way exactly one entry, with
    none of the partial bytes, and the server keeps serving. No status can reach the client."""
    port = fake_ls.ports.grpc
    since = len(fake_ls.journal)
    client = H2Client(port)
    stream_id = client.start(_headers(port, START.path), sent, end_stream=False)
    ABANDON[leave](client, stream_id)

    entry = _one_new_entry(fake_ls, since)
    assert (entry.method, entry.path, entry.raw, entry.request) == ("StartCascade", START.path, b"", None)
    assert entry.status in {"CANCELLED", "INVALID_ARGUMENT"}
    assert (CANCELLED_TEXT if entry.status == "CANCELLED" else NO_MESSAGE) in entry.error
    _assert_still_serving(fake_ls)


@pytest.mark.invariant("WIRE-3")
@pytest.mark.parametrize(
    ("case", "method", "te"), [("get", "GET", True), ("no-te-trailers", "POST", False)], ids=["GET", "no-te"]
)
def test_requests_grpc_core_refuses_never_reach_the_handler(
    fake_ls: FakeLSThread, case: str, method: str, te: bool
) -> None:
    """grpc core resets these streams (RST_STREAM INTERNAL_ERROR, no HTTP status, no grpc-status)
    before any handler runs, so the journal cannot record them: it stays unchanged."""
    port = fake_ls.ports.grpc
    since = len(fake_ls.journal)
    response = request(port, _headers(port, START.path, method=method, te=te), b"" if method == "GET" else _frame(b""))
    assert response.reset == 2, case  # h2 ErrorCodes.INTERNAL_ERROR
    assert response.status is None
    assert _new_entries(fake_ls, since, wait=0.2) == []
    _assert_still_serving(fake_ls)


@pytest.mark.invariant("WIRE-3")
@pytest.mark.parametrize(
    "data",
    [b"POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\n\x00\x00\x00\x00\x00", b"\x00\xff" * 64],
    ids=["http1", "binary-noise"],
)
def test_bytes_that_are_not_http2_do_not_hurt_the_server(fake_ls: FakeLSThread, data: bytes) -> None:
    """grpc core answers a bad connection preface with its SETTINGS and a GOAWAY (or just closes);
    no handler runs, nothing is journaled, other connections are unaffected."""
    since = len(fake_ls.journal)
    send_raw(fake_ls.ports.grpc, data)
    assert _new_entries(fake_ls, since, wait=0.2) == []
    _assert_still_serving(fake_ls)


# ---------------------------------------------------------------------------- mixed call sequences


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
        return MixedCall(kind, rpc.path, b"", framed=_frame(payload)[: 4 + len(payload)])
    if kind == "empty":
        return MixedCall(kind, rpc.path, b"", framed=b"")
    if kind == "two-messages":
        return MixedCall(kind, rpc.path, payload * 2, framed=_frame(payload) * 2)
    if kind == "unknown-method":
        return MixedCall(kind, f"{SERVICE}/{rpc.name}Nope", payload, framed=_frame(payload))
    return MixedCall(kind, rpc.path, payload, framed=_frame(payload), csrf=False)


def _send_mixed(fake: FakeLSThread, channel: grpc.Channel, call: MixedCall) -> tuple[str, str]:
    if call.framed is None:
        rpc = next(rpc for rpc in RPC_LIST if rpc.path == call.path)
        return _invoke(channel, rpc, call.body, [(CSRF_HEADER, CSRF_TOKEN)])
    port = fake.ports.grpc
    response = request(port, _headers(port, call.path, csrf=CSRF_TOKEN if call.csrf else None), call.framed)
    code, text = _grpc_status(response)
    assert code is not None, response
    return _status_name(code), text


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
