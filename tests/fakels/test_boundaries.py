"""fakels' numeric limits pinned at the limit, one under and one over, in the unit each is stated in
(docs/boundaries.md lists them all and where the others are pinned).

Every check goes through the real part on loopback: the control endpoint over a raw socket, the Connect
port over raw h2 frames, the gRPC port with grpcio on a ManualClock; scenario ranges through
:func:`fakels.scenario.parse_scenario` against the shipped schema.
"""

from __future__ import annotations

import gzip
import json
import socket
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest

from fakels.cli import main
from fakels.clock import ManualClock
from fakels.proto.exa.codeium_common_pb import codeium_common_pb2 as common
from fakels.proto.exa.cortex_pb import cortex_pb2 as cortex
from fakels.proto.exa.language_server_pb import language_server_pb2 as ls
from fakels.proto.exa.language_server_pb import language_server_pb2_grpc as ls_grpc
from fakels.scenario import Chunk, Scenario, ScenarioError, Turn, parse_scenario, scenario_schema
from fakels.server import FakeLSThread
from tests.support.fake_ls import CSRF_TOKEN, StartFakeLs
from tests.support.h2client import H2Client

RUNNING = cortex.CascadeRunStatus.CASCADE_RUN_STATUS_RUNNING
IDLE = cortex.CascadeRunStatus.CASCADE_RUN_STATUS_IDLE
SESSION = common.Metadata(session_id="session-1")
CSRF = [("x-codeium-csrf-token", CSRF_TOKEN)]
REQUEST_LIMIT = 1024  # the max_request_bytes of the module's fake
# The control endpoint's limits (fakels/_control.py, fakels/_http1.py: private modules, so restated here;
# the error texts asserted below carry the same numbers).
MAX_BODY_BYTES = 16 * 1024 * 1024
MAX_LINE_BYTES = 8 * 1024
MAX_HEADER_LINES = 100


@pytest.fixture(scope="module")
def fake(start_module_fake_ls: StartFakeLs) -> FakeLSThread:
    return start_module_fake_ls(csrf_token=CSRF_TOKEN, connect_port=0, control_port=0, max_request_bytes=REQUEST_LIMIT)


# ------------------------------------------------------------------------------------------- control endpoint


def control_exchange(fake: FakeLSThread, head: bytes, body: bytes = b"") -> tuple[int, bytes]:
    """Send ``head`` (the request line and header lines, without the blank line) and ``body``; the
    status and the response body."""
    with socket.create_connection(("127.0.0.1", control_port(fake)), timeout=30) as conn:
        conn.sendall(head + b"\r\n\r\n" + body)
        conn.shutdown(socket.SHUT_WR)
        answer = b""
        while chunk := conn.recv(1 << 20):
            answer += chunk
    status_line, _, rest = answer.partition(b"\r\n")
    return int(status_line.split(b" ")[1]), rest.partition(b"\r\n\r\n")[2]


def control_port(fake: FakeLSThread) -> int:
    assert fake.ports.control is not None
    return fake.ports.control


def host_line(fake: FakeLSThread) -> bytes:
    return f"Host: 127.0.0.1:{control_port(fake)}".encode()


@pytest.mark.parametrize(("offset", "status"), [(-1, 200), (0, 200), (1, 413)], ids=["limit-1", "limit", "limit+1"])
def test_control_body_cap_is_16_mib(fake: FakeLSThread, offset: int, status: int) -> None:
    size = MAX_BODY_BYTES + offset
    document = b'{"turns": []}'
    head = b"\r\n".join(
        [
            b"POST /scenario HTTP/1.1",
            host_line(fake),
            b"Content-Type: application/json",
            f"Content-Length: {size}".encode(),
        ]
    )
    # Over the cap the head alone is refused: the body is not sent (nor read).
    body = document + b" " * (size - len(document)) if status == 200 else b""
    got, answer = control_exchange(fake, head, body)
    assert got == status, answer
    if status == 413:
        assert f"exceeds the limit of {MAX_BODY_BYTES} bytes".encode() in answer
    else:
        assert json.loads(answer) == {"ok": True, "turns": 0}


