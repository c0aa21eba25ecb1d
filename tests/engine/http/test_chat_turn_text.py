"""TURN-1 on the engine's chat front: each turn delivers its own planner text exactly once, through a
resumed cascade, a post-edited response and an error step after the text."""

from __future__ import annotations

import json
from typing import Any

import httpx
import openai
import pytest

from engine.http.gateway import ServedGateway
from fakels.server import FakeLSThread
from tests.engine.http.conftest import KEY_A, MODEL, play, sends

USAGE = {"input_tokens": 4, "output_tokens": 2}


def _ask(client: openai.OpenAI, messages: list[Any]) -> str:
    answer = client.chat.completions.create(model=MODEL, messages=messages)
    return answer.choices[0].message.content or ""


@pytest.mark.invariant("TURN-1")
def test_a_resumed_turn_delivers_its_own_text_only(fake: FakeLSThread, client: openai.OpenAI) -> None:
    play(fake, {"chunks": [{"text": "alpha"}], "records": [USAGE]}, {"chunks": [{"text": "beta"}], "records": [USAGE]})
    first: list[Any] = [{"role": "user", "content": "one"}]
    assert _ask(client, first) == "alpha"
    second = [*first, {"role": "assistant", "content": "alpha"}, {"role": "user", "content": "two"}]
    assert _ask(client, second) == "beta"  # not "alphabeta"
    cascades = {send.request["cascade_id"] for send in sends(fake)}
    assert len(cascades) == 1, "the second turn did not resume the cascade: the clause was not exercised"


@pytest.mark.invariant("TURN-1")
@pytest.mark.parametrize(
    ("modified", "delivered"),
    [("Hello world, edited", "Hello world, edited"), ("Goodbye", "Hello world"), ("Hello", "Hello world")],
    ids=["extends", "rewrites", "shorter"],
)
def test_a_post_edited_response_is_taken_only_where_it_extends_the_text(
    fake: FakeLSThread, client: openai.OpenAI, modified: str, delivered: str
) -> None:
    play(fake, {"chunks": [{"text": "Hello"}, {"text": " world"}], "modified_response": modified, "records": [USAGE]})
    assert _ask(client, [{"role": "user", "content": "hi"}]) == delivered


@pytest.mark.invariant("TURN-1")
def test_an_error_step_after_text_ends_the_stream_in_an_error_not_in_the_content(
    fake: FakeLSThread, served: ServedGateway
) -> None:
    play(fake, {"chunks": [{"text": "partial"}, {"error": "quota gone"}], "records": [USAGE]})
    body = {"model": MODEL, "messages": [{"role": "user", "content": "hi"}], "stream": True}
    with httpx.stream(
        "POST", served.url + "/v1/chat/completions", json=body, headers={"Authorization": f"Bearer {KEY_A}"}, timeout=30
    ) as response:
        events = [line[len("data: ") :] for line in response.iter_lines() if line.startswith("data: ")]
    chunks = [json.loads(e) for e in events if e != "[DONE]"]
    content = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c.get("choices"))
    assert "quota gone" not in content
    assert "partial".startswith(content)
    assert [c["error"]["code"] for c in chunks if "error" in c] == ["upstream_error"]
