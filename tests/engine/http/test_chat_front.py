"""POST /v1/chat/completions through the official openai client: shapes, tools, cache, ledger."""

from __future__ import annotations

import json
from typing import Any

import httpx
import openai
import pytest

from engine.http.gateway import ServedGateway
from fakels.server import FakeLSThread
from tests.engine.http.conftest import KEY_A, KEY_B, MODEL, play, sends, serve_without_keys

USAGE = {"input_tokens": 11, "output_tokens": 4, "cache_read_tokens": 3}


def test_non_stream_answer_carries_the_wire_usage(fake: FakeLSThread, client: openai.OpenAI) -> None:
    play(fake, {"chunks": [{"thinking": "plan"}, {"text": "Hello "}, {"text": "world"}], "records": [USAGE]})
    answer = client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "hi"}])
    assert answer.choices[0].message.content == "Hello world"
    assert answer.choices[0].finish_reason == "stop"
    assert answer.usage is not None
    assert (answer.usage.prompt_tokens, answer.usage.completion_tokens, answer.usage.total_tokens) == (14, 4, 18)


def _events(served: ServedGateway, body: dict[str, object], key: str = KEY_A) -> list[str]:
    with httpx.stream(
        "POST", served.url + "/v1/chat/completions", json=body, headers={"Authorization": f"Bearer {key}"}, timeout=30
    ) as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        return [line[len("data: ") :] for line in response.iter_lines() if line.startswith("data: ")]


@pytest.mark.invariant("ACC-4")
@pytest.mark.parametrize("include_usage", [True, False, None])
def test_stream_frames_in_order_usage_only_when_asked(
    fake: FakeLSThread, served: ServedGateway, include_usage: bool | None
) -> None:
    play(fake, {"chunks": [{"thinking": "plan"}, {"text": "Hel"}, {"text": "lo"}], "records": [USAGE]})
    body: dict[str, object] = {"model": MODEL, "messages": [{"role": "user", "content": "hi"}], "stream": True}
    if include_usage is not None:
        body["stream_options"] = {"include_usage": include_usage}
    events = _events(served, body)
    assert events[-1] == "[DONE]"
    chunks = [json.loads(e) for e in events[:-1]]
    deltas = [c["choices"][0]["delta"] if c["choices"] else None for c in chunks]
    assert deltas[0] == {"role": "assistant", "content": ""}
    assert deltas[1] == {"reasoning_content": "plan"}
    assert "".join(d.get("content", "") for d in deltas[2:] if d) == "Hello"
    finish = [c["choices"][0]["finish_reason"] for c in chunks if c["choices"] and c["choices"][0]["finish_reason"]]
    assert finish == ["stop"]
    usage_frames = [c for c in chunks if "usage" in c]
    assert len(usage_frames) == (1 if include_usage else 0)
    if include_usage:
        assert chunks[-1]["choices"] == []
        assert usage_frames[0]["usage"]["completion_tokens"] == 4


def test_openai_stream_client_reads_the_answer(fake: FakeLSThread, client: openai.OpenAI) -> None:
    play(fake, {"chunks": [{"text": "streamed "}, {"text": "text"}], "records": [USAGE]})
    stream = client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "s"}], stream=True)
    assert "".join(chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices) == "streamed text"


SCHEMA = {"type": "object", "properties": {"answer": {"type": "integer"}}, "required": ["answer"]}
JSON_FORMAT: dict[str, Any] = {"type": "json_schema", "json_schema": {"name": "a", "schema": SCHEMA}}


@pytest.mark.invariant("SO-1")
@pytest.mark.invariant("SO-2")
def test_invalid_then_valid_the_bad_turn_is_a_typed_failure_neither_cached_nor_committed(
    fake: FakeLSThread, served: ServedGateway, client: openai.OpenAI
) -> None:
    """The seed's named test (engine.md §5.C), on the stream arm."""
    play(
        fake, {"chunks": [{"text": '{"answer":"twelve"}'}], "records": [USAGE]}, {"chunks": [{"text": '{"answer":12}'}]}
    )
    body = {
        "model": MODEL,
        "messages": [{"role": "user", "content": "12?"}],
        "stream": True,
        "response_format": JSON_FORMAT,
    }
    bad = _events(served, body)
    assert len(bad) == 1
    assert json.loads(bad[0])["error"]["code"] == "STRUCTURED_OUTPUT_NOT_CONFORMING"
    good = _events(served, body)
    assert good[-1] == "[DONE]"
    assert len(sends(fake)) == 2  # the bad turn was not cached
    assert len(served.gateway.pool) == 1  # only the good turn was committed
    assert served.gateway.ledger.document()["tokens"]["input"] == 11  # the bad turn's usage is recorded


