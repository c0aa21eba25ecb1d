"""ServedGateway: the gateway's app served by uvicorn on loopback in a background thread (tests, the reference
target, benchmarks): it starts and stops promptly, answers without Nagle stalls, logs only warnings, and never
keeps the interpreter alive."""

from __future__ import annotations

import statistics
import threading
import time

import httpx
import pytest

from engine.http.gateway import Gateway, GatewayConfig, ServedGateway
from fakels.server import FakeLSThread
from tests.engine.http.chat_exact_support import CSRF, MODEL, play, user
from tests.support.fake_ls import StartFakeLs

#: Linux delays an ACK by at least 40 ms; an answer held back by Nagle waits for it.
NAGLE_STALL_S = 0.040
#: How long stopping waits for answers still in flight before it cancels them.
GRACE_S = 2


@pytest.fixture(scope="module")
def fake(start_module_fake_ls: StartFakeLs) -> FakeLSThread:
    return start_module_fake_ls(csrf_token=CSRF)


def _served(fake: FakeLSThread) -> ServedGateway:
    return ServedGateway(Gateway(GatewayConfig(ls_address=fake.address, csrf_token=CSRF)))


def test_a_served_gateway_starts_and_stops_promptly_on_a_daemon_thread(
    fake: FakeLSThread, capsys: pytest.CaptureFixture[str]
) -> None:
    served = _served(fake)
    before = set(threading.enumerate())
    started = time.monotonic()
    served.start()
    try:
        assert time.monotonic() - started < 0.9
        threads = [t for t in threading.enumerate() if t not in before]
        assert threads
        assert all(t.daemon for t in threads)  # a forgotten gateway never keeps the interpreter alive
        assert httpx.get(served.url + "/healthz").json() == {"ok": True}
    finally:
        stopping = time.monotonic()
        served.stop()
    assert time.monotonic() - stopping < 5  # uvicorn is told to exit, not waited out
    assert not any(t.is_alive() for t in threads)
    with pytest.raises(httpx.TransportError):
        httpx.get(served.url + "/healthz", timeout=1)
    assert capsys.readouterr().err == ""  # uvicorn logs warnings only: no startup or shutdown lines


def test_start_returns_as_soon_as_the_server_serves(fake: FakeLSThread) -> None:
    """It polls for the start every few ms (a few starts, so that at least one is polled while starting)."""
    for _ in range(3):
        served = _served(fake)
        started = time.monotonic()
        with served:
            assert time.monotonic() - started < 0.9


def test_answers_on_a_kept_alive_connection_do_not_wait_for_delayed_acks(fake: FakeLSThread) -> None:
    """The listening socket is IPPROTO_TCP, so asyncio sets TCP_NODELAY on each connection: uvicorn writes the
    headers and the body apart, and without it each answer waits for the client's delayed ACK (Nagle)."""
    with _served(fake) as served, httpx.Client() as client:
        times = []
        for _ in range(9):
            started = time.perf_counter()
            assert client.get(served.url + "/v1/models").status_code == 200
            times.append(time.perf_counter() - started)
    assert statistics.median(times) < NAGLE_STALL_S / 2


def test_stopping_gives_an_answer_in_flight_two_seconds_then_cuts_it(fake: FakeLSThread) -> None:
    play(fake, {"chunks": [{"text": "late", "delay_s": 5}]})
    served = _served(fake).start()
    body = {"model": MODEL, "messages": user("hold"), "stream": True}
    stopped: float | None = None
    try:
        with httpx.stream("POST", served.url + "/v1/chat/completions", json=body, timeout=10) as answer:
            lines = answer.iter_lines()
            assert '"role":"assistant"' in next(line for line in lines if line.startswith("data: "))
            stopping = time.monotonic()
            served.stop()
            stopped = time.monotonic() - stopping
    finally:
        if stopped is None:
            served.stop()
    # the turn itself would run on for 5 s; a grace of 1 s or 3 s falls outside (loose above: a loaded box)
    assert GRACE_S - 0.3 < stopped < GRACE_S + 0.95