# A line's length is its bytes up to its LF, the CR included (asyncio's StreamReader limit).
@pytest.mark.parametrize(("offset", "status"), [(-1, 200), (0, 200), (1, 400)], ids=["limit-1", "limit", "limit+1"])
def test_control_request_line_is_at_most_8_kib(fake: FakeLSThread, offset: int, status: int) -> None:
    fixed = len(b"GET /healthz?pad= HTTP/1.1\r")
    line = b"GET /healthz?pad=" + b"p" * (MAX_LINE_BYTES + offset - fixed) + b" HTTP/1.1"
    assert len(line + b"\r") == MAX_LINE_BYTES + offset
    got, answer = control_exchange(fake, line + b"\r\n" + host_line(fake))
    assert got == status, answer
    if status == 400:
        assert f"request line longer than {MAX_LINE_BYTES} bytes".encode() in answer


@pytest.mark.parametrize(("offset", "status"), [(-1, 200), (0, 200), (1, 431)], ids=["limit-1", "limit", "limit+1"])
def test_control_header_line_is_at_most_8_kib(fake: FakeLSThread, offset: int, status: int) -> None:
    header = b"X-Pad: " + b"p" * (MAX_LINE_BYTES + offset - len(b"X-Pad: \r"))
    assert len(header + b"\r") == MAX_LINE_BYTES + offset
    got, answer = control_exchange(fake, b"\r\n".join([b"GET /healthz HTTP/1.1", host_line(fake), header]))
    assert got == status, answer
    if status == 431:
        assert f"header line longer than {MAX_LINE_BYTES} bytes".encode() in answer


@pytest.mark.parametrize(("offset", "status"), [(-1, 200), (0, 200), (1, 431)], ids=["limit-1", "limit", "limit+1"])
def test_control_takes_at_most_100_header_lines(fake: FakeLSThread, offset: int, status: int) -> None:
    count = MAX_HEADER_LINES + offset  # header fields, Host included; the blank line ending them is not one
    headers = [host_line(fake), *(f"X-H{n}: v".encode() for n in range(count - 1))]
    got, answer = control_exchange(fake, b"\r\n".join([b"GET /healthz HTTP/1.1", *headers]))
    assert got == status, answer
    if status == 431:
        assert f"more than {MAX_HEADER_LINES} header lines".encode() in answer


@pytest.mark.parametrize(("digits", "status"), [(11, 200), (12, 200), (13, 400)], ids=["limit-1", "limit", "limit+1"])
def test_control_journal_since_takes_at_most_12_digits(fake: FakeLSThread, digits: int, status: int) -> None:
    since = "9" * digits
    got, answer = control_exchange(
        fake, b"\r\n".join([f"GET /journal?since={since} HTTP/1.1".encode(), host_line(fake)])
    )
    assert got == status, answer
    assert (answer == b"") if status == 200 else (b"since must be one non-negative integer" in answer)


# ------------------------------------------------------------------------------------------- request size


def workspace_request(size: int) -> bytes:
    body = ls.AddTrackedWorkspaceRequest(workspace="w" * (size - 3)).SerializeToString()
    assert len(body) == size
    return body


def connect_call(fake: FakeLSThread, payload: bytes, *, gzipped: bool) -> dict[str, Any]:
    """One Connect AddTrackedWorkspace call; its end-stream JSON."""
    assert fake.ports.connect is not None
    data = gzip.compress(payload) if gzipped else payload
    envelope = bytes([0x01 if gzipped else 0x00]) + len(data).to_bytes(4, "big") + data
    headers = [
        (":method", "POST"),
        (":scheme", "http"),
        (":authority", "127.0.0.1"),
        (":path", "/exa.language_server_pb.LanguageServerService/AddTrackedWorkspace"),
        ("content-type", "application/connect+proto"),
        ("connect-protocol-version", "1"),
        *CSRF,
    ]
    with H2Client(fake.ports.connect) as client:
        response = client.request(headers, envelope)
    assert response.status == 200
    assert response.ended
    data, offset = response.data, 0
    while data[offset] != 0x02:  # skip the message envelopes up to the end-stream one
        offset += 5 + int.from_bytes(data[offset + 1 : offset + 5], "big")
    result: dict[str, Any] = json.loads(data[offset + 5 :])
    return result


