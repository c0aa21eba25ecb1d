"""A whole reference gateway driven in process (starlette's TestClient, no socket for HTTP) in front of a fake LS
on loopback, with the response store and session log chosen per test: for the exact tests of the Responses
routes and the sessions routes (test_responses_exact*.py, test_sessions_exact.py)."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import httpx2
from starlette.testclient import TestClient

from engine.http.app import HttpSettings
from engine.http.gateway import Gateway, GatewayConfig
from engine.polling import PollSettings
from engine.response_store import StoreLimits
from fakels.server import FakeLSThread
from tests.engine.http.chat_exact_support import CSRF, KEY_A, KEY_B, MODEL, headers

__all__ = ["KEY_A", "KEY_B", "MODEL", "Events", "gateway_client", "headers", "post", "response_defaults", "sse_events"]

RESPONSES = "/v1/responses"
Events = list[tuple[str, dict[str, Any]]]


@contextmanager
def gateway_client(
    fake: FakeLSThread,
    *,
    store: str = "memory",
    store_limits: StoreLimits | None = None,
    session_log: str | None = None,
    **settings: Any,
) -> Iterator[tuple[Gateway, TestClient]]:
    """A gateway on ``fake`` (KEY_A → caller-a, KEY_B → caller-b) and a client for its app."""
    config = GatewayConfig(
        ls_address=fake.address,
        csrf_token=CSRF,
        http=HttpSettings(api_keys={KEY_A: "caller-a", KEY_B: "caller-b"}, **settings),
        poll=PollSettings(poll_interval_s=0.002),
        store=store,
        store_limits=store_limits or StoreLimits(),
        session_log=session_log,
    )
    gateway = Gateway(config)
    try:
        with TestClient(gateway.app, base_url="http://127.0.0.1") as client:
            yield gateway, client
    finally:
        gateway.close()


def post(client: TestClient, body: Mapping[str, Any], *, key: str = KEY_A, **extra: str) -> httpx2.Response:
    return client.post(RESPONSES, content=json.dumps(body).encode(), headers=headers(key, **extra))


def sse_events(response: httpx2.Response) -> Events:
    """(event name, data) of every SSE event of a streamed answer; each data names its event and is numbered
    in order from 0."""
    events: Events = []
    name = ""
    for line in response.text.split("\n"):
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
