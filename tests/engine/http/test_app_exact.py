"""The chat front's HTTP edge, exactly: authentication, the cross-origin guard, body limits, JSON parsing,
unknown routes, the side endpoints, and the exact bodies and SSE frames of a turn (engine.md §5.A)."""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
import time
from collections.abc import Iterator, MutableMapping
from typing import Any

import httpx
import pytest
from starlette.testclient import TestClient

from engine.http.app import caller_id_for_key
from engine.http.gateway import Gateway
from fakels.server import FakeLSThread
from tests.engine.http import chat_exact_support
from tests.engine.http.chat_exact_support import (
    CHAT,
    KEY_A,
    KEY_B,
    MODEL,
    asgi_http_scope,
    chat,
    gateway_client,
    headers,
    play,
    sends,
    sent_text,
    sse_payloads,
    user,
)

# The shared fixtures: one fake LS per module, a fresh gateway per test.
fake = chat_exact_support.fake
gw = chat_exact_support.gw

MISSING = "missing API key: send Authorization: Bearer <key>"
USAGE = {"input_tokens": 11, "output_tokens": 4, "cache_read_tokens": 3}
WIRE_USAGE = {
    "prompt_tokens": 14,
    "completion_tokens": 4,
    "total_tokens": 18,
    "prompt_tokens_details": {"cached_tokens": 3},
    "completion_tokens_details": {"reasoning_tokens": 0},
}
FAULT = {"fault": {"kind": "error", "message": "boom"}}
UPSTREAM = {
    "error": {
        "message": "The language server failed this turn: SendUserCascadeMessage failed: boom",
        "type": "api_error",
        "param": None,
        "code": "upstream_error",
    }
}


def _error(message: str, code: str | None, type: str = "invalid_request_error") -> dict[str, Any]:
    return {"error": {"message": message, "type": type, "param": None, "code": code}}


@pytest.fixture
def client(gw: tuple[Gateway, TestClient]) -> TestClient:
    return gw[1]


# ---------------------------------------------------------------- authentication


@pytest.mark.parametrize(
    ("authorization", "status", "message"),
    [
        (None, 401, MISSING),
        ("", 401, MISSING),
        ("Bearer", 401, MISSING),
        ("Bearer ", 401, MISSING),
        (f"Basic {KEY_A}", 401, MISSING),
        (f"Bearer{KEY_A}", 401, MISSING),
        ("Bearer wrong", 401, "invalid API key"),
        (f"Bearer {KEY_A} ", 401, "invalid API key"),
        (f"Bearer  {KEY_A}", 401, "invalid API key"),
        (f"Bearer {KEY_A[:-1]}", 401, "invalid API key"),
        (f"bearer {KEY_A}", 200, None),
        (f"BEARER {KEY_B}", 200, None),
    ],
)
@pytest.mark.parametrize("path", ["/v1/models", "/v1/ledger"])
def test_a_key_is_a_bearer_token_compared_exactly(
    client: TestClient, path: str, authorization: str | None, status: int, message: str | None
) -> None:
    sent = {} if authorization is None else {"Authorization": authorization}
    response = client.get(path, headers=sent)
    assert response.status_code == status
    if message is not None:
        assert response.json() == _error(message, "invalid_api_key", "authentication_error")


def test_a_repeated_authorization_header_is_no_key(client: TestClient) -> None:
    twice = [("authorization", f"Bearer {KEY_A}"), ("authorization", f"Bearer {KEY_A}")]
    response = client.get("/v1/models", headers=twice)
    assert (response.status_code, response.json()) == (401, _error(MISSING, "invalid_api_key", "authentication_error"))


def test_a_chat_turn_needs_a_key_and_runs_nothing_without_one(fake: FakeLSThread, client: TestClient) -> None:
    response = chat(client, {"model": MODEL, "messages": user("no key")}, key=None)
    assert (response.status_code, response.json()) == (401, _error(MISSING, "invalid_api_key", "authentication_error"))
    response = chat(client, {"model": MODEL, "messages": user("bad key")}, key="sk-nope")
    assert response.json() == _error("invalid API key", "invalid_api_key", "authentication_error")
    assert sends(fake) == []


