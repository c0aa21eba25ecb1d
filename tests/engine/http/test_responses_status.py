"""TURN-4 on the engine's Responses front: a turn reports one status in its stream, its non-stream body and
a later read; a tool-call turn is completed, a turn cut by the wait cap incomplete, with its reason. And
TURN-2's Responses half: a failed turn is not stored."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from engine.http.gateway import ServedGateway
from fakels.server import FakeLSThread
from tests.engine.http.conftest import KEY_A, MODEL, play, serve

WAIT_S = 0.4
LONG = {"chunks": [{"text": "begun"}, {"text": " never seen", "delay_s": 60}]}
TOOL = {"chunks": [{"text": "Let me look."}, {"tool_call": {"id": "call_0", "name": "lookup", "arguments_json": "{}"}}]}
TOOLS = [{"type": "function", "name": "lookup", "parameters": {"type": "object"}}]
HEADERS = {"Authorization": f"Bearer {KEY_A}"}


@pytest.fixture
def capped(fake: FakeLSThread) -> Iterator[ServedGateway]:
    gateway = serve(fake, max_wait_s=WAIT_S)
    yield gateway
    gateway.stop()


def _post(gateway: ServedGateway, stream: bool, **extra: Any) -> dict[str, Any]:
    """The response object the POST reports: the body, or the stream's one terminal event's response
    (whose event type must say the same status)."""
    body = {"model": MODEL, "input": "a question", "stream": stream, "store": True, **extra}
    if not stream:
        answer = httpx.post(gateway.url + "/v1/responses", json=body, headers=HEADERS, timeout=30)
        assert answer.status_code == 200, answer.text
        response: dict[str, Any] = answer.json()
        return response
    with httpx.stream("POST", gateway.url + "/v1/responses", json=body, headers=HEADERS, timeout=30) as answer:
        events = [json.loads(line[5:]) for line in answer.iter_lines() if line.startswith("data:")]
    terminal = [e for e in events if e["type"] in ("response.completed", "response.incomplete", "response.failed")]
    assert len(terminal) == 1, [e["type"] for e in events]
    assert terminal[0]["type"] == f"response.{terminal[0]['response']['status']}"
    streamed: dict[str, Any] = terminal[0]["response"]
    return streamed


def _read(gateway: ServedGateway, response_id: str) -> dict[str, Any]:
    answer = httpx.get(f"{gateway.url}/v1/responses/{response_id}", headers=HEADERS, timeout=30)
    assert answer.status_code == 200, answer.text
    body: dict[str, Any] = answer.json()
    return body


@pytest.mark.invariant("TURN-4")
@pytest.mark.parametrize("stream", [False, True], ids=["non-stream", "stream"])
def test_a_cut_turn_is_incomplete_everywhere(fake: FakeLSThread, capped: ServedGateway, stream: bool) -> None:
    play(fake, LONG)
    served = _post(capped, stream)
    assert (served["status"], served["incomplete_details"]) == ("incomplete", {"reason": "max_output_tokens"})
    read = _read(capped, served["id"])
    assert (read["status"], read["incomplete_details"]) == ("incomplete", {"reason": "max_output_tokens"})
    assert read["output"][0]["content"][0]["text"] == "begun"


@pytest.mark.invariant("TURN-4")
@pytest.mark.parametrize("stream", [False, True], ids=["non-stream", "stream"])
def test_text_and_tool_call_turns_are_completed_everywhere(
    fake: FakeLSThread, capped: ServedGateway, stream: bool
) -> None:
    play(fake, {"chunks": [{"text": "an answer"}]}, TOOL)
    for extra in ({}, {"tools": TOOLS}):
        served = _post(capped, stream, **extra)
        assert (served["status"], served["incomplete_details"]) == ("completed", None)
        read = _read(capped, served["id"])
        assert (read["status"], read["output"]) == ("completed", served["output"])
    assert served["output"][-1]["type"] == "function_call"


@pytest.mark.invariant("TURN-2")
def test_a_failed_streamed_turn_is_not_stored(fake: FakeLSThread, capped: ServedGateway) -> None:
    play(fake, {"chunks": [{"text": "half an answer"}, {"error": "model stopped"}]})
    body = {"model": MODEL, "input": "a question", "stream": True, "store": True}
    with httpx.stream("POST", capped.url + "/v1/responses", json=body, headers=HEADERS, timeout=30) as answer:
        events = [json.loads(line[5:]) for line in answer.iter_lines() if line.startswith("data:")]
    assert events[-1]["type"] == "response.failed"
    read = httpx.get(f"{capped.url}/v1/responses/{events[0]['response']['id']}", headers=HEADERS, timeout=30)
    assert read.status_code == 404, read.text
