"""Helpers for the WIRE-3 tests (malformed input): raw gRPC frames and request headers, the
status a raw HTTP/2 response carries, waiting for journal entries, generic grpcio calls with
raw bytes, and the Hypothesis strategy of protobuf garbage."""

from __future__ import annotations

import struct
import time
import urllib.parse
from dataclasses import dataclass
from typing import Any

import grpc
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import DecodeError
from hypothesis import strategies as st

from conformance import wire_bytes as wb
from fakels.journal import JournalEntry
from fakels.proto.exa.language_server_pb import language_server_pb2 as ls
from fakels.proto.exa.language_server_pb import language_server_pb2_grpc as ls_grpc
from fakels.rpcs import RPCS, SERVICE_NAME, Rpc
from fakels.server import FakeLSThread
from tests.support.fake_ls import CSRF_TOKEN
from tests.support.h2client import H2Response

CSRF_HEADER = "x-codeium-csrf-token"
PROTO_ERROR = "proto: cannot parse invalid wire-format data"
NO_MESSAGE = "takes exactly one request message, got no complete request message"
CANCELLED_TEXT = "the client cancelled the call or closed the connection before the request was complete"
RPC_LIST: tuple[Rpc, ...] = tuple(sorted(RPCS.values(), key=lambda rpc: rpc.name))
START = RPCS["StartCascade"]
CALL_TIMEOUT = 10.0
SERVICE = f"/{SERVICE_NAME}"


def grpc_frame(payload: bytes, flag: int = 0) -> bytes:
    """One gRPC length-prefixed message."""
    return bytes([flag]) + struct.pack(">I", len(payload)) + payload


def grpc_headers(
    port: int,
    path: str,
    *,
    csrf: str | None = CSRF_TOKEN,
    content_type: str | None = "application/grpc",
    method: str = "POST",
    te: bool = True,
) -> list[tuple[str, str]]:
    """Request headers as grpc.js sends them (wire.md 1.2), with the parts a test wants changed."""
    sent = [(":method", method), (":scheme", "http"), (":authority", f"127.0.0.1:{port}"), (":path", path)]
    if te:
        sent.append(("te", "trailers"))
    if content_type is not None:
        sent.append(("content-type", content_type))
    sent.append(("user-agent", "grpc-node/1.108.2"))
    if csrf is not None:
        sent.append((CSRF_HEADER, csrf))
    return sent


def grpc_status(response: H2Response) -> tuple[int | None, str]:
    """``grpc-status`` and the percent-decoded ``grpc-message``; trailers win (wire.md 1.4)."""
    source = response.trailers if "grpc-status" in response.trailers else response.headers
    status = source.get("grpc-status")
    return (int(status) if status is not None else None), urllib.parse.unquote(source.get("grpc-message", ""))


def status_name(code: int) -> str:
    return str(next(status.name for status in grpc.StatusCode if status.value[0] == code))


def new_entries(fake: FakeLSThread, since: int, expected: int = 1, wait: float = 5.0) -> list[JournalEntry]:
    """The journal entries after ``since``, once there are ``expected`` of them (handlers that
    run after grpc core already answered, or after the client left, journal a moment later)."""
    deadline = time.monotonic() + wait
    while len(fake.journal) - since < expected and time.monotonic() < deadline:
        time.sleep(0.005)
    time.sleep(0.02)  # a surplus entry would show up now
    return fake.journal.entries(since=since)


def one_new_entry(fake: FakeLSThread, since: int) -> JournalEntry:
    entries = new_entries(fake, since)
    assert len(entries) == 1, [(e.method, e.status, e.error) for e in entries]
    return entries[0]


def assert_still_serving(fake: FakeLSThread) -> None:
    """A well-formed StartCascade from a real grpcio client succeeds and is journaled OK."""
    since = len(fake.journal)
    with grpc.insecure_channel(fake.address) as channel:
        stub = ls_grpc.LanguageServerServiceStub(channel)
        reply = stub.StartCascade(ls.StartCascadeRequest(), metadata=[(CSRF_HEADER, CSRF_TOKEN)], timeout=CALL_TIMEOUT)
    assert reply.cascade_id.startswith("fakels-cascade-")
    entry = one_new_entry(fake, since)
    assert (entry.method, entry.status) == ("StartCascade", "OK")


def invoke_raw(channel: grpc.Channel, rpc: Rpc, body: bytes, metadata: list[tuple[str, str]]) -> tuple[str, str]:
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


def parses_as_request(rpc: Rpc, body: bytes) -> bool:
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
    "truncated-varint",
    "truncated-tag",
    "len-past-end",
    "bad-wire-type",
    "field-zero",
    "nested-groups",
    "unbalanced-group",
    "bad-utf8",
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
        text = draw(st.text(alphabet=st.characters(max_codepoint=0x7F), max_size=8)).encode()
        bad = text + draw(st.sampled_from(BAD_UTF8)) + text
        body = _nest(draw(st.sampled_from(paths)), bad)
    return Garbage(rpc, body, kind, must_fail=True)
