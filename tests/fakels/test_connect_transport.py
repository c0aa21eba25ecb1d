"""The Connect transport (``application/connect+proto`` over h2c) against real sockets on loopback."""

from __future__ import annotations

import base64
import gzip
import json
import os
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from google.protobuf.message import Message

from fakels.decoder import message_to_dict
from fakels.journal import JournalEntry
from fakels.proto.exa.chat_pb import chat_pb2 as chat
from fakels.proto.exa.codeium_common_pb import codeium_common_pb2 as common
from fakels.proto.exa.cortex_pb import cortex_pb2 as cortex
from fakels.proto.exa.language_server_pb import language_server_pb2 as ls
from fakels.scenario import Chunk, Scenario, Turn, default_answer
from fakels.server import FakeLSThread
from tests.support.fake_ls import CSRF_TOKEN, StartFakeLs
from tests.support.h2client import H2Client, H2Response, send_raw

SERVICE_PATH = "/exa.language_server_pb.LanguageServerService/"
CONNECT_PROTO = "application/connect+proto"
IDLE = cortex.CascadeRunStatus.CASCADE_RUN_STATUS_IDLE
RUNNING = cortex.CascadeRunStatus.CASCADE_RUN_STATUS_RUNNING

META = common.Metadata(
    ide_name="windsurf", extension_version="1.48.2", api_key="sk-test", locale="en", session_id="session-1"
)


@pytest.fixture
def fake(start_fake_ls: StartFakeLs) -> FakeLSThread:
    return start_fake_ls(csrf_token=CSRF_TOKEN, connect_port=0)


@pytest.fixture
def port(fake: FakeLSThread) -> int:
    assert fake.ports.connect is not None
    return fake.ports.connect


# ---------------------------------------------------------------- what a Connect client sends and reads


def connect_headers(
    method: str, *, token: str | None = CSRF_TOKEN, content_type: str = CONNECT_PROTO, http_method: str = "POST"
) -> list[tuple[str, str]]:
    """The headers of connect-es as the gateway sends them (wire.md 1.3): no connect-content-encoding."""
    headers = [
        (":method", http_method),
        (":scheme", "http"),
        (":authority", "127.0.0.1"),
        (":path", SERVICE_PATH + method),
        ("content-type", content_type),
        ("connect-protocol-version", "1"),
        ("connect-accept-encoding", "gzip"),
        ("user-agent", "connect-es/2.0.0"),
    ]
    if token is not None:
        headers.append(("x-codeium-csrf-token", token))
    return headers


def envelope(payload: bytes, flags: int | None = None) -> bytes:
    """The real client's envelope: gzip (flag 0x01) unless the payload is empty."""
    if flags is None:
        flags = 0x01 if payload else 0x00
    if flags & 0x01:
        payload = gzip.compress(payload)
    return bytes([flags]) + len(payload).to_bytes(4, "big") + payload


def read_envelopes(response: H2Response) -> tuple[list[bytes], dict[str, Any]]:
    """Data payloads and the end-stream JSON, checking the framing as the client does."""
    assert response.ended, f"stream did not end cleanly: {response}"
    assert response.headers["content-type"] == CONNECT_PROTO
    data, offset = response.data, 0
    payloads: list[bytes] = []
    while True:
        assert len(data) - offset >= 5, f"truncated response envelope at byte {offset}"
        flags, length = data[offset], int.from_bytes(data[offset + 1 : offset + 5], "big")
        payload = data[offset + 5 : offset + 5 + length]
        assert len(payload) == length
        offset += 5 + length
        if flags == 0x02:
            assert offset == len(data), "bytes after the end-stream envelope"
            return payloads, json.loads(payload)
        assert flags == 0x00, f"unexpected response envelope flags 0x{flags:02x}"
        payloads.append(payload)


def call(client: H2Client, method: str, request: Message) -> Any:
    """A successful unary call, as the gateway makes it; returns the decoded response."""
    response = client.request(connect_headers(method), envelope(request.SerializeToString()))
    assert response.status == 200
    payloads, end = read_envelopes(response)
    assert end == {}, end
    assert len(payloads) == 1
    return getattr(ls, f"{method}Response").FromString(payloads[0])