@pytest.mark.invariant("SO-1")
def test_non_stream_violation_is_a_502_with_the_typed_body(fake: FakeLSThread, client: openai.OpenAI) -> None:
    play(fake, {"chunks": [{"text": "twelve"}]})
    with pytest.raises(openai.APIStatusError) as caught:
        client.chat.completions.create(  # type: ignore[call-overload]
            model=MODEL, messages=[{"role": "user", "content": "12?"}], response_format=JSON_FORMAT
        )
    assert caught.value.status_code == 502
    assert caught.value.body["code"] == "STRUCTURED_OUTPUT_NOT_CONFORMING"  # type: ignore[index]


@pytest.mark.invariant("ACC-1")
@pytest.mark.invariant("ACC-2")
def test_cache_hit_adds_nothing_and_replays_usage(
    fake: FakeLSThread, served: ServedGateway, client: openai.OpenAI
) -> None:
    """engine.md §4.C: the hit adds no tokens, no credits and no account spend."""
    play(fake, {"chunks": [{"text": "cached answer"}], "records": [USAGE]})
    first = client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "q"}])
    before = served.gateway.ledger.document()
    second = client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "q"}])
    after = served.gateway.ledger.document()
    assert len(sends(fake)) == 1
    assert second.choices[0].message.content == "cached answer"
    assert second.usage == first.usage
    assert after["tokens"] == before["tokens"]
    assert after["credits"] == before["credits"]
    assert after["account_spend"] == before["account_spend"]
    assert (after["served"], after["cache_served"]) == (before["served"] + 1, before["cache_served"] + 1)
    assert after["rows"][-1] == {"model": MODEL, "success": True, "cache_served": True, "credit": 0}


def test_the_cache_is_scoped_per_caller(fake: FakeLSThread, served: ServedGateway) -> None:
    play(fake, {"chunks": [{"text": "for alpha"}]}, {"chunks": [{"text": "for beta"}]})
    texts = []
    for key in (KEY_A, KEY_B):
        other = openai.OpenAI(base_url=served.url + "/v1", api_key=key, max_retries=0)
        answer = other.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "same"}])
        texts.append(answer.choices[0].message.content)
    assert texts == ["for alpha", "for beta"]
    assert len(sends(fake)) == 2


def test_proposed_tool_calls_become_openai_tool_calls(fake: FakeLSThread, client: openai.OpenAI) -> None:
    call = {"id": "call_1", "name": "lookup", "arguments_json": '{"q": "peru"}'}
    play(fake, {"chunks": [{"text": "Checking."}, {"tool_call": call}]})
    tools = [{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}]
    answer = client.chat.completions.create(
        model=MODEL,
        messages=[{"role": "user", "content": "capital?"}],
        tools=tools,  # type: ignore[arg-type]
    )
    choice = answer.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.tool_calls is not None
    assert [(c.id, c.function.name, c.function.arguments) for c in choice.message.tool_calls] == [  # type: ignore[union-attr]
        ("call_1", "lookup", '{"q": "peru"}')
    ]


def test_tool_markup_in_text_becomes_tool_calls_and_the_loop_resumes(fake: FakeLSThread, client: openai.OpenAI) -> None:
    markup = '<tool_call>{"name": "lookup", "arguments": {"q": "peru"}}</tool_call>'
    play(fake, {"chunks": [{"text": "Let me check. "}, {"text": markup}]}, {"chunks": [{"text": "Lima."}]})
    tools = [{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}]
    messages: list[dict[str, object]] = [{"role": "user", "content": "capital of Peru?"}]
    first = client.chat.completions.create(model=MODEL, messages=messages, tools=tools)  # type: ignore[arg-type]
    calls = first.choices[0].message.tool_calls
    assert calls is not None
    assert [(c.function.name, json.loads(c.function.arguments)) for c in calls] == [("lookup", {"q": "peru"})]  # type: ignore[union-attr]
    assert first.choices[0].message.content == "Let me check. "
    # The client echoes the assistant turn with content null: the cascade is still resumed.
    echoed: dict[str, object] = {"role": "assistant", "content": None, "tool_calls": [c.model_dump() for c in calls]}
    messages += [echoed, {"role": "tool", "tool_call_id": calls[0].id, "content": "Lima"}]
    second = client.chat.completions.create(model=MODEL, messages=messages, tools=tools)  # type: ignore[arg-type]
    assert second.choices[0].message.content == "Lima."
    cascades = [e.request["cascade_id"] for e in sends(fake)]
    assert cascades[0] == cascades[1], "the tool loop did not resume its cascade"
    assert "<tool_result" in sends(fake)[1].request["items"][0]["text"]