LIMIT_OFFSETS = [(-1, True), (0, True), (1, False)]
LIMIT_IDS = ["limit-1", "limit", "limit+1"]


@pytest.mark.parametrize("gzipped", [False, True], ids=["identity", "gzip"])
@pytest.mark.parametrize(("offset", "served"), LIMIT_OFFSETS, ids=LIMIT_IDS)
def test_connect_request_size_cap_is_exact(fake: FakeLSThread, gzipped: bool, offset: int, served: bool) -> None:
    """The cap is on the protobuf, so on the inflated bytes of a gzip envelope."""
    size = REQUEST_LIMIT + offset
    end = connect_call(fake, workspace_request(size), gzipped=gzipped)
    if served:
        assert end == {}
    else:
        assert end["error"]["code"] == "resource_exhausted"
        assert f"exceeds the limit of {REQUEST_LIMIT} bytes" in end["error"]["message"]
    entry = fake.journal.last("AddTrackedWorkspace")
    assert entry.status == ("OK" if served else "RESOURCE_EXHAUSTED")


@pytest.mark.parametrize(("offset", "served"), LIMIT_OFFSETS, ids=LIMIT_IDS)
def test_grpc_request_size_cap_is_exact(fake: FakeLSThread, offset: int, served: bool) -> None:
    request = ls.AddTrackedWorkspaceRequest.FromString(workspace_request(REQUEST_LIMIT + offset))
    with grpc.insecure_channel(fake.address) as channel:
        stub = ls_grpc.LanguageServerServiceStub(channel)
        try:
            stub.AddTrackedWorkspace(request, metadata=CSRF, timeout=30)
            code = grpc.StatusCode.OK
        except grpc.RpcError as exc:
            code = exc.code()
    assert code == (grpc.StatusCode.OK if served else grpc.StatusCode.RESOURCE_EXHAUSTED)


# ------------------------------------------------------------------------------------------- fake-clock limits


@pytest.fixture(scope="module")
def timed(
    start_module_fake_ls: StartFakeLs,
) -> Iterator[tuple[FakeLSThread, ManualClock, ls_grpc.LanguageServerServiceStub]]:
    clock = ManualClock()
    server = start_module_fake_ls(csrf_token=CSRF_TOKEN, clock=clock)
    with grpc.insecure_channel(server.address) as ch:
        yield server, clock, ls_grpc.LanguageServerServiceStub(ch)


def start_and_send(stub: ls_grpc.LanguageServerServiceStub, text: str = "hi") -> str:
    cascade_id: str = stub.StartCascade(ls.StartCascadeRequest(metadata=SESSION), metadata=CSRF, timeout=30).cascade_id
    send = ls.SendUserCascadeMessageRequest(
        cascade_id=cascade_id, items=[common.TextOrScopeItem(text=text)], metadata=SESSION
    )
    stub.SendUserCascadeMessage(send, metadata=CSRF, timeout=30)
    return cascade_id


def status(stub: ls_grpc.LanguageServerServiceStub, cascade_id: str) -> int:
    request = ls.GetCascadeTrajectoryRequest(cascade_id=cascade_id)
    return int(stub.GetCascadeTrajectory(request, metadata=CSRF, timeout=30).status)


def planner_text(stub: ls_grpc.LanguageServerServiceStub, cascade_id: str) -> str:
    request = ls.GetCascadeTrajectoryStepsRequest(cascade_id=cascade_id)
    steps = stub.GetCascadeTrajectorySteps(request, metadata=CSRF, timeout=30).steps
    return "".join(s.planner_response.response for s in steps if s.HasField("planner_response"))


@pytest.mark.parametrize(("after", "alive"), [(9.0, True), (10.0, True), (11.0, False)], ids=LIMIT_IDS)
def test_a_cascade_lives_exactly_cascade_ttl_s_seconds_idle(
    timed: tuple[FakeLSThread, ManualClock, ls_grpc.LanguageServerServiceStub], after: float, alive: bool
) -> None:
    fake, clock, stub = timed
    fake.load_scenario(Scenario(cascade_ttl_s=10.0))
    cascade_id = start_and_send(stub)
    clock.advance(after)
    try:
        status(stub, cascade_id)
        code = grpc.StatusCode.OK
    except grpc.RpcError as exc:
        code = exc.code()
    assert code == (grpc.StatusCode.OK if alive else grpc.StatusCode.NOT_FOUND)