def call_error(client: H2Client, method: str, request: Message, **headers: Any) -> tuple[H2Response, dict[str, str]]:
    response = client.request(connect_headers(method, **headers), envelope(request.SerializeToString()))
    payloads, end = read_envelopes(response)
    assert payloads == []
    assert set(end) == {"error"}, end
    return response, end["error"]


def wait_for(predicate: Callable[[], bool], timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.01)


def heartbeat_works(port: int) -> None:
    with H2Client(port) as client:
        call(client, "Heartbeat", ls.HeartbeatRequest(metadata=META))


# ---------------------------------------------------------------- a full turn


@pytest.mark.invariant("WIRE-1")
def test_cascade_turn_over_connect(fake: FakeLSThread, port: int) -> None:
    prompt = "What is 2 + 2?"
    send = ls.SendUserCascadeMessageRequest(
        items=[common.TextOrScopeItem(text=prompt)],
        metadata=META,
        cascade_config=cortex.CascadeConfig(
            planner_config=cortex.CascadePlannerConfig(requested_model_uid="claude-sonnet-4", max_output_tokens=8192)
        ),
    )
    with H2Client(port) as client:
        call(client, "InitializeCascadePanelState", ls.InitializeCascadePanelStateRequest(metadata=META))
        cascade_id = call(client, "StartCascade", ls.StartCascadeRequest(metadata=META)).cascade_id
        assert cascade_id
        send.cascade_id = cascade_id
        call(client, "SendUserCascadeMessage", send)
        statuses = []
        for _ in range(20):
            call(client, "GetCascadeTrajectorySteps", ls.GetCascadeTrajectoryStepsRequest(cascade_id=cascade_id))
            run = call(client, "GetCascadeTrajectory", ls.GetCascadeTrajectoryRequest(cascade_id=cascade_id))
            statuses.append(run.status)
            if run.status == IDLE:
                break
        assert statuses[0] == RUNNING
        assert statuses[-1] == IDLE
        steps = call(client, "GetCascadeTrajectorySteps", ls.GetCascadeTrajectoryStepsRequest(cascade_id=cascade_id))
        usage = call(
            client,
            "GetCascadeTrajectoryGeneratorMetadata",
            ls.GetCascadeTrajectoryGeneratorMetadataRequest(cascade_id=cascade_id),
        )

    assert steps.steps[-1].planner_response.response == default_answer(prompt)
    assert usage.generator_metadata[0].chat_model.usage.output_tokens > 0

    entries = fake.journal.entries()
    assert {e.transport for e in entries} == {"connect"}
    assert not [e for e in entries if e.rejected]
    assert fake.journal.methods()[:3] == ["InitializeCascadePanelState", "StartCascade", "SendUserCascadeMessage"]
    assert fake.journal.methods()[-1] == "GetCascadeTrajectoryGeneratorMetadata"
    sent = fake.journal.last("SendUserCascadeMessage")
    assert sent.request == message_to_dict(send)
    assert sent.raw == send.SerializeToString()  # gunzipped on the flag alone
    assert sent.headers["x-codeium-csrf-token"] == f"<redacted: matches, {len(CSRF_TOKEN)} characters>"
    assert sent.headers["content-type"] == CONNECT_PROTO
    assert "connect-content-encoding" not in sent.headers
    assert ":path" not in sent.headers
    assert sent.path == SERVICE_PATH + "SendUserCascadeMessage"
    assert sent.unknown_fields == ()


@pytest.mark.invariant("WIRE-1")
def test_uncompressed_and_empty_envelopes_are_accepted(fake: FakeLSThread, port: int) -> None:
    with H2Client(port) as client:
        request = ls.InitializeCascadePanelStateRequest(metadata=META)
        plain = client.request(connect_headers("InitializeCascadePanelState"), envelope(request.SerializeToString(), 0))
        assert read_envelopes(plain) == ([b""], {})
        empty = client.request(connect_headers("Heartbeat"), envelope(b""))
        assert read_envelopes(empty)[1] == {}
    first, second = fake.journal.entries()
    assert first.request == message_to_dict(request)
    assert (second.method, second.status, second.request) == ("Heartbeat", "OK", {})


