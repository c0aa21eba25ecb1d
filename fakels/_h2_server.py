"""The HTTP/2 (h2c, prior knowledge) server under fakels' own ports, on asyncio + h2: connections,
streams, flow control and abandoned requests. What a finished request is answered with is its
protocol's (:class:`H2Protocol`): Connect (:mod:`fakels._connect_transport`) or gRPC written by hand
(:mod:`fakels._grpc_h2_transport`), which may also fail at the HTTP level on purpose.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import socket
from collections.abc import Coroutine
from dataclasses import dataclass, field
from typing import Any, Protocol

import h2.config
import h2.connection
import h2.errors
import h2.events
import h2.exceptions

from fakels.service import FakeLanguageServer, IncomingCall

_READ_SIZE = 65536


@dataclass(frozen=True)
class H2Answer:
    """What a stream is answered with: its headers, its body, and the trailers that end it (None: the body
    ends it; a trailers-only answer has an empty body)."""

    headers: list[tuple[str, str]]
    body: bytes = b""
    trailers: list[tuple[str, str]] | None = None


class H2Protocol(Protocol):
    """``transport``: the journal's name for calls that came this way."""

    transport: str

    async def answer(self, core: FakeLanguageServer, stream: H2Stream) -> H2Answer: ...


class H2Server:
    """A listening port serving ``protocol``; :meth:`close` stops it and drops open connections."""

    def __init__(self, core: FakeLanguageServer, sock: socket.socket, protocol: H2Protocol) -> None:
        self.port: int = sock.getsockname()[1]
        self._core = core
        self._protocol = protocol
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
            task = self._loop.create_task(_serve_connection(self._core, self._protocol, client))
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


async def start_h2_server(core: FakeLanguageServer, host: str, port: int, protocol: H2Protocol) -> H2Server:
    """Serve ``core`` with ``protocol`` on ``host:port`` (0 = any free port)."""
    sock = socket.create_server((host, port))
    sock.setblocking(False)
    return H2Server(core, sock, protocol)


def _close_socket(sock: socket.socket, _: object) -> None:
    sock.close()


async def _serve_connection(core: FakeLanguageServer, protocol: H2Protocol, sock: socket.socket) -> None:
    reader, writer = await asyncio.open_connection(sock=sock)
    await _Connection(core, protocol, reader, writer).run()


@dataclass
class H2Stream:
    method: str
    path: str
    headers: dict[str, str]
    body: bytearray = field(default_factory=bytearray)
    ended: bool = False


class _Gone(Exception):
    """The stream or the connection closed while a response was being sent."""


class _Connection:
    def __init__(
        self,
        core: FakeLanguageServer,
        protocol: H2Protocol,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
    ) -> None:
        self._core = core
        self._protocol = protocol
        self._reader = reader
        self._writer = writer
        self._h2 = h2.connection.H2Connection(h2.config.H2Configuration(client_side=False, header_encoding=None))
        self._streams: dict[int, H2Stream] = {}
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
            self._streams[event.stream_id] = H2Stream(
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

    async def _abandon(self, stream: H2Stream, reason: str) -> None:
        """Journal a request that never finished; nobody is left to answer."""
        call = IncomingCall(self._protocol.transport, stream.path, stream.headers, [bytes(stream.body)], reason)
        await self._core.handle(call)

    # ------------------------------------------------------------------ answering

    async def _serve(self, stream_id: int, stream: H2Stream) -> None:
        answer = await self._protocol.answer(self._core, stream)
        try:
            await self._respond(stream_id, answer)
        except (_Gone, ConnectionError, h2.exceptions.ProtocolError):
            pass  # the client went away; the call is journaled already
        finally:
            self._streams.pop(stream_id, None)

    async def _respond(self, stream_id: int, answer: H2Answer) -> None:
        self._check_open(stream_id)
        if not answer.body:  # headers only: ended by them, trailers and all (gRPC's trailers-only answer)
            self._h2.send_headers(stream_id, [*answer.headers, *(answer.trailers or ())], end_stream=True)
            self._flush()
            return
        self._h2.send_headers(stream_id, answer.headers)
        self._flush()
        view = memoryview(answer.body)
        while view:
            size = await self._send_window(stream_id)
            chunk, view = view[:size], view[size:]
            self._h2.send_data(stream_id, chunk.tobytes(), end_stream=not view and answer.trailers is None)
            self._flush()
            await self._writer.drain()
        if answer.trailers is not None:
            self._check_open(stream_id)
            self._h2.send_headers(stream_id, answer.trailers, end_stream=True)
            self._flush()

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


def _text(value: bytes | str) -> str:
    return value.decode("latin-1") if isinstance(value, bytes) else value
