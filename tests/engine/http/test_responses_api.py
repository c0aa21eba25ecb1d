"""POST /v1/responses (non-streamed), chaining, GET/DELETE by id and input_items, through the official
openai client against a served gateway and a fake LS."""

from __future__ import annotations

import json
import logging
from typing import Any

import httpx
import openai
import pytest

from engine.http.gateway import ServedGateway
from engine.store import StoreLimits
from fakels.server import FakeLSThread
from tests.engine.http.conftest import KEY_A, KEY_B, MODEL, play, sends, serve, serve_without_keys

USAGE = {"input_tokens": 11, "output_tokens": 4, "cache_read_tokens": 3}
TOOLS: list[Any] = [{"type": "function", "name": "lookup", "parameters": {"type": "object"}}]


def _prompt(fake: FakeLSThread, index: int) -> str:
    return str(sends(fake)[index].request["items"][0]["text"])


def _other(served: ServedGateway, key: str = KEY_B) -> openai.OpenAI:
    return openai.OpenAI(base_url=served.url + "/v1", api_key=key, max_retries=0, timeout=30)


def _post(served: ServedGateway, body: object, key: str = KEY_A, **headers: str) -> httpx.Response:
    return httpx.post(
        served.url + "/v1/responses",
        content=body if isinstance(body, bytes) else json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json", **headers},
        timeout=30,
    )


def _not_found(caught: pytest.ExceptionInfo[openai.NotFoundError], param: str) -> None:
    error = caught.value.body
    assert isinstance(error, dict)
    assert (error["type"], error["code"], error["param"]) == ("invalid_request_error", "response_not_found", param)


def test_round_trip_reads_back_the_answer_and_the_items(
    fake: FakeLSThread, served: ServedGateway, client: openai.OpenAI
) -> None:
    play(fake, {"chunks": [{"thinking": "plan"}, {"text": "Hello "}, {"text": "world"}], "records": [USAGE]})
    answer = client.responses.create(model=MODEL, input="hi")
    assert (answer.object, answer.status, answer.model) == ("response", "completed", MODEL)
    assert (answer.model_extra or {})["store"] is True  # not a field of the client's model
    assert answer.output_text == "Hello world"
    assert [item.type for item in answer.output] == ["reasoning", "message"]
    assert answer.usage is not None
    assert (answer.usage.input_tokens, answer.usage.output_tokens, answer.usage.total_tokens) == (14, 4, 18)
    assert answer.usage.input_tokens_details.cached_tokens == 3

    again = client.responses.retrieve(answer.id)
    assert again.id == answer.id
    assert again.output_text == "Hello world"
    assert [item.model_dump() for item in again.output] == [answer.output[1].model_dump()]  # reasoning is not kept

    items = client.responses.input_items.list(answer.id)
    assert [(item.type, getattr(item, "role", None)) for item in items.data] == [
        ("message", "user"),
        ("message", "assistant"),
    ]
    raw = httpx.get(
        served.url + f"/v1/responses/{answer.id}/input_items", headers={"Authorization": f"Bearer {KEY_A}"}
    ).json()
    assert raw["object"] == "list"
    assert raw["has_more"] is False
    assert raw["data"][0]["content"] == [{"type": "input_text", "text": "hi"}]
    assert (raw["first_id"], raw["last_id"]) == (raw["data"][0]["id"], raw["data"][-1]["id"])
    desc = httpx.get(
        served.url + f"/v1/responses/{answer.id}/input_items?order=desc", headers={"Authorization": f"Bearer {KEY_A}"}
    ).json()
    assert desc["data"] == raw["data"][::-1]


