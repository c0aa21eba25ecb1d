"""TURN-5 on the engine's chat front: a turn the gateway stops waiting on while the LS still runs ends as
cut (finish_reason "length"), is neither cached nor committed, and a silent LS still gets the client
heartbeats."""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest

from engine.http.gateway import ServedGateway
from fakels.server import FakeLSThread
from tests.engine.http.conftest import KEY_A, MODEL, play, sends, serve

WAIT_S = 0.4
LONG = {"chunks": [{"text": "begun"}, {"text": " never seen", "delay_s": 60}]}
QUESTION: list[Any] = [{"role": "user", "content": "a long one"}]


@pytest.fixture
def capped(fake: FakeLSThread) -> Iterator[ServedGateway]:
    gateway = serve(fake, max_wait_s=WAIT_S, heartbeat_s=0.1)
    yield gateway
    gateway.stop()


@pytest.mark.invariant("TURN-5")
def test_a_turn_past_the_wait_cap_ends_cut_and_is_kept_nowhere(fake: FakeLSThread, capped: ServedGateway) -> None:
    play(fake, LONG, {"chunks": [{"text": "again"}]}, {"chunks": [{"text": "next"}]})
    client = openai.OpenAI(base_url=capped.url + "/v1", api_key=KEY_A, max_retries=0, timeout=30)
    answer = client.chat.completions.create(model=MODEL, messages=QUESTION)
    assert (answer.choices[0].message.content, answer.choices[0].finish_reason) == ("begun", "length")
    again = client.chat.completions.create(model=MODEL, messages=QUESTION)
    assert again.choices[0].message.content == "again"  # not the cut answer from a cache
    following = [*QUESTION, {"role": "assistant", "content": "begun"}, {"role": "user", "content": "go on"}]
    client.chat.completions.create(model=MODEL, messages=following)
    cut, _, next_turn = sends(fake)
    assert next_turn.request["cascade_id"] != cut.request["cascade_id"]  # the cut turn was not committed


@pytest.mark.invariant("TURN-5")
def test_a_silent_ls_still_gets_the_stream_heartbeats(fake: FakeLSThread, capped: ServedGateway) -> None:
    play(fake, {"chunks": [{"text": "a"}, {"text": "b", "delay_s": 0.6}]})
    body = {"model": MODEL, "messages": QUESTION, "stream": True}
    arrivals: list[float] = []
    with httpx.stream(
        "POST", capped.url + "/v1/chat/completions", json=body, headers={"Authorization": f"Bearer {KEY_A}"}, timeout=30
    ) as response:
        for _ in response.iter_lines():
            arrivals.append(time.monotonic())
    gaps = [later - earlier for earlier, later in itertools.pairwise(arrivals)]
    assert max(gaps) < 0.35, gaps  # a heartbeat every 0.1 s through 0.6 s of silence
