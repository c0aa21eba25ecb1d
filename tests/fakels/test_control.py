"""The control endpoint, driven over loopback as an out-of-process harness would: gRPC calls read
back through ``GET /journal``, scenarios loaded through ``POST /scenario``, reset, state, and the
HTTP error paths (404, 405, 411, 413, bad JSON, garbage bytes) that must never take it down."""

from __future__ import annotations

import base64
import contextlib
import json
import socket
import time

import grpc
import pytest

from fakels.control_client import ControlClient, ControlError
from fakels.proto.exa.codeium_common_pb import codeium_common_pb2 as common
from fakels.proto.exa.cortex_pb import cortex_pb2 as cortex
from fakels.proto.exa.language_server_pb import language_server_pb2 as ls
from fakels.proto.exa.language_server_pb import language_server_pb2_grpc as ls_grpc
from fakels.server import FakeLSThread
from tests.support.fake_ls import StartFakeLs

Metadata = list[tuple[str, str]]
SCRIPTED = {"turns": [{"chunks": [{"text": "scripted"}]}]}


@pytest.fixture
def fake_ls(csrf: Metadata, start_fake_ls: StartFakeLs) -> FakeLSThread:
    """Overrides the conftest fixture: the same fake, with the control endpoint on."""
    return start_fake_ls(csrf_token=dict(csrf)["x-codeium-csrf-token"], control_port=0)


@pytest.fixture
def port(fake_ls: FakeLSThread) -> int:
    assert fake_ls.ports.control is not None
    return fake_ls.ports.control


@pytest.fixture
def control(port: int) -> ControlClient:
    return ControlClient(port)


# ------------------------------------------------------------------ helpers


def _raw_http(port: int, data: bytes) -> tuple[int, dict[str, str], bytes]:
    """Send ``data`` as is, read to EOF, split the answer into status, headers and body."""
    # The endpoint answers only requests addressed to it (Host: 127.0.0.1:PORT).
    data = data.replace(b"Host: fakels\r\n", f"Host: 127.0.0.1:{port}\r\n".encode(), 1)
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(data)
        sock.shutdown(socket.SHUT_WR)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    headers = {name.lower(): value.strip() for name, _, value in (h.partition(":") for h in header_lines)}
    assert int(headers["content-length"]) == len(body) or data.startswith(b"HEAD ")
    assert headers["connection"] == "close"
    return int(status_line.split(" ")[1]), headers, body


def _request(method: str, path: str, body: bytes | None = None, headers: str = "") -> bytes:
    length = "" if body is None else f"Content-Length: {len(body)}\r\n"
    kind = "Content-Type: application/json\r\n" if method == "POST" else ""
    return f"{method} {path} HTTP/1.1\r\nHost: fakels\r\n{kind}{length}{headers}\r\n".encode() + (body or b"")


def _error(body: bytes) -> str:
    answer = json.loads(body)
    assert set(answer) == {"error"}
    text: str = answer["error"]
    return text


def _send_request(cascade_id: str, text: str) -> ls.SendUserCascadeMessageRequest:
    return ls.SendUserCascadeMessageRequest(
        cascade_id=cascade_id,
        items=[common.TextOrScopeItem(text=text)],
        metadata=common.Metadata(session_id="session-1", ide_name="windsurf"),
    )


def _start_and_send(stub: ls_grpc.LanguageServerServiceStub, csrf: Metadata, text: str) -> str:
    started = stub.StartCascade(ls.StartCascadeRequest(metadata=common.Metadata(session_id="session-1")), metadata=csrf)
    stub.SendUserCascadeMessage(_send_request(started.cascade_id, text), metadata=csrf)
    cascade_id: str = started.cascade_id
    return cascade_id


def _play_out(stub: ls_grpc.LanguageServerServiceStub, csrf: Metadata, cascade_id: str) -> str:
    """Poll until the turn is IDLE; the final planner response text."""
    for _ in range(50):
        status = stub.GetCascadeTrajectory(ls.GetCascadeTrajectoryRequest(cascade_id=cascade_id), metadata=csrf)
        if status.status == cortex.CascadeRunStatus.CASCADE_RUN_STATUS_IDLE:
            break
    else:
        pytest.fail("the turn never went IDLE")
    steps = stub.GetCascadeTrajectorySteps(ls.GetCascadeTrajectoryStepsRequest(cascade_id=cascade_id), metadata=csrf)
    planner: list[str] = [s.planner_response.response for s in steps.steps if s.HasField("planner_response")]
    assert len(planner) == 1
    return planner[0]


