"""The HTTP front under concurrent callers (no cross-talk), a caller that goes away mid-stream, and
the non-stream path, all through async clients.

Unscripted turns are answered by :func:`fakels.scenario.default_answer` of the prompt the fake got.
Each request carries a unique token; its answer must be the default answer of the one
SendUserCascadeMessage that carried that token.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
import uuid
from typing import Any

import httpx
import openai

from engine.http.gateway import ServedGateway
from fakels.scenario import default_answer
from fakels.server import FakeLSThread
from tests.engine.http.conftest import KEY_A, MODEL, play

TOKEN_RE = re.compile(r"xtalk-[0-9a-f]{32}")


def _new_token() -> str:
    return f"xtalk-{uuid.uuid4().hex}"


def _async_client(served: ServedGateway) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=served.url + "/v1", api_key=KEY_A, max_retries=0, timeout=30)


def _expected_answer(fake: FakeLSThread, token: str) -> str:
    """The default answer of the one accepted Send whose prompt carried ``token``."""
    carried = []
    for request in fake.journal.requests("SendUserCascadeMessage"):
        prompt = "".join(item.get("text", "") for item in request.get("items", []))
        if token in TOKEN_RE.findall(prompt):
            carried.append(default_answer(prompt, len(request.get("images", []))))
    assert len(carried) == 1, f"{len(carried)} Sends carried {token}"
    return carried[0]


async def _stream_answer(client: openai.AsyncOpenAI, token: str, index: int) -> str:
    content = f"Question {index} ({token}): " + "how many apples? " * (1 + index % 4)
    stream = await client.chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": content}], stream=True
    )
    return "".join([chunk.choices[0].delta.content or "" async for chunk in stream if chunk.choices])


async def _wait_for(condition: Any, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")
        await asyncio.sleep(0.01)


def test_concurrent_streams_each_get_the_answer_to_their_own_prompt(fake: FakeLSThread, served: ServedGateway) -> None:
    asyncio.run(_concurrent_streams_each_get_the_answer_to_their_own_prompt(fake, served))


async def _concurrent_streams_each_get_the_answer_to_their_own_prompt(
    fake: FakeLSThread, served: ServedGateway
) -> None:
    tokens = [_new_token() for _ in range(10)]
    async with _async_client(served) as client:
        answers = await asyncio.gather(*(_stream_answer(client, token, i) for i, token in enumerate(tokens)))
    assert len(set(answers)) == len(tokens)
    for token, answer in zip(tokens, answers, strict=True):
        assert answer == _expected_answer(fake, token), f"cross-talk: {token} got another prompt's answer"
    ledger = served.gateway.ledger.document()
    assert (ledger["served"], ledger["cache_served"]) == (10, 0)
    assert len(served.gateway.pool) == 10  # one committed cascade per conversation


def test_a_client_gone_mid_stream_commits_and_caches_nothing(fake: FakeLSThread, served: ServedGateway) -> None:
    asyncio.run(_a_client_gone_mid_stream_commits_and_caches_nothing(fake, served))


async def _a_client_gone_mid_stream_commits_and_caches_nothing(fake: FakeLSThread, served: ServedGateway) -> None:
    # The turn would take 4 s to run out; the disconnect has to stop it well before that.
    play(fake, {"chunks": [{"text": "a"}, {"text": "b", "delay_s": 2.0}, {"text": "c", "delay_s": 2.0}]})
    body = {"model": MODEL, "messages": [{"role": "user", "content": "leave early"}], "stream": True}
    first_content = None
    async with (
        httpx.AsyncClient(timeout=30) as http,
        http.stream(
            "POST", served.url + "/v1/chat/completions", json=body, headers={"Authorization": f"Bearer {KEY_A}"}
        ) as response,
    ):
        assert response.status_code == 200
        async for line in response.aiter_lines():
            if not line.startswith("data: {"):
                continue
            choices = json.loads(line[len("data: ") :])["choices"]
            if choices and choices[0]["delta"].get("content"):
                first_content = choices[0]["delta"]["content"]
                break
    assert first_content == "a"

    ledger = served.gateway.ledger
    await _wait_for(lambda: ledger.document()["row_count"] == 1, 3.0, "the abandoned turn's ledger row")
    document = ledger.document()
    [row] = document["rows"]
    assert (row["success"], row["cache_served"]) == (False, False)
    # The row names the model's credit (the mirror writes it even on a failure); nothing is charged.
    assert (document["served"], document["credits"]) == (0, 0)
    assert len(served.gateway.pool) == 0
    cache = served.gateway.cache.stats()
    assert (cache["entries"], cache["sets"]) == (0, 0)

    # The gateway keeps serving: the next turn (unscripted) streams its own answer and is committed.
    token = _new_token()
    async with _async_client(served) as client:
        answer = await _stream_answer(client, token, 0)
    assert answer == _expected_answer(fake, token)
    assert ledger.document()["rows"][-1]["success"] is True
    assert len(served.gateway.pool) == 1
    assert served.gateway.cache.stats()["entries"] == 1


def test_non_stream_request_through_the_async_client(fake: FakeLSThread, served: ServedGateway) -> None:
    asyncio.run(_non_stream_request_through_the_async_client(fake, served))


async def _non_stream_request_through_the_async_client(fake: FakeLSThread, served: ServedGateway) -> None:
    token = _new_token()
    async with _async_client(served) as client:
        completion = await client.chat.completions.create(
            model=MODEL, messages=[{"role": "user", "content": f"plain question ({token})"}]
        )
    choice = completion.choices[0]
    assert choice.message.content == _expected_answer(fake, token)
    assert choice.finish_reason == "stop"
    assert completion.usage is not None
    assert completion.usage.completion_tokens > 0
