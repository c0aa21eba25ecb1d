"""Secrets are compared exactly: every near miss of the CSRF token (gRPC and Connect) and of the
control token (the control endpoint's ``Authorization: Bearer``) is refused, the right value is accepted.

Near misses: case variants, surrounding whitespace, a prefix, a suffix, a truncation, the empty string,
non-ASCII lookalikes, a scheme word that does not belong, and the header sent twice with one wrong value.
Each goes through the real transport on loopback (grpcio, raw h2 frames, a raw HTTP/1.1 socket), so what
is checked is what a client can actually put on the wire.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Callable, Iterator, Sequence

import grpc
import h2.config
import h2.connection
import pytest

from fakels.proto.exa.language_server_pb import language_server_pb2 as ls
from fakels.proto.exa.language_server_pb import language_server_pb2_grpc as ls_grpc
from fakels.server import FakeLSThread
from tests.support.fake_ls import StartFakeLs
from tests.support.h2client import H2Client, H2Response

CSRF = "Fakels-Csrf-Token-42"
CONTROL = "Control-Token-42"
HEADER = "x-codeium-csrf-token"
HEARTBEAT = "/exa.language_server_pb.LanguageServerService/Heartbeat"

# One wrong value per way of missing a token (the table is shared by the CSRF and control tokens).
NEAR_MISSES: list[tuple[str, Callable[[str], str]]] = [
    ("upper-case", str.upper),
    ("lower-case", str.lower),
    ("one-letter-case-flipped", lambda t: t[0].swapcase() + t[1:]),
    ("leading-space", lambda t: " " + t),
    ("trailing-space", lambda t: t + " "),
    ("prefix", lambda t: "x" + t),
    ("suffix", lambda t: t + "x"),
    ("truncated", lambda t: t[:-1]),
    ("empty", lambda t: ""),
    ("scheme-word-in-front", lambda t: "Bearer " + t),
    ("cyrillic-o-lookalike", lambda t: t.replace("o", "\u043e")),
    ("nbsp-suffix", lambda t: t + "\u00a0"),
    ("zero-width-space-suffix", lambda t: t + "\u200b"),
    ("fullwidth-digit-lookalike", lambda t: t.replace("4", "\uff14")),
]
IDS = [name for name, _ in NEAR_MISSES]


def test_every_near_miss_differs_from_the_token() -> None:
    for token in (CSRF, CONTROL):
        wrong = {name: miss(token) for name, miss in NEAR_MISSES}
        assert token not in wrong.values()
        assert len(set(wrong.values())) == len(wrong)


# ------------------------------------------------------------------------------------------- the CSRF token


@pytest.fixture(scope="module")
def fake(start_module_fake_ls: StartFakeLs) -> FakeLSThread:
    return start_module_fake_ls(csrf_token=CSRF, connect_port=0, control_port=0, control_token=CONTROL)


@pytest.fixture(scope="module")
def stub(fake: FakeLSThread) -> Iterator[ls_grpc.LanguageServerServiceStub]:
    with grpc.insecure_channel(fake.address) as channel:
        yield ls_grpc.LanguageServerServiceStub(channel)


def grpc_heartbeat(stub: ls_grpc.LanguageServerServiceStub, metadata: Sequence[tuple[str, str]]) -> str:
    """The status name of one Heartbeat carrying ``metadata``."""
    try:
        stub.Heartbeat(ls.HeartbeatRequest(), metadata=list(metadata), timeout=10)
    except grpc.RpcError as exc:
        return str(exc.code().name)
    return "OK"


def journaled_ok(fake: FakeLSThread) -> int:
    return sum(1 for e in fake.journal.entries() if e.status == "OK")


# grpcio itself refuses to send a value with a tab or a non-ASCII character (the call fails client side
# with INTERNAL "Invalid metadata"); those are sent by the Connect tests below, over raw h2 frames.
GRPC_SENDABLE = [(name, miss) for name, miss in NEAR_MISSES if miss(CSRF).isascii()]


@pytest.mark.parametrize(("name", "miss"), GRPC_SENDABLE, ids=[name for name, _ in GRPC_SENDABLE])
def test_grpc_refuses_a_near_miss_csrf_token(
    fake: FakeLSThread, stub: ls_grpc.LanguageServerServiceStub, name: str, miss: Callable[[str], str]
) -> None:
    before = journaled_ok(fake)
    assert grpc_heartbeat(stub, [(HEADER, miss(CSRF))]) == "UNAUTHENTICATED"
    entry = fake.journal.last("Heartbeat")
    assert entry.status == "UNAUTHENTICATED"
    assert entry.headers[HEADER].startswith("<redacted: does not match,")
    assert journaled_ok(fake) == before


@pytest.mark.parametrize(
    "metadata",
    [
        pytest.param([], id="missing"),
        pytest.param([("x-codeium-csrf-token-x", CSRF)], id="header-name-with-suffix"),
        pytest.param([("x-codeium-csrf", CSRF)], id="header-name-truncated"),
        pytest.param([("authorization", f"Bearer {CSRF}")], id="as-a-bearer-token"),
        pytest.param([(HEADER, "wrong"), (HEADER, CSRF)], id="sent-twice-wrong-then-right"),
        pytest.param([(HEADER, CSRF), (HEADER, "wrong")], id="sent-twice-right-then-wrong"),
    ],
)
def test_grpc_refuses_a_csrf_token_not_sent_exactly_once_under_its_name(
    stub: ls_grpc.LanguageServerServiceStub, metadata: list[tuple[str, str]]
) -> None:
    assert grpc_heartbeat(stub, metadata) == "UNAUTHENTICATED"


def test_grpc_accepts_the_csrf_token(fake: FakeLSThread, stub: ls_grpc.LanguageServerServiceStub) -> None:
    assert grpc_heartbeat(stub, [(HEADER, CSRF)]) == "OK"
    assert fake.journal.last("Heartbeat").headers[HEADER] == f"<redacted: matches, {len(CSRF)} characters>"


class RawH2Client(H2Client):
    """An :class:`H2Client` whose h2 neither strips nor validates outgoing headers: the bytes as given."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        config = h2.config.H2Configuration(
            client_side=True, header_encoding=None, normalize_outbound_headers=False, validate_outbound_headers=False
        )
        self.conn = h2.connection.H2Connection(config)
        self.responses: dict[int, H2Response] = {}
        self.goaway: int | None = None
        self.closed = False
        self.conn.initiate_connection()
        self._flush()


