"""The spawner's readiness probe, :func:`engine.cascade.spawn.answers_h2c`: an HTTP/2 handshake on one socket,
judged against loopback peers that answer it, stay silent, never accept, hang up, speak HTTP/1.1 or trickle
bytes, and at its deadline."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Callable, Iterator

import h2.config
import h2.connection
import h2.errors
import h2.events
import pytest

from engine.cascade import spawn as ls_spawn
from engine.cascade.spawn import answers_h2c
from fakels.server import FakeLSThread

Peer = Callable[[socket.socket], None]


@contextlib.contextmanager
def _peer(serve: Peer | None) -> Iterator[str]:
    """``127.0.0.1:PORT`` of a listener on a port the OS picks. With ``serve``, a thread accepts one
    connection and hands it over; without, nothing accepts (the kernel still completes TCP connects)."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(4)
        thread = None
        if serve is not None:

            def accept_one() -> None:
                conn, _ = listener.accept()
                with conn:
                    serve(conn)

            thread = threading.Thread(target=accept_one, daemon=True)
            thread.start()
        yield f"127.0.0.1:{listener.getsockname()[1]}"
        if thread is not None:
            thread.join(10)
            assert not thread.is_alive(), "the test peer never finished"


def _h2_server(seen: list[object]) -> Peer:
    """A real HTTP/2 server side (h2): answers the preface with its SETTINGS, then records every event
    until the client hangs up."""

    def serve(conn: socket.socket) -> None:
        server = h2.connection.H2Connection(h2.config.H2Configuration(client_side=False))
        server.initiate_connection()
        conn.sendall(server.data_to_send())
        conn.settimeout(5)
        while data := conn.recv(65536):
            seen.extend(server.receive_data(data))  # its answers stay unsent: the probe reads only the SETTINGS

    return serve


def test_a_grpc_server_completes_the_handshake_and_journals_nothing() -> None:
    with FakeLSThread() as fake:
        assert answers_h2c(fake.address, 5.0) is True
        assert fake.journal.entries() == []  # a handshake is no request: the LS's journal stays empty


def test_the_probe_takes_the_servers_settings_and_says_goodbye_with_goaway() -> None:
    seen: list[object] = []
    with _peer(_h2_server(seen)) as address:
        assert answers_h2c(address, 5.0) is True
    assert [type(e) for e in seen] == [h2.events.RemoteSettingsChanged, h2.events.SettingsAcknowledged,
                                       h2.events.ConnectionTerminated]  # fmt: skip
    terminated = seen[-1]
    assert isinstance(terminated, h2.events.ConnectionTerminated)
    assert terminated.error_code == h2.errors.ErrorCodes.NO_ERROR


def test_a_closed_port_is_not_ready_at_once() -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        address = f"127.0.0.1:{holder.getsockname()[1]}"  # bound, never listening: connects are refused
        started = time.monotonic()
        assert answers_h2c(address, 5.0) is False
        assert time.monotonic() - started < 2.5, "a refused connection must not wait out the timeout"


def test_a_peer_that_accepts_and_says_nothing_is_not_ready_after_the_timeout() -> None:
    with _peer(None) as address:
        started = time.monotonic()
        assert answers_h2c(address, 0.3) is False
        elapsed = time.monotonic() - started
    assert 0.3 <= elapsed < 3.0


def test_a_peer_whose_accept_queue_is_full_is_not_ready_after_the_timeout() -> None:
    """A listener that never accepts, with its backlog taken: the kernel drops our SYN, so the connect itself
    hangs (for minutes of SYN retries) unless the probe's timeout bounds it too."""
    with socket.socket() as listener, socket.socket() as first:
        listener.bind(("127.0.0.1", 0))
        listener.listen(0)
        first.connect(listener.getsockname())  # fills the queue of a listen(0) socket
        started = time.monotonic()
        assert answers_h2c(f"127.0.0.1:{listener.getsockname()[1]}", 0.3) is False
        elapsed = time.monotonic() - started
    assert 0.3 <= elapsed < 3.0


@pytest.mark.parametrize("address", ["[::1]:{port}", "::1:{port}"])
def test_an_ipv6_host_is_split_from_its_port_at_the_last_colon(address: str) -> None:
    """Nothing listens there (IPv6 loopback or not): not ready, never a ValueError from a port like ':1:PORT'."""
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        assert answers_h2c(address.format(port=holder.getsockname()[1]), 1.0) is False