# ---------------------------------------------------------------- errors in the end-stream envelope


@pytest.mark.invariant("WIRE-3")
@pytest.mark.parametrize("token", [None, "not-the-token"])
def test_csrf_problem_is_an_end_stream_error(fake: FakeLSThread, port: int, token: str | None) -> None:
    with H2Client(port) as client:
        response, error = call_error(client, "StartCascade", ls.StartCascadeRequest(metadata=META), token=token)
        assert response.status == 200
        assert error["code"] == "unauthenticated"
        assert "CSRF" in error["message"]
        call(client, "StartCascade", ls.StartCascadeRequest(metadata=META))
    rejected = fake.journal.entries()[0]
    assert (rejected.transport, rejected.status, rejected.error) == ("connect", "UNAUTHENTICATED", error["message"])
    assert rejected.request == {"metadata": message_to_dict(META)}
    assert fake.journal.entries()[1].status == "OK"


@pytest.mark.invariant("WIRE-3")
def test_core_errors_map_to_connect_codes(fake: FakeLSThread, port: int) -> None:
    with H2Client(port) as client:
        _, error = call_error(client, "GetCascadeTrajectory", ls.GetCascadeTrajectoryRequest(cascade_id="nope"))
    assert error["code"] == "not_found"
    assert error["message"] == fake.journal.last("GetCascadeTrajectory").error
    assert "not_found" in error["message"]


# ---------------------------------------------------------------- rejected framing, server stays up

_VALID = ls.GetUserStatusRequest(metadata=META).SerializeToString()
_ENVELOPED = envelope(_VALID)

BAD_BODIES = {
    "truncated payload": (_ENVELOPED[:-3], "declares"),
    "truncated header": (_ENVELOPED[:3], "truncated envelope"),
    "length beyond body": (b"\x00\x00\x10\x00\x00" + _VALID, "declares 1048576 payload bytes"),
    "bad gzip": (b"\x01" + len(_VALID).to_bytes(4, "big") + _VALID, "does not gunzip"),
    "end-stream flag in a request": (envelope(_VALID, 0x02), "flags 0x02"),
    "trailing garbage": (_ENVELOPED + b"\x00\x00", "truncated envelope"),
}


@pytest.mark.invariant("WIRE-3")
@pytest.mark.parametrize("case", list(BAD_BODIES))
def test_bad_framing_is_invalid_argument(fake: FakeLSThread, port: int, case: str) -> None:
    body, fragment = BAD_BODIES[case]
    with H2Client(port) as client:
        response = client.request(connect_headers("GetUserStatus"), body)
        assert response.status == 200
        payloads, end = read_envelopes(response)
        assert payloads == []
        assert end["error"]["code"] == "invalid_argument"
        assert "malformed request framing" in end["error"]["message"]
        assert fragment in end["error"]["message"]
        call(client, "GetUserStatus", ls.GetUserStatusRequest(metadata=META))  # same connection still serves
    rejected = fake.journal.entries()[0]
    assert (rejected.method, rejected.status, rejected.transport) == ("GetUserStatus", "INVALID_ARGUMENT", "connect")
    assert rejected.raw == body  # the whole body as it came
    assert rejected.error == end["error"]["message"]
    heartbeat_works(port)


@pytest.mark.invariant("WIRE-3")
def test_several_envelopes_for_a_unary_call_are_rejected(fake: FakeLSThread, port: int) -> None:
    with H2Client(port) as client:
        response = client.request(connect_headers("GetUserStatus"), _ENVELOPED + _ENVELOPED)
    assert read_envelopes(response)[1]["error"]["code"] == "invalid_argument"
    assert "2 request messages" in fake.journal.last("GetUserStatus").error


@pytest.mark.invariant("WIRE-3")
def test_bad_protobuf_is_invalid_argument(fake: FakeLSThread, port: int) -> None:
    with H2Client(port) as client:
        response = client.request(connect_headers("StartCascade"), envelope(b"\x0a\xff\xff"))
    error = read_envelopes(response)[1]["error"]
    assert error["code"] == "invalid_argument"
    assert "cannot parse" in error["message"]
    assert fake.journal.last("StartCascade").status == "INVALID_ARGUMENT"
    heartbeat_works(port)


