"""``run_serve`` in process (bind, dial or spawn the LS, serve until SIGTERM, or fail with one message) and the
Gateway's wiring of its configuration, exactly."""

from __future__ import annotations

import contextlib
import io
import os
import re
import signal
import socket
import stat
import statistics
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest
from starlette.testclient import TestClient

from conformance.targets._launch import free_port
from engine.cascade.client import LsEndpoint
from engine.cascade.polling import PollSettings
from engine.cascade.requests import ClientIdentity
from engine.http import serve
from engine.http.app import HttpSettings
from engine.http.gateway import DEFAULT_ACCOUNT, DEFAULT_UPSTREAM_KEY, Gateway, GatewayConfig, ServedGateway
from engine.http.serve import Interrupted, ServeOptions, run_serve
from engine.store import ResponseStore, StoreLimits
from fakels.server import FakeLSThread
from fakels.standin import write_standin
from tests.engine.http.chat_exact_support import CSRF, KEY_A, MODEL, chat, play, sends, user
from tests.engine.http.session_support import DATA_URL
from tests.engine.process_support import kill_standin_left_running
from tests.support.fake_ls import StartFakeLs

USAGE = {"input_tokens": 11, "output_tokens": 4}


@pytest.fixture(scope="module")
def fake(start_module_fake_ls: StartFakeLs) -> FakeLSThread:
    return start_module_fake_ls(csrf_token=CSRF)


def _options(fake: FakeLSThread, port: int = 0, **extra: object) -> ServeOptions:
    fields: dict[str, object] = {
        "host": "127.0.0.1",
        "port": port,
        "http": HttpSettings(api_keys={KEY_A: "caller-a"}),
        "ls_address": fake.address,
        "csrf_token": CSRF,
        "poll_interval_s": 0.002,
        **extra,
    }
    return ServeOptions(**fields)  # type: ignore[arg-type]


def _script(tmp_path: Path, body: str) -> str:
    path = tmp_path / "ls.sh"
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


# ---------------------------------------------------------------- run_serve


@dataclass
class Driven:
    """What a client saw of a served gateway: the answers, the status without a key, the session and store views."""

    answers: list[str] = field(default_factory=list)
    keyless_status: int = 0
    session_status: int = 0
    response_store: dict[str, object] = field(default_factory=dict)
    turn_s: float = 0.0  # how long the first chat turn took
    kept_alive_s: float = 1.0  # the median time of an answer on a kept-alive connection


TOOLS = [{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}]


def _timed(client: httpx.Client, url: str) -> float:
    started = time.perf_counter()
    client.get(url).raise_for_status()
    return time.perf_counter() - started


def _wait_until_serving(url: str) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            httpx.get(url + "/healthz", timeout=1)
            return
        except httpx.TransportError:
            time.sleep(0.01)


