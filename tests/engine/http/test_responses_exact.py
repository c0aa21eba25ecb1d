"""POST /v1/responses through the whole gateway in process: the exact response object (streamed and not), what
the upstream is sent (instructions first, chained items), what the store keeps, store refusals and failures told
to the client, and the request refusals that come before any turn."""

from __future__ import annotations

import asyncio
import json
import logging
import re
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from engine.store import StoreLimits
from fakels.server import FakeLSThread
from tests.engine.http.chat_exact_support import CSRF, play, sends, sent_text
from tests.engine.http.responses_exact_support import (
    KEY_A,
    KEY_B,
    MODEL,
    TEXT_EVENTS,
    gateway_client,
    headers,
    post,
    response_defaults,
    sse_events,
)
from tests.support.fake_ls import StartFakeLs

USAGE = {"input_tokens": 11, "output_tokens": 4, "cache_read_tokens": 3}
RESPONSES_USAGE = {
    "input_tokens": 14,
    "input_tokens_details": {"cached_tokens": 3},
    "output_tokens": 4,
    "output_tokens_details": {"reasoning_tokens": 0},
    "total_tokens": 18,
}
HINT = (
    "Stored responses are retained for a limited time and only for the caller that created them; a response "
    "created with store:false is never stored."
)


@pytest.fixture
def fake(start_fake_ls: StartFakeLs) -> FakeLSThread:
    return start_fake_ls(csrf_token=CSRF)


def _message(item_id: str, text: str) -> dict[str, Any]:
    content = [{"type": "output_text", "text": text, "annotations": []}]
    return {"type": "message", "id": item_id, "status": "completed", "role": "assistant", "content": content}


def _not_found(response_id: str, param: str) -> dict[str, Any]:
    message = f"Response with id '{response_id}' not found. {HINT}"
    return {
        "error": {"message": message, "type": "invalid_request_error", "param": param, "code": "response_not_found"}
    }


# ------------------------------------------------------------------------------------- non-streamed


def test_a_completed_turn_answers_the_whole_response_object_and_stores_input_and_answer(fake: FakeLSThread) -> None:
    play(fake, {"chunks": [{"thinking": "plan"}, {"text": "Hel"}, {"text": "lo"}], "records": [USAGE]})
    with gateway_client(fake) as (_, client):
        before = int(time.time())
        response = post(client, {"model": MODEL, "input": "QUESTION", "instructions": "RULES", "temperature": 0.5})
        after = int(time.time())
        assert response.status_code == 200
        assert response.headers["content-type"] == "application/json"
        body = response.json()
        reasoning, message = body["output"]
        assert re.fullmatch(r"resp_[0-9a-f]{32}", body["id"])
        assert before <= body["created_at"] <= after
        assert reasoning == {
            "type": "reasoning",
            "id": reasoning["id"],
            "summary": [{"type": "summary_text", "text": "plan"}],
        }
        assert body == response_defaults(
            id=body["id"],
            created_at=body["created_at"],
            status="completed",
            instructions="RULES",
            temperature=0.5,
            output=[reasoning, _message(message["id"], "Hello")],
            store=True,
            usage=RESPONSES_USAGE,
        )
        # the instructions lead the prompt for this turn only
        assert sent_text(sends(fake)[0]).startswith("RULES\n")
        items = client.get(f"/v1/responses/{body['id']}/input_items", headers=headers()).json()["data"]
        assert [item["type"] for item in items] == ["message", "message"]
        assert items[0]["content"] == [{"type": "input_text", "text": "QUESTION"}]
        assert items[1] == _message(message["id"], "Hello")


def test_a_chained_turn_sends_the_stored_items_first_and_stores_them_again(fake: FakeLSThread) -> None:
    play(fake, {"chunks": [{"text": "FIRST-ANSWER"}]}, {"chunks": [{"text": "SECOND-ANSWER"}]})
    with gateway_client(fake) as (_, client):
        first = post(client, {"model": MODEL, "input": "FIRST-QUESTION", "instructions": "ONCE"}).json()
        second = post(client, {"model": MODEL, "input": "SECOND-QUESTION", "previous_response_id": first["id"]})
        assert second.status_code == 200
        assert second.json()["previous_response_id"] == first["id"]
        prompt = sent_text(sends(fake)[1])
        assert "ONCE" not in prompt  # instructions are never stored
        assert prompt.index("FIRST-QUESTION") < prompt.index("FIRST-ANSWER") < prompt.index("SECOND-QUESTION")
        data = client.get(f"/v1/responses/{second.json()['id']}/input_items", headers=headers()).json()["data"]
        texts = [item["content"][0]["text"] for item in data]
        assert texts == ["FIRST-QUESTION", "FIRST-ANSWER", "SECOND-QUESTION", "SECOND-ANSWER"]


