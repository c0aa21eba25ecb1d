"""The faults ``bench_load.py`` mixes into its load, each with the outcome it must get.

Against the gateway (raw HTTP/1.1 over asyncio streams, so nothing is smoothed over by a client):
invalid JSON (400), bodies over ``max_body_bytes`` declared by Content-Length or sent chunked
(413), bytes that are not HTTP (400 or a closed connection), a client that sends half its body and
leaves, and a client that leaves a streaming turn after its first reasoning chunk (FIN or RST).

Against the fake LS (raw HTTP/2 with :mod:`tests.support.h2client`, blocking, run in threads):
the garbage of the WIRE-3 tests (tests/fakels/test_wire_garbage_frames.py), each answered with a
clean gRPC status and journaled once under the ``x-bench-load: garbage`` header (not-HTTP/2 bytes
reach no handler and are journaled nothing; a reset mid-request is journaled CANCELLED or
INVALID_ARGUMENT, depending on timing).
"""

from __future__ import annotations

import asyncio
import json
import logging
import socket
import struct
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

import grpc

from fakels.proto.exa.language_server_pb import language_server_pb2 as ls
from fakels.proto.exa.language_server_pb import language_server_pb2_grpc as ls_grpc
from fakels.rpcs import RPCS, SERVICE_NAME
from tests.support.h2client import H2Client, H2Response, request

LOOPBACK = "127.0.0.1"
CSRF_HEADER = "x-codeium-csrf-token"
GARBAGE_MARK = ("x-bench-load", "garbage")
IO_TIMEOUT = 30.0

HTTP_KINDS = (
    "invalid-json", "oversize-declared", "oversize-chunked", "not-http", "cut-mid-body",
    "cut-stream-fin", "cut-stream-rst",
)  # fmt: skip
# The gRPC status each garbage gets on the wire, and the status its one journal entry carries.
GRPC_KINDS: dict[str, tuple[str, str | None]] = {
    "truncated-frame": ("grpc 3", "INVALID_ARGUMENT"),
    "compressed-flag": ("grpc 13", "INVALID_ARGUMENT"),  # grpc core answers; the handler journals its own view
    "garbage-protobuf": ("grpc 3", "INVALID_ARGUMENT"),
    "unknown-method": ("grpc 12", "UNIMPLEMENTED"),
    "wrong-csrf": ("grpc 16", "UNAUTHENTICATED"),
    "not-http2": ("closed", None),
    "rst-mid-request": ("reset", "CANCELLED|INVALID_ARGUMENT"),
}


@dataclass(frozen=True)
class FaultResult:
    kind: str
    expected: str
    got: str
    tag: str | None = None  # a cut stream's tag: its turn reached the LS and must be journaled once

    @property
    def ok(self) -> bool:
        return self.got in self.expected.split("|")


def chat_body(prompt: str, *, stream: bool, model: str) -> bytes:
    return json.dumps({"model": model, "stream": stream, "messages": [{"role": "user", "content": prompt}]}).encode()


def _head(port: int, api_key: str, extra: str) -> bytes:
    return (
        f"POST /v1/chat/completions HTTP/1.1\r\nHost: {LOOPBACK}:{port}\r\nAuthorization: Bearer {api_key}\r\n"
        f"Content-Type: application/json\r\n{extra}\r\n"
    ).encode()


def _status(line: bytes) -> str:
    parts = line.split()
    return parts[1].decode() if len(parts) >= 2 and parts[0].startswith(b"HTTP/") else "closed"


async def _exchange(port: int, pieces: list[bytes], *, leave: bool = False) -> str:
    """Send ``pieces`` (draining after each), then read the status line; ``leave``: close instead."""
    reader, writer = await asyncio.open_connection(LOOPBACK, port)
    try:
        try:
            for piece in pieces:
                writer.write(piece)
                await writer.drain()
        except ConnectionError:
            pass  # the server answered and closed before reading it all: the status is still there to read
        if leave:
            return "left"
        return _status(await asyncio.wait_for(reader.readline(), IO_TIMEOUT))
    except ConnectionError as exc:
        return f"error {type(exc).__name__}"
    finally:
        writer.transport.abort()