def connect_heartbeat(fake: FakeLSThread, tokens: Sequence[str]) -> str:
    """One Connect Heartbeat carrying ``tokens`` as CSRF headers: ``OK``, the Connect error code, or
    ``protocol_error`` when the server refused the headers as malformed HTTP/2 (RFC 9113 section 8.2.1)."""
    assert fake.ports.connect is not None
    headers = [
        (":method", "POST"),
        (":scheme", "http"),
        (":authority", "127.0.0.1"),
        (":path", HEARTBEAT),
        ("content-type", "application/connect+proto"),
        ("connect-protocol-version", "1"),
        *((HEADER, token) for token in tokens),
    ]
    with RawH2Client(fake.ports.connect) as client:
        response = client.request(headers, bytes(5))  # one empty, uncompressed envelope
        if not response.ended:
            assert client.goaway == 1 or response.reset == 1, response  # PROTOCOL_ERROR
            return "protocol_error"
    assert response.status == 200
    end = response.data[response.data.rindex(b"\x02\x00\x00\x00") :]
    if end.endswith(b"{}"):
        return "OK"
    error: dict[str, str] = json.loads(end[5:])["error"]
    return error["code"]


@pytest.mark.parametrize(("name", "miss"), NEAR_MISSES, ids=IDS)
def test_connect_refuses_a_near_miss_csrf_token(fake: FakeLSThread, name: str, miss: Callable[[str], str]) -> None:
    before = journaled_ok(fake)
    wrong = miss(CSRF)
    outcome = connect_heartbeat(fake, [wrong])
    # A value starting or ending in SP/HTAB is malformed HTTP/2: the connection is refused before any call.
    expected = "protocol_error" if wrong != wrong.strip(" \t") else "unauthenticated"
    assert outcome == expected
    assert journaled_ok(fake) == before


@pytest.mark.parametrize(
    "tokens",
    [
        pytest.param(["\t" + CSRF], id="leading-tab"),
        pytest.param([CSRF + "\t"], id="trailing-tab"),
    ],
)
def test_connect_refuses_tab_wrapped_csrf_tokens_as_malformed(fake: FakeLSThread, tokens: list[str]) -> None:
    before = journaled_ok(fake)
    assert connect_heartbeat(fake, tokens) == "protocol_error"
    assert journaled_ok(fake) == before


@pytest.mark.parametrize(
    "tokens",
    [
        pytest.param([], id="missing"),
        pytest.param(["wrong", CSRF], id="sent-twice-wrong-then-right"),
        pytest.param([CSRF, "wrong"], id="sent-twice-right-then-wrong"),
    ],
)
def test_connect_refuses_a_csrf_token_not_sent_exactly_once(fake: FakeLSThread, tokens: list[str]) -> None:
    assert connect_heartbeat(fake, tokens) == "unauthenticated"