@pytest.mark.invariant("WIRE-3")
@pytest.mark.parametrize("content_type", ["text/plain", "application/grpc", "application/proto", ""])
def test_wrong_content_type_is_415(fake: FakeLSThread, port: int, content_type: str) -> None:
    with H2Client(port) as client:
        response = client.request(connect_headers("GetUserStatus", content_type=content_type), b"hello")
        assert (response.status, response.ended) == (415, True)
        assert response.headers["content-type"] == "application/json"
        assert response.headers["accept-post"] == CONNECT_PROTO
        error = json.loads(response.data)
        assert error["code"] == "invalid_argument"
        assert f"unsupported content-type {content_type!r}" in error["message"]
        assert CONNECT_PROTO in error["message"]
        call(client, "GetUserStatus", ls.GetUserStatusRequest(metadata=META))
    rejected = fake.journal.entries()[0]
    assert (rejected.status, rejected.raw, rejected.error) == ("INVALID_ARGUMENT", b"hello", error["message"])


@pytest.mark.invariant("WIRE-3")
def test_get_is_405(fake: FakeLSThread, port: int) -> None:
    """The client's port probe (wire.md 1.1) is a GET; it gets an error, not a hang."""
    with H2Client(port) as client:
        response = client.request(connect_headers("GetUserStatus", http_method="GET"))
    assert response.status == 405
    assert "takes POST" in json.loads(response.data)["message"]
    assert fake.journal.last("GetUserStatus").status == "INVALID_ARGUMENT"


@pytest.mark.invariant("WIRE-3")
@pytest.mark.parametrize("path", [SERVICE_PATH + "NoSuchMethod", "/other.Service/Heartbeat", "/"])
def test_unknown_method_is_unimplemented(fake: FakeLSThread, port: int, path: str) -> None:
    headers = [(k, path if k == ":path" else v) for k, v in connect_headers("Heartbeat")]
    with H2Client(port) as client:
        response = client.request(headers, _ENVELOPED)
        assert response.status == 404
        payloads, end = read_envelopes(response)
        assert payloads == []
        assert end["error"]["code"] == "unimplemented"
        assert "unknown method" in end["error"]["message"]
        call(client, "Heartbeat", ls.HeartbeatRequest(metadata=META))
    rejected = fake.journal.entries()[0]
    assert (rejected.path, rejected.status) == (path, "UNIMPLEMENTED")


# ---------------------------------------------------------------- garbage below the Connect layer


_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"


@pytest.mark.invariant("WIRE-3")
@pytest.mark.parametrize(
    "garbage",
    [
        b"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
        _PREFACE + b"\x00\x00\x05\x04\x00\x00\x00\x00\x00" + b"\x00" * 5,  # SETTINGS of 5 bytes
        _PREFACE + b"\x00\x00\x01\x00\x01\x00\x00\x00\x00x",  # DATA on stream 0
        b"\x00" * 3,
        os.urandom(4096),
    ],
    ids=["http1", "bad-settings-frame", "data-on-stream-0", "short", "random"],
)
def test_connection_garbage_leaves_the_server_up(fake: FakeLSThread, port: int, garbage: bytes) -> None:
    started = time.monotonic()
    send_raw(port, garbage, timeout=10.0)
    assert time.monotonic() - started < 5, "the server kept a broken connection open"
    heartbeat_works(port)
    assert fake.journal.methods() == ["Heartbeat"]


@pytest.mark.invariant("WIRE-3")
def test_client_that_disconnects_mid_request_is_journaled(fake: FakeLSThread, port: int) -> None:
    client = H2Client(port)
    client.start(connect_headers("SendUserCascadeMessage"), _ENVELOPED[:7], end_stream=False)
    client.close()
    wait_for(lambda: len(fake.journal) == 1)
    entry = fake.journal.entries()[0]
    assert entry.status == "INVALID_ARGUMENT"
    assert "before the request ended" in entry.error
    assert entry.raw == _ENVELOPED[:7]
    heartbeat_works(port)