@pytest.mark.parametrize(("second_key", "sends_expected"), [(KEY_A, 1), (KEY_B, 2)])
def test_each_key_stands_for_its_own_identity_and_cache(
    fake: FakeLSThread, client: TestClient, second_key: str, sends_expected: int
) -> None:
    play(fake, {"chunks": [{"text": "first"}]}, {"chunks": [{"text": "second"}]})
    body = {"model": MODEL, "messages": user("who am i")}
    answers = [chat(client, body, key=key).json()["choices"][0]["message"]["content"] for key in (KEY_A, second_key)]
    assert answers == ["first", "first" if sends_expected == 1 else "second"]
    assert len(sends(fake)) == sends_expected


def test_keys_standing_for_one_identity_share_its_cache(fake: FakeLSThread) -> None:
    fake.journal.clear()
    play(fake, {"chunks": [{"text": "shared"}]}, {"chunks": [{"text": "fresh"}]})
    with gateway_client(fake, api_keys={KEY_A: "team", KEY_B: "team"}) as (_, client):
        body = {"model": MODEL, "messages": user("same identity")}
        answers = [chat(client, body, key=key).json()["choices"][0]["message"]["content"] for key in (KEY_A, KEY_B)]
    assert answers == ["shared", "shared"]
    assert len(sends(fake)) == 1


def test_without_keys_everyone_is_anonymous_and_never_served_from_cache(fake: FakeLSThread) -> None:
    fake.journal.clear()
    play(fake, {"chunks": [{"text": "one"}]}, {"chunks": [{"text": "two"}]})
    with gateway_client(fake, api_keys={}) as (gateway, client):
        body = {"model": MODEL, "messages": user("anonymous")}
        answers = [chat(client, body, key=key).json()["choices"][0]["message"]["content"] for key in (None, "anything")]
        assert client.get("/v1/models").status_code == 200
    assert answers == ["one", "two"]
    assert (gateway.cache.stats()["misses"], gateway.cache.stats()["sets"]) == (0, 0)  # the cache is not even asked


# ---------------------------------------------------------------- cross-origin guard, body, JSON


@pytest.mark.parametrize(
    ("extra", "key", "status", "body"),
    [
        (
            {"Origin": "https://attacker.example", "Content-Type": "application/json"},
            None,
            403,
            _error("requests carrying an Origin header (a web page) are refused", "cross_origin"),
        ),
        (
            {"Origin": "null", "Content-Type": "text/plain"},
            KEY_A,
            403,
            _error("requests carrying an Origin header (a web page) are refused", "cross_origin"),
        ),
        (
            {"Content-Type": "text/plain"},
            None,
            415,
            _error("the body must be application/json, not text/plain", "unsupported_media_type"),
        ),
        (
            {"Content-Type": " Multipart/Form-Data ; boundary=x"},
            KEY_A,
            415,
            _error("the body must be application/json, not multipart/form-data", "unsupported_media_type"),
        ),
        ({}, KEY_A, 415, _error("the body must be application/json, not untyped", "unsupported_media_type")),
    ],
    ids=["origin-before-auth", "origin", "text-before-auth", "form", "untyped"],
)
def test_no_turn_from_a_web_page(
    fake: FakeLSThread, client: TestClient, extra: dict[str, str], key: str | None, status: int, body: dict[str, Any]
) -> None:
    sent = {"Authorization": f"Bearer {key}"} if key else {}
    payload = json.dumps({"model": MODEL, "messages": user("web")}).encode()
    response = client.post(CHAT, content=payload, headers={**sent, **extra})
    assert (response.status_code, response.json()) == (status, body)
    assert sends(fake) == []


@pytest.mark.parametrize(
    "content_type", ["application/json; charset=utf-8", "application/json; charset=utf-8; v=1", " Application/JSON "]
)
def test_json_with_parameters_or_any_case_is_json(client: TestClient, content_type: str) -> None:
    payload = json.dumps({"model": MODEL, "messages": user(f"typed {content_type}")}).encode()
    response = client.post(CHAT, content=payload, headers={**headers(), "Content-Type": content_type})
    assert response.status_code == 200