# ------------------------------------------------------------------ journal and state


def test_health(control: ControlClient, port: int) -> None:
    assert control.health()
    status, headers, body = _raw_http(port, _request("GET", "/healthz"))
    assert (status, headers["content-type"], json.loads(body)) == (200, "application/json", {"ok": True})


def test_journal_returns_what_the_grpc_calls_sent(
    stub: ls_grpc.LanguageServerServiceStub, csrf: Metadata, control: ControlClient, port: int
) -> None:
    start = ls.StartCascadeRequest(metadata=common.Metadata(session_id="session-1", ide_name="windsurf"))
    cascade_id = stub.StartCascade(start, metadata=csrf).cascade_id
    send = _send_request(cascade_id, "hello from the test")
    stub.SendUserCascadeMessage(send, metadata=csrf)

    entries = control.journal()
    assert [e["method"] for e in entries] == ["StartCascade", "SendUserCascadeMessage"]
    assert [e["seq"] for e in entries] == [0, 1]
    assert all(e["transport"] == "grpc" and e["status"] == "OK" for e in entries)
    assert base64.b64decode(entries[0]["raw_b64"]) == start.SerializeToString()
    assert base64.b64decode(entries[1]["raw_b64"]) == send.SerializeToString()
    assert entries[1]["raw_len"] == send.ByteSize()
    assert entries[1]["request"]["cascade_id"] == cascade_id
    assert entries[1]["request"]["items"] == [{"text": "hello from the test"}]
    assert entries[1]["request"]["metadata"] == {"ide_name": "windsurf", "session_id": "session-1"}
    token = dict(csrf)["x-codeium-csrf-token"]
    assert entries[1]["headers"]["x-codeium-csrf-token"] == f"<redacted: matches, {len(token)} characters>"
    assert entries[0]["response"] == {"cascade_id": cascade_id}

    assert control.journal(since=1) == entries[1:]
    assert control.journal(since=5) == []
    status, headers, body = _raw_http(port, _request("GET", "/journal?since=1"))
    assert (status, headers["content-type"]) == (200, "application/x-ndjson")
    assert [json.loads(line) for line in body.decode().splitlines()] == entries[1:]


@pytest.mark.parametrize("separator", ["\u2028", "\u2029", "\x85", "\x1c", "\x0b", "\r"])
def test_journal_text_with_unicode_line_separators_reads_back_whole(
    stub: ls_grpc.LanguageServerServiceStub, csrf: Metadata, control: ControlClient, separator: str
) -> None:
    """JSON keeps these characters raw inside strings; the journal is split on "\\n" only."""
    start = ls.StartCascadeRequest(metadata=common.Metadata(session_id="s"))
    cascade_id = stub.StartCascade(start, metadata=csrf).cascade_id
    text = f"before{separator}after"
    stub.SendUserCascadeMessage(_send_request(cascade_id, text), metadata=csrf)
    entries = control.journal()
    assert entries[-1]["request"]["items"] == [{"text": text}]


def test_journal_shows_rejected_calls(stub: ls_grpc.LanguageServerServiceStub, control: ControlClient) -> None:
    with pytest.raises(grpc.RpcError) as caught:
        stub.StartCascade(ls.StartCascadeRequest())  # no CSRF token
    assert caught.value.code() == grpc.StatusCode.UNAUTHENTICATED
    [entry] = control.journal()
    assert (entry["method"], entry["status"]) == ("StartCascade", "UNAUTHENTICATED")
    assert "CSRF" in entry["error"]


def test_state_summarises_cascades(
    stub: ls_grpc.LanguageServerServiceStub, csrf: Metadata, control: ControlClient
) -> None:
    assert control.state()["cascades"] == []
    cascade_id = _start_and_send(stub, csrf, "first prompt")
    state = control.state()
    assert (state["turn_index"], state["sends_accepted"]) == (1, 1)
    assert (state["panel_lost"], state["workspace_untrusted"]) == (False, False)
    assert state["journal_entries"] == 2
    [cascade] = state["cascades"]
    assert cascade["id"] == cascade_id
    assert cascade["trajectory_id"].startswith("fakels-trajectory-")
    assert (cascade["turns_played"], cascade["active"], cascade["expired"]) == (0, True, False)

    _play_out(stub, csrf, cascade_id)
    [cascade] = control.state()["cascades"]
    assert (cascade["turns_played"], cascade["active"]) == (1, False)
    assert cascade["steps"] == 2  # the user input echo and the planner response
    assert cascade["records"] == 1


# ------------------------------------------------------------------ scenario and reset