@pytest.mark.invariant("WIRE-3")
def test_tcp_reset_mid_request_leaves_the_server_up(fake: FakeLSThread, port: int) -> None:
    client = H2Client(port)
    client.start(connect_headers("SendUserCascadeMessage"), _ENVELOPED[:7], end_stream=False)
    client.close(abort=True)
    heartbeat_works(port)
    assert all(e.rejected for e in fake.journal.entries("SendUserCascadeMessage"))


@pytest.mark.invariant("WIRE-3")
def test_client_reset_mid_request_is_journaled(fake: FakeLSThread, port: int) -> None:
    with H2Client(port) as client:
        stream_id = client.start(connect_headers("StartCascade"), b"\x00\x00", end_stream=False)
        client.reset_stream(stream_id)
        wait_for(lambda: len(fake.journal) == 1)
        assert "reset the stream" in fake.journal.entries()[0].error
        call(client, "StartCascade", ls.StartCascadeRequest(metadata=META))


@pytest.mark.invariant("WIRE-3")
def test_client_gone_before_the_answer(fake: FakeLSThread, port: int) -> None:
    """A request that did end is answered into the void, and still journaled as served."""
    with H2Client(port) as client:
        client.start(connect_headers("Heartbeat"), envelope(ls.HeartbeatRequest().SerializeToString()))
    wait_for(lambda: len(fake.journal) == 1)
    assert fake.journal.entries()[0].status == "OK", fake.journal.entries()[0]
    heartbeat_works(port)


# ---------------------------------------------------------------- size, streaming, concurrency


@pytest.mark.invariant("WIRE-1")
@pytest.mark.parametrize("flags", [0x01, 0x00], ids=["gzip", "plain"])
def test_multi_megabyte_request(fake: FakeLSThread, port: int, flags: int) -> None:
    images = [
        common.ImageData(base64_data=base64.b64encode(os.urandom(750_000)).decode(), mime_type="image/png")
        for _ in range(4)
    ]
    with H2Client(port) as client:
        call(client, "InitializeCascadePanelState", ls.InitializeCascadePanelStateRequest(metadata=META))
        cascade_id = call(client, "StartCascade", ls.StartCascadeRequest(metadata=META)).cascade_id
        send = ls.SendUserCascadeMessageRequest(
            cascade_id=cascade_id, items=[common.TextOrScopeItem(text="describe")], metadata=META, images=images
        )
        assert send.ByteSize() > 4_000_000
        body = envelope(send.SerializeToString(), flags)
        response = client.request(connect_headers("SendUserCascadeMessage"), body)
        assert read_envelopes(response)[1] == {}
    sent = fake.journal.last("SendUserCascadeMessage")
    assert sent.status == "OK"
    assert sent.request is not None
    assert [image["base64_data"] for image in sent.request["images"]] == [i.base64_data for i in images]


@pytest.mark.invariant("WIRE-3")
def test_request_over_the_core_limit_is_resource_exhausted() -> None:
    with FakeLSThread(csrf_token=CSRF_TOKEN, connect_port=0, max_request_bytes=100_000) as fake:
        assert fake.ports.connect is not None
        request = ls.SendUserCascadeMessageRequest(items=[common.TextOrScopeItem(text="x" * 200_000)])
        with H2Client(fake.ports.connect) as client:
            _, error = call_error(client, "SendUserCascadeMessage", request)
        assert error["code"] == "resource_exhausted"
        assert fake.journal.last("SendUserCascadeMessage").status == "RESOURCE_EXHAUSTED"