def test_chaining_replays_the_stored_turns_and_never_the_instructions(
    fake: FakeLSThread, client: openai.OpenAI
) -> None:
    play(fake, {"chunks": [{"text": "first answer"}]}, {"chunks": [{"text": "second answer"}]})
    first = client.responses.create(model=MODEL, input="first question", instructions="ALWAYS-TERSE-7731")
    assert first.instructions == "ALWAYS-TERSE-7731"
    assert "ALWAYS-TERSE-7731" in _prompt(fake, 0)
    kept = json.dumps([item.model_dump() for item in client.responses.input_items.list(first.id).data])
    assert "ALWAYS-TERSE-7731" not in kept

    second = client.responses.create(model=MODEL, input="second question", previous_response_id=first.id)
    assert second.output_text == "second answer"
    assert second.previous_response_id == first.id
    prompt = _prompt(fake, 1)
    for text in ("first question", "first answer", "second question"):
        assert text in prompt
    assert "ALWAYS-TERSE-7731" not in prompt
    chained = client.responses.input_items.list(second.id).data
    texts = [item.content[0].text for item in chained if item.type == "message"]  # type: ignore[union-attr]
    assert texts == ["first question", "first answer", "second question", "second answer"]


def test_tool_calls_come_back_as_function_call_items_and_their_output_chains(
    fake: FakeLSThread, client: openai.OpenAI
) -> None:
    call = {"id": "call_1", "name": "lookup", "arguments_json": '{"q": "peru"}'}
    play(fake, {"chunks": [{"text": "Checking."}, {"tool_call": call}]}, {"chunks": [{"text": "Lima."}]})
    first = client.responses.create(model=MODEL, input="capital of Peru?", tools=TOOLS)
    kinds = [item.type for item in first.output]
    assert kinds == ["message", "function_call"]
    function_call = first.output[1]
    assert function_call.type == "function_call"
    assert (function_call.call_id, function_call.name, function_call.arguments) == ("call_1", "lookup", '{"q": "peru"}')

    second = client.responses.create(
        model=MODEL,
        previous_response_id=first.id,
        input=[{"type": "function_call_output", "call_id": "call_1", "output": "LIMA-RESULT-42"}],
        tools=TOOLS,
    )
    assert second.output_text == "Lima."
    prompt = _prompt(fake, 1)
    assert '<tool_result tool_call_id="call_1">' in prompt
    assert "LIMA-RESULT-42" in prompt
    retrieved = client.responses.retrieve(first.id)
    assert [item.type for item in retrieved.output] == ["message", "function_call"]


def test_a_replayed_function_call_is_not_stored_twice(fake: FakeLSThread, client: openai.OpenAI) -> None:
    """mergeChainedMessages: the client sends the previous output back with the id; calls dedupe by call_id."""
    call = {"id": "call_7", "name": "lookup", "arguments_json": "{}"}
    play(fake, {"chunks": [{"tool_call": call}]}, {"chunks": [{"text": "done"}]})
    first = client.responses.create(model=MODEL, input="go", tools=TOOLS)
    echoed = [item.model_dump(exclude_none=True) for item in first.output]
    output = {"type": "function_call_output", "call_id": "call_7", "output": "ok"}
    second = client.responses.create(
        model=MODEL,
        previous_response_id=first.id,
        input=[*echoed, output],  # type: ignore[list-item]
        tools=TOOLS,
    )
    items = client.responses.input_items.list(second.id).data
    assert [item.type for item in items].count("function_call") == 1


@pytest.mark.invariant("STORE-8")
def test_a_foreign_caller_gets_not_found_everywhere_and_the_owner_still_reads(
    fake: FakeLSThread, served: ServedGateway, client: openai.OpenAI
) -> None:
    play(fake, {"chunks": [{"text": "mine"}]})
    mine = client.responses.create(model=MODEL, input="secret")
    other = _other(served)
    with pytest.raises(openai.NotFoundError) as caught:
        other.responses.retrieve(mine.id)
    _not_found(caught, "response_id")
    with pytest.raises(openai.NotFoundError) as caught:
        other.responses.delete(mine.id)
    _not_found(caught, "response_id")
    with pytest.raises(openai.NotFoundError) as caught:
        other.responses.input_items.list(mine.id)
    _not_found(caught, "response_id")
    with pytest.raises(openai.NotFoundError) as caught:
        other.responses.create(model=MODEL, input="steal", previous_response_id=mine.id)
    _not_found(caught, "previous_response_id")
    assert len(sends(fake)) == 1
    assert client.responses.retrieve(mine.id).output_text == "mine"


