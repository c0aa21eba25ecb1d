"""REQ-2 on the engine's chat front: ``stop`` cuts the delivered answer, streamed or not, and a
parameter the LS cannot honour is a 400 that reaches no Send."""

from __future__ import annotations

import json
from typing import Any

import httpx
import openai
import pytest

from engine.http.gateway import ServedGateway
from fakels.server import FakeLSThread
from tests.engine.http.conftest import KEY_A, MODEL, play, sends

USAGE = {"input_tokens": 5, "output_tokens": 3}
HI: list[Any] = [{"role": "user", "content": "hi"}]


def _stream(served: ServedGateway, body: dict[str, Any]) -> tuple[str, list[str]]:
    with httpx.stream(
        "POST", served.url + "/v1/chat/completions", json=body, headers={"Authorization": f"Bearer {KEY_A}"}, timeout=30
    ) as response:
        assert response.status_code == 200
        events = [line[len("data: ") :] for line in response.iter_lines() if line.startswith("data: ")]
    chunks = [json.loads(e) for e in events if e != "[DONE]"]
    content = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])
    finishes = [c["choices"][0]["finish_reason"] for c in chunks if c["choices"] and c["choices"][0]["finish_reason"]]
    return content, finishes


@pytest.mark.invariant("REQ-2")
@pytest.mark.parametrize(
    ("pieces", "stop", "delivered"),
    [
        (["Hello wor", "ld. Bye"], ".", "Hello world"),
        (["alpha E", "ND beta"], ["END"], "alpha "),  # straddles two frames
        (["no stop here"], ["zz", "qq"], "no stop here"),
        (["x"], "x", ""),
        (["one\n\ntwo"], ["two", "\n\n"], "one"),  # the earliest of several
    ],
)
@pytest.mark.parametrize("stream", [False, True])
def test_stop_cuts_the_answer_before_the_first_sequence(
    fake: FakeLSThread,
    served: ServedGateway,
    client: openai.OpenAI,
    pieces: list[str],
    stop: str | list[str],
    delivered: str,
    stream: bool,
) -> None:
    play(fake, {"chunks": [{"text": piece} for piece in pieces], "records": [USAGE]})
    body: dict[str, Any] = {"model": MODEL, "messages": HI, "stop": stop}
    if stream:
        assert _stream(served, {**body, "stream": True}) == (delivered, ["stop"])
        return
    answer = client.chat.completions.create(**body)
    assert (answer.choices[0].message.content, answer.choices[0].finish_reason) == (delivered, "stop")


@pytest.mark.invariant("REQ-2")
def test_a_cut_answer_is_not_resumed(fake: FakeLSThread, client: openai.OpenAI) -> None:
    """The cascade holds the whole answer; the client saw it cut: its next turn goes to a fresh cascade."""
    play(fake, {"chunks": [{"text": "first. second"}], "records": [USAGE]}, {"chunks": [{"text": "ok"}]})
    answer = client.chat.completions.create(model=MODEL, messages=HI, stop=".")
    follow_up: list[Any] = [
        *HI,
        {"role": "assistant", "content": answer.choices[0].message.content},
        {"role": "user", "content": "more"},
    ]
    client.chat.completions.create(model=MODEL, messages=follow_up)
    cascades = [send.request["cascade_id"] for send in sends(fake)]
    assert len(cascades) == 2, cascades
    assert cascades[0] != cascades[1], "the follow-up resumed the cascade whose answer was cut"


@pytest.mark.invariant("REQ-2")
@pytest.mark.parametrize(
    "extra",
    [
        {"n": 2},
        {"logprobs": True},
        {"top_logprobs": 3},
        {"seed": 7},
        {"frequency_penalty": 0.5},
        {"presence_penalty": -1},
        {"logit_bias": {"1": 5}},
        {"messages": [*HI, {"role": "assistant", "content": "hello"}]},
        {"messages": [{"role": "user", "content": "  "}]},
    ],
)
def test_what_the_ls_cannot_serve_is_a_400_before_any_send(
    fake: FakeLSThread, client: openai.OpenAI, extra: dict[str, Any]
) -> None:
    play(fake, {"chunks": [{"text": "never asked"}], "records": [USAGE]})
    with pytest.raises(openai.BadRequestError):
        client.chat.completions.create(**{"model": MODEL, "messages": HI, **extra})
    assert sends(fake) == []