def _padded(size: int, prompt: str) -> bytes:
    body = json.dumps({"model": MODEL, "messages": user(prompt)}).encode()
    assert len(body) <= size
    return body + b" " * (size - len(body))


@pytest.mark.parametrize(("size", "status"), [(199, 200), (200, 200), (201, 413)])
@pytest.mark.parametrize("chunked", [False, True], ids=["length", "chunked"])
def test_the_body_limit_is_exact(fake: FakeLSThread, size: int, status: int, chunked: bool) -> None:
    body = _padded(size, f"limit {size} {chunked}")
    content: bytes | Iterator[bytes] = iter([body[:50], body[50:]]) if chunked else body
    with gateway_client(fake, max_body_bytes=200) as (_, client):
        response = client.post(CHAT, content=content, headers=headers())
    assert response.status_code == status
    if status == 413:
        assert response.json() == _error("request body over 200 bytes", "request_too_large")


def test_a_body_arriving_in_pieces_is_limited_by_its_total_size(fake: FakeLSThread) -> None:
    """Each piece is under the limit, the whole is over it (the ASGI app is called directly, so the pieces
    arrive as separate http.request messages)."""
    body = _padded(201, "pieces")
    pieces = [body[:120], body[120:]]
    sent: list[MutableMapping[str, Any]] = []

    async def receive() -> dict[str, Any]:
        piece = pieces.pop(0)
        return {"type": "http.request", "body": piece, "more_body": bool(pieces)}

    async def send(message: MutableMapping[str, Any]) -> None:
        sent.append(message)

    raw_headers = [(name.lower().encode(), value.encode()) for name, value in headers().items()]
    scope = {"type": "http", "method": "POST", "path": CHAT, "headers": raw_headers, "query_string": b""}
    with gateway_client(fake, max_body_bytes=200) as (gateway, _):
        asyncio.run(gateway.app(scope, receive, send))
    assert sent[0]["status"] == 413
    assert json.loads(b"".join(m.get("body", b"") for m in sent[1:])) == _error(
        "request body over 200 bytes", "request_too_large"
    )


@pytest.mark.parametrize(("declared", "status"), [("200", 200), ("201", 413)])
def test_a_declared_length_over_the_limit_is_refused_before_reading(
    fake: FakeLSThread, declared: str, status: int
) -> None:
    body = json.dumps({"model": MODEL, "messages": user(f"declared {declared}")}).encode()
    with gateway_client(fake, max_body_bytes=200) as (_, client):
        response = client.post(CHAT, content=body, headers={**headers(), "Content-Length": declared})
    assert response.status_code == status
    if status == 413:
        assert response.json() == _error("request body over 200 bytes", "request_too_large")


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b"{not json", "Expecting property name enclosed in double quotes: line 1 column 2 (char 1)"),
        (b"", "Expecting value: line 1 column 1 (char 0)"),
        (b"\xff", "'utf-8' codec can't decode byte 0xff in position 0: invalid start byte"),
    ],
)
def test_a_body_that_is_not_json_is_a_400_saying_why(client: TestClient, body: bytes, reason: str) -> None:
    response = client.post(CHAT, content=body, headers=headers())
    assert (response.status_code, response.json()) == (
        400,
        _error(f"the request body is not valid JSON: {reason}", "invalid_json"),
    )


def test_a_lone_surrogate_escape_reaches_the_ls_as_a_replacement_character(
    fake: FakeLSThread, client: TestClient
) -> None:
    body = b'{"model": "' + MODEL.encode() + b'", "messages": [{"role": "user", "content": "a\\ud800b \\u00e9"}]}'
    response = client.post(CHAT, content=body, headers=headers())
    assert response.status_code == 200
    assert "a\ufffdb \u00e9" in sent_text(sends(fake)[0])


