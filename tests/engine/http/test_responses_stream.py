"""POST /v1/responses with stream: true: the SSE event sequence, the official client's stream
helpers, failures, heartbeats, and a client that goes away (nothing is stored)."""

from __future__ import annotations

import json
import time
from typing import Any

import httpx
import openai
import pytest

from engine.http.gateway import ServedGateway
from fakels.server import FakeLSThread
from tests.engine.http.conftest import KEY_A, MODEL, play, serve
from tests.engine.http.responses_exact_support import TEXT_EVENTS, sse_events_of

USAGE = {"input_tokens": 11, "output_tokens": 4}
TOOLS: list[Any] = [{"type": "function", "name": "lookup", "parameters": {"type": "object"}}]

CALL_EVENTS = [
    "response.output_item.added",
    "response.function_call_arguments.delta",
    "response.function_call_arguments.done",
    "response.output_item.done",
]


def _events(served: ServedGateway, body: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(event name, data) of every SSE event; checks each data names its event and is numbered in order."""
    with httpx.stream(
        "POST",
        served.url + "/v1/responses",
        json={**body, "stream": True},
        headers={"Authorization": f"Bearer {KEY_A}"},
        timeout=30,
    ) as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        return sse_events_of(response.iter_lines())


def _names(events: list[tuple[str, dict[str, Any]]]) -> list[str]:
    """The event names, a run of text deltas counted once (how text is split is the upstream's business)."""
    names: list[str] = []
    for name, _ in events:
        if not (name == "response.output_text.delta" and names and names[-1] == name):
            names.append(name)
    return names


def test_a_text_answer_streams_the_standard_sequence(fake: FakeLSThread, served: ServedGateway) -> None:
    play(fake, {"chunks": [{"text": "Hel"}, {"text": "lo"}], "records": [USAGE]})
    events = _events(served, {"model": MODEL, "input": "hi"})
    assert _names(events) == ["response.created", "response.in_progress", *TEXT_EVENTS, "response.completed"]
    created = events[0][1]["response"]
    assert (created["status"], created["output"], created["store"]) == ("in_progress", [], True)
    assert "".join(d["delta"] for n, d in events if n == "response.output_text.delta") == "Hello"
    done = events[-1][1]["response"]
    assert done["id"] == created["id"]
    assert done["status"] == "completed"
    assert done["output"][0]["content"][0]["text"] == "Hello"
    assert done["usage"]["output_tokens"] == 4


def test_reasoning_text_and_a_tool_call_stream_as_three_items(fake: FakeLSThread, served: ServedGateway) -> None:
    call = {"id": "call_1", "name": "lookup", "arguments_json": '{"q": "peru"}'}
    play(fake, {"chunks": [{"thinking": "plan"}, {"text": "Hel"}, {"text": "lo"}, {"tool_call": call}]})
    events = _events(served, {"model": MODEL, "input": "hi", "tools": TOOLS})
    reasoning = ["response.output_item.added", "response.output_item.done"]
    expected = ["response.created", "response.in_progress", *reasoning, *TEXT_EVENTS, *CALL_EVENTS]
    assert _names(events) == [*expected, "response.completed"]
    output = events[-1][1]["response"]["output"]
    assert [item["type"] for item in output] == ["reasoning", "message", "function_call"]
    assert output[0]["summary"] == [{"type": "summary_text", "text": "plan"}]
    assert (output[2]["call_id"], output[2]["arguments"]) == ("call_1", '{"q": "peru"}')
    arguments_done = next(d for n, d in events if n == "response.function_call_arguments.done")
    assert (arguments_done["output_index"], arguments_done["arguments"]) == (2, '{"q": "peru"}')


def test_the_openai_stream_helper_reads_the_answer_and_the_store_keeps_it(
    fake: FakeLSThread, client: openai.OpenAI
) -> None:
    call = {"id": "call_2", "name": "lookup", "arguments_json": "{}"}
    play(fake, {"chunks": [{"text": "streamed "}, {"text": "text"}, {"tool_call": call}], "records": [USAGE]})
    with client.responses.stream(model=MODEL, input="s", tools=TOOLS) as stream:
        deltas = [event.delta for event in stream if event.type == "response.output_text.delta"]
        final = stream.get_final_response()
    assert "".join(deltas) == "streamed text"
    assert final.output_text == "streamed text"
    assert [item.type for item in final.output] == ["message", "function_call"]
    stored = client.responses.retrieve(final.id)
    assert stored.output_text == final.output_text
    assert [(i.type, getattr(i, "id", None), getattr(i, "arguments", None)) for i in stored.output] == [
        (i.type, getattr(i, "id", None), getattr(i, "arguments", None)) for i in final.output
    ]
    events = list(client.responses.create(model=MODEL, input="raw", stream=True))
    assert events[0].type == "response.created"
    assert events[-1].type == "response.completed"


def test_a_failed_turn_ends_with_an_error_and_response_failed_and_is_not_stored(
    fake: FakeLSThread, served: ServedGateway
) -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    play(fake, {"chunks": [{"text": "not json"}]})
    body = {"model": MODEL, "input": "n?", "text": {"format": {"type": "json_schema", "name": "n", "schema": schema}}}
    events = _events(served, body)
    names = [name for name, _ in events]
    assert names == ["response.created", "response.in_progress", "error", "response.failed"]
    assert events[2][1]["code"] == "STRUCTURED_OUTPUT_NOT_CONFORMING"
    failed = events[3][1]["response"]
    assert failed["status"] == "failed"
    assert failed["error"]["code"] == "STRUCTURED_OUTPUT_NOT_CONFORMING"
    got = httpx.get(served.url + f"/v1/responses/{failed['id']}", headers={"Authorization": f"Bearer {KEY_A}"})
    assert got.status_code == 404


def test_an_upstream_failure_is_a_failed_response(fake: FakeLSThread, client: openai.OpenAI) -> None:
    play(fake, {"fault": {"kind": "error", "message": "boom"}})
    with client.responses.stream(model=MODEL, input="x") as stream:
        kinds = [event.type for event in stream]
    assert kinds[-2:] == ["error", "response.failed"]


def test_heartbeats_bridge_a_silent_upstream(fake: FakeLSThread) -> None:
    play(fake, {"chunks": [{"text": "a"}, {"text": "b", "delay_s": 0.5}]})
    served = serve(fake, heartbeat_s=0.1)
    try:
        with httpx.stream(
            "POST",
            served.url + "/v1/responses",
            json={"model": MODEL, "input": "wait", "stream": True},
            headers={"Authorization": f"Bearer {KEY_A}"},
            timeout=30,
        ) as response:
            lines = [line for line in response.iter_lines() if line]
        assert lines.count(": ping") >= 2
        client = openai.OpenAI(base_url=served.url + "/v1", api_key=KEY_A, max_retries=0, timeout=30)
        play(fake, {"chunks": [{"text": "a"}, {"text": "b", "delay_s": 0.3}]})
        with client.responses.stream(model=MODEL, input="wait again") as stream:
            assert stream.get_final_response().output_text == "ab"
    finally:
        served.stop()


def test_a_client_that_goes_away_leaves_nothing_stored(fake: FakeLSThread, served: ServedGateway) -> None:
    play(fake, {"chunks": [{"text": "a"}, {"text": "never seen", "delay_s": 0.6}]})
    with httpx.stream(
        "POST",
        served.url + "/v1/responses",
        json={"model": MODEL, "input": "leave", "stream": True},
        headers={"Authorization": f"Bearer {KEY_A}"},
        timeout=30,
    ) as response:
        lines = response.iter_lines()
        response_id = None
        for line in lines:
            if line.startswith("data: "):
                data = json.loads(line[len("data: ") :])
                response_id = response_id or data["response"]["id"]
                if data["type"] == "response.output_text.delta":
                    break
    deadline = time.monotonic() + 10
    while served.gateway.ledger.document()["rows"] == [] and time.monotonic() < deadline:
        time.sleep(0.02)  # the aborted turn is recorded once its thread ends
    rows = served.gateway.ledger.document()["rows"]
    assert [row["success"] for row in rows] == [False]
    got = httpx.get(served.url + f"/v1/responses/{response_id}", headers={"Authorization": f"Bearer {KEY_A}"})
    assert got.status_code == 404
    assert httpx.get(served.url + "/metrics.json").json()["response_store"]["stored"] == 0


@pytest.mark.parametrize("stream", [True, False])
def test_parse_errors_come_before_any_stream(fake: FakeLSThread, served: ServedGateway, stream: bool) -> None:
    response = httpx.post(
        served.url + "/v1/responses",
        json={"model": MODEL, "input": "x", "stream": stream, "previous_response_id": "resp_unknown"},
        headers={"Authorization": f"Bearer {KEY_A}"},
    )
    assert response.status_code == 404
    assert response.headers["content-type"].startswith("application/json")