@pytest.mark.invariant("WIRE-1")
def test_large_response_respects_flow_control() -> None:
    """A 3 MB steps answer goes out through the client's 64 KiB windows."""
    answer = "0123456789abcdef" * 200_000
    scenario = Scenario(turns=(Turn(chunks=(Chunk(text=answer),)),))
    with FakeLSThread(csrf_token=CSRF_TOKEN, connect_port=0, scenario=scenario) as fake:
        assert fake.ports.connect is not None
        with H2Client(fake.ports.connect) as client:
            cascade_id = call(client, "StartCascade", ls.StartCascadeRequest(metadata=META)).cascade_id
            send = ls.SendUserCascadeMessageRequest(cascade_id=cascade_id, items=[common.TextOrScopeItem(text="hi")])
            call(client, "SendUserCascadeMessage", send)
            get_steps = ls.GetCascadeTrajectoryStepsRequest(cascade_id=cascade_id)
            streams = [
                client.start(connect_headers("GetCascadeTrajectorySteps"), envelope(get_steps.SerializeToString()))
            ]
            streams.append(client.start(connect_headers("Heartbeat"), envelope(b"")))
            big, small = (client.response(s) for s in streams)
    assert read_envelopes(small)[1] == {}
    payloads, end = read_envelopes(big)
    assert end == {}
    steps = ls.GetCascadeTrajectoryStepsResponse.FromString(payloads[0])
    assert steps.steps[-1].planner_response.response == answer


@pytest.mark.invariant("WIRE-1")
def test_streaming_raw_get_chat_message(fake: FakeLSThread, port: int) -> None:
    prompt = "hello legacy model"
    request = chat.RawGetChatMessageRequest(
        metadata=META,
        chat_messages=[
            chat.ChatMessage(
                message_id="m1",
                source=chat.CHAT_MESSAGE_SOURCE_USER,
                conversation_id="c1",
                intent=chat.ChatMessageIntent(generic=chat.IntentGeneric(text=prompt)),
            )
        ],
        chat_model=common.MODEL_CLAUDE_4_SONNET,
    )
    with H2Client(port) as client:
        response = client.request(connect_headers("RawGetChatMessage"), envelope(request.SerializeToString()))
    assert response.status == 200
    payloads, end = read_envelopes(response)
    assert end == {}
    frames = [chat.RawGetChatMessageResponse.FromString(p) for p in payloads]
    assert len(frames) == 3
    assert "".join(f.delta_message.text for f in frames) == default_answer(prompt)
    assert [f.delta_message.in_progress for f in frames] == [True, True, False]
    entry = fake.journal.last("RawGetChatMessage")
    assert entry.request == message_to_dict(request)
    assert entry.response is not None
    assert len(entry.response["stream"]) == 3


def test_many_streams_on_many_connections(fake: FakeLSThread, port: int) -> None:
    failures: list[BaseException] = []

    def one_connection(n: int) -> None:
        try:
            with H2Client(port) as client:
                requests = [ls.HeartbeatRequest(metadata=common.Metadata(session_id=f"{n}-{i}")) for i in range(25)]
                streams = [
                    client.start(connect_headers("Heartbeat"), envelope(r.SerializeToString())) for r in requests
                ]
                for stream_id in streams:
                    assert read_envelopes(client.response(stream_id))[1] == {}
        except BaseException as exc:
            failures.append(exc)

    threads = [threading.Thread(target=one_connection, args=(n,)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert not failures, failures
    entries: list[JournalEntry] = fake.journal.entries("Heartbeat")
    assert len(entries) == 150
    sessions = {e.request["metadata"]["session_id"] for e in entries if e.request is not None}
    assert len(sessions) == 150


def test_stop_with_open_connections_is_clean() -> None:
    """Shutdown says GOAWAY to idle and busy connections, closes them, and journals nothing extra."""
    fake = FakeLSThread(csrf_token=CSRF_TOKEN, connect_port=0).start()
    port = fake.ports.connect
    assert port is not None
    idle = H2Client(port)
    call(idle, "Heartbeat", ls.HeartbeatRequest())
    busy = H2Client(port)
    busy.start(connect_headers("Heartbeat"), b"\x00\x00", end_stream=False)
    started = time.monotonic()
    fake.stop()
    assert time.monotonic() - started < 5
    for client in (idle, busy):
        client.wait_closed()
        client.close()
    assert idle.goaway == 0
    assert busy.goaway in (0, None)  # None: closed before its connection had started
    assert fake.journal.methods() == ["Heartbeat"]
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", port), timeout=1)
