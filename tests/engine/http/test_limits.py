"""The request-size cap, at the limit, one under and one over."""

from __future__ import annotations

import json
import logging
import socket
import time
from typing import Any

import httpx
import pytest

from fakels.scenario import parse_scenario
from fakels.server import FakeLSThread
from tests.engine.http.conftest import KEY_A, MODEL, serve


def _body_of_size(size: int) -> bytes:
    base: dict[str, Any] = {"model": MODEL, "messages": [{"role": "user", "content": ""}]}
    padding = size - len(json.dumps(base, separators=(",", ":")).encode())
    base["messages"][0]["content"] = "x" * padding
    body = json.dumps(base, separators=(",", ":")).encode()
    assert len(body) == size
    return body


@pytest.mark.parametrize(("size", "status"), [(4095, 200), (4096, 200), (4097, 413)])
def test_body_cap_is_exact(fake: FakeLSThread, size: int, status: int) -> None:
    served = serve(fake, max_body_bytes=4096)
    try:
        response = httpx.post(
            served.url + "/v1/chat/completions",
            content=_body_of_size(size),
            headers={"Authorization": f"Bearer {KEY_A}", "Content-Type": "application/json"},
            timeout=30,
        )
    finally:
        served.stop()
    assert response.status_code == status, response.text
    if status == 413:
        assert response.json()["error"]["code"] == "request_too_large"


@pytest.mark.parametrize(("size", "status"), [(4095, 200), (4096, 200), (4097, 413)])
def test_body_cap_is_exact_for_a_chunked_body_without_a_length(fake: FakeLSThread, size: int, status: int) -> None:
    """No Content-Length to refuse up front: the streamed byte count decides, in the same unit."""
    body = _body_of_size(size)
    served = serve(fake, max_body_bytes=4096)
    try:
        response = httpx.post(
            served.url + "/v1/chat/completions",
            content=iter([body[:1000], body[1000:]]),
            headers={"Authorization": f"Bearer {KEY_A}", "Content-Type": "application/json"},
            timeout=30,
        )
    finally:
        served.stop()
    assert response.request.headers.get("transfer-encoding") == "chunked"
    assert "content-length" not in response.request.headers
    assert response.status_code == status, response.text
    if status == 413:
        assert response.json()["error"]["code"] == "request_too_large"


def test_a_long_wait_is_bridged_by_heartbeats_that_clients_ignore(fake: FakeLSThread) -> None:
    """``: ping`` comments while the LS is silent (here: a chunk held back 0.6 s, heartbeat 0.1 s)."""
    fake.load_scenario(parse_scenario({"turns": [{"chunks": [{"text": "a"}, {"text": "b", "delay_s": 0.6}]}]}))
    served = serve(fake, heartbeat_s=0.1)
    try:
        body = {"model": MODEL, "messages": [{"role": "user", "content": "wait"}], "stream": True}
        with httpx.stream(
            "POST", served.url + "/v1/chat/completions", json=body, headers={"Authorization": f"Bearer {KEY_A}"}
        ) as response:
            lines = [line for line in response.iter_lines() if line]
    finally:
        served.stop()
    assert lines.count(": ping") >= 2
    data = [line[len("data: ") :] for line in lines if line.startswith("data: ")]
    assert data[-1] == "[DONE]"
    assert "".join(json.loads(d)["choices"][0]["delta"].get("content", "") for d in data[:-2]) == "ab"


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


@pytest.mark.parametrize("path", ["/v1/chat/completions", "/v1/responses"])
def test_a_client_leaving_mid_body_ends_its_request_without_a_traceback(fake: FakeLSThread, path: str) -> None:
    """Half a body, then the socket closes: the gateway ends that request quietly (uvicorn logs no
    'Exception in ASGI application') and keeps serving."""
    served = serve(fake)
    records = _Records()
    uvicorn_log = logging.getLogger("uvicorn.error")
    uvicorn_log.addHandler(records)
    try:
        host, port = served.url.removeprefix("http://").split(":")
        head = (
            f"POST {path} HTTP/1.1\r\nHost: {host}:{port}\r\nAuthorization: Bearer {KEY_A}\r\n"
            "Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n"
        )
        with socket.create_connection((host, int(port))) as sock:
            sock.sendall(head.encode() + b'{"model": "')
            # The request is in the handler (reading its body) once a second request is served.
            assert httpx.get(served.url + "/healthz").status_code == 200
        # The handler sees the disconnect now; a crash would be logged within this wait.
        deadline = time.monotonic() + 2
        while time.monotonic() < deadline and not records.messages:
            time.sleep(0.02)
        assert httpx.get(served.url + "/healthz").status_code == 200
        crashes = [m for m in records.messages if "Exception in ASGI application" in m]
        assert not crashes, crashes
    finally:
        uvicorn_log.removeHandler(records)
        served.stop()