def test_connect_accepts_the_csrf_token(fake: FakeLSThread) -> None:
    assert connect_heartbeat(fake, [CSRF]) == "OK"


# ------------------------------------------------------------------------------------------- the control token


def control_status(fake: FakeLSThread, *authorization: bytes) -> int:
    """The status of ``GET /healthz`` carrying each of ``authorization`` as an Authorization header line,
    byte for byte."""
    port = fake.ports.control
    assert port is not None
    lines = [b"GET /healthz HTTP/1.1", f"Host: 127.0.0.1:{port}".encode()]
    lines += [b"Authorization: " + value for value in authorization]
    with socket.create_connection(("127.0.0.1", port), timeout=10) as conn:
        conn.sendall(b"\r\n".join(lines) + b"\r\n\r\n")
        conn.shutdown(socket.SHUT_WR)
        answer = b""
        while chunk := conn.recv(65536):
            answer += chunk
    return int(answer.split(b" ", 2)[1])


def utf8(text: str) -> bytes:
    return text.encode("utf-8")


# A trailing space ends the header line, and whitespace there is not part of the field value (RFC 9112
# section 5.1): ``Bearer <token> `` is ``Bearer <token>`` (accepted below); ``Bearer <token> x`` is refused.
CONTROL_NEAR_MISSES = [(name, miss) for name, miss in NEAR_MISSES if name != "trailing-space"]


@pytest.mark.parametrize(("name", "miss"), CONTROL_NEAR_MISSES, ids=[name for name, _ in CONTROL_NEAR_MISSES])
def test_control_refuses_a_near_miss_bearer_token(fake: FakeLSThread, name: str, miss: Callable[[str], str]) -> None:
    assert control_status(fake, utf8("Bearer " + miss(CONTROL))) == 401


@pytest.mark.parametrize(
    "authorization",
    [
        pytest.param([], id="missing"),
        pytest.param([b""], id="empty-header"),
        pytest.param([b"Bearer"], id="scheme-only"),
        pytest.param([b"Bearer "], id="scheme-and-space-only"),
        pytest.param([utf8(CONTROL)], id="no-scheme"),
        pytest.param([utf8("Basic " + CONTROL)], id="scheme-basic"),
        pytest.param([utf8("Token " + CONTROL)], id="scheme-token"),
        pytest.param([utf8("Bearer: " + CONTROL)], id="scheme-with-colon"),
        pytest.param([utf8("Bearers " + CONTROL)], id="scheme-with-suffix"),
        pytest.param([utf8("Bear " + CONTROL)], id="scheme-truncated"),
        pytest.param([utf8("Bearer" + CONTROL)], id="no-space-after-scheme"),
        pytest.param([utf8("Bearer\t" + CONTROL)], id="tab-after-scheme"),
        pytest.param([utf8("Bearer  " + CONTROL)], id="two-spaces-after-scheme"),
        pytest.param([utf8("Bearer \t" + CONTROL)], id="space-tab-after-scheme"),
        pytest.param([utf8(f"Bearer {CONTROL} x")], id="token-then-space-and-more"),
        pytest.param([utf8("B\u0435arer " + CONTROL)], id="cyrillic-e-in-scheme"),
        pytest.param([b"Bearer " + CONTROL.encode() + b"\xa0"], id="latin1-nbsp-suffix"),
        pytest.param([utf8("Bearer wrong"), utf8("Bearer " + CONTROL)], id="sent-twice-wrong-then-right"),
        pytest.param([utf8("Bearer " + CONTROL), utf8("Bearer wrong")], id="sent-twice-right-then-wrong"),
    ],
)
def test_control_refuses_a_malformed_authorization(fake: FakeLSThread, authorization: list[bytes]) -> None:
    assert control_status(fake, *authorization) == 401


@pytest.mark.parametrize(
    "authorization",
    [
        pytest.param(utf8("Bearer " + CONTROL), id="exact"),
        # The auth-scheme is case-insensitive (RFC 9110 section 11.1); the token is not.
        pytest.param(utf8("bearer " + CONTROL), id="scheme-lower-case"),
        pytest.param(utf8("BEARER " + CONTROL), id="scheme-upper-case"),
        # Whitespace around the whole field line is not part of the field value (RFC 9112 section 5.1).
        pytest.param(utf8(f" \tBearer {CONTROL} \t"), id="optional-whitespace-around-the-field-value"),
    ],
)
def test_control_accepts_the_bearer_token(fake: FakeLSThread, authorization: bytes) -> None:
    assert control_status(fake, authorization) == 200
