"""Loopback stand-ins for the URL fetcher's tests: a scripted raw HTTP server, a DNS stand-in, a
``getaddrinfo`` stand-in and a port that never completes a TCP handshake.

``RawServer`` answers each request-target with a handler that writes raw bytes, so a test can send
what no well-behaved server sends: a ``300`` with ``Location``, a response without ``Content-Type``,
a header that drips past the deadline, a close without any reply. It listens on ``127.0.0.1`` or
``::1`` only, and records every request (target and headers).
"""

from __future__ import annotations

import contextlib
import ipaddress
import socket
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

from tests.support.imagegen import solid

PNG = solid(8, 6)


@dataclass(frozen=True)
class Request:
    target: str
    headers: dict[str, str]
    """Header names lower-cased, values stripped."""


Handler = Callable[[socket.socket, Request, threading.Event], None]
"""``(connection, request, stop)``: write the reply; ``stop`` is set when the server shuts down."""


def response(status: int, headers: Sequence[tuple[str, str]] = (), body: bytes = b"") -> bytes:
    lines = [f"HTTP/1.1 {status} Whatever"] + [f"{name}: {value}" for name, value in headers]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


def reply(status: int, headers: Sequence[tuple[str, str]] = (), body: bytes = b"") -> Handler:
    """A complete reply; ``Content-Length`` is added unless given."""
    names = {name.lower() for name, _ in headers}
    full = [*headers] if "content-length" in names else [*headers, ("Content-Length", str(len(body)))]

    def handle(conn: socket.socket, request: Request, stop: threading.Event) -> None:
        conn.sendall(response(status, full, body))

    return handle


def png_reply() -> Handler:
    return reply(200, [("Content-Type", "image/png")], PNG)


def close_without_reply(conn: socket.socket, request: Request, stop: threading.Event) -> None:
    """Read the request and hang up without a status line."""


def drip_headers(conn: socket.socket, request: Request, stop: threading.Event) -> None:
    """A status line, then one header byte every 20 ms for up to 2 s: the header never ends in time."""
    conn.sendall(b"HTTP/1.1 200 OK\r\nX-Drip: ")
    deadline = time.monotonic() + 2.0
    while time.monotonic() < deadline and not stop.wait(0.02):
        try:
            conn.sendall(b"a")
        except OSError:
            return


def drip_body(conn: socket.socket, request: Request, stop: threading.Event) -> None:
    """Headers announcing 100 000 bytes, then one body byte every 10 ms for up to 2 s."""
    conn.sendall(response(200, [("Content-Type", "image/png"), ("Content-Length", "100000")]))
    deadline = time.monotonic() + 2.0
    while time.monotonic() < deadline and not stop.wait(0.01):
        try:
            conn.sendall(b"\0")
        except OSError:
            return


@dataclass
class RawServer:
    host: str
    port: int = 0
    routes: dict[str, Handler] = field(default_factory=dict)
    requests: list[Request] = field(default_factory=list)
    client_hung_up: threading.Event = field(default_factory=threading.Event)
    """Set by ``await_hang_up`` handlers when the client closed its end."""

    def url(self, target: str, scheme: str = "http") -> str:
        shown = f"[{self.host}]" if ":" in self.host else self.host
        return f"{scheme}://{shown}:{self.port}{target}"


def await_hang_up(server: RawServer, head: bytes) -> Handler:
    """Send ``head`` and wait (up to 2 s) for the client to close the connection."""

    def handle(conn: socket.socket, request: Request, stop: threading.Event) -> None:
        conn.sendall(head)
        conn.settimeout(2.0)
        try:
            if conn.recv(1) == b"":
                server.client_hung_up.set()
        except OSError:
            pass

    return handle


def _read_head(conn: socket.socket) -> bytes | None:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(4096)
        if not chunk:
            return None
        data += chunk
    return data.split(b"\r\n\r\n", 1)[0]


def _parse(head: bytes) -> Request:
    first, *lines = head.decode("latin-1").split("\r\n")
    headers = {}
    for line in lines:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return Request(first.split(" ")[1], headers)


