"""The loopback gateway of the target tests stays quiet when a client hangs up early: its handler thread can
outlive the test, and a traceback it printed would land in a later test's captured stderr (seen: a plugin
test's one-line usage error became two lines when the tests ran in another order)."""

from __future__ import annotations

import json
import socket
import time
from urllib.parse import urlsplit

import pytest

from tests.conformance.targets.targets_support import echo_server


def test_a_client_hanging_up_mid_stream_prints_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    with echo_server() as (url, requests):
        address = urlsplit(url)
        body = json.dumps({"model": "slow-stream", "messages": []}).encode()
        with socket.create_connection((address.hostname, address.port)) as client:
            client.sendall(
                b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                + f"Content-Length: {len(body)}\r\n\r\n".encode()
                + body
            )
            client.recv(1)  # the stream has begun
            client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
        deadline = time.monotonic() + 5  # the handler writes 12 pings 50 ms apart, then gives up
        while not requests and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(1.0)
    assert requests, "the request never reached the server"
    assert capsys.readouterr().err == ""