def test_delete_then_everything_is_not_found(fake: FakeLSThread, served: ServedGateway, client: openai.OpenAI) -> None:
    play(fake, {"chunks": [{"text": "short-lived"}]})
    answer = client.responses.create(model=MODEL, input="x")
    response = httpx.delete(served.url + f"/v1/responses/{answer.id}", headers={"Authorization": f"Bearer {KEY_A}"})
    assert response.json() == {"id": answer.id, "object": "response", "deleted": True}
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve(answer.id)
    with pytest.raises(openai.NotFoundError):
        client.responses.delete(answer.id)


def test_store_false_is_not_kept(fake: FakeLSThread, client: openai.OpenAI) -> None:
    play(fake, {"chunks": [{"text": "ephemeral"}]})
    answer = client.responses.create(model=MODEL, input="x", store=False)
    assert answer.output_text == "ephemeral"
    assert (answer.model_extra or {})["store"] is False
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve(answer.id)


def test_a_store_refusal_is_logged_and_told_to_the_client_with_its_answer(
    fake: FakeLSThread, caplog: pytest.LogCaptureFixture
) -> None:
    """A 150-unit answer over a 200-byte entry budget: halving it cannot shrink it (75 kept plus the
    83-unit marker), so the store rejects the write; the client still gets the answer, told why its
    id will not be found."""
    served = serve(fake, store_limits=StoreLimits(entry_bytes=200))
    try:
        client = openai.OpenAI(base_url=served.url + "/v1", api_key=KEY_A, max_retries=0, timeout=30)
        play(fake, {"chunks": [{"text": "d" * 150}]})
        with caplog.at_level(logging.WARNING, logger="engine.http"):
            answer = client.responses.create(model=MODEL, input="x")
        assert answer.output_text == "d" * 150
        extra = answer.model_extra or {}
        assert extra["store"] is False  # the object says what happened
        assert extra["store_error"]["code"] == "store_refused"
        assert "cannot shrink" in extra["store_error"]["message"]
        assert f"Responses: store refused {answer.id} — client holds an id that will 404" in caplog.text
        with pytest.raises(openai.NotFoundError):
            client.responses.retrieve(answer.id)
    finally:
        served.stop()


def test_an_unknown_previous_response_is_a_404_with_the_store_hints(fake: FakeLSThread, served: ServedGateway) -> None:
    response = _post(served, {"model": MODEL, "input": "x", "previous_response_id": "resp_nope"})
    assert response.status_code == 404
    error = response.json()["error"]
    assert (error["type"], error["code"], error["param"]) == (
        "invalid_request_error",
        "response_not_found",
        "previous_response_id",
    )
    assert "retained for a limited time" in error["message"]
    assert "store:false" in error["message"]
    assert sends(fake) == []


def test_with_the_store_off_nothing_is_kept_and_chaining_is_a_400(fake: FakeLSThread) -> None:
    served = serve(fake, store="off")
    try:
        play(fake, {"chunks": [{"text": "unkept"}]})
        answer = _post(served, {"model": MODEL, "input": "x"}).json()
        assert answer["store"] is False
        assert (
            httpx.get(
                served.url + f"/v1/responses/{answer['id']}", headers={"Authorization": f"Bearer {KEY_A}"}
            ).status_code
            == 404
        )
        chained = _post(served, {"model": MODEL, "input": "y", "previous_response_id": answer["id"]})
        assert chained.status_code == 400
        assert chained.json()["error"]["param"] == "previous_response_id"
        assert httpx.get(served.url + "/metrics.json").json()["response_store"] == {"enabled": False}
    finally:
        served.stop()


def test_without_api_keys_every_caller_is_anonymous_and_shares_the_store(fake: FakeLSThread) -> None:
    served = serve_without_keys(fake)
    try:
        play(fake, {"chunks": [{"text": "shared"}]})
        created = httpx.post(served.url + "/v1/responses", json={"model": MODEL, "input": "x"}, timeout=30).json()
        again = httpx.get(served.url + f"/v1/responses/{created['id']}", timeout=30)
        assert again.status_code == 200
        assert again.json()["output"][0]["content"][0]["text"] == "shared"
    finally:
        served.stop()


