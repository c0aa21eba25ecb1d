"""An HTTP target waits out a gateway's rate limit as the gateway asks, within ``--rate-limit-wait``
over all tries of one request, says so on the terminal, and hands back the last answer when the
budget is spent (the properties then leave the example unjudged as transient)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest

from conformance.errors import TargetSpecError, TransientRefusal
from conformance.refusals import refusal
from conformance.targets import HttpOptions, HttpTarget, _http, http_options
from conformance.targets._scope import Caller
from tests.conformance.targets.targets_support import _serving, untimed

COMPLETION = {"id": "c1", "object": "chat.completion", "choices": [{"index": 0, "message": {"content": "ok"}}]}
REQUEST = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}


def cooling(retry_after_ms: int) -> tuple[int, dict[str, str], dict[str, Any]]:
    return 429, {}, {"error": {"message": "account cooling down", "retry_after_ms": retry_after_ms}}


class _Queue(BaseHTTPRequestHandler):
    """Answers each request with the next queued answer; the last one stays."""

    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # no answer waits ~40 ms for a delayed ACK (Nagle) on a kept-alive connection
    queue: list[tuple[int, dict[str, str], Any]] = []
    seen: list[str] = []

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        status: int
        headers: dict[str, str]
        body: Any
        if self.path == "/v1/models":  # the target's probe at open
            status, headers, body = 200, {}, {"data": []}
        else:
            self.seen.append(self.path)
            status, headers, body = self.queue.pop(0) if len(self.queue) > 1 else self.queue[0]
        if isinstance(body, list):  # an event stream: each item one event's data
            content = "".join(f"data: {data}\n\n" for data in body).encode()
            headers = {"Content-Type": "text/event-stream", **headers}
        else:
            content = json.dumps(body).encode()
        self.send_response(status)
        for name, value in {"Content-Type": "application/json", **headers}.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(content)))
        self.end_headers()
        self.wfile.write(content)

    do_GET = do_POST


@contextmanager
def queued(*answers: tuple[int, dict[str, str], Any]) -> Iterator[tuple[str, list[str]]]:
    handler: type[_Queue] = type("Queued", (_Queue,), {"queue": list(answers), "seen": []})
    with _serving(handler) as url:
        yield url, handler.seen


@pytest.fixture
def slept(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    waits: list[float] = []
    monkeypatch.setattr(_http, "_sleep", waits.append)
    return waits


def chat(url: str, budget: float) -> tuple[HttpTarget, dict[str, Any]]:
    target = HttpTarget(url, HttpOptions(rate_limit_wait_s=budget))
    try:
        return target, target.call("gateway.chat", request=REQUEST, api_key="k")
    finally:
        target.close()


def test_a_rate_limit_is_waited_out_as_the_gateway_asks_then_tried_again(
    slept: list[float], capsys: pytest.CaptureFixture[str]
) -> None:
    with queued(cooling(1500), cooling(400), (200, {}, COMPLETION)) as (url, seen):
        target, answer = chat(url, budget=60)
    assert answer == {"status": 200, "body": COMPLETION}
    assert slept == [1.5, 0.4]
    assert target.waited_s == pytest.approx(1.9)
    assert target.waited().count == 2
    assert target.waited().seconds == pytest.approx(1.9)
    assert seen == ["/v1/chat/completions"] * 3
    lines = capsys.readouterr().err.splitlines()
    assert lines == [
        "  the gateway answered 429 (rate limited): waiting 1.5 s as it asks, then trying again (58 s of "
        "--rate-limit-wait left; pace now 10 requests/s)",
        "  the gateway answered 429 (rate limited): waiting 0.4 s as it asks, then trying again (58 s of "
        "--rate-limit-wait left; pace now 5 requests/s)",
    ]


@pytest.mark.parametrize(
    ("budget", "waits", "status"),
    [
        (3.0, [1.5, 1.5], 200),  # exactly the budget
        (3.1, [1.5, 1.5], 200),  # one over what is needed
        (2.9, [1.5], 429),  # one under: the second wait would overrun it, so it is not taken
        (0.0, [], 429),  # never wait
    ],
)
def test_the_wait_budget_is_over_all_tries_of_one_request(
    slept: list[float], budget: float, waits: list[float], status: int
) -> None:
    with queued(cooling(1500), cooling(1500), (200, {}, COMPLETION)) as (url, _seen):
        _target, answer = chat(url, budget=budget)
    assert slept == waits
    assert answer["status"] == status


def test_a_503_with_retry_after_is_waited_out_and_a_500_is_not(slept: list[float]) -> None:
    with queued((503, {"Retry-After": "2"}, {"error": {"message": "busy"}}), (200, {}, COMPLETION)) as (url, _):
        assert chat(url, budget=5)[1]["status"] == 200
    assert slept == [2.0]
    with queued((500, {"Retry-After": "2"}, {"error": {"message": "boom"}}), (200, {}, COMPLETION)) as (url, _):
        assert chat(url, budget=5)[1]["status"] == 500
    assert slept == [2.0]


def test_the_store_requests_wait_too(slept: list[float]) -> None:
    with queued(cooling(700), (200, {}, {"ledger": 1})) as (url, seen):
        target = HttpTarget(url, HttpOptions(ledger_path="/v1/ledger", rate_limit_wait_s=10))
        try:
            assert target._send("GET", "/v1/ledger", Caller("k", None)).status_code == 200
        finally:
            target.close()
    assert slept == [0.7]
    assert seen == ["/v1/ledger", "/v1/ledger"]


@pytest.mark.parametrize(("given", "kept"), [(0.0, 0.0), (3600.0, 3600.0), (None, 60.0)])
def test_the_wait_budget_option_is_seconds_from_0_to_an_hour(given: float | None, kept: float) -> None:
    options = http_options("http://127.0.0.1:9", rate_limit_wait_s=given, model="m")
    assert options is not None
    assert options.rate_limit_wait_s == kept


@pytest.mark.parametrize("given", [-0.1, 3600.1])
def test_a_wait_budget_outside_0_to_an_hour_is_a_usage_error(given: float) -> None:
    with pytest.raises(TargetSpecError) as info:
        http_options("http://127.0.0.1:9", rate_limit_wait_s=given)
    assert str(info.value) == f"--rate-limit-wait is seconds from 0 (never wait) to 3600, got {given:g}"


# ---------------------------------------------------------------------- a transient error inside a 2xx

BUSY = {"message": "all accounts temporarily unavailable, retry in 15 s", "type": "rate_limit_error"}
FRAME = json.dumps(
    {"id": "c1", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"content": "ok"}}]}
)


def test_an_error_body_in_a_200_that_says_later_is_waited_out_as_its_text_asks(
    slept: list[float], capsys: pytest.CaptureFixture[str]
) -> None:
    with queued((200, {}, {"error": BUSY}), (200, {}, COMPLETION)) as (url, seen):
        _, answer = chat(url, budget=60)
    assert answer == {"status": 200, "body": COMPLETION}
    assert slept == [15.0]
    assert seen == ["/v1/chat/completions"] * 2
    assert capsys.readouterr().err.splitlines() == [
        "  the gateway answered 200 (a transient error inside): waiting 15.0 s as it asks, then trying again (45 s "
        "of --rate-limit-wait left; pace now 10 requests/s)"
    ]


def test_an_error_event_in_a_stream_that_says_later_is_waited_out_too(slept: list[float]) -> None:
    busy = json.dumps({"error": {"message": "overloaded", "type": "overloaded_error", "retry_after_ms": 2500}})
    with queued((200, {}, [busy, "[DONE]"]), (200, {}, [FRAME, "[DONE]"])) as (url, _):
        target = HttpTarget(url, HttpOptions(rate_limit_wait_s=10))
        try:
            answer = target.call("gateway.chat", request=REQUEST | {"stream": True}, api_key="k")
        finally:
            target.close()
    assert untimed(answer) == {"status": 200, "events": [FRAME, "[DONE]"]}
    assert slept == [2.5]


def test_a_transient_error_past_the_budget_leaves_the_example_unjudged(slept: list[float]) -> None:
    busy = json.dumps({"error": BUSY})
    with queued((200, {}, [FRAME, busy, "[DONE]"])) as (url, _):
        target = HttpTarget(url, HttpOptions(rate_limit_wait_s=20))
        try:
            answer = target.call("gateway.chat", request=REQUEST | {"stream": True}, api_key="k")
        finally:
            target.close()
    assert slept == [15.0]  # a second wait of 15 s would overrun the budget of 20
    refused = refusal("POST /v1/chat/completions", answer["status"], answer["events"], waited_s=15.0)
    assert isinstance(refused, TransientRefusal)
    assert refused.reason == (
        "POST /v1/chat/completions answered 200 with an error inside: all accounts temporarily unavailable, retry in "
        "15 s (still, after waiting 15.0 s; --rate-limit-wait sets the budget)"
    )
