"""A whole reference gateway driven in process (starlette's TestClient, no socket for HTTP) in front of a fake LS
on loopback, with the response store and session log chosen per test: for the exact tests of the Responses
routes and the sessions routes (test_responses_exact*.py, test_sessions_exact.py)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

import httpx2
from starlette.testclient import TestClient

from tests.engine.http.chat_exact_support import KEY_A, KEY_B, MODEL, gateway_client, headers

__all__ = [
    "KEY_A",
    "KEY_B",
    "MODEL",
    "Events",
    "gateway_client",
    "headers",
    "post",
    "response_defaults",
    "sse_events",
    "sse_events_of",
]

RESPONSES = "/v1/responses"
Events = list[tuple[str, dict[str, Any]]]


def post(client: TestClient, body: Mapping[str, Any], *, key: str = KEY_A, **extra: str) -> httpx2.Response:
    return client.post(RESPONSES, content=json.dumps(body).encode(), headers=headers(key, **extra))


def sse_events(response: httpx2.Response) -> Events:
    """(event name, data) of every SSE event of a streamed answer read whole (see :func:`sse_events_of`)."""
    return sse_events_of(response.text.split("\n"))


def sse_events_of(lines: Iterable[str]) -> Events:
    """(event name, data) of every SSE event in ``lines``; each data names its event and is numbered in order
    from 0."""
    events: Events = []
    name = ""
    for line in lines:
        if line.startswith("event: "):
            name = line[len("event: ") :]
        elif line.startswith("data: "):
            data = json.loads(line[len("data: ") :])
            assert data["type"] == name
            events.append((name, data))
    assert [data["sequence_number"] for _, data in events] == list(range(len(events)))
    return events


def response_defaults(**fields: Any) -> dict[str, Any]:
    """A response object's fields, with OpenAI's defaults for every field a request did not give."""
    return {
        "object": "response",
        "error": None,
        "incomplete_details": None,
        "instructions": None,
        "max_output_tokens": None,
        "model": MODEL,
        "parallel_tool_calls": True,
        "previous_response_id": None,
        "reasoning": {"effort": None, "summary": None},
        "temperature": None,
        "text": {"format": {"type": "text"}},
        "tool_choice": "auto",
        "tools": [],
        "top_p": None,
        "truncation": "disabled",
        "usage": None,
        "user": None,
        "metadata": {},
        **fields,
    }


# The events of one output text message in a stream, from its item's added to its item's done.
TEXT_EVENTS = [
    "response.output_item.added",
    "response.content_part.added",
    "response.output_text.delta",
    "response.output_text.done",
    "response.content_part.done",
    "response.output_item.done",
]