def _serve_until_sigterm(
    options: ServeOptions,
    turn: dict[str, object] | None,
    fake: FakeLSThread | None,
    stop_with: tuple[signal.Signals, ...] = (signal.SIGTERM,),
) -> Driven:
    """run_serve(options) on this (the main) thread while another one asks it one chat turn, then sends
    ``stop_with`` (back to back)."""
    url = f"http://127.0.0.1:{options.port}"
    driven = Driven()

    def drive() -> None:
        _wait_until_serving(url)
        if fake is not None and turn is not None:
            play(fake, turn)
        body = {"model": MODEL, "messages": user("serve"), "tools": TOOLS}
        try:
            driven.keyless_status = httpx.get(url + "/v1/models").status_code
            with httpx.Client() as kept_alive:
                driven.kept_alive_s = statistics.median(_timed(kept_alive, url + "/healthz") for _ in range(9))
            started = time.monotonic()
            answer = httpx.post(url + "/v1/chat/completions", json=body, headers={"Authorization": f"Bearer {KEY_A}"})
            driven.turn_s = time.monotonic() - started
            driven.answers.append(answer.json()["choices"][0]["message"]["content"])
            call = {"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}
            history = [
                *user("session"),
                {"role": "assistant", "content": None, "tool_calls": [call]},
                {"role": "tool", "tool_call_id": "c1", "content": "result"},
            ]
            auth = {"Authorization": f"Bearer {KEY_A}"}
            committed = {"model": MODEL, "messages": history, "tools": TOOLS}
            httpx.post(url + "/v1/chat/completions", json=committed, headers={**auth, "X-Session-Id": "s1"})
            driven.session_status = httpx.get(url + "/v1/sessions/s1", headers=auth).status_code
            driven.response_store = httpx.get(url + "/metrics.json").json()["response_store"]
        finally:
            for signum in stop_with:
                os.kill(os.getpid(), signum)

    driver = threading.Thread(target=drive)
    with _guarded(*stop_with):
        driver.start()
        try:
            assert run_serve(options) == 0
        finally:
            driver.join()
    return driven


@contextlib.contextmanager
def _guarded(*signums: signal.Signals) -> Iterator[Callable[[int, object], None]]:
    """A recording handler for ``signums`` around a run_serve that this test signals, so that a signal that
    arrives outside run_serve's own handlers fails the test instead of stopping the whole pytest process.
    run_serve must put this handler back and leave it unused."""
    caught: list[int] = []

    def guard(signum: int, frame: object) -> None:
        caught.append(signum)

    previous = {signum: signal.signal(signum, guard) for signum in signums}
    try:
        yield guard
        assert {signum: signal.getsignal(signum) for signum in signums} == dict.fromkeys(signums, guard)
        assert caught == [], "a signal arrived outside run_serve's handlers"
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def test_serve_answers_until_sigterm_then_stops_cleanly(
    fake: FakeLSThread, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fake.journal.clear()
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    before = signal.getsignal(signal.SIGTERM)
    log = tmp_path / "sessions.db"
    options = _options(
        fake, port, native_mode=True, store_limits=StoreLimits(max_bytes=4_000_000), session_log=str(log)
    )
    driven = _serve_until_sigterm(options, {"chunks": [{"text": "served"}]}, fake)
    assert (driven.answers, driven.keyless_status) == (["served"], 401)  # the HTTP settings' keys are in force
    # polled every 2 ms as configured: at the default 0.5 s, two quiet intervals alone take 1 s
    assert driven.turn_s < 0.9
    # An IPPROTO_TCP socket, so asyncio sets TCP_NODELAY: no answer waits ~40 ms for a delayed ACK (Nagle).
    assert driven.kept_alive_s < 0.02
    assert (driven.session_status, log.exists()) == (200, True)
    assert driven.response_store["maxBytes"] == 4_000_000
    assert capsys.readouterr().out == f"cascade-engine: {url} ls={fake.address}\ncascade-engine: stopped (SIGTERM)\n"
    assert signal.getsignal(signal.SIGTERM) == before
    with pytest.raises(httpx.TransportError):
        httpx.get(url + "/healthz", timeout=1)
    request = sends(fake)[0].request
    assert request is not None
    conversational = request["cascade_config"]["planner_config"]["conversational"]
    assert "additional_instructions_section" not in conversational  # native mode: no tool preamble


def test_a_stream_still_open_at_sigterm_is_cut_after_the_grace_period(
    fake: FakeLSThread, monkeypatch: pytest.MonkeyPatch
) -> None:
    """uvicorn waits GRACEFUL_SHUTDOWN_S for answers in flight, then cancels them: a turn that runs on does
    not hold the shutdown (the grace period is shortened here to keep the test quick)."""
    monkeypatch.setattr(serve, "GRACEFUL_SHUTDOWN_S", 0.2)
    play(fake, {"chunks": [{"text": "late", "delay_s": 4}]})
    options = _options(fake, free_port())
    url = f"http://127.0.0.1:{options.port}"
    first: list[str] = []
    sent: list[float] = []

    def drive() -> None:
        try:
            _wait_until_serving(url)
            body = {"model": MODEL, "messages": user("hold"), "stream": True}
            auth = {"Authorization": f"Bearer {KEY_A}"}
            with httpx.stream("POST", url + "/v1/chat/completions", json=body, headers=auth, timeout=10) as answer:
                lines = answer.iter_lines()
                first.append(next(line for line in lines if line.startswith("data: ")))
                sent.append(time.monotonic())
                os.kill(os.getpid(), signal.SIGTERM)
                with contextlib.suppress(httpx.HTTPError):
                    for _ in lines:
                        pass
        finally:
            if not first:
                os.kill(os.getpid(), signal.SIGTERM)

    driver = threading.Thread(target=drive)
    with _guarded(signal.SIGTERM):
        driver.start()
        try:
            assert run_serve(options) == 0
            stopped = time.monotonic()
        finally:
            driver.join()
    assert '"role":"assistant"' in first[0]
    assert stopped - sent[0] < 2  # well before the 4 s turn would have ended


@pytest.mark.parametrize(
    ("host", "shown"),
    [("127.0.0.1", "127.0.0.1"), ("::ffff:127.0.0.1", "[::ffff:127.0.0.1]")],  # 127.0.0.1 on an IPv6 socket
)
def test_the_address_line_reaches_a_block_buffered_stdout_while_serving(
    fake: FakeLSThread, monkeypatch: pytest.MonkeyPatch, host: str, shown: str
) -> None:
    """A supervisor reads the URL from a pipe (block-buffered): the line is flushed as it is printed. An IPv6
    host gets an IPv6 socket, and its address is bracketed in the URL."""
    written = io.BytesIO()
    monkeypatch.setattr(sys, "stdout", io.TextIOWrapper(written, encoding="utf-8"))
    options = _options(fake, free_port(), host=host)
    url = f"http://127.0.0.1:{options.port}"
    seen: list[bytes] = []

    def drive() -> None:
        try:
            _wait_until_serving(url)
            seen.append(written.getvalue())
        finally:
            os.kill(os.getpid(), signal.SIGTERM)

    driver = threading.Thread(target=drive)
    with _guarded(signal.SIGTERM):
        driver.start()
        try:
            assert run_serve(options) == 0
        finally:
            driver.join()
    assert seen == [f"cascade-engine: http://{shown}:{options.port} ls={fake.address}\n".encode()]


def test_serve_spawns_its_language_server_and_stops_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    port = free_port()
    binary = write_standin(tmp_path / "bin" / "ls")
    options = ServeOptions(
        host="127.0.0.1",
        port=port,
        http=HttpSettings(api_keys={KEY_A: "a"}),
        ls_binary=str(binary),
        poll_interval_s=0.002,
        store="off",
        session_log="off",
    )
    try:
        _check_serve_spawns_and_stops(options, port, capsys)
    finally:
        kill_standin_left_running(binary)  # only after the checks: a serve that failed to stop its LS leaks it


def _check_serve_spawns_and_stops(options: ServeOptions, port: int, capsys: pytest.CaptureFixture[str]) -> None:
    driven = _serve_until_sigterm(options, None, None, (signal.SIGINT, signal.SIGTERM))
    assert (driven.session_status, driven.response_store) == (404, {"enabled": False})
    answers = driven.answers
    assert [re.sub(r"[0-9a-f]{12}: \d+ chars", "H: N chars", a) for a in answers] == [
        "fakels answer H: N chars, 0 images."
    ]
    banner, stopped = capsys.readouterr().out.splitlines()
    assert re.fullmatch(rf"cascade-engine: http://127\.0\.0\.1:{port} ls=127\.0\.0\.1:\d+", banner)
    assert stopped == "cascade-engine: stopped (SIGINT, SIGTERM)"
    ls_port = int(banner.rsplit(":", 1)[1])
    with pytest.raises(ConnectionRefusedError), socket.create_connection(("127.0.0.1", ls_port), timeout=1):
        pass


def test_a_port_in_use_is_one_message_and_exit_1(fake: FakeLSThread, capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert run_serve(_options(fake, port)) == 1
    captured = capsys.readouterr()
    assert (captured.out, captured.err) == (
        "",
        f"cascade-engine: cannot listen on 127.0.0.1:{port}: Address already in use\n",
    )


def test_an_unusable_store_or_session_log_is_one_message_and_exit_1(
    fake: FakeLSThread, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "no-such-dir" / "x.db"
    assert run_serve(_options(fake, store=f"sqlite:{missing}")) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"cascade-engine: cannot open the response store 'sqlite:{missing}': ")
    assert run_serve(_options(fake, store="bogus")) == 1
    assert capsys.readouterr().err.startswith("cascade-engine: cannot open the response store 'bogus': unknown")
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    log = blocker / "log.db"
    assert run_serve(_options(fake, session_log=str(log))) == 1
    assert capsys.readouterr().err == (
        f"cascade-engine: cannot open the session log '{log}': FileExistsError: [Errno 17] File exists: '{blocker}'\n"
    )


def test_a_language_server_that_cannot_start_is_one_message_and_exit_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    options = ServeOptions(host="127.0.0.1", port=0, http=HttpSettings(), ls_binary=_script(tmp_path, "exit 3"))
    assert run_serve(options) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("cascade-engine: cannot start the language server: ")
    assert captured.err.count("\n") >= 1


def test_a_signal_while_starting_stops_before_serving(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = signal.getsignal(signal.SIGINT)
    binary = _script(tmp_path, "kill -INT $PPID\nsleep 10")
    options = ServeOptions(host="127.0.0.1", port=0, http=HttpSettings(), ls_binary=binary)
    with _guarded(signal.SIGINT):
        assert run_serve(options) == 0
    assert capsys.readouterr().out == "cascade-engine: stopped (SIGINT) before serving\n"
    assert signal.getsignal(signal.SIGINT) == before


def test_signals_act_by_phase() -> None:
    signals = serve._Signals()
    with pytest.raises(Interrupted, match=r"^SIGTERM$"):
        signals.handle(signal.SIGTERM, None)
    assert signals.phase == "stopping"
    signals.handle(signal.SIGINT, None)  # ignored while stopping
    assert signals.received == ["SIGTERM", "SIGINT"]

    class Server:
        exits: list[int] = []

        def handle_exit(self, signum: int, frame: object) -> None:
            self.exits.append(signum)

    signals.phase = "serving"
    signals.handle(signal.SIGINT, None)  # no server yet: only recorded
    signals.server = Server()  # type: ignore[assignment]
    signals.handle(signal.SIGINT, None)
    assert Server.exits == [signal.SIGINT]
    assert signals.received == ["SIGTERM", "SIGINT", "SIGINT", "SIGINT"]


def test_an_ipv6_host_is_bracketed_in_urls() -> None:
    assert serve._url_host("::1") == "[::1]"
    assert serve._url_host("127.0.0.1") == "127.0.0.1"


# ---------------------------------------------------------------- the Gateway's wiring


def test_the_gateway_passes_its_configuration_on(fake: FakeLSThread) -> None:
    fake.journal.clear()
    play(fake, {"chunks": [{"text": "a"}], "records": [USAGE]}, {"chunks": [{"text": "b"}], "records": [USAGE]})
    config = GatewayConfig(
        ls_address=fake.address,
        csrf_token=CSRF,
        http=HttpSettings(api_keys={KEY_A: "caller-a"}),
        upstream_api_key="upstream-key-9",
        account="account-9",
        poll=PollSettings(poll_interval_s=0.002),
        store="off",
        session_log="off",
    )
    with ServedGateway(Gateway(config)) as served:
        assert served.url == f"http://127.0.0.1:{served.port}"
        assert served.gateway.store is None
        for _ in range(2):
            response = httpx.post(
                served.url + "/v1/chat/completions",
                json={"model": MODEL, "messages": user("wired")},
                headers={"Authorization": f"Bearer {KEY_A}", "X-Session-Id": "s1"},
            )
            assert response.status_code == 200
        spend = served.gateway.ledger.document()["account_spend"]
        with ServedGateway(Gateway(GatewayConfig(ls_address=fake.address, csrf_token=CSRF))) as second:
            assert second.port != served.port
            assert httpx.get(second.url + "/healthz").json() == {"ok": True}
    with pytest.raises(httpx.TransportError):
        httpx.get(served.url + "/healthz", timeout=1)
    assert list(spend) == ["account-9"]
    assert len(sends(fake)) == 1  # sessions off: the session id is ignored, so the second turn is a cache hit
    metadata = sends(fake)[0].request
    assert metadata is not None
    assert metadata["metadata"]["api_key"] == "upstream-key-9"


def test_gateway_defaults(fake: FakeLSThread, tmp_path: Path) -> None:
    config = GatewayConfig(ls_address=fake.address, csrf_token=CSRF)
    assert (config.upstream_api_key, config.account) == ("cascade-engine-upstream-key", "upstream-account-1")
    assert (config.upstream_api_key, config.account) == (DEFAULT_UPSTREAM_KEY, DEFAULT_ACCOUNT)
    assert (config.store, config.session_log, config.native_mode) == ("memory", None, False)
    gateway = Gateway(config)
    try:
        assert gateway.store is not None
        assert gateway.sessions.enabled
        assert gateway.cache.enabled
    finally:
        gateway.close()


def test_a_session_log_that_cannot_open_closes_the_store_already_opened(fake: FakeLSThread, tmp_path: Path) -> None:
    store = tmp_path / "store.db"
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    config = GatewayConfig(
        ls_address=fake.address, csrf_token=CSRF, store=f"sqlite:{store}", session_log=str(blocker / "log.db")
    )
    closed: list[str] = []
    original = ResponseStore.close

    def close(self: ResponseStore) -> None:
        closed.append("store")
        original(self)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(ResponseStore, "close", close)
        with pytest.raises(ValueError, match="File exists"):
            Gateway(config)
    assert closed == ["store"]


def test_the_gateway_dials_its_ls_with_the_configured_identity_and_polling(fake: FakeLSThread) -> None:
    fake.journal.clear()
    identity = ClientIdentity(locale="de", ide_name="probe-ide")
    poll = PollSettings(poll_interval_s=0.002)
    gateway = Gateway(GatewayConfig(ls_address=fake.address, csrf_token=CSRF, identity=identity, poll=poll))
    try:
        assert gateway.client.endpoint == LsEndpoint(fake.address, CSRF)
        assert (gateway.client.identity, gateway.client.poll) == (identity, poll)
        play(fake, {"chunks": [{"text": "x"}]})
        with TestClient(gateway.app, base_url="http://127.0.0.1") as client:
            assert chat(client, {"model": MODEL, "messages": user("identity")}, key=None).status_code == 200
            created = client.post("/v1/responses", json={"model": MODEL, "input": "kept"}).json()
            assert client.get(f"/v1/responses/{created['id']}").json()["id"] == created["id"]
        snapshot = gateway.metrics.snapshot()
        assert snapshot["response_store"]["stored"] == 1
        assert snapshot["ledger"]["requests"]["success"] == 2
        assert gateway.metrics.prometheus_text().startswith("# HELP ")
    finally:
        gateway.close()
    metadata = sends(fake)[0].request
    assert metadata is not None
    assert (metadata["metadata"]["locale"], metadata["metadata"]["ide_name"]) == ("de", "probe-ide")


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_a_served_gateway_whose_server_cannot_start_says_so(fake: FakeLSThread) -> None:
    served = ServedGateway(Gateway(GatewayConfig(ls_address=fake.address, csrf_token=CSRF)))
    served._socket.close()
    started = time.monotonic()
    with pytest.raises(RuntimeError, match=rf"^the gateway did not start serving on {served.url}$"):
        served.start()
    assert time.monotonic() - started < 5  # its thread died: reported at once, not at the 10 s deadline
    served.gateway.close()


def test_an_earlier_image_is_counted_in_the_gateways_own_metrics(fake: FakeLSThread) -> None:
    image = {"type": "image_url", "image_url": {"url": DATA_URL}}
    messages = [
        {"role": "user", "content": [{"type": "text", "text": "see"}, image]},
        {"role": "assistant", "content": "ok"},
        {"role": "user", "content": "more"},
    ]
    gateway = Gateway(GatewayConfig(ls_address=fake.address, csrf_token=CSRF, poll=PollSettings(poll_interval_s=0.002)))
    try:
        with TestClient(gateway.app, base_url="http://127.0.0.1") as client:
            assert chat(client, {"model": MODEL, "messages": messages}, key=None).status_code == 200
        assert gateway.metrics.snapshot()["history_images"]["cascade_image_history_attached"] == 1
    finally:
        gateway.close()
