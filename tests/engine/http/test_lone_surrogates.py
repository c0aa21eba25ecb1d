"""Lone surrogates from JSON escapes (``"\\ud800"``) never crash a turn: Node writes U+FFFD for them when it
encodes a string for the LS, and the engine replaces them once, on the way in (engine.js.well_formed_json),
so the wire carries exactly what the JS gateway sends and no later encoding (protobuf, SQLite) can fail."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from engine.http.gateway import ServedGateway
from engine.js import js_to_well_formed, well_formed_json
from fakels.server import FakeLSThread
from tests.engine.http.conftest import KEY_A, MODEL, play, sends
from tests.engine.http.session_support import text

HEADERS = {"Authorization": f"Bearer {KEY_A}", "Content-Type": "application/json"}


def _raw(served: ServedGateway, path: str, body: str) -> httpx.Response:
    # Sent as typed: json.dumps would escape the lone surrogate the same way, but this shows the bytes.
    return httpx.post(served.url + path, content=body.encode("ascii"), headers=HEADERS, timeout=30)


@pytest.mark.parametrize(
    ("escaped", "expected"),
    [
        (r"a\ud800b", "a\ufffdb"),  # a lone high surrogate
        (r"a\udc00b", "a\ufffdb"),  # a lone low surrogate
        (r"\udc00\ud800", "\ufffd\ufffd"),  # reversed: two lone ones
        (r"\ud83d\ude00", "\U0001f600"),  # a pair is one character and stays
        (r"\u00e9", "\u00e9"),  # an ordinary escape
    ],
)
def test_a_chat_prompt_reaches_the_ls_well_formed(
    fake: FakeLSThread, served: ServedGateway, escaped: str, expected: str
) -> None:
    play(fake, {"chunks": [{"text": "ok"}]})
    body = f'{{"model": "{MODEL}", "messages": [{{"role": "user", "content": "say {escaped} now"}}]}}'
    answer = _raw(served, "/v1/chat/completions", body)
    assert answer.status_code == 200, answer.text
    (send,) = sends(fake)
    assert f"say {expected} now" in text(send)


def test_lone_surrogates_in_tools_keys_and_arguments_do_not_crash_the_turn(
    fake: FakeLSThread, served: ServedGateway
) -> None:
    play(fake, {"chunks": [{"text": "ok"}]})
    body = (
        f'{{"model": "{MODEL}", "messages": ['
        r'{"role": "user", "content": "go"},'
        r'{"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function",'
        r' "function": {"name": "Read", "arguments": "{\"path\": \"\\ud800.txt\"}"}}]},'
        r'{"role": "tool", "tool_call_id": "c1", "content": "x\ud800y"},'
        r'{"role": "user", "content": "and?"}],'
        r' "tools": [{"type": "function", "function": {"name": "Read", "description": "d\udfff",'
        r' "parameters": {"type": "object", "properties": {"p\ud800": {"type": "string"}}}}}]}'
    )
    answer = _raw(served, "/v1/chat/completions", body)
    assert answer.status_code == 200, answer.text
    prompt = text(sends(fake)[0])
    assert "x\ufffdy" in prompt
    assert "\\ud800.txt" in prompt  # inside the arguments' own JSON text it is an escape, not a character


def test_a_stored_response_keeps_the_well_formed_text(fake: FakeLSThread, served: ServedGateway) -> None:
    play(fake, {"chunks": [{"text": "ok"}]})
    answer = _raw(served, "/v1/responses", f'{{"model": "{MODEL}", "input": "q\\ud800"}}')
    assert answer.status_code == 200, answer.text
    items = httpx.get(
        f"{served.url}/v1/responses/{answer.json()['id']}/input_items", headers=HEADERS, timeout=30
    ).json()["data"]
    assert json.dumps(items, ensure_ascii=False).count("q\ufffd") == 1


def _nested(depth: int, leaf: Any) -> Any:
    value = leaf
    for _ in range(depth):
        value = {"k\ud800": [value]}
    return value


def test_well_formed_json_walks_any_depth_without_recursion() -> None:
    document = _nested(5000, "x\udc00")
    node: Any = well_formed_json(document)
    for _ in range(5000):
        assert list(node) == ["k\ufffd"]
        node = node["k\ufffd"][0]
    assert node == "x\ufffd"
    assert js_to_well_formed("plain") == "plain"


def test_tool_markup_with_an_escaped_lone_surrogate_reaches_the_client_escaped(
    fake: FakeLSThread, served: ServedGateway
) -> None:
    # The model writes the escape inside its tool-call JSON; JSON.stringify would write it back as an escape.
    markup = '<tool_call>{"name": "Read", "arguments": {"path": "\\ud800.txt"}}</tool_call>'
    play(fake, {"chunks": [{"text": markup}]}, {"chunks": [{"text": markup}]})
    tools = [{"type": "function", "function": {"name": "Read", "parameters": {"type": "object"}}}]
    for stream in (False, True):
        body = {"model": MODEL, "messages": [{"role": "user", "content": f"read {stream}"}], "tools": tools}
        answer = httpx.post(served.url + "/v1/chat/completions", json={**body, "stream": stream}, headers=HEADERS)
        assert answer.status_code == 200, answer.text
        assert "\\\\ud800.txt" in answer.text  # the escape, itself escaped inside the arguments string
        if not stream:
            (call,) = answer.json()["choices"][0]["message"]["tool_calls"]
            assert json.loads(call["function"]["arguments"]) == {"path": "\ud800.txt"}


def test_the_native_bridge_writes_a_lone_surrogate_as_u_fffd(fake: FakeLSThread) -> None:
    from tests.engine.http.conftest import serve

    served = serve(fake, native_mode=True)
    try:
        play(fake, {"chunks": [{"text": "ok"}]})
        body = (
            f'{{"model": "{MODEL}", "messages": ['
            r'{"role": "user", "content": "go"},'
            r'{"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function",'
            r' "function": {"name": "Read", "arguments": "{\"file_path\": \"/w/\\ud800.txt\"}"}}]},'
            r'{"role": "tool", "tool_call_id": "c1", "content": "body"}]}'
        )
        answer = _raw(served, "/v1/chat/completions", body)
        assert answer.status_code == 200, answer.text
        (send,) = sends(fake)
        assert send.request is not None
        assert "/w/\ufffd.txt" in json.dumps(send.request.get("additional_steps", []), ensure_ascii=False)
    finally:
        served.stop()
