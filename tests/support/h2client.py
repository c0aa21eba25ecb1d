"""A small blocking HTTP/2 client (cleartext, prior knowledge) for poking servers with exact bytes.

It sends whatever headers and body it is given, with no protocol framing of its own, so tests can
speak gRPC, Connect or garbage. Flow control is honoured both ways: request bodies wait for the
peer's window, received data is acknowledged as it arrives. Several streams can be open at once
on one :class:`H2Client`; :func:`send_raw` writes bytes that are not HTTP/2 at all.
"""

from __future__ import annotations

import contextlib
import socket
import struct
from collections.abc import Sequence
from dataclasses import dataclass, field

import h2.config
import h2.connection
import h2.events

LOOPBACK = "127.0.0.1"
Headers = Sequence[tuple[str, str]]


@dataclass
class H2Response:
    """What came back on one stream. ``ended`` is False if the stream was reset or the connection
    went away first; ``reset`` is the RST_STREAM error code, if any."""

    headers: dict[str, str] = field(default_factory=dict)
    data: bytes = b""
    trailers: dict[str, str] = field(default_factory=dict)
    ended: bool = False
    reset: int | None = None

    @property
    def status(self) -> int | None:
        return int(self.headers[":status"]) if ":status" in self.headers else None


class H2Client:
    """One HTTP/2 connection to ``host:port``; a context manager."""

    def __init__(self, port: int, host: str = LOOPBACK, *, timeout: float = 10.0) -> None:
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True, header_encoding=None))
        self.responses: dict[int, H2Response] = {}
        self.goaway: int | None = None  # error code of a GOAWAY from the server
        self.closed = False
        self.conn.initiate_connection()
        self._flush()

    def request(self, headers: Headers, body: bytes = b"") -> H2Response:
        return self.response(self.start(headers, body))

    def start(self, headers: Headers, body: bytes = b"", *, end_stream: bool = True) -> int:
        """Open a stream, send ``headers`` and ``body``; returns the stream id."""
        stream_id = self.conn.get_next_available_stream_id()
        self.responses[stream_id] = H2Response()
        self.conn.send_headers(stream_id, list(headers), end_stream=end_stream and not body)
        self._flush()
        if body:
            self.send_data(stream_id, body, end_stream=end_stream)
        return stream_id

    def send_data(self, stream_id: int, data: bytes, *, end_stream: bool = True) -> None:
        """Send ``data`` as DATA frames, waiting for window updates; stops if the stream dies."""
        view = memoryview(data)
        while view:
            response = self.responses[stream_id]
            if self.closed or response.reset is not None or response.ended:
                return
            size = min(self.conn.local_flow_control_window(stream_id), self.conn.max_outbound_frame_size)
            if size <= 0:
                self._pump()
                continue
            chunk, view = view[:size], view[size:]
            self.conn.send_data(stream_id, chunk.tobytes(), end_stream=end_stream and not view)
            self._flush()

    def reset_stream(self, stream_id: int, error_code: int = 8) -> None:  # 8 = CANCEL
        self.conn.reset_stream(stream_id, error_code)
        self._flush()

    def response(self, stream_id: int) -> H2Response:
        """Read until ``stream_id`` ends, is reset, or the connection closes."""
        response = self.responses[stream_id]
        while not (response.ended or response.reset is not None or self.closed):
            self._pump()
        return response

    def wait_closed(self) -> None:
        """Read (and record) everything until the server closes the connection."""
        while not self.closed:
            self._pump()

    def close(self, *, abort: bool = False) -> None:
        """Close the connection: gracefully (FIN, then read until the server closes too, so nothing
        in flight is lost), or with ``abort=True`` by a TCP reset."""
        if abort:
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        elif not self.closed:
            with contextlib.suppress(OSError):
                self.sock.shutdown(socket.SHUT_WR)
                while self.sock.recv(65536):
                    pass
        self.closed = True
        self.sock.close()

    def __enter__(self) -> H2Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _pump(self) -> None:
        try:
            data = self.sock.recv(65536)
        except ConnectionError:
            data = b""
        if not data:
            self.closed = True
            return
        for event in self.conn.receive_data(data):
            self._on_event(event)
        self._flush()

    def _on_event(self, event: h2.events.Event) -> None:
        response = self.responses.get(getattr(event, "stream_id", 0) or 0)
        if isinstance(event, h2.events.ConnectionTerminated):
            self.goaway = event.error_code
        if response is None:
            return
        if isinstance(event, h2.events.ResponseReceived | h2.events.InformationalResponseReceived):
            response.headers.update(_decode(event.headers))
        elif isinstance(event, h2.events.TrailersReceived):
            response.trailers.update(_decode(event.headers))
        elif isinstance(event, h2.events.DataReceived):
            response.data += event.data
            self.conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
        elif isinstance(event, h2.events.StreamEnded):
            response.ended = True
        elif isinstance(event, h2.events.StreamReset):
            response.reset = int(event.error_code)

    def _flush(self) -> None:
        data = self.conn.data_to_send()
        if data:
            self.sock.sendall(data)


def request(port: int, headers: Headers, body: bytes = b"", *, timeout: float = 10.0) -> H2Response:
    """One request on a fresh connection."""
    with H2Client(port, timeout=timeout) as client:
        return client.request(headers, body)


def send_raw(port: int, data: bytes, *, timeout: float = 2.0) -> bytes:
    """Write ``data`` to a fresh TCP connection, then read until the peer closes (or ``timeout``)."""
    received = bytearray()
    with socket.create_connection((LOOPBACK, port), timeout=timeout) as sock:
        sock.sendall(data)
        try:
            while chunk := sock.recv(65536):
                received += chunk
        except (TimeoutError, ConnectionError):
            pass
    return bytes(received)


def _decode(headers: Sequence[tuple[bytes | str, bytes | str]]) -> dict[str, str]:
    def text(value: bytes | str) -> str:
        return value.decode("latin-1") if isinstance(value, bytes) else value

    return {text(name): text(value) for name, value in headers}