def test_a_client_leaving_before_its_body_arrived_gets_a_400(gw: tuple[Gateway, TestClient]) -> None:
    """Driven through the ASGI interface: the body's first part arrives, then the client disconnects."""
    incoming: list[dict[str, Any]] = [
        {"type": "http.request", "body": b'{"model": ', "more_body": True},
        {"type": "http.disconnect"},
    ]
    sent: list[dict[str, Any]] = []

    async def receive() -> MutableMapping[str, Any]:
        return incoming.pop(0) if incoming else {"type": "http.disconnect"}

    async def send(message: MutableMapping[str, Any]) -> None:
        sent.append(dict(message))

    asyncio.run(gw[0].app(asgi_http_scope("POST", CHAT, headers()), receive, send))
    assert sent[0]["status"] == 400
    body = json.loads(b"".join(m.get("body", b"") for m in sent[1:]))
    assert body == _error("the client went away before its body arrived", "client_disconnected")


# ---------------------------------------------------------------- routes


def test_unknown_routes_and_methods_are_openai_errors(client: TestClient) -> None:
    response = client.get("/v1/nothing")
    assert (response.status_code, response.json()) == (404, _error("no route GET /v1/nothing", "not_found"))
    response = client.delete("/v1/nothing/else")
    assert response.json() == _error("no route DELETE /v1/nothing/else", "not_found")
    response = client.get(CHAT)
    assert (response.status_code, response.json()) == (
        405,
        _error(f"GET is not allowed on {CHAT}", "method_not_allowed"),
    )
    assert client.post("/v1/models").json() == _error("POST is not allowed on /v1/models", "method_not_allowed")


def test_side_endpoints(gw: tuple[Gateway, TestClient]) -> None:
    gateway, client = gw
    models = client.get("/v1/models", headers=headers())
    assert models.json() == gateway.catalogue.openai_list()
    chat(client, {"model": MODEL, "messages": user("for the ledger")})
    assert client.get("/v1/ledger", headers=headers(KEY_B)).json() == gateway.ledger.document()
    assert gateway.ledger.document()["served"] == 1
    metrics = client.get("/metrics")
    assert metrics.headers["content-type"] == "text/plain; version=0.0.4; charset=utf-8"
    assert metrics.text == gateway.metrics.prometheus_text()
    snapshot = client.get("/metrics.json").json()
    assert snapshot["ledger"] == json.loads(json.dumps(gateway.metrics.snapshot()))["ledger"]
    health = client.get("/healthz")
    assert (health.status_code, health.json()) == (200, {"ok": True})


# ---------------------------------------------------------------- a turn's answer


def _check_id(value: str) -> None:
    assert re.fullmatch(r"chatcmpl-[0-9a-f]{24}", value), value


def test_a_plain_answer_is_one_completion_object(fake: FakeLSThread, client: TestClient) -> None:
    chunks = [
        {"thinking": "pl"},
        {"thinking": "an", "delay_s": 0.03},
        {"text": "Hello "},
        {"text": "world", "delay_s": 0.03},
    ]
    play(fake, {"chunks": chunks, "records": [USAGE]})
    before = int(time.time())
    body = chat(client, {"model": MODEL, "messages": user("plain")}).json()
    _check_id(body.pop("id"))
    assert before <= body.pop("created") <= int(time.time())
    assert body == {
        "object": "chat.completion",
        "model": MODEL,
        "system_fingerprint": "fp_cascade_engine",
        "service_tier": "default",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "Hello world", "reasoning_content": "plan"},
                "logprobs": None,
                "finish_reason": "stop",
            }
        ],
        "usage": WIRE_USAGE,
    }


def test_a_plain_answer_of_tool_calls_has_null_content(fake: FakeLSThread, client: TestClient) -> None:
    calls = [{"id": f"call_{n}", "name": "lookup", "arguments_json": f'{{"n":{n}}}'} for n in (1, 2)]
    play(fake, {"chunks": [{"tool_call": calls[0]}, {"tool_call": calls[1]}]})
    tools = [{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}]
    body = chat(client, {"model": MODEL, "messages": user("calls"), "tools": tools}).json()
    assert body["choices"][0]["finish_reason"] == "tool_calls"
    assert body["choices"][0]["message"] == {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": f"call_{n}", "type": "function", "function": {"name": "lookup", "arguments": f'{{"n":{n}}}'}}
            for n in (1, 2)
        ],
    }