def _serve_one(server: RawServer, conn: socket.socket, stop: threading.Event) -> None:
    with conn:
        try:
            conn.settimeout(5.0)  # inside: the server's stop may close the connection first (EBADF)
            head = _read_head(conn)  # a TLS ClientHello never completes a head: the server stays silent
            if head is None:
                return
            request = _parse(head)
            server.requests.append(request)
            server.routes.get(request.target, reply(404))(conn, request, stop)
        except OSError:
            pass


@contextmanager
def raw_server(host: str = "127.0.0.1") -> Iterator[RawServer]:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    listener = socket.socket(family, socket.SOCK_STREAM)
    listener.bind((host, 0))
    listener.listen(16)
    server = RawServer(host, listener.getsockname()[1])
    stop = threading.Event()
    accepted: list[socket.socket] = []

    def accept_loop() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            if stop.is_set():  # the wake-up connection of the teardown
                conn.close()
                return
            accepted.append(conn)
            threading.Thread(target=_serve_one, args=(server, conn, stop), daemon=True).start()

    thread = threading.Thread(target=accept_loop, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        stop.set()
        with contextlib.suppress(OSError), socket.create_connection((host, server.port), timeout=1.0):
            pass
        thread.join(2)
        listener.close()
        for conn in accepted:
            conn.close()


@contextmanager
def unanswered_port() -> Iterator[int]:
    """A loopback port whose accept queue is full: a further connect gets no SYN-ACK and waits."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(0)
        port: int = listener.getsockname()[1]
        with socket.create_connection(("127.0.0.1", port), timeout=1.0):  # fills the queue
            yield port


class Resolver:
    """A DNS stand-in for ``FetchPolicy.resolver``: a fixed answer per name, and every ``(host, port)`` asked."""

    def __init__(self, answers: dict[str, Sequence[str]], delay: float = 0.0) -> None:
        self.answers = answers
        self.delay = delay
        self.calls: list[tuple[str, int]] = []

    def __call__(self, host: str, port: int) -> Sequence[str]:
        self.calls.append((host, port))
        time.sleep(self.delay)
        if host not in self.answers:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return self.answers[host]


class HostsFile:
    """A ``socket.getaddrinfo`` stand-in, like an ``/etc/hosts`` entry: a known name is looked up as its
    address through the real ``getaddrinfo`` (same arguments otherwise), and so is an address itself
    (``socket.create_connection`` looks it up); any other name, ``None`` included, is unknown (no
    query ever leaves the box). A name in ``hang`` blocks until ``release``
    is set (at most ``hang_for`` seconds) and is then unknown too."""

    def __init__(self, entries: dict[str, str], hang: frozenset[str] = frozenset(), hang_for: float = 1.0) -> None:
        self.entries = entries
        self.hang = hang
        self.hang_for = hang_for
        self.release = threading.Event()
        self.threads: list[threading.Thread] = []
        self._real = socket.getaddrinfo

    def __call__(self, host: object, port: object, *args: object, **kwargs: object) -> object:
        self.threads.append(threading.current_thread())
        if isinstance(host, str) and host in self.hang:
            self.release.wait(self.hang_for)
        if isinstance(host, str) and _is_address(host):
            return self._real(host, port, *args, **kwargs)  # type: ignore[arg-type]
        if not isinstance(host, str) or host not in self.entries:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return self._real(self.entries[host], port, *args, **kwargs)  # type: ignore[arg-type]


def _is_address(text: str) -> bool:
    try:
        ipaddress.ip_address(text.split("%", 1)[0])
    except ValueError:
        return False
    return True


def bounded(call: Callable[[], object], limit: float) -> tuple[object, float]:
    """Run ``call`` aside and wait at most ``limit`` seconds: its result or exception, and the time it took.

    A fetch that ignores its deadline fails the test instead of hanging the run (its thread is a daemon)."""
    outcome: list[object] = []
    started = time.monotonic()

    def run() -> None:
        try:
            outcome.append(call())
        except BaseException as exc:
            outcome.append(exc)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(limit)
    assert outcome, f"still running after {limit} s"
    return outcome[0], time.monotonic() - started