def test_a_peer_that_hangs_up_is_not_ready() -> None:
    with _peer(lambda conn: None) as address:
        assert answers_h2c(address, 5.0) is False


def test_a_peer_that_answers_http_1_1_is_not_ready() -> None:
    def http11(conn: socket.socket) -> None:
        conn.recv(65536)
        conn.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")

    with _peer(http11) as address:
        assert answers_h2c(address, 5.0) is False


def test_a_peer_that_trickles_its_settings_is_cut_off_by_the_whole_timeout() -> None:
    """Every byte arrives well within a single read's timeout; only the deadline over the whole exchange
    ends the probe (a SETTINGS frame of 600 bytes at one byte per 20 ms would take 12 s)."""
    stop = threading.Event()

    def trickle(conn: socket.socket) -> None:
        frame = (600).to_bytes(3, "big") + b"\x04\x00" + bytes(4) + b"\x00\x03\x00\x00\x00\x64" * 100
        for byte in frame:
            if stop.is_set():
                return
            with contextlib.suppress(OSError):
                conn.sendall(bytes([byte]))
            time.sleep(0.02)

    with _peer(trickle) as address:
        started = time.monotonic()
        try:
            assert answers_h2c(address, 0.3) is False
            elapsed = time.monotonic() - started
        finally:
            stop.set()
    assert elapsed < 3.0


def test_the_probe_starts_no_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    """grpc's readiness future polls on a thread that can outlive its closed channel (grpc/grpc#18995)."""
    with FakeLSThread() as fake:
        started: list[threading.Thread] = []
        start = threading.Thread.start

        def counted(thread: threading.Thread) -> None:
            started.append(thread)
            start(thread)

        monkeypatch.setattr(threading.Thread, "start", counted)
        assert answers_h2c(fake.address, 5.0) is True
        monkeypatch.undo()
    assert started == []


@pytest.mark.parametrize("past_deadline_s", [0.0, 10.0], ids=["exactly-at-the-deadline", "past-it"])
def test_no_read_once_the_deadline_is_reached_between_reads(
    monkeypatch: pytest.MonkeyPatch, past_deadline_s: float
) -> None:
    """The peer's SETTINGS comes in two parts; the clock reaches the deadline (exactly, or past it) after
    the first read, when the second part is already buffered: the probe reads no more and is not ready."""
    timeout_s = 5.0
    frame = _settings_frame()
    first_read, second_sent = threading.Event(), threading.Event()
    readings = iter([0.0, 0.0])  # the deadline, then the check before the first read

    def probe_clock() -> float:
        reading = next(readings, None)
        if reading is not None:
            return reading
        first_read.set()  # the third reading comes after the first read
        assert second_sent.wait(5), "the peer never sent its second part"
        time.sleep(0.05)  # loopback delivery
        return timeout_s + past_deadline_s

    def two_parts(conn: socket.socket) -> None:
        conn.sendall(frame[:5])
        if first_read.wait(5):
            conn.sendall(frame[5:])
        second_sent.set()
        _read_until_hang_up(conn)

    monkeypatch.setattr(ls_spawn, "_probe_clock", probe_clock)
    with _peer(two_parts) as address:
        assert answers_h2c(address, timeout_s) is False


def test_a_settings_frame_in_two_parts_within_the_deadline_is_ready() -> None:
    """The same two parts with time left: the probe reads on and is ready (the check above is no refusal of
    split frames)."""

    def two_parts(conn: socket.socket) -> None:
        frame = _settings_frame()
        conn.sendall(frame[:5])
        time.sleep(0.1)
        conn.sendall(frame[5:])
        _read_until_hang_up(conn)

    with _peer(two_parts) as address:
        assert answers_h2c(address, 5.0) is True


def _settings_frame() -> bytes:
    """A server's SETTINGS frame, as h2 writes it (the server preface)."""
    server = h2.connection.H2Connection(h2.config.H2Configuration(client_side=False))
    server.initiate_connection()
    return server.data_to_send()


def _read_until_hang_up(conn: socket.socket) -> None:
    """Keep the connection open until the probe closes it (or 5 s pass)."""
    conn.settimeout(5)
    with contextlib.suppress(OSError):
        while conn.recv(65536):
            pass
