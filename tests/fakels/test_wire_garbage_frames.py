"""WIRE-3, the gRPC framing and the HTTP/2 request: malformed frames get a clean gRPC error, the
server stays up, and the journal records the rejected request. The raw client is
:mod:`tests.support.h2client`.

What grpcio (1.85) does before our handler runs, measured and pinned here:
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

import re
import time
from collections.abc import Callable
from dataclasses import dataclass

import grpc
import pytest

from conformance import wire_bytes as wb
from fakels.proto.exa.language_server_pb import language_server_pb2 as ls
from fakels.rpcs import RPCS
from fakels.server import FakeLSThread
from tests.support.fake_ls import CSRF_TOKEN
from tests.support.grpc_garbage import (
    CANCELLED_TEXT,
    CSRF_HEADER,
    NO_MESSAGE,
    PROTO_ERROR,
    SERVICE,
    START,
    assert_still_serving,
    grpc_frame,
    grpc_headers,
    grpc_status,
    invoke_raw,
    new_entries,
    one_new_entry,
    status_name,
)
from tests.support.h2client import H2Client, request, send_raw

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
        "truncated-frame",
        START.path,
        b"\x00\x00\x00\x00\x64" + b"\x0a\x05hello",
        grpc.StatusCode.INVALID_ARGUMENT,
        NO_MESSAGE,
        "INVALID_ARGUMENT",
        b"",
        NO_MESSAGE,
    ),
    FrameCase(
        "truncated-length-prefix",
        START.path,
        b"\x00\x00\x00",
        grpc.StatusCode.INVALID_ARGUMENT,
        NO_MESSAGE,
        "INVALID_ARGUMENT",
        b"",
        NO_MESSAGE,
    ),
    # grpc core answers first; the handler still runs and journals its own view (zero messages).
    FrameCase(
        "compressed-flag-without-encoding",
        START.path,
        grpc_frame(wb.field(1, [(1, "key")]), flag=1),
        grpc.StatusCode.INTERNAL,
        "Compression bit set but no encoding configured",
        "INVALID_ARGUMENT",
        b"",
        NO_MESSAGE,
    ),
    FrameCase(
        "empty-body",
        START.path,
        b"",
        grpc.StatusCode.INVALID_ARGUMENT,
        NO_MESSAGE,
        "INVALID_ARGUMENT",
        b"",
        NO_MESSAGE,
    ),
    FrameCase(
        "two-messages-to-unary",
        RPCS["AddTrackedWorkspace"].path,
        grpc_frame(WORKSPACE) + grpc_frame(wb.field(1, "/tmp")),
        grpc.StatusCode.INVALID_ARGUMENT,
        "AddTrackedWorkspace takes exactly one request message, got 2 request",
        "INVALID_ARGUMENT",
        WORKSPACE + wb.field(1, "/tmp"),
        "got 2 request messages",
    ),
    FrameCase(
        "garbage-protobuf-in-frame",
        START.path,
        grpc_frame(b"\x0f\xff"),
        grpc.StatusCode.INVALID_ARGUMENT,
        PROTO_ERROR,
        "INVALID_ARGUMENT",
        b"\x0f\xff",
        PROTO_ERROR,
    ),
    FrameCase(
        "unknown-method-in-service",
        f"{SERVICE}/NoSuchMethod",
        grpc_frame(WORKSPACE),
        grpc.StatusCode.UNIMPLEMENTED,
        f"fakels: unknown method '{SERVICE}/NoSuchMethod'",
        "UNIMPLEMENTED",
        WORKSPACE,
        "unknown method",
    ),
    FrameCase(
        "unknown-service",
        "/grpc.health.v1.Health/Check",
        grpc_frame(b""),
        grpc.StatusCode.UNIMPLEMENTED,
        "fakels: unknown method '/grpc.health.v1.Health/Check'",
        "UNIMPLEMENTED",
        b"",
        "unknown method",
    ),
    FrameCase(
        "missing-csrf-token",
        RPCS["GetCascadeTrajectory"].path,
        grpc_frame(CASCADE),
        grpc.StatusCode.UNAUTHENTICATED,
        f"fakels: missing CSRF token: send the {CSRF_HEADER} header",
        "UNAUTHENTICATED",
        CASCADE,
        "missing CSRF token",
        csrf=None,
        decoded=True,
    ),
    FrameCase(
        "wrong-csrf-token",
        RPCS["GetCascadeTrajectory"].path,
        grpc_frame(CASCADE),
        grpc.StatusCode.UNAUTHENTICATED,
        f"fakels: invalid CSRF token in {CSRF_HEADER}",
        "UNAUTHENTICATED",
        CASCADE,
        "invalid CSRF token",
        csrf="not-the-token",
        decoded=True,
    ),
    FrameCase(
        "json-content-type-garbage-body",
        START.path,
        grpc_frame(b"\x0a\xff"),
        grpc.StatusCode.INVALID_ARGUMENT,
        PROTO_ERROR,
        "INVALID_ARGUMENT",
        b"\x0a\xff",
        PROTO_ERROR,
        content_type="application/json",
    ),
)


@pytest.mark.invariant("WIRE-3")
@pytest.mark.parametrize("case", FRAME_CASES, ids=[case.id for case in FRAME_CASES])
def test_malformed_request_gets_clean_status_and_is_journaled(fake_ls: FakeLSThread, case: FrameCase) -> None:
    port = fake_ls.ports.grpc
    since = len(fake_ls.journal)

    response = request(port, grpc_headers(port, case.path, csrf=case.csrf, content_type=case.content_type), case.body)

    assert response.ended
    assert response.reset is None
    assert response.status == 200
    code, text = grpc_status(response)
    assert code is not None
    assert code == case.grpc_status.value[0], (code, text)
    assert case.client_text in text
    assert response.data == b""
    entry = one_new_entry(fake_ls, since)
    assert entry.path == case.path
    assert entry.method == case.path.rsplit("/", 1)[-1]
    assert entry.raw == case.journal_raw
    assert entry.status == case.journal_status
    assert case.journal_text in entry.error
    assert (entry.request is not None) == case.decoded
    if case.journal_status == status_name(code):
        assert entry.error == text  # the journal holds exactly what the client read
    assert_still_serving(fake_ls)


@pytest.mark.invariant("WIRE-3")
@pytest.mark.parametrize("content_type", ["application/json", "text/plain", None])
def test_wrong_content_type_is_not_checked_by_grpcio(fake_ls: FakeLSThread, content_type: str | None) -> None:
    """grpcio neither rejects a non-gRPC ``content-type`` nor shows it to the handler: the call
    is served as gRPC and the journal sees it only through its path and body (no content-type
    among the recorded headers). The real LS (grpc-go) would answer 415; fakels cannot."""
    port = fake_ls.ports.grpc
    since = len(fake_ls.journal)
    response = request(port, grpc_headers(port, START.path, content_type=content_type), grpc_frame(b""))
    assert response.status == 200
    assert grpc_status(response) == (0, "")
    started = ls.StartCascadeResponse.FromString(response.data[5:])
    assert re.fullmatch(r"fakels-cascade-[0-9a-f]{8}-0001", started.cascade_id), started.cascade_id
    entry = one_new_entry(fake_ls, since)
    assert (entry.method, entry.raw, entry.status) == ("StartCascade", b"", "OK")
    assert "content-type" not in entry.headers
    assert entry.headers[CSRF_HEADER] == f"<redacted: matches, {len(CSRF_TOKEN)} characters>"
    assert_still_serving(fake_ls)


@pytest.mark.invariant("WIRE-3")
@pytest.mark.xfail(
    strict=False,  # grpc core is not even consistent: now and then the handler sees zero messages instead
    reason="known gap: grpc core (grpcio 1.85) mostly ignores the reserved flag bits and never shows the flag byte "
    "to the handler, so fakels serves such a frame; grpc-go (the real LS) answers INTERNAL 'unexpected payload format'",
)
@pytest.mark.parametrize("flag", [0x02, 0x80, 0xFE], ids=["0x02", "0x80", "0xfe"])
def test_reserved_flag_bits_are_rejected(fake_ls: FakeLSThread, flag: int) -> None:
    port = fake_ls.ports.grpc
    response = request(port, grpc_headers(port, START.path), grpc_frame(b"", flag))
    code, _ = grpc_status(response)
    assert_still_serving(fake_ls)
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
            response = request(port, grpc_headers(port, rpc.path), grpc_frame(body))
            code, text = grpc_status(response)
            entry = one_new_entry(fake, since)
            assert (code, entry.raw, entry.method) == (want, body, "AddTrackedWorkspace")
            if want:
                assert text == f"fakels: request of {size} bytes exceeds the limit of 1024 bytes"
                assert (entry.status, entry.error, entry.request) == ("RESOURCE_EXHAUSTED", text, None)
            else:
                assert entry.status == "OK"
        # The same through grpcio's own client.
        with grpc.insecure_channel(fake.address) as channel:
            big = workspace_request(4096)
            assert invoke_raw(channel, rpc, big, [(CSRF_HEADER, CSRF_TOKEN)]) == (
                "RESOURCE_EXHAUSTED",
                "fakels: request of 4096 bytes exceeds the limit of 1024 bytes",
            )
        assert fake.journal.last("AddTrackedWorkspace").raw == big
        assert_still_serving(fake)


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
    stream_id = client.start(grpc_headers(port, START.path), sent, end_stream=False)
    ABANDON[leave](client, stream_id)

    entry = one_new_entry(fake_ls, since)
    assert (entry.method, entry.path, entry.raw, entry.request) == ("StartCascade", START.path, b"", None)
    assert entry.status in {"CANCELLED", "INVALID_ARGUMENT"}
    assert (CANCELLED_TEXT if entry.status == "CANCELLED" else NO_MESSAGE) in entry.error
    assert_still_serving(fake_ls)


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
    body = b"" if method == "GET" else grpc_frame(b"")
    response = request(port, grpc_headers(port, START.path, method=method, te=te), body)
    assert response.reset == 2, case  # h2 ErrorCodes.INTERNAL_ERROR
    assert response.status is None
    assert new_entries(fake_ls, since, wait=0.2) == []
    assert_still_serving(fake_ls)


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
    assert new_entries(fake_ls, since, wait=0.2) == []
    assert_still_serving(fake_ls)
