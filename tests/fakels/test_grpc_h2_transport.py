"""fakels' hand-written gRPC port (h2c): every call served as the grpcio port serves it, and the
HTTP-level failures grpcio never sends on purpose: an HTTP error status in place of a gRPC answer, and
an answer's frame cut mid-message. A real grpcio client reads each as the error a gateway would see."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from typing import Any

import grpc
import h2.connection
import h2.events
import pytest

from fakels.proto.exa.language_server_pb import language_server_pb2 as ls
from fakels.proto.exa.language_server_pb import language_server_pb2_grpc as ls_grpc
from fakels.scenario import parse_scenario, scenario_to_document
from fakels.server import FakeLSThread

TOKEN = "h2-token"
METADATA = [("x-codeium-csrf-token", TOKEN)]
STEPS = "GetCascadeTrajectorySteps"


def _fake(override: dict[str, Any] | None) -> FakeLSThread:
    turn: dict[str, Any] = {"chunks": [{"text": "hello"}]}
    if override is not None:
        turn["overrides"] = [{"rpc": STEPS, **override}]
    return FakeLSThread(grpc_h2_port=0, csrf_token=TOKEN, scenario=parse_scenario({"turns": [turn]}, source="test"))


def _steps(address: str) -> ls.GetCascadeTrajectoryStepsResponse:
    """A turn sent, then its steps polled once, over a real grpcio channel to ``address``."""
    with grpc.insecure_channel(address) as channel:
        stub = ls_grpc.LanguageServerServiceStub(channel)
        cascade = stub.StartCascade(ls.StartCascadeRequest(), metadata=METADATA).cascade_id
        stub.SendUserCascadeMessage(ls.SendUserCascadeMessageRequest(cascade_id=cascade), metadata=METADATA)
        request = ls.GetCascadeTrajectoryStepsRequest(cascade_id=cascade)
        answer: ls.GetCascadeTrajectoryStepsResponse = stub.GetCascadeTrajectorySteps(
            request, metadata=METADATA, timeout=10
        )
        return answer


@pytest.fixture
def plain() -> Iterator[FakeLSThread]:
    with _fake(None) as fake:
        yield fake


def test_the_h2_port_serves_a_turn_as_the_grpcio_port_does(plain: FakeLSThread) -> None:
    over_h2 = _steps(plain.h2_address)
    assert [(e.transport, e.method, e.status) for e in plain.journal.entries()][-1] == ("grpc-h2", STEPS, "OK")
    plain.reset()  # the scenario's turn again, for the grpcio port
    assert _steps(plain.address) == over_h2
    assert over_h2.steps[-1].planner_response.response == "hello"


@pytest.mark.parametrize(
    ("override", "code", "details"),
    [
        ({"http_status": 503}, grpc.StatusCode.UNAVAILABLE, "status: 503"),
        ({"http_status": 502}, grpc.StatusCode.UNAVAILABLE, "status: 502"),
        ({"cut_frame": True}, grpc.StatusCode.UNKNOWN, "END_STREAM"),
        ({"error_code": "INTERNAL", "error_message": "über 100 %"}, grpc.StatusCode.INTERNAL, "über 100 %"),
    ],
    ids=["http-503", "http-502", "cut-frame", "trailers-only"],
)
def test_the_h2_port_fails_a_call_as_scripted(override: dict[str, Any], code: grpc.StatusCode, details: str) -> None:
    with _fake(override) as fake:
        with pytest.raises(grpc.RpcError) as failed:
            _steps(fake.h2_address)
        entry = fake.journal.entries()[-1]
    assert failed.value.code() == code
    assert details in failed.value.details()
    assert (entry.transport, entry.method) == ("grpc-h2", STEPS)


@pytest.mark.parametrize(
    ("override", "code"),
    [({"http_status": 503}, grpc.StatusCode.UNAVAILABLE), ({"cut_frame": True}, grpc.StatusCode.INTERNAL)],
    ids=["http-503", "cut-frame"],
)
def test_the_grpcio_port_answers_an_http_level_fault_as_the_status_a_client_reads(
    override: dict[str, Any], code: grpc.StatusCode
) -> None:
    with _fake(override) as fake:
        with pytest.raises(grpc.RpcError) as failed:
            _steps(fake.address)
        entry = fake.journal.entries()[-1]
    assert failed.value.code() == code
    assert (entry.status, entry.notes) == (
        code.name,
        (f"{'HTTP 503' if 'http_status' in override else 'its gRPC frame cut mid-message'} sent on purpose",),
    )


def test_an_http_level_override_survives_the_scenario_document() -> None:
    document = {
        "turns": [
            {
                "chunks": [{"text": "x"}],
                "overrides": [{"rpc": STEPS, "cut_frame": True}, {"rpc": STEPS, "call": 1, "http_status": 504}],
            }
        ]
    }
    assert scenario_to_document(parse_scenario(document, source="test"))["turns"][0]["overrides"] == [
        {"rpc": STEPS, "call": 0, "cut_frame": True},
        {"rpc": STEPS, "call": 1, "http_status": 504},
    ]


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        (b"\x01\x00\x00\x00\x01\x00", "is compressed"),
        (b"\x00\x00\x00\x00\x09ab", "frame at byte 0 declares 9 payload bytes but only 2 follow"),
        (b"\x00\x00", "truncated frame at byte 0"),
    ],
    ids=["compressed", "short-message", "short-header"],
)
def test_a_badly_framed_request_is_journaled_and_refused(plain: FakeLSThread, body: bytes, problem: str) -> None:
    host, port = plain.h2_address.rsplit(":", 1)
    connection = h2.connection.H2Connection()
    connection.initiate_connection()
    path = "/exa.language_server_pb.LanguageServerService/" + STEPS
    headers = [(":method", "POST"), (":scheme", "http"), (":authority", plain.h2_address), (":path", path)]
    headers += [("content-type", "application/grpc"), ("te", "trailers"), *METADATA]
    connection.send_headers(1, headers)
    connection.send_data(1, body, end_stream=True)
    trailers: dict[bytes, bytes] = {}
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(connection.data_to_send())
        while not trailers:
            data = sock.recv(65536)
            assert data, "the connection closed before the answer ended"
            for event in connection.receive_data(data):
                if isinstance(event, h2.events.ResponseReceived | h2.events.TrailersReceived) and event.stream_ended:
                    trailers = dict(event.headers)
            sock.sendall(connection.data_to_send())
    assert trailers[b"grpc-status"] == str(grpc.StatusCode.INVALID_ARGUMENT.value[0]).encode()
    entry = plain.journal.entries()[-1]
    assert problem in entry.error