@pytest.mark.parametrize(
    ("header", "status"),
    [
        (None, 401),
        ("Bearer wrong", 401),
        (f"Bearer {KEY_A.upper()}", 401),
        (f"Bearer {KEY_A}x", 401),
        (f"Bearer {KEY_A[:-1]}", 401),
        (f"Basic {KEY_A}", 401),
        (f"Bearer {KEY_A}", 200),
    ],
)
def test_api_keys_are_compared_exactly(served: ServedGateway, header: str | None, status: int) -> None:
    headers = {"Authorization": header} if header else {}
    response = httpx.get(served.url + "/v1/models", headers=headers)
    assert response.status_code == status
    if status == 401:
        assert response.json()["error"]["code"] == "invalid_api_key"


@pytest.mark.parametrize(
    ("body", "status", "param"),
    [
        (b"{not json", 400, None),
        (b"[]", 400, None),
        (json.dumps({"model": MODEL}).encode(), 400, "messages"),
        (json.dumps({"model": MODEL, "messages": "hi"}).encode(), 400, "messages"),
        (json.dumps({"model": MODEL, "messages": [{"role": "wizard", "content": "x"}]}).encode(), 400, "messages[0]"),
        (
            json.dumps({"model": MODEL, "messages": [{"role": "user", "content": "x"}], "stream": "yes"}).encode(),
            400,
            "stream",
        ),
        (json.dumps({"model": MODEL, "messages": [{"role": "user", "content": "x"}], "n": 2}).encode(), 400, "n"),
        (
            json.dumps({"model": MODEL, "messages": [{"role": "user", "content": "x"}], "temperature": "hot"}).encode(),
            400,
            "temperature",
        ),
        (json.dumps({"model": "no-such-model", "messages": [{"role": "user", "content": "x"}]}).encode(), 404, "model"),
        (
            json.dumps(
                {
                    "model": MODEL,
                    "messages": [{"role": "user", "content": "x"}],
                    "response_format": {"type": "json_schema"},
                }
            ).encode(),
            400,
            "response_format",
        ),
        (
            json.dumps(
                {"model": MODEL, "messages": [{"role": "user", "content": "x"}], "tools": [{"type": "function"}]}
            ).encode(),
            400,
            "tools",
        ),
    ],
)
def test_bad_input_gets_an_openai_error(
    fake: FakeLSThread, served: ServedGateway, body: bytes, status: int, param: str | None
) -> None:
    response = httpx.post(
        served.url + "/v1/chat/completions",
        content=body,
        headers={"Authorization": f"Bearer {KEY_A}", "Content-Type": "application/json"},
    )
    assert response.status_code == status
    error = response.json()["error"]
    assert error["param"] == param
    assert error["message"]
    assert sends(fake) == []  # nothing ran upstream


def test_unknown_route_and_method_are_openai_errors(served: ServedGateway) -> None:
    assert httpx.get(served.url + "/v1/nothing").json()["error"]["code"] == "not_found"
    assert httpx.get(served.url + "/v1/chat/completions").status_code == 405