def test_chaining_to_an_unknown_or_foreign_response_is_a_404_naming_previous_response_id(fake: FakeLSThread) -> None:
    play(fake, {"chunks": [{"text": "a"}]})
    with gateway_client(fake) as (_, client):
        mine = post(client, {"model": MODEL, "input": "q"}).json()["id"]
        for key, wanted in ((KEY_B, mine), (KEY_A, "resp_nope")):
            response = post(client, {"model": MODEL, "input": "x", "previous_response_id": wanted}, key=key)
            assert (response.status_code, response.json()) == (404, _not_found(wanted, "previous_response_id"))
        assert len(sends(fake)) == 1


def test_store_false_answers_store_false_and_keeps_nothing(fake: FakeLSThread) -> None:
    play(fake, {"chunks": [{"text": "a"}]})
    with gateway_client(fake) as (gateway, client):
        body = post(client, {"model": MODEL, "input": "q", "store": False}).json()
        assert body["store"] is False
        got = client.get(f"/v1/responses/{body['id']}", headers=headers())
        assert (got.status_code, got.json()) == (404, _not_found(body["id"], "response_id"))
        assert gateway.store is not None
        assert gateway.store.stats()["size"] == 0


def test_with_the_store_off_a_turn_answers_store_false_and_chaining_is_a_400(fake: FakeLSThread) -> None:
    play(fake, {"chunks": [{"text": "a"}]})
    with gateway_client(fake, store="off") as (_, client):
        body = post(client, {"model": MODEL, "input": "q"}).json()
        assert (body["status"], body["store"], "store_error" in body) == ("completed", False, False)
        chained = post(client, {"model": MODEL, "input": "q", "previous_response_id": body["id"]})
        message = "previous_response_id needs the response store, which is disabled on this gateway (--store off)"
        error = {"message": message, "type": "invalid_request_error", "param": "previous_response_id", "code": None}
        assert (chained.status_code, chained.json()) == (400, {"error": error})


def test_a_refused_write_is_told_to_the_client_and_logged(fake: FakeLSThread, caplog: pytest.LogCaptureFixture) -> None:
    """A 150-unit answer over a 200-byte entry budget cannot shrink: the store refuses the write."""
    play(fake, {"chunks": [{"text": "d" * 150}]}, {"chunks": [{"text": "d" * 150}]})
    with gateway_client(fake, store_limits=StoreLimits(entry_bytes=200)) as (_, client):
        with caplog.at_level(logging.WARNING, logger="engine.http"):
            body = post(client, {"model": MODEL, "input": "x"}).json()
        assert body["output"][0]["content"][0]["text"] == "d" * 150
        assert body["store"] is False
        reason = (
            "the largest shrinkable string (message 0, at ['content', 1, 'text']) cannot shrink: "
            "its 150-unit value would become 158 units"
        )
        assert body["store_error"] == {
            "code": "store_refused",
            "message": f"the response store refused this turn ({reason}); GET /v1/responses/{body['id']} "
            "and previous_response_id will answer 404",
        }
        assert f"Responses: store refused {body['id']} — client holds an id that will 404 ({reason})" in caplog.text
        streamed = sse_events(post(client, {"model": MODEL, "input": "x", "stream": True}))
        done = streamed[-1][1]["response"]
        assert (streamed[-1][0], done["store"], done["store_error"]["code"]) == (
            "response.completed",
            False,
            "store_refused",
        )