@pytest.mark.parametrize(("after", "shown"), [(4.0, "a"), (5.0, "ab"), (6.0, "ab")], ids=LIMIT_IDS)
def test_a_chunk_is_revealed_exactly_delay_s_seconds_after_the_previous_one(
    timed: tuple[FakeLSThread, ManualClock, ls_grpc.LanguageServerServiceStub], after: float, shown: str
) -> None:
    fake, clock, stub = timed
    fake.load_scenario(Scenario(turns=(Turn(chunks=(Chunk(text="a"), Chunk(text="b", delay_s=5.0))),)))
    cascade_id = start_and_send(stub)
    assert planner_text(stub, cascade_id) == "a"  # the first chunk has no delay
    clock.advance(after)
    assert planner_text(stub, cascade_id) == shown


@pytest.mark.parametrize("polls", [1, 2, 3])
def test_a_complete_turn_answers_running_exactly_min_running_polls_times(
    timed: tuple[FakeLSThread, ManualClock, ls_grpc.LanguageServerServiceStub], polls: int
) -> None:
    """min_running_polls = N: status polls 1..N say RUNNING (limit-1 and limit), poll N+1 says IDLE."""
    fake, _, stub = timed
    fake.load_scenario(Scenario(turns=(Turn(chunks=(Chunk(text="a"),), min_running_polls=polls),)))
    cascade_id = start_and_send(stub)
    planner_text(stub, cascade_id)  # reveal the only chunk: the turn is complete
    seen = [status(stub, cascade_id) for _ in range(polls + 1)]
    assert seen == [RUNNING] * polls + [IDLE]


# ------------------------------------------------------------------------------------------- scenario ranges


def _chunk(key: str) -> Callable[[Any], dict[str, Any]]:
    return lambda v: {"turns": [{"chunks": [{"text": "a", key: v}]}]}


def _native(key: str) -> Callable[[Any], dict[str, Any]]:
    return lambda v: {"turns": [{"chunks": [{"native": {"kind": "find", key: v}}]}]}


def _usage(key: str) -> Callable[[Any], dict[str, Any]]:
    return lambda v: {"turns": [{"records": [{key: v}]}]}


def _override_call(value: Any) -> dict[str, Any]:
    return {"turns": [{"overrides": [{"rpc": "GetCascadeTrajectory", "call": value, "payload_hex": ""}]}]}


def _override_http_status(value: Any) -> dict[str, Any]:
    return {"turns": [{"overrides": [{"rpc": "GetCascadeTrajectorySteps", "http_status": value}]}]}


# Every numeric bound in scenario.schema.json: (schema place, keyword, bound, document with a value there).
BOUNDS: list[tuple[str, str, int, Callable[[Any], dict[str, Any]]]] = [
    ("cascade_ttl_s", "exclusiveMinimum", 0, lambda v: {"cascade_ttl_s": v}),
    ("cascade_ttl_s", "maximum", 31_536_000, lambda v: {"cascade_ttl_s": v}),
    *(
        (f"usage.{key}", keyword, bound, _usage(key))
        for key in ("input_tokens", "output_tokens", "cache_write_tokens", "cache_read_tokens")
        for keyword, bound in (("minimum", 0), ("maximum", 2**64 - 1))
    ),
    *(
        (f"chunk.native.{key}", keyword, bound, _native(key))
        for key in ("type", "status")
        for keyword, bound in (("minimum", 0), ("maximum", 2**31 - 1))
    ),
    ("chunk.error", "minLength", 1, lambda n: {"turns": [{"chunks": [{"error": "e" * n}]}]}),
    ("chunk.delay_s", "minimum", 0, _chunk("delay_s")),
    ("chunk.delay_s", "maximum", 3600, _chunk("delay_s")),
    ("override.call", "minimum", 0, _override_call),
    ("override.call", "maximum", 2**31 - 1, _override_call),
    ("override.http_status", "minimum", 400, _override_http_status),
    ("override.http_status", "maximum", 599, _override_http_status),
    ("turn.min_running_polls", "minimum", 0, lambda v: {"turns": [{"min_running_polls": v}]}),
    ("turn.min_running_polls", "maximum", 10_000, lambda v: {"turns": [{"min_running_polls": v}]}),
]