async def http_fault(
    kind: str, port: int, *, api_key: str, limit: int, model: str, prompt: str, tag: str
) -> FaultResult:
    """One ``kind`` of HTTP_KINDS against the gateway at ``port`` (max body ``limit`` bytes); the cut
    kinds send ``prompt``, which carries ``tag``."""
    filler = json.dumps({"model": model, "messages": [{"role": "user", "content": "x" * (4 * limit)}]}).encode()
    if kind == "invalid-json":
        body = b'{"model": "' + model.encode() + b'", "messages": [\xff\xfe garbage'
        return FaultResult(
            kind, "400", await _exchange(port, [_head(port, api_key, f"Content-Length: {len(body)}\r\n"), body])
        )
    if kind == "oversize-declared":
        got = await _exchange(port, [_head(port, api_key, f"Content-Length: {len(filler)}\r\n"), filler])
        return FaultResult(kind, "413", got)
    if kind == "oversize-chunked":
        step = 16 * 1024
        chunks = [
            b"%x\r\n%s\r\n" % (len(filler[i : i + step]), filler[i : i + step]) for i in range(0, len(filler), step)
        ]
        got = await _exchange(port, [_head(port, api_key, "Transfer-Encoding: chunked\r\n"), *chunks, b"0\r\n\r\n"])
        return FaultResult(kind, "413", got)
    if kind == "not-http":
        got = await _exchange(port, [b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + bytes(range(256)) + b"\r\n\r\n"])
        return FaultResult(kind, "400|closed", got)
    body = chat_body(prompt, stream=True, model=model)
    if kind == "cut-mid-body":
        got = await _exchange(
            port, [_head(port, api_key, f"Content-Length: {len(body)}\r\n"), body[: len(body) // 2]], leave=True
        )
        return FaultResult(kind, "left", got)
    assert kind in ("cut-stream-fin", "cut-stream-rst"), kind
    return await _cut_stream(kind, port, api_key, body, tag=tag)


async def _cut_stream(kind: str, port: int, api_key: str, body: bytes, *, tag: str) -> FaultResult:
    """A streaming turn left after its first reasoning chunk (sent after the LS took the message)."""
    reader, writer = await asyncio.open_connection(LOOPBACK, port)
    seen = b""
    try:
        writer.write(_head(port, api_key, f"Content-Length: {len(body)}\r\n") + body)
        await writer.drain()
        while b"reasoning_content" not in seen:
            chunk = await asyncio.wait_for(reader.read(65536), IO_TIMEOUT)
            if not chunk:
                break
            seen += chunk
    finally:
        sock = writer.get_extra_info("socket")
        if kind == "cut-stream-rst" and sock is not None:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        writer.transport.abort()
    got = _status(seen.split(b"\r\n", 1)[0]) + ("+cut" if b"reasoning_content" in seen else "")
    return FaultResult(kind, "200+cut", got, tag=tag)


# ------------------------------------------------------------------------------- garbage gRPC


def _frame(payload: bytes, flag: int = 0) -> bytes:
    return bytes([flag]) + struct.pack(">I", len(payload)) + payload


def _headers(port: int, path: str, csrf: str) -> list[tuple[str, str]]:
    return [
        (":method", "POST"), (":scheme", "http"), (":authority", f"{LOOPBACK}:{port}"), (":path", path),
        ("te", "trailers"), ("content-type", "application/grpc"), (CSRF_HEADER, csrf), GARBAGE_MARK,
    ]  # fmt: skip


def _grpc_status(response: H2Response) -> str:
    source = response.trailers if "grpc-status" in response.trailers else response.headers
    return f"grpc {source['grpc-status']}" if "grpc-status" in source else "no status"


def _rst_mid_request(port: int, csrf: str) -> str:
    client = H2Client(port, timeout=IO_TIMEOUT)
    stream_id = client.start(
        _headers(port, RPCS["StartCascade"].path, csrf), b"\x00\x00\x00\x00\x10\x0a\x04ab", end_stream=False
    )
    client.reset_stream(stream_id)
    client.close()
    return "reset"


def _not_http2(port: int) -> str:
    """grpc core answers bytes that are not HTTP/2 with its SETTINGS and closes the connection."""
    with socket.create_connection((LOOPBACK, port), timeout=IO_TIMEOUT) as sock:
        sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n" + bytes(64))
        try:
            while sock.recv(65536):
                pass
        except TimeoutError:
            return "hung"
    return "closed"


def grpc_fault(kind: str, port: int, csrf: str) -> FaultResult:
    """One ``kind`` of GRPC_KINDS sent straight at the fake LS's gRPC port (blocking)."""
    start, trajectory, unknown = RPCS["StartCascade"].path, RPCS["GetCascadeTrajectory"].path, f"/{SERVICE_NAME}/Nope"

    def call(path: str, body: bytes, token: str = csrf) -> str:
        return _grpc_status(request(port, _headers(port, path, token), body, timeout=IO_TIMEOUT))

    sends: dict[str, Callable[[], str]] = {
        "truncated-frame": lambda: call(start, b"\x00\x00\x00\x00\x64\x0a\x05hello"),
        "compressed-flag": lambda: call(start, _frame(b"\x0a\x03key", 1)),
        "garbage-protobuf": lambda: call(start, _frame(b"\x0f\xff")),
        "unknown-method": lambda: call(unknown, _frame(b"")),
        "wrong-csrf": lambda: call(trajectory, _frame(b""), "not-it"),
        "not-http2": lambda: _not_http2(port),
        "rst-mid-request": lambda: _rst_mid_request(port, csrf),
    }  # fmt: skip
    try:
        got = sends[kind]()
    except OSError as exc:
        got = f"error {type(exc).__name__}"
    return FaultResult(kind, GRPC_KINDS[kind][0], got)


def fake_still_serves(address: str, csrf: str) -> bool:
    """A well-formed StartCascade from a real grpcio client succeeds."""
    with grpc.insecure_channel(address) as channel:
        stub = ls_grpc.LanguageServerServiceStub(channel)
        reply = stub.StartCascade(ls.StartCascadeRequest(), metadata=[(CSRF_HEADER, csrf)], timeout=IO_TIMEOUT)
    return bool(reply.cascade_id)


class Progress:
    """How many valid turns of a round finished: each fault waits for a number of them, so faults
    land all along the round whatever its speed."""

    def __init__(self) -> None:
        self.done = 0
        self._changed = asyncio.Condition()

    async def tick(self) -> None:
        async with self._changed:
            self.done += 1
            self._changed.notify_all()

    async def reached(self, count: int) -> None:
        async with self._changed:
            await self._changed.wait_for(lambda: self.done >= count)


class ServerLog(logging.Handler):
    """Counts what the gateway logs at WARNING and above (uvicorn's and the engine's loggers) instead
    of printing it: the faults make uvicorn log, and a crashed turn logs before it fails its check."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.seen: Counter[str] = Counter()
        for name in ("uvicorn.error", "engine"):
            logging.getLogger(name).addHandler(self)
            logging.getLogger(name).propagate = False

    def emit(self, record: logging.LogRecord) -> None:
        error = record.exc_info[0] if record.exc_info else None
        what = record.getMessage().splitlines()[0][:50]
        self.seen[f"{record.levelname} {what}" + (f" ({error.__name__})" if error else "")] += 1