def test_an_upstream_failure_is_a_502_with_the_ls_reason(fake: FakeLSThread, client: TestClient) -> None:
    play(fake, FAULT)
    response = chat(client, {"model": MODEL, "messages": user("fails")})
    assert (response.status_code, response.json()) == (502, UPSTREAM)


def _frames(response: Any) -> list[Any]:
    return [p if p == "[DONE]" else json.loads(p) for p in sse_payloads(response)]


@pytest.mark.parametrize("include_usage", [True, False])
def test_a_stream_is_the_exact_frame_sequence(fake: FakeLSThread, client: TestClient, include_usage: bool) -> None:
    call = {"id": "call_1", "name": "lookup", "arguments_json": "{}"}
    play(fake, {"chunks": [{"thinking": "plan"}, {"text": "Hi"}, {"tool_call": call}], "records": [USAGE]})
    tools = [{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}]
    request = {
        "model": MODEL,
        "messages": user(f"stream {include_usage}"),
        "stream": True,
        "stream_options": {"include_usage": include_usage},
        "tools": tools,
    }
    before = int(time.time())
    response = chat(client, request)
    assert response.headers["content-type"] == "text/event-stream; charset=utf-8"
    assert (response.headers["cache-control"], response.headers["x-accel-buffering"]) == ("no-cache", "no")
    assert response.text.endswith("\n\ndata: [DONE]\n\n")
    frames = _frames(response)
    assert frames.pop() == "[DONE]"
    ids = {f.pop("id") for f in frames}
    assert len(ids) == 1
    _check_id(ids.pop())
    created = {f.pop("created") for f in frames}
    assert len(created) == 1
    assert before <= created.pop() <= int(time.time())
    base = {
        "object": "chat.completion.chunk",
        "model": MODEL,
        "system_fingerprint": "fp_cascade_engine",
        "service_tier": "default",
    }

    def delta(value: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {**base, "choices": [{"index": 0, "delta": value, "finish_reason": finish}]}

    tool_call = {"index": 0, "id": "call_1", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}
    expected = [
        delta({"role": "assistant", "content": ""}),
        delta({"reasoning_content": "plan"}),
        delta({"content": "Hi"}),
        delta({"tool_calls": [tool_call]}),
        delta({}, "tool_calls"),
    ]
    if include_usage:
        expected.append({**base, "choices": [], "usage": WIRE_USAGE})
    assert frames == expected


def test_a_failed_stream_ends_with_one_error_frame_and_no_done(fake: FakeLSThread, client: TestClient) -> None:
    play(fake, FAULT)
    response = chat(client, {"model": MODEL, "messages": user("stream fails"), "stream": True})
    assert response.status_code == 200
    frames = _frames(response)
    assert frames[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    assert frames[1:] == [UPSTREAM]
    assert response.text.endswith("\n\n")
    assert "[DONE]" not in response.text


def test_a_slow_turn_is_bridged_by_heartbeats(fake: FakeLSThread) -> None:
    play(fake, {"chunks": [{"text": "late", "delay_s": 0.15}]})
    with gateway_client(fake, heartbeat_s=0.01) as (_, client):
        response = chat(client, {"model": MODEL, "messages": user("slow"), "stream": True})
    assert ": ping\n\n" in response.text
    assert response.text.index(": ping\n\n") < response.text.index('"content":"late"')
    assert [p for p in sse_payloads(response)][-1] == "[DONE]"


# ---------------------------------------------------------------- the Responses routes share the front's guards


def test_an_api_key_stands_for_a_digest_of_itself() -> None:
    assert caller_id_for_key("sk-a") == "key-" + hashlib.sha256(b"sk-a").hexdigest()[:16]
    assert re.fullmatch(r"key-[0-9a-f]{16}", caller_id_for_key("sk-b"))
    assert caller_id_for_key("sk-a") != caller_id_for_key("sk-b")


RESPONSES = "/v1/responses"
BAD_SESSION = "X-Session-Id must be 1 to 128 characters of letters, digits and ._:@+=- starting with a letter or digit"


@pytest.mark.parametrize(
    ("extra", "key", "status", "body"),
    [
        (
            {"Origin": "https://a.example", "Content-Type": "application/json"},
            KEY_A,
            403,
            _error("requests carrying an Origin header (a web page) are refused", "cross_origin"),
        ),
        (
            {"Content-Type": "text/plain"},
            KEY_A,
            415,
            _error("the body must be application/json, not text/plain", "unsupported_media_type"),
        ),
        ({"Content-Type": "application/json"}, None, 401, _error(MISSING, "invalid_api_key", "authentication_error")),
        (
            {"Content-Type": "application/json", "X-Session-Id": "-bad"},
            KEY_A,
            400,
            {"error": {"message": BAD_SESSION, "type": "invalid_request_error", "param": "X-Session-Id", "code": None}},
        ),
    ],
    ids=["origin", "text", "no-key", "bad-session-id"],
)
def test_a_responses_turn_passes_the_same_guards(
    fake: FakeLSThread, client: TestClient, extra: dict[str, str], key: str | None, status: int, body: object
) -> None:
    sent = {"Authorization": f"Bearer {key}"} if key else {}
    payload = json.dumps({"model": MODEL, "input": "guarded"}).encode()
    response = client.post(RESPONSES, content=payload, headers={**sent, **extra})
    assert (response.status_code, response.json()) == (status, body)
    assert sends(fake) == []


def test_a_responses_body_has_the_same_limit(fake: FakeLSThread) -> None:
    body = json.dumps({"model": MODEL, "input": "x" * 300}).encode()
    with gateway_client(fake, max_body_bytes=200) as (_, client):
        response = client.post(RESPONSES, content=body, headers=headers())
    assert (response.status_code, response.json()) == (413, _error("request body over 200 bytes", "request_too_large"))


def test_deleting_a_response_from_a_web_page_is_refused(client: TestClient) -> None:
    response = client.delete(RESPONSES + "/resp_x", headers={**headers(), "Origin": "https://a.example"})
    assert (response.status_code, response.json()) == (
        403,
        _error("requests carrying an Origin header (a web page) are refused", "cross_origin"),
    )


def test_a_slow_responses_stream_is_bridged_by_heartbeats(fake: FakeLSThread) -> None:
    play(fake, {"chunks": [{"text": "late", "delay_s": 0.15}]})
    with gateway_client(fake, heartbeat_s=0.01) as (_, client):
        payload = json.dumps({"model": MODEL, "input": "slow", "stream": True}).encode()
        response = client.post(RESPONSES, content=payload, headers=headers())
    assert ": ping\n\n" in response.text
    assert response.text.index(": ping\n\n") < response.text.index("late")


@pytest.mark.parametrize(
    ("path", "stream"),
    [(CHAT, False), (CHAT, True), ("/v1/responses", False), ("/v1/responses", True)],
    ids=["chat", "chat-stream", "responses", "responses-stream"],
)
def test_turns_beyond_the_cap_wait_for_a_running_one(fake: FakeLSThread, path: str, stream: bool) -> None:
    """max_concurrent_turns=1: a quick turn sent while a slow one runs only starts once that one ended."""
    play(fake, {"chunks": [{"text": "slow", "delay_s": 0.3}]}, {"chunks": [{"text": "quick"}]})
    finished: list[str] = []

    async def turn(client: httpx.AsyncClient, name: str, pause_s: float) -> None:
        await asyncio.sleep(pause_s)
        prompt = {"messages": user(name)} if path == CHAT else {"input": name}
        payload = json.dumps({"model": MODEL, "stream": stream, **prompt}).encode()
        response = await client.post(path, content=payload, headers=headers())
        assert response.status_code == 200
        finished.append(name)

    async def main(app: Any) -> None:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
            await asyncio.gather(turn(client, "slow", 0), turn(client, "quick", 0.1))

    with gateway_client(fake, max_concurrent_turns=1) as (gateway, _):
        asyncio.run(main(gateway.app))
    assert finished == ["slow", "quick"]
