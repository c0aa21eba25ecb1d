"""The documented promises of :class:`fakels.ControlClient` (issue 13 §2, "documented contracts of
public accessors"): ``health`` is True only for ``{"ok": true}`` and False, never an exception, for
anything else or nothing at all; errors carry the endpoint's status and text, or None when nothing
answered; ``reset`` keeps the loaded scenario."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from fakels.control_client import ControlClient, ControlError
from fakels.server import FakeLSThread

# (status, body) served for every GET by a plain loopback HTTP server standing where fakels would be.
_ANSWERS: dict[str, tuple[int, bytes]] = {
    "ok": (200, b'{"ok": true}'),
    "ok-false": (200, b'{"ok": false}'),
    "ok-one": (200, b'{"ok": 1}'),
    "ok-string": (200, b'{"ok": "true"}'),
    "no-ok": (200, b"{}"),
    "a-list": (200, b"[true]"),
    "not-json": (200, b"ok"),
    "empty": (200, b""),
    "server-error": (500, b'{"error": "the fake broke"}'),
    "not-found": (404, b"nothing here"),
}


class _Canned(BaseHTTPRequestHandler):
    answer: tuple[int, bytes] = (200, b"")

    def do_GET(self) -> None:  # the stdlib's handler naming
        status, body = self.answer
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture(params=sorted(_ANSWERS))
def canned(request: pytest.FixtureRequest) -> Iterator[tuple[str, int]]:
    handler = type("Handler", (_Canned,), {"answer": _ANSWERS[request.param]})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield request.param, server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


def test_health_is_true_only_for_ok_true(canned: tuple[str, int]) -> None:
    name, port = canned
    assert ControlClient(port, timeout=5).health() is (name == "ok")


def _closed_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_health_is_false_when_nothing_listens() -> None:
    assert ControlClient(_closed_port(), timeout=5).health() is False


def test_an_unreachable_endpoint_is_a_control_error_without_a_status() -> None:
    port = _closed_port()
    with pytest.raises(ControlError) as caught:
        ControlClient(port, timeout=5).state()
    assert caught.value.status is None
    expected = f"fakels control endpoint http://127.0.0.1:{port} is not reachable (GET /state)"
    assert str(caught.value).startswith(expected)


def test_a_refusal_carries_the_status_and_the_endpoints_error_text() -> None:
    with FakeLSThread(control_port=0) as fake:
        assert fake.ports.control is not None
        client = ControlClient(fake.ports.control, timeout=5)
        with pytest.raises(ControlError) as caught:
            client.load_scenario({"turns": "not a list"})
        assert caught.value.status == 400
        assert "turns" in str(caught.value)
        assert "{" not in str(caught.value), "the error text, not the JSON body around it"


def test_reset_keeps_the_loaded_scenario() -> None:
    with FakeLSThread(control_port=0) as fake:
        assert fake.ports.control is not None
        client = ControlClient(fake.ports.control, timeout=5)
        client.load_scenario({"turns": [{"chunks": [{"text": "one"}]}, {"chunks": [{"text": "two"}]}]})
        before = client.state()
        client.reset()
        after = client.state()
        assert after["scenario_turns"] == before["scenario_turns"] == 2
        assert client.journal() == []
        assert json.loads(json.dumps(after["cascades"])) == []