def test_responses_turns_skip_the_cache_and_reach_the_ledger(
    fake: FakeLSThread, served: ServedGateway, client: openai.OpenAI
) -> None:
    play(fake, {"chunks": [{"text": "one"}], "records": [USAGE]}, {"chunks": [{"text": "two"}], "records": [USAGE]})
    texts = [client.responses.create(model=MODEL, input="same").output_text for _ in range(2)]
    assert texts == ["one", "two"]
    assert len(sends(fake)) == 2
    ledger = served.gateway.ledger.document()
    assert (ledger["served"], ledger["cache_served"]) == (2, 0)
    assert ledger["tokens"]["input"] == 22
    metrics = httpx.get(served.url + "/metrics.json").json()["response_store"]
    assert (metrics["stored"], metrics["size"], metrics["enabled"]) == (2, 2, True)
    assert "cascade_response_store_stored 2.0" in httpx.get(served.url + "/metrics").text


SCHEMA = {"type": "object", "properties": {"answer": {"type": "integer"}}, "required": ["answer"]}
JSON_FORMAT: Any = {"format": {"type": "json_schema", "name": "a", "schema": SCHEMA}}


def test_text_format_is_judged_like_chat_and_a_bad_turn_is_not_stored(
    fake: FakeLSThread, served: ServedGateway, client: openai.OpenAI
) -> None:
    play(fake, {"chunks": [{"text": '{"answer":"twelve"}'}]}, {"chunks": [{"text": '{"answer": 12}'}]})
    with pytest.raises(openai.APIStatusError) as caught:
        client.responses.create(model=MODEL, input="12?", text=JSON_FORMAT)
    assert caught.value.status_code == 502
    assert caught.value.body["code"] == "STRUCTURED_OUTPUT_NOT_CONFORMING"  # type: ignore[index]
    good = client.responses.create(model=MODEL, input="12?", text=JSON_FORMAT)
    assert json.loads(good.output_text) == {"answer": 12}
    assert good.text is not None
    assert good.text.format is not None
    assert good.text.format.type == "json_schema"
    assert "Conform to this JSON Schema" in _prompt(fake, 1)
    assert httpx.get(served.url + "/metrics.json").json()["response_store"]["stored"] == 1


@pytest.mark.parametrize(
    ("body", "param"),
    [
        (b"{not json", None),
        ({"input": "x"}, "model"),
        ({"model": MODEL}, "input"),
        ({"model": MODEL, "input": 5}, "input"),
        ({"model": MODEL, "input": []}, "input"),
        ({"model": MODEL, "input": [{"role": "wizard", "content": "x"}]}, "input[0]"),
        ({"model": MODEL, "input": ["x"]}, "input[0]"),
        ({"model": MODEL, "input": [{"role": "user", "content": [{"type": "audio"}]}]}, "input[0].content[0]"),
        ({"model": MODEL, "input": [{"type": "function_call", "name": "f"}]}, "input[0]"),
        ({"model": MODEL, "input": [{"type": "function_call_output", "output": "x"}]}, "input[0]"),
        ({"model": MODEL, "input": [{"type": "item_reference", "id": "x"}]}, "input[0]"),
        ({"model": MODEL, "input": [{"type": "reasoning", "summary": []}]}, "input"),
        (
            {"model": MODEL, "input": [{"role": "user", "content": [{"type": "input_image", "file_id": "f"}]}]},
            "input[0].content[0]",
        ),
        ({"model": MODEL, "input": "x", "instructions": 3}, "instructions"),
        ({"model": MODEL, "input": "x", "previous_response_id": ""}, "previous_response_id"),
        ({"model": MODEL, "input": "x", "stream": "yes"}, "stream"),
        ({"model": MODEL, "input": "x", "temperature": "hot"}, "temperature"),
        ({"model": MODEL, "input": "x", "max_output_tokens": 0}, "max_output_tokens"),
        ({"model": MODEL, "input": "x", "tools": [{"type": "web_search"}]}, "tools"),
        ({"model": MODEL, "input": "x", "tools": [{"type": "function"}]}, "tools"),
        ({"model": MODEL, "input": "x", "tool_choice": "required"}, "tool_choice"),
        ({"model": MODEL, "input": "x", "tool_choice": {"type": "file_search"}}, "tool_choice"),
        ({"model": MODEL, "input": "x", "text": {"format": {"type": "json_schema", "name": "a"}}}, "text.format"),
        ({"model": MODEL, "input": "x", "text": {"format": {"type": "yaml"}}}, "text.format"),
        ({"model": MODEL, "input": "x", "text": "json"}, "text"),
    ],
)
def test_bad_requests_are_400s_naming_the_param(
    fake: FakeLSThread, served: ServedGateway, body: object, param: str | None
) -> None:
    response = _post(served, body)
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert (error["type"], error["param"]) == ("invalid_request_error", param)
    assert error["message"]
    assert "Traceback" not in error["message"]
    assert sends(fake) == []