@pytest.mark.invariant("SO-3")
def test_a_conforming_stream_has_the_frames_of_a_plain_one(fake: FakeLSThread, served: ServedGateway) -> None:
    turn = {"chunks": [{"thinking": "t"}, {"text": '{"answer":'}, {"text": " 12}"}], "records": [USAGE]}
    play(fake, turn, turn)
    body = {"model": MODEL, "messages": [{"role": "user", "content": "12?"}], "stream": True}
    judged = _events(served, {**body, "response_format": JSON_FORMAT})
    plain = _events(served, body)

    def strip(events: list[str]) -> list[object]:
        return [
            {k: v for k, v in json.loads(e).items() if k not in ("id", "created")} if e != "[DONE]" else e
            for e in events
        ]

    assert strip(judged) == strip(plain)
    content = "".join(json.loads(e)["choices"][0]["delta"].get("content", "") for e in judged[:-1])
    assert content == '{"answer": 12}'
    assert judged[-1] == "[DONE]"


@pytest.mark.invariant("SO-4")
def test_a_tool_call_turn_is_not_judged_against_the_schema(fake: FakeLSThread, served: ServedGateway) -> None:
    call = {"id": "call_9", "name": "lookup", "arguments_json": "{}"}
    play(fake, {"chunks": [{"text": "not json at all"}, {"tool_call": call}]})
    tools = [{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}]
    body = {"model": MODEL, "messages": [{"role": "user", "content": "?"}], "stream": True, "tools": tools}
    events = _events(served, {**body, "response_format": JSON_FORMAT})
    assert events[-1] == "[DONE]"
    finish = [json.loads(e)["choices"][0]["finish_reason"] for e in events[:-1]]
    assert finish[-1] == "tool_calls"
    assert not any("error" in json.loads(e) for e in events[:-1])


@pytest.mark.invariant("ACC-2")
@pytest.mark.parametrize("include_usage", [True, False, None])
def test_a_streamed_cache_hit_has_the_live_stream_shape(
    fake: FakeLSThread, served: ServedGateway, include_usage: bool | None
) -> None:
    """chat-cache-hit.test.js: the replay's finish chunk and terminal usage chunk look like a live
    stream's; the usage frame only with include_usage true (O1)."""
    play(fake, {"chunks": [{"text": "replayed"}], "records": [USAGE]})
    body: dict[str, object] = {"model": MODEL, "messages": [{"role": "user", "content": "hit"}], "stream": True}
    if include_usage is not None:
        body["stream_options"] = {"include_usage": include_usage}
    live, hit = _events(served, body), _events(served, body)
    assert len(sends(fake)) == 1

    def shape(events: list[str]) -> list[object]:
        return [
            e if e == "[DONE]" else {k: v for k, v in json.loads(e).items() if k not in ("id", "created")}
            for e in events
        ]

    assert shape(hit) == shape(live)
    assert sum("usage" in json.loads(e) for e in hit[:-1]) == (1 if include_usage else 0)


def test_an_unauthenticated_caller_gets_no_cross_request_cache_hit(fake: FakeLSThread) -> None:
    """chat-cache-hit.test.js: a guessed (unscoped) caller never gets another request's answer."""
    gateway = serve_without_keys(fake)
    try:
        play(fake, {"chunks": [{"text": "first"}]}, {"chunks": [{"text": "second"}]})
        body = {"model": MODEL, "messages": [{"role": "user", "content": "same"}]}
        answers = [httpx.post(gateway.url + "/v1/chat/completions", json=body, timeout=30).json() for _ in range(2)]
    finally:
        gateway.stop()
    assert [a["choices"][0]["message"]["content"] for a in answers] == ["first", "second"]
    assert len(sends(fake)) == 2


@pytest.mark.parametrize(
    ("headers", "status", "code"),
    [
        ({"Origin": "https://attacker.example", "Content-Type": "application/json"}, 403, "cross_origin"),
        ({"Content-Type": "text/plain"}, 415, "unsupported_media_type"),
        ({"Content-Type": "application/x-www-form-urlencoded"}, 415, "unsupported_media_type"),
        ({}, 415, "unsupported_media_type"),
    ],
)
def test_no_turn_from_a_web_page(
    fake: FakeLSThread, served: ServedGateway, headers: dict[str, str], status: int, code: str
) -> None:
    """Cross-origin posts a browser sends without a preflight (text/plain, forms) or with an Origin."""
    body = json.dumps({"model": MODEL, "messages": [{"role": "user", "content": "x"}]}).encode()
    response = httpx.post(
        served.url + "/v1/chat/completions", content=body, headers={"Authorization": f"Bearer {KEY_A}", **headers}
    )
    assert (response.status_code, response.json()["error"]["code"]) == (status, code)
    assert sends(fake) == []
