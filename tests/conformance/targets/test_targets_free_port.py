"""The port the kit picks for a launched gateway (``--target http://127.0.0.1:0``) and for the LS
stand-in's control port: free when picked, and outside the range the OS hands out for port 0, so that
no other process binding port 0 in the meantime is handed the same one and answers in its place."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from conformance.targets import _launch
from conformance.targets._launch import _outside_the_ephemeral_range, free_port

TRIES = 64


def _family(host: str) -> socket.AddressFamily:
    return socket.AF_INET6 if ":" in host else socket.AF_INET


@pytest.mark.parametrize("host", ["127.0.0.1", "::1"])
def test_free_port_is_a_bindable_loopback_port_outside_the_ephemeral_range(host: str) -> None:
    low, high = (int(word) for word in _launch._EPHEMERAL_RANGE.read_text(encoding="ascii").split())
    for _ in range(20):
        port = free_port(host)
        assert not low <= port <= high, f"{port} is in the ephemeral range {low}-{high}"
        assert port >= 10000, port
        with socket.socket(_family(host)) as sock:
            sock.bind((host, port))


def _with_range(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, text: str) -> None:
    file = tmp_path / "ip_local_port_range"
    file.write_text(text, encoding="ascii")
    monkeypatch.setattr(_launch, "_EPHEMERAL_RANGE", file)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("32768\t60999\n", range(10000, 32768)),  # Linux's default: the span below is the wider
        ("10065 65535", range(10000, 10065)),  # 65 ports below: enough
        ("10064 65535", range(10000, 10064)),  # 64 ports below (10000..10063): one per try, enough
        ("10063 65535", None),  # 63 below: too few
        ("10000 65471", range(65472, 65536)),  # 64 ports above: enough
        ("10000 65472", None),  # 63 above: too few
        ("1024 20000", range(20001, 65536)),  # a range starting below 10000 leaves the span above
    ],
)
def test_the_picks_come_from_the_wider_span_with_room_for_every_try(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, text: str, expected: range | None
) -> None:
    _with_range(monkeypatch, tmp_path, text)
    picks = _outside_the_ephemeral_range(TRIES)
    if expected is None:
        assert picks == []
    else:
        assert len(picks) == len(set(picks)) == TRIES
        assert all(port in expected for port in picks), sorted(set(picks) - set(expected))


@pytest.mark.parametrize("text", ["", "32768", "low high", "1 2 3"])
def test_an_unreadable_range_gives_no_picks(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, text: str) -> None:
    _with_range(monkeypatch, tmp_path, text)
    assert _outside_the_ephemeral_range(TRIES) == []


def test_a_missing_range_file_gives_no_picks(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(_launch, "_EPHEMERAL_RANGE", tmp_path / "absent")
    assert _outside_the_ephemeral_range(TRIES) == []


def test_when_every_pick_is_taken_the_os_picks(monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        taken = held.getsockname()[1]
        monkeypatch.setattr(_launch, "_outside_the_ephemeral_range", lambda: [taken, taken])
        port = free_port()
        assert port != taken
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", port))


def test_a_taken_pick_is_passed_over_for_the_next(monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as held, socket.socket() as spare:
        held.bind(("127.0.0.1", 0))
        spare.bind(("127.0.0.1", 0))
        taken, next_one = held.getsockname()[1], spare.getsockname()[1]
        spare.close()
        monkeypatch.setattr(_launch, "_outside_the_ephemeral_range", lambda: [taken, next_one])
        assert free_port() == next_one