def test_scenario_loaded_through_the_endpoint_is_played(
    stub: ls_grpc.LanguageServerServiceStub, csrf: Metadata, control: ControlClient, port: int
) -> None:
    status, _, body = _raw_http(port, _request("POST", "/scenario", json.dumps(SCRIPTED).encode()))
    assert (status, json.loads(body)) == (200, {"ok": True, "turns": 1})
    assert control.state()["scenario_turns"] == 1

    assert _play_out(stub, csrf, _start_and_send(stub, csrf, "anything")) == "scripted"
    # Past the script, turns are generated from the prompt again.
    assert _play_out(stub, csrf, _start_and_send(stub, csrf, "anything")).startswith("fakels answer ")


def test_client_loads_a_scenario(
    stub: ls_grpc.LanguageServerServiceStub, csrf: Metadata, control: ControlClient
) -> None:
    control.load_scenario({"turns": [{"chunks": [{"text": "script"}, {"text": "ed"}]}]})
    assert _play_out(stub, csrf, _start_and_send(stub, csrf, "hi")) == "scripted"


def test_invalid_scenario_is_refused_with_the_path_of_the_problem(control: ControlClient, port: int) -> None:
    control.load_scenario(SCRIPTED)
    bad = {"turns": [{"chunks": [{"text": "ok"}, {"txet": "typo"}]}]}
    status, _, body = _raw_http(port, _request("POST", "/scenario", json.dumps(bad).encode()))
    assert status == 400
    message = _error(body)
    assert "at turns/0/chunks/1:" in message
    assert "'txet' was unexpected" in message

    with pytest.raises(ControlError) as caught:
        control.load_scenario({"turns": "not a list"})
    assert caught.value.status == 400
    assert "at turns: 'not a list' is not of type 'array'" in caught.value.message
    assert control.state()["scenario_turns"] == 1  # the previous scenario stays loaded


def test_reset_clears_journal_and_cascades(
    stub: ls_grpc.LanguageServerServiceStub, csrf: Metadata, control: ControlClient, port: int
) -> None:
    _start_and_send(stub, csrf, "before the reset")
    assert len(control.journal()) == 2
    control.reset()
    assert control.journal() == []
    state = control.state()
    assert (state["cascades"], state["turn_index"], state["sends_accepted"]) == ([], 0, 0)
    status, _, body = _raw_http(port, _request("POST", "/reset", b""))
    assert (status, json.loads(body)) == (200, {"ok": True})

    stub.StartCascade(ls.StartCascadeRequest(), metadata=csrf)
    assert [e["seq"] for e in control.journal()] == [0]


# ------------------------------------------------------------------ HTTP errors


