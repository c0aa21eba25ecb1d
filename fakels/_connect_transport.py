"""Connect protocol (streaming envelopes) over cleartext HTTP/2 with prior knowledge, on asyncio + h2.

Real clients in ``GRPC_PROTOCOL=connect`` mode POST ``application/connect+proto`` with every call,
unary or not, framed as envelopes (flag byte, 4-byte big-endian length, payload); flag 0x01 means a
gzip payload even though no ``connect-content-encoding`` header is sent, so the flag alone decides.
The answer is ``:status 200`` with one uncompressed data envelope per message and an end-of-stream
envelope (flag 0x02) holding ``{}`` or ``{"error": {"code", "message"}}``; clients read the error
from there and ignore the HTTP status.

Only ``application/connect+proto`` is served. ``application/proto`` is Connect's unenveloped unary
protocol, which no real client of the LS sends; it is refused like any other content type, with
HTTP 415 and a Connect JSON error body (a non-POST gets 405 the same way). Unknown methods get HTTP
404, as from a Connect router, but still the end-stream error, so a client that ignores the status
fails the call. Every request reaches :meth:`FakeLanguageServer.handle`, so the journal records
rejections too, including requests the client abandoned; on a framing problem the entry's ``raw``
holds the whole HTTP body.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import socket
import zlib
from collections.abc import Coroutine
from dataclasses import dataclass, field
from typing import Any

import grpc
import h2.config
import h2.connection
import h2.errors
import h2.events
import h2.exceptions

from fakels.rpcs import rpc_for_path
from fakels.service import FakeLanguageServer, IncomingCall, Reply

CONTENT_TYPE = "application/connect+proto"

_GZIP = 0x01
_END_STREAM = 0x02
_READ_SIZE = 65536
# Connect spells the gRPC code names in snake case, and CANCELLED with one L.
_CONNECT_CODES = {code: code.name.lower() for code in grpc.StatusCode} | {grpc.StatusCode.CANCELLED: "canceled"}


class ConnectServer:
    """The listening Connect port; :meth:`close` stops it and drops open connections."""

    def __init__(self, core: FakeLanguageServer, sock: socket.socket) -> None:
        self.port: int = sock.getsockname()[1]
        self._core = core
        self._sock = sock
        self._connections: set[asyncio.Task[None]] = set()
        self._loop = asyncio.get_running_loop()
        # Accepting in a plain reader callback rather than asyncio.start_server: every accepted
        # socket gets its task at once, so close() reaches connections that have not started yet.
        self._loop.add_reader(sock.fileno(), self._accept)

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._sock.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError:  # out of file descriptors and the like: leave it in the backlog
                return
            client.setblocking(False)
            client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # asyncio skips it: proto is 0 here
            task = self._loop.create_task(_serve_connection(self._core, client))
            self._connections.add(task)
            task.add_done_callback(self._connections.discard)
            task.add_done_callback(functools.partial(_close_socket, client))  # also if cancelled before it ran

    async def close(self) -> None:
        if self._sock.fileno() != -1:
            self._loop.remove_reader(self._sock.fileno())
            self._sock.close()
        for task in list(self._connections):
            task.cancel()
        await asyncio.gather(*self._connections, return_exceptions=True)


async def start_connect_server(core: FakeLanguageServer, host: str, port: int) -> ConnectServer:
    """Serve ``core`` over Connect on ``host:port`` (0 = any free port)."""
    sock = socket.create_server((host, port))
    sock.setblocking(False)
    return ConnectServer(core, sock)


def _close_socket(sock: socket.socket, _: object) -> None:
    sock.close()


async def _serve_connection(core: FakeLanguageServer, sock: socket.socket) -> None:
    reader, writer = await asyncio.open_connection(sock=sock)
    await _Connection(core, reader, writer).run()


@dataclass
class _Stream:
    method: str
    path: str
    headers: dict[str, str]
    body: bytearray = field(default_factory=bytearray)
    ended: bool = False


class _Gone(Exception):
    """The stream or the connection closed while a response was being sent."""


class _FramingError(ValueError):
    """The request body is not a sequence of well-formed envelopes."""


class _Connection:
    def __init__(self, core: FakeLanguageServer, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._core = core
        self._reader = reader
        self._writer = writer
        self._h2 = h2.connection.H2Connection(h2.config.H2Configuration(client_side=False, header_encoding=None))
        self._streams: dict[int, _Stream] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._window_changed = asyncio.Event()
        self._closed = False

    async def run(self) -> None:
        """Serve until the client leaves, breaks the protocol, or the server shuts down (cancellation)."""
        self._h2.initiate_connection()
        self._flush()
        shutdown = False
        reason = "the connection failed"
        try:
            reason = await self._read_until_done()
        except asyncio.CancelledError:
            shutdown = True
            self._goaway(h2.errors.ErrorCodes.NO_ERROR)
            for task in self._tasks:
                task.cancel()
            raise
        finally:
            self._shut()
            if not shutdown:
                for stream in [s for s in self._streams.values() if not s.ended]:
                    await self._abandon(stream, f"{reason} before the request ended")
            await asyncio.gather(*self._tasks, return_exceptions=True)
            with contextlib.suppress(ConnectionError):
                await self._writer.wait_closed()

    async def _read_until_done(self) -> str:
        while True:
            try:
                data = await self._reader.read(_READ_SIZE)
            except ConnectionError as exc:
                return f"the connection was lost ({exc})"
            if not data:
                return "the client closed the connection"
            try:
                events = self._h2.receive_data(data)
            except h2.exceptions.ProtocolError as exc:
                self._goaway(h2.errors.ErrorCodes.PROTOCOL_ERROR)
                return f"the client broke the HTTP/2 protocol ({exc})"
            for event in events:
                self._dispatch(event)
            self._flush()

    def _shut(self) -> None:
        self._closed = True
        self._window_changed.set()
        self._writer.close()

    def _goaway(self, error_code: h2.errors.ErrorCodes) -> None:
        with contextlib.suppress(h2.exceptions.ProtocolError):
            self._h2.close_connection(error_code=error_code)
        self._flush()

    def _flush(self) -> None:
        data = self._h2.data_to_send()
        if data and not self._writer.is_closing():
            self._writer.write(data)

    # ------------------------------------------------------------------ receiving

    def _dispatch(self, event: h2.events.Event) -> None:
        if isinstance(event, h2.events.RequestReceived):
            headers: dict[str, str] = {}
            for name, value in event.headers:  # repeated headers joined (RFC 9110 section 5.3)
                key, text = _text(name).lower(), _text(value)
                headers[key] = f"{headers[key]}, {text}" if key in headers else text
            self._streams[event.stream_id] = _Stream(
                method=headers.get(":method", ""),
                path=headers.get(":path", ""),
                headers={name: value for name, value in headers.items() if not name.startswith(":")},
            )
        elif isinstance(event, h2.events.DataReceived):
            stream = self._streams.get(event.stream_id)
            if stream is not None:
                stream.body += event.data
            # Acknowledge at once: the body is buffered whole, the size limit is the core's to apply.
            self._h2.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
        elif isinstance(event, h2.events.StreamEnded):
            stream = self._streams.get(event.stream_id)
            if stream is not None:
                stream.ended = True
                self._spawn(self._serve(event.stream_id, stream))
        elif isinstance(event, h2.events.StreamReset):
            stream = self._streams.pop(event.stream_id, None)
            if stream is not None and not stream.ended:
                self._spawn(self._abandon(stream, f"the client reset the stream (error code {event.error_code})"))
            self._window_changed.set()
        elif isinstance(event, h2.events.WindowUpdated | h2.events.RemoteSettingsChanged):
            self._window_changed.set()

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _abandon(self, stream: _Stream, reason: str) -> None:
        """Journal a request that never finished; nobody is left to answer."""
        call = IncomingCall("connect", stream.path, stream.headers, [bytes(stream.body)], reason)
        await self._core.handle(call)

    # ------------------------------------------------------------------ answering

    async def _serve(self, stream_id: int, stream: _Stream) -> None:
        body = bytes(stream.body)
        http_status, framing_error = _request_problem(stream)
        messages = [body]  # on any framing problem the journal keeps the whole body
        if framing_error is None:
            try:
                messages = _unframe(body, self._core.config.max_request_bytes)
            except _FramingError as exc:
                framing_error = str(exc)
        call = IncomingCall("connect", stream.path, stream.headers, messages, framing_error)
        try:
            reply = await self._core.handle(call)
        except Exception as exc:  # the core promises not to raise; if it does, the client still gets an answer
            reply = Reply(grpc.StatusCode.INTERNAL, f"fakels: internal error in the Connect transport: {exc!r}")
        if http_status == 200 and rpc_for_path(stream.path) is None:
            http_status = 404
        if http_status in (200, 404):
            headers = [
                (":status", str(http_status)),
                ("content-type", CONTENT_TYPE),
                ("connect-accept-encoding", "gzip"),
            ]
            answer = _envelopes(reply)
        else:
            headers = [
                (":status", str(http_status)),
                ("content-type", "application/json"),
                ("accept-post", CONTENT_TYPE),
            ]
            answer = json.dumps(_error_json(reply)["error"]).encode()  # Connect's unenveloped error body
        try:
            await self._respond(stream_id, headers, answer)
        except (_Gone, ConnectionError, h2.exceptions.ProtocolError):
            pass  # the client went away; the call is journaled already
        finally:
            self._streams.pop(stream_id, None)

    async def _respond(self, stream_id: int, headers: list[tuple[str, str]], body: bytes) -> None:
        self._check_open(stream_id)
        self._h2.send_headers(stream_id, headers)
        self._flush()
        view = memoryview(body)
        while view:
            size = await self._send_window(stream_id)
            chunk, view = view[:size], view[size:]
            self._h2.send_data(stream_id, chunk.tobytes(), end_stream=not view)
            self._flush()
            await self._writer.drain()

    async def _send_window(self, stream_id: int) -> int:
        """Bytes that may go out now on ``stream_id``; waits for WINDOW_UPDATE when there are none."""
        while True:
            self._check_open(stream_id)
            size = min(self._h2.local_flow_control_window(stream_id), self._h2.max_outbound_frame_size)
            if size > 0:
                return size
            self._window_changed.clear()
            await self._window_changed.wait()

    def _check_open(self, stream_id: int) -> None:
        if self._closed or stream_id not in self._streams:
            raise _Gone


def _request_problem(stream: _Stream) -> tuple[int, str | None]:
    """The HTTP status to answer with, and what is wrong with the request line, if anything."""
    if stream.method != "POST":
        return 405, f"unsupported HTTP method {stream.method!r}; fakels' Connect port takes POST"
    content_type = stream.headers.get("content-type", "")
    if content_type.split(";", 1)[0].strip().lower() != CONTENT_TYPE:
        return 415, f"unsupported content-type {content_type!r}; fakels' Connect port takes {CONTENT_TYPE}"
    return 200, None


def _unframe(body: bytes, limit: int) -> list[bytes]:
    """Split a request body into envelope payloads, gunzipped per flag; :class:`_FramingError` says why not."""
    messages: list[bytes] = []
    offset = 0
    while offset < len(body):
        if len(body) - offset < 5:
            raise _FramingError(
                f"truncated envelope at byte {offset}: {len(body) - offset} bytes left, an envelope header has 5"
            )
        flags = body[offset]
        length = int.from_bytes(body[offset + 1 : offset + 5], "big")
        start, end = offset + 5, offset + 5 + length
        if end > len(body):
            raise _FramingError(
                f"envelope at byte {offset} declares {length} payload bytes but only {len(body) - start} follow"
            )
        if flags & ~_GZIP:
            raise _FramingError(
                f"envelope at byte {offset} has flags 0x{flags:02x}; a request envelope may only set 0x01 (gzip)"
            )
        payload = body[start:end]
        if flags & _GZIP:
            try:
                payload = _gunzip(payload, limit)
            except (OSError, EOFError, zlib.error) as exc:
                raise _FramingError(
                    f"envelope at byte {offset} is flagged gzip (0x01) but does not gunzip: {exc}"
                ) from exc
        messages.append(payload)
        offset = end
    return messages


def _gunzip(payload: bytes, limit: int) -> bytes:
    """Inflate at most ``limit + 1`` bytes: enough for the size check to reject a gzip bomb
    without ever holding it in memory."""
    inflater = zlib.decompressobj(wbits=31)
    out = inflater.decompress(payload, limit + 1)
    if len(out) <= limit and not inflater.eof:
        raise zlib.error("incomplete gzip stream")
    return out


def _envelopes(reply: Reply) -> bytes:
    end = json.dumps(_error_json(reply) if not reply.ok else {}).encode()
    frames = [_envelope(0, payload) for payload in reply.payloads]
    frames.append(_envelope(_END_STREAM, end))
    return b"".join(frames)


def _envelope(flags: int, payload: bytes) -> bytes:
    return bytes([flags]) + len(payload).to_bytes(4, "big") + payload


def _error_json(reply: Reply) -> dict[str, dict[str, str]]:
    return {"error": {"code": _CONNECT_CODES[reply.code], "message": reply.message}}


def _text(value: bytes | str) -> str:
    return value.decode("latin-1") if isinstance(value, bytes) else value