def test_a_store_that_fails_on_write_is_told_as_the_exception_and_logged(
    fake: FakeLSThread, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    play(fake, {"chunks": [{"text": "a"}]})
    with gateway_client(fake, store=f"sqlite:{tmp_path / 'r.db'}") as (gateway, client):
        assert gateway.store is not None
        gateway.store.close()
        with caplog.at_level(logging.WARNING, logger="engine.http"):
            body = post(client, {"model": MODEL, "input": "q"}).json()
        reason = f"ProgrammingError: response store {tmp_path / 'r.db'} is closed"
        assert body["store"] is False
        assert body["store_error"]["message"] == (
            f"the response store refused this turn ({reason}); "
            f"GET /v1/responses/{body['id']} and previous_response_id will answer 404"
        )
        logged = [(r.levelname, r.getMessage()) for r in caplog.records if r.name == "engine.http"]
        assert logged == [
            ("ERROR", f"Responses: storing {body['id']} failed"),
            ("WARNING", f"Responses: store refused {body['id']} — client holds an id that will 404 ({reason})"),
        ]


def test_an_upstream_failure_is_the_error_status_and_nothing_is_stored(fake: FakeLSThread) -> None:
    play(fake, {"fault": {"kind": "error", "message": "boom"}})
    with gateway_client(fake) as (gateway, client):
        response = post(client, {"model": MODEL, "input": "q"})
        message = "The language server failed this turn: SendUserCascadeMessage failed: boom"
        error = {"message": message, "type": "api_error", "param": None, "code": "upstream_error"}
        assert (response.status_code, response.json()) == (502, {"error": error})
        assert gateway.store is not None
        assert gateway.store.stats()["size"] == 0


def test_a_session_id_header_reaches_the_turn(fake: FakeLSThread) -> None:
    play(fake, {"chunks": [{"text": "ok"}]})
    items = [
        {"role": "user", "content": "look"},
        {"type": "function_call", "call_id": "call_s", "name": "ViewImage", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "call_s", "output": "seen"},
    ]
    with gateway_client(fake) as (_, client):
        assert client.get("/v1/sessions/s-1", headers=headers()).status_code == 404
        assert post(client, {"model": MODEL, "input": items}, **{"X-Session-Id": "s-1"}).status_code == 200
        assert client.get("/v1/sessions/s-1", headers=headers()).status_code == 200


@pytest.mark.parametrize(
    ("extra", "content", "status", "error"),
    [
        (
            {"Origin": "http://evil.example"},
            b"{}",
            403,
            {
                "message": "requests carrying an Origin header (a web page) are refused",
                "type": "invalid_request_error",
                "param": None,
                "code": "cross_origin",
            },
        ),
        (
            {"Content-Type": "text/plain"},
            b"{}",
            415,
            {
                "message": "the body must be application/json, not text/plain",
                "type": "invalid_request_error",
                "param": None,
                "code": "unsupported_media_type",
            },
        ),
        (
            {},
            b'{"model": "claude-sonnet-4-6"}',
            400,
            {
                "message": "'input' is required: a string or an array of input items",
                "type": "invalid_request_error",
                "param": "input",
                "code": None,
            },
        ),
    ],
)
def test_refusals_come_before_any_turn(
    fake: FakeLSThread, extra: dict[str, str], content: bytes, status: int, error: dict[str, Any]
) -> None:
    with gateway_client(fake) as (_, client):
        response = client.post("/v1/responses", content=content, headers=headers(**extra))
        assert (response.status_code, response.json()) == (status, {"error": error})
        assert sends(fake) == []


# ------------------------------------------------------------------------------------------ streamed


def test_a_streamed_turn_is_the_golden_event_sequence_and_is_stored_before_completion(fake: FakeLSThread) -> None:
    play(fake, {"chunks": [{"text": "Hi"}], "records": [USAGE]})
    with gateway_client(fake) as (_, client):
        response = post(client, {"model": MODEL, "input": "q", "stream": True, "instructions": "I"})
        assert response.headers["content-type"].startswith("text/event-stream")
        assert (response.headers["cache-control"], response.headers["x-accel-buffering"]) == ("no-cache", "no")
        events = sse_events(response)
        assert [name for name, _ in events] == [
            "response.created",
            "response.in_progress",
            *TEXT_EVENTS,
            "response.completed",
        ]
        created = events[0][1]["response"]
        started = response_defaults(id=created["id"], created_at=created["created_at"], status="in_progress", output=[])
        assert created == {**started, "instructions": "I", "store": True}
        assert events[1][1]["response"] == created
        done = events[-1][1]["response"]
        message = events[-2][1]["item"]
        assert done == {
            **created,
            "status": "completed",
            "output": [_message(message["id"], "Hi")],
            "usage": RESPONSES_USAGE,
        }
        got = client.get(f"/v1/responses/{created['id']}", headers=headers()).json()
        assert got["output"] == [_message(message["id"], "Hi")]


def test_a_streamed_turn_without_persistence_says_store_false_from_the_start(fake: FakeLSThread) -> None:
    play(fake, {"chunks": [{"text": "Hi"}]})
    with gateway_client(fake) as (_, client):
        events = sse_events(post(client, {"model": MODEL, "input": "q", "stream": True, "store": False}))
        assert (events[0][1]["response"]["store"], events[-1][1]["response"]["store"]) == (False, False)
        assert "store_error" not in events[-1][1]["response"]


def test_a_failed_streamed_turn_ends_with_error_and_response_failed_and_is_not_stored(fake: FakeLSThread) -> None:
    play(fake, {"chunks": [{"text": "partial"}, {"error": "exploded"}]})
    with gateway_client(fake) as (gateway, client):
        events = sse_events(post(client, {"model": MODEL, "input": "q", "stream": True}))
        assert [name for name, _ in events][2:] == [
            "response.output_item.added",
            "response.content_part.added",
            "response.output_text.delta",
            "error",
            "response.failed",
        ]
        message = "The language server failed this turn: exploded"
        assert events[5][1] == {
            "type": "error",
            "sequence_number": 5,
            "code": "upstream_error",
            "message": message,
            "param": None,
        }
        created, partial = events[0][1]["response"], events[2][1]["item"]
        assert events[6][1]["response"] == {
            **created,
            "status": "failed",
            "error": {"code": "upstream_error", "message": message},
            "output": [partial],
            "store": False,
        }
        assert gateway.store is not None
        assert gateway.store.stats()["size"] == 0


def test_heartbeats_bridge_a_silent_upstream(fake: FakeLSThread) -> None:
    play(fake, {"chunks": [{"text": "a"}, {"text": "b", "delay_s": 0.15}]})
    with gateway_client(fake, heartbeat_s=0.02) as (_, client):
        response = post(client, {"model": MODEL, "input": "q", "stream": True})
        assert response.text.count(": ping\n\n") >= 2
        assert sse_events(response)[-1][0] == "response.completed"


@pytest.mark.parametrize("slow_streamed", [False, True])
def test_a_turn_waits_for_the_turn_limiter_streamed_or_not(fake: FakeLSThread, slow_streamed: bool) -> None:
    """One turn at a time: the second request, sent while the first (slow) turn runs, finishes after it."""
    play(fake, {"chunks": [{"text": "slow", "delay_s": 0.25}]}, {"chunks": [{"text": "quick"}]})
    with gateway_client(fake, max_concurrent_turns=1) as (gateway, _):

        async def both() -> list[str]:
            finished: list[str] = []
            transport = httpx.ASGITransport(app=gateway.app)
            async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:

                async def one(name: str, stream: bool, delay_s: float) -> None:
                    await asyncio.sleep(delay_s)
                    body = {"model": MODEL, "input": name, "stream": stream}
                    response = await client.post("/v1/responses", json=body, headers=headers())
                    assert response.status_code == 200
                    finished.append(name)

                await asyncio.gather(one("first", slow_streamed, 0), one("second", not slow_streamed, 0.08))
            return finished

        assert asyncio.run(both()) == ["first", "second"]


def test_instructions_lead_even_a_developer_message_and_tool_choice_and_format_reach_the_prompt(
    fake: FakeLSThread,
) -> None:
    play(fake, {"chunks": [{"text": "ok"}]}, {"chunks": [{"text": "not json"}]})
    tools = [{"type": "function", "name": "lookup", "parameters": {"type": "object"}}]
    items = [{"role": "developer", "content": "DEV-RULE"}, {"role": "user", "content": "Q"}]
    with gateway_client(fake) as (_, client):
        body = {"model": MODEL, "input": items, "instructions": "RULES", "tools": tools, "tool_choice": "required"}
        assert post(client, body).status_code == 200
        prompt = sent_text(sends(fake)[0])
        assert prompt.index("RULES") < prompt.index("DEV-RULE")
        assert "In this reply you must call at least one function." in json.dumps(sends(fake)[0].request)
        schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
        fmt = {"format": {"type": "json_schema", "name": "n", "schema": schema}}
        refused = post(client, {"model": MODEL, "input": "n?", "text": fmt})
        assert (refused.status_code, refused.json()["error"]["code"]) == (502, "STRUCTURED_OUTPUT_NOT_CONFORMING")
        prompt = sent_text(sends(fake)[1])
        assert "Respond with valid JSON only." in prompt
        assert "Conform to this JSON Schema" in prompt