@pytest.mark.parametrize(
    ("request_bytes", "status", "fragment"),
    [
        (_request("GET", "/nope"), 404, "no control endpoint '/nope'"),
        (_request("GET", "/healthz/"), 404, "GET /healthz"),
        (_request("POST", "/scenario"), 411, "Content-Length"),
        (_request("POST", "/reset"), 411, "Content-Length"),
        (_request("POST", "/scenario", headers="Transfer-Encoding: chunked\r\n"), 411, "transfer-encoding"),
        (_request("POST", "/scenario", headers="Content-Length: 16777217\r\n"), 413, "16777216"),
        (_request("POST", "/scenario", headers="Content-Length: 99999999999999999999\r\n"), 413, "limit"),
        (_request("POST", "/scenario", headers="Content-Length: -1\r\n"), 400, "Content-Length"),
        (_request("POST", "/scenario", headers="Content-Length: 2\r\nContent-Length: 3\r\n"), 400, "Content-Length"),
        (_request("POST", "/scenario", b"{not json"), 400, "not valid JSON"),
        (_request("POST", "/scenario", b'{"cascade_ttl_s": NaN}'), 400, "not valid JSON"),
        (_request("POST", "/scenario", b"\xff\xfe"), 400, "not UTF-8"),
        (_request("POST", "/scenario", b""), 400, "empty request body"),
        (_request("POST", "/scenario", b"[]"), 400, "is not of type 'object'"),
        (b"POST /scenario HTTP/1.1\r\nHost: fakels\r\nContent-Length: 10\r\n\r\n{}", 400, "ended after 2 of 10 bytes"),
        (_request("GET", "/journal?since=-1"), 400, "since"),
        (_request("GET", "/journal?since=x"), 400, "since"),
        (b"GARBAGE\r\n\r\n", 400, "malformed request line"),
        (b"GET /healthz\r\n\r\n", 400, "malformed request line"),
        (b"GET healthz HTTP/1.1\r\n\r\n", 400, "malformed request line"),
        (b"GET /healthz HTTP/2.0\r\n\r\n", 400, "malformed request line"),
        (b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 400, "malformed request line"),
        (b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n", 400, "not ASCII"),
        (b"GET /healthz HTTP/1.1", 400, "incomplete request line"),
        (b"GET /healthz HTTP/1.1\r\nno colon here\r\n\r\n", 400, "malformed header line"),
        (b"GET /healthz HTTP/1.1\r\nHost: x\r\n", 400, "inside the header section"),
        (b"GET /" + b"a" * 9000 + b" HTTP/1.1\r\n\r\n", 400, "longer than"),
        (b"GET / HTTP/1.1\r\n" + b"X-A: b\r\n" * 101 + b"\r\n", 431, "header lines"),
    ],
)
def test_http_errors_are_json_and_clear(port: int, request_bytes: bytes, status: int, fragment: str) -> None:
    got, headers, body = _raw_http(port, request_bytes)
    assert got == status
    assert headers["content-type"] == "application/json"
    assert fragment in _error(body)


@pytest.mark.parametrize(
    ("method", "path", "allow"),
    [
        ("POST", "/healthz", "GET, HEAD"),
        ("DELETE", "/journal", "GET, HEAD"),
        ("GET", "/scenario", "POST"),
        ("PUT", "/reset", "POST"),
    ],
)
def test_wrong_method_is_405_with_allow(port: int, method: str, path: str, allow: str) -> None:
    status, headers, body = _raw_http(port, _request(method, path, b"" if method != "GET" else None))
    assert (status, headers["allow"]) == (405, allow)
    assert f"{method} is not allowed on {path}" in _error(body)


def test_head_answers_without_a_body(port: int) -> None:
    status, headers, body = _raw_http(port, _request("HEAD", "/healthz"))
    assert (status, body) == (200, b"")
    assert int(headers["content-length"]) == len(b'{"ok": true}')


def test_keeps_serving_after_garbage(
    stub: ls_grpc.LanguageServerServiceStub, csrf: Metadata, control: ControlClient, port: int
) -> None:
    garbage = [b"", b"\r\n", b"\x00" * 100_000, bytes(range(256)) * 64, b"GET /healthz HTTP/1.1\r\nHost"]
    for data in garbage:
        with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
            sock.sendall(data)
    for data in (b"\x00" * 1000, b"GET /state HTTP/1.1\r\n"):  # and clients that leave without reading
        with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
            sock.sendall(data)
            sock.shutdown(socket.SHUT_WR)
    with socket.create_connection(("127.0.0.1", port), timeout=10) as idle:  # a client that sends nothing
        idle.sendall(b"GET /he")
        assert control.health()
        stub.StartCascade(ls.StartCascadeRequest(), metadata=csrf)
        assert [e["method"] for e in control.journal()] == ["StartCascade"]


def test_stop_closes_open_control_connections() -> None:
    fake = FakeLSThread(control_port=0).start()
    assert fake.ports.control is not None
    with socket.create_connection(("127.0.0.1", fake.ports.control), timeout=10) as idle:
        idle.sendall(b"GET /healthz HTTP/1.1\r\n")
        started = time.monotonic()
        fake.stop()
        assert time.monotonic() - started < 3
        with contextlib.suppress(ConnectionResetError):  # closed (or reset, if not read yet), not left hanging
            assert idle.recv(100) == b""


# ------------------------------------------------------------------ client


def test_client_reports_an_unreachable_port() -> None:
    with socket.socket() as sock:  # a port that nothing listens on
        sock.bind(("127.0.0.1", 0))
        free = sock.getsockname()[1]
    client = ControlClient(free, timeout=2)
    assert client.health() is False
    with pytest.raises(ControlError, match=r"not reachable \(GET /state\)") as caught:
        client.state()
    assert caught.value.status is None


def test_client_error_carries_status_and_text(control: ControlClient) -> None:
    with pytest.raises(ControlError) as caught:
        control.load_scenario({"bogus": 1})
    assert caught.value.status == 400
    assert str(caught.value).startswith("HTTP 400: POST /scenario: 1 problem(s)")


def test_client_reports_an_oversized_body(control: ControlClient) -> None:
    with pytest.raises(ControlError) as caught:
        control.load_scenario({"turns": [{"chunks": [{"text": "x" * (16 * 1024 * 1024)}]}]})
    assert caught.value.status == 413
    assert "exceeds the limit of 16777216 bytes" in caught.value.message
    assert control.health()


def test_a_handler_failure_is_a_500_without_traceback(fake_ls: FakeLSThread, control: ControlClient, port: int) -> None:
    assert fake_ls.server is not None
    core = fake_ls.server.core
    fake_ls.call(lambda: setattr(core.state, "cascades", None))  # break the state the summary reads
    status, _, body = _raw_http(port, _request("GET", "/state"))
    assert status == 500
    message = _error(body)
    assert message.startswith("fakels control: internal error: AttributeError")
    assert "Traceback" not in message
    control.reset()
    assert control.state()["cascades"] == []


# ------------------------------------------------------------------ who may drive the fake


def test_a_cross_origin_text_plain_post_from_a_web_page_is_refused(
    fake_ls: FakeLSThread, port: int, control: ControlClient
) -> None:
    """A browser sends this without a CORS preflight: it must not load a scenario."""
    body = json.dumps(SCRIPTED).encode()
    page = "Origin: https://attacker.example\r\nContent-Type: text/plain\r\n"
    status, _, answer = _raw_http(
        port, _request("POST", "/scenario", body, headers=page).replace(b"Content-Type: application/json\r\n", b"", 1)
    )
    assert (status, _error(answer)) == (403, "requests carrying an Origin header (a web page) are refused")
    status, _, answer = _raw_http(port, _request("POST", "/reset", b"").replace(b"application/json", b"text/plain", 1))
    assert (status, _error(answer)) == (415, "POST bodies must be application/json, not text/plain")
    assert control.state()["scenario_turns"] == 0


@pytest.mark.parametrize("host", ["attacker.example", "attacker.example:{port}", "127.0.0.1", "127.0.0.1:1", ""])
def test_a_request_for_another_host_is_refused(port: int, host: str) -> None:
    """DNS rebinding: a page whose name now resolves to 127.0.0.1 still sends its own Host."""
    line = f"Host: {host.format(port=port)}\r\n" if host else ""
    status, _, answer = _raw_http(port, f"GET /journal HTTP/1.1\r\n{line}\r\n".encode())
    assert status == 403
    assert "DNS rebinding guard" in _error(answer)


def test_localhost_by_name_is_this_endpoint(port: int) -> None:
    status, _, _ = _raw_http(port, f"GET /healthz HTTP/1.1\r\nHost: localhost:{port}\r\n\r\n".encode())
    assert status == 200


@pytest.mark.parametrize(
    ("authorization", "status"),
    [
        (None, 401),
        ("Bearer s3cret-token", 200),
        ("Bearer S3CRET-TOKEN", 401),
        ("Bearer  s3cret-token", 401),
        ("Bearer s3cret-tok", 401),
        ("Bearer s3cret-tokenx", 401),
        ("Basic s3cret-token", 401),
        ("bearer s3cret-token", 200),
    ],
)
def test_a_control_token_is_compared_exactly(csrf: Metadata, authorization: str | None, status: int) -> None:
    with FakeLSThread(csrf_token=dict(csrf)["x-codeium-csrf-token"], control_port=0, control_token="s3cret-token") as f:
        port = f.ports.control
        assert port is not None
        line = f"Authorization: {authorization}\r\n" if authorization is not None else ""
        got, _, _ = _raw_http(port, f"GET /state HTTP/1.1\r\nHost: fakels\r\n{line}\r\n".encode())
        assert got == status
        assert ControlClient(port, token="s3cret-token").state()["journal_entries"] == 0


def test_the_journal_keeps_whether_the_csrf_token_matched_not_its_value(
    stub: ls_grpc.LanguageServerServiceStub, control: ControlClient
) -> None:
    with pytest.raises(grpc.RpcError):
        stub.Heartbeat(ls.HeartbeatRequest(), metadata=[("x-codeium-csrf-token", "wrong-token")])
    entry = control.journal()[-1]
    assert entry["headers"]["x-codeium-csrf-token"] == "<redacted: does not match, 11 characters>"
    assert "wrong-token" not in json.dumps(control.journal())


def test_secrets_are_journaled_only_when_asked(csrf: Metadata) -> None:
    token = dict(csrf)["x-codeium-csrf-token"]
    with FakeLSThread(csrf_token=token, record_secrets=True) as fake, grpc.insecure_channel(fake.address) as channel:
        ls_grpc.LanguageServerServiceStub(channel).Heartbeat(ls.HeartbeatRequest(), metadata=csrf)
        assert fake.journal.last("Heartbeat").headers["x-codeium-csrf-token"] == token