def _schema_bounds(node: Any, place: str) -> Iterator[tuple[str, str, int]]:
    if isinstance(node, dict):
        for keyword in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "minLength", "maxLength"):
            if keyword in node:
                yield place, keyword, node[keyword]
        for key, child in node.items():
            yield from _schema_bounds(child, f"{place}.{key}" if place else key)
    elif isinstance(node, list):
        for child in node:
            yield from _schema_bounds(child, place)


def test_the_table_covers_every_numeric_bound_of_the_schema() -> None:
    found = sorted(
        (place.replace("properties.", "").replace("$defs.", "").replace("items.", ""), keyword, bound)
        for place, keyword, bound in _schema_bounds(scenario_schema(), "")
    )
    assert found == sorted((place, keyword, bound) for place, keyword, bound, _ in BOUNDS)


def _accepted(keyword: str, offset: int) -> bool:
    if keyword == "exclusiveMinimum":
        return offset > 0
    if keyword in ("minimum", "minLength"):
        return offset >= 0
    return offset <= 0


@pytest.mark.parametrize("offset", [-1, 0, 1], ids=LIMIT_IDS)
@pytest.mark.parametrize(
    ("place", "keyword", "bound", "document"), BOUNDS, ids=[f"{place}-{keyword}" for place, keyword, _, _ in BOUNDS]
)
def test_scenario_number_ranges_are_exact(
    place: str, keyword: str, bound: int, document: Callable[[Any], dict[str, Any]], offset: int
) -> None:
    value = bound + offset
    if _accepted(keyword, offset):
        parse_scenario(document(value))
    else:
        with pytest.raises(ScenarioError, match=r"problem\(s\) in the scenario"):
            parse_scenario(document(value))


@pytest.mark.parametrize("problems", [9, 10, 11], ids=LIMIT_IDS)
def test_a_scenario_error_lists_at_most_ten_problems(problems: int) -> None:
    with pytest.raises(ScenarioError) as info:
        parse_scenario({"turns": [{"bogus": i} for i in range(problems)]}, source="s.json")
    lines = str(info.value).split("\n")
    assert lines[0] == f"s.json: {problems} problem(s) in the scenario:"
    assert len(lines) - 1 == min(problems, 10)


# ------------------------------------------------------------------------------------------- command line

# (option, values at limit-1 / limit / limit+1, which are accepted), parsed by fakels' own parser in process.
CLI_BOUNDS: list[tuple[str, tuple[str, str, str], tuple[bool, bool, bool]]] = [
    ("--port", ("-1", "0", "1"), (False, True, True)),
    ("--port", ("65534", "65535", "65536"), (True, True, False)),
    ("--control-port", ("65534", "65535", "65536"), (True, True, False)),
    ("--connect-port", ("65534", "65535", "65536"), (True, True, False)),
    ("--max-request-bytes", ("0", "1", "2"), (False, True, True)),
    ("--cascade-id-prefix", ("", "p", "pp"), (False, True, True)),
    ("--cascade-id-prefix", ("p" * 31, "p" * 32, "p" * 33), (True, True, False)),
]


@pytest.mark.parametrize("position", [0, 1, 2], ids=LIMIT_IDS)
@pytest.mark.parametrize(
    ("option", "values", "accepted"), CLI_BOUNDS, ids=[f"{option}={values[1][:4]}" for option, values, _ in CLI_BOUNDS]
)
def test_fakels_option_ranges_are_exact(
    option: str,
    values: tuple[str, str, str],
    accepted: tuple[bool, bool, bool],
    position: int,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``fakels serve`` in process, with a scenario file that does not exist: an accepted option gets past
    the parser to the scenario load (exit 2 naming the file, nothing served); a refused one stops argparse."""
    missing = tmp_path / "missing.json"
    argv = ["serve", f"{option}={values[position]}", "--scenario", str(missing)]
    if accepted[position]:
        assert main(argv) == 2
        assert "cannot read scenario file" in capsys.readouterr().err
    else:
        with pytest.raises(SystemExit) as info:
            main(argv)
        assert info.value.code == 2
        assert option in capsys.readouterr().err