def test_an_unknown_model_is_a_404(fake: FakeLSThread, served: ServedGateway) -> None:
    response = _post(served, {"model": "no-such-model", "input": "x"})
    assert (response.status_code, response.json()["error"]["code"]) == (404, "model_not_found")


@pytest.mark.parametrize(
    ("method", "headers", "status", "code"),
    [
        ("POST", {"Origin": "https://attacker.example", "Content-Type": "application/json"}, 403, "cross_origin"),
        ("POST", {"Content-Type": "text/plain"}, 415, "unsupported_media_type"),
        ("DELETE", {"Origin": "https://attacker.example"}, 403, "cross_origin"),
    ],
)
def test_no_web_page_drives_or_deletes_a_response(
    fake: FakeLSThread,
    served: ServedGateway,
    client: openai.OpenAI,
    method: str,
    headers: dict[str, str],
    status: int,
    code: str,
) -> None:
    play(fake, {"chunks": [{"text": "kept"}]})
    kept = client.responses.create(model=MODEL, input="x")
    path = "/v1/responses" if method == "POST" else f"/v1/responses/{kept.id}"
    body = json.dumps({"model": MODEL, "input": "y"}).encode() if method == "POST" else None
    response = httpx.request(
        method, served.url + path, content=body, headers={"Authorization": f"Bearer {KEY_A}", **headers}
    )
    assert (response.status_code, response.json()["error"]["code"]) == (status, code)
    assert len(sends(fake)) == 1
    assert client.responses.retrieve(kept.id).output_text == "kept"


def test_unauthenticated_requests_are_401(served: ServedGateway) -> None:
    for method, path in (("POST", "/v1/responses"), ("GET", "/v1/responses/r"), ("DELETE", "/v1/responses/r")):
        response = httpx.request(method, served.url + path, json={"model": MODEL, "input": "x"})
        assert (response.status_code, response.json()["error"]["code"]) == (401, "invalid_api_key"), (method, path)


def test_input_items_paging_parameters(fake: FakeLSThread, served: ServedGateway, client: openai.OpenAI) -> None:
    play(fake, {"chunks": [{"text": "a4"}]})
    turns = [
        {"role": "user", "content": "u1"},
        {"role": "assistant", "content": "a2"},
        {"role": "user", "content": "u3"},
    ]
    answer = client.responses.create(model=MODEL, input=turns)  # type: ignore[arg-type]
    url = served.url + f"/v1/responses/{answer.id}/input_items"
    auth = {"Authorization": f"Bearer {KEY_A}"}
    first = httpx.get(url, params={"limit": 2}, headers=auth).json()
    assert first["has_more"] is True
    assert len(first["data"]) == 2
    rest = httpx.get(url, params={"after": first["last_id"]}, headers=auth).json()
    assert [len(first["data"]), len(rest["data"]), rest["has_more"]] == [2, 2, False]
    assert [item["content"][0]["text"] for item in first["data"] + rest["data"]] == ["u1", "a2", "u3", "a4"]
    paged = [item.id for item in client.responses.input_items.list(answer.id, limit=1)]  # follows has_more
    assert paged == [item["id"] for item in first["data"] + rest["data"]]
    for params, param in (({"order": "up"}, "order"), ({"limit": "0"}, "limit"), ({"after": "nope"}, "after")):
        response = httpx.get(url, params=params, headers=auth)
        assert (response.status_code, response.json()["error"]["param"]) == (400, param)
