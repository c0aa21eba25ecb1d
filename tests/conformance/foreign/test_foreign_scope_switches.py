"""What foreigngw's cache and pool share, and the defect switches that make them share too much: the
chat cache key covers the caller, the model, the conversation (image bytes too), the tools, the stop
sequences and every knob (tool_choice, response_format, reasoning effort, thinking, sampling, the
token cap); the pool key covers the model; a continued Responses conversation adds a function call
the client sends again only once. Each switch (cache-key-without-caller, blank-user-scope,
image-placeholder-key, user-only-fingerprint, previous-response-id-ignored) is shown on and off.

The fake LS's journal tells: one Send per upstream turn, none for a cache hit, and a resumed
cascade's Send names the earlier cascade."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from conformance.fixtures.images import image_block, png_b64
from fakels.server import FakeLSThread
from tests.conformance.foreign.test_foreign_gateway import (
    KEY_A,
    KEY_B,
    MODEL,
    TOKEN,
    TOOLS,
    Gateway,
    assistant,
    launch,
    running_gateway,
    script,
    send_text,
    sends,
    text_turn,
    user,
)
from tests.support.fake_ls import StartFakeLs

SWITCHES = "cache-key-without-caller,image-placeholder-key,user-only-fingerprint,previous-response-id-ignored"
JSON_SCHEMA = {"type": "object", "properties": {"a": {"type": "integer"}}}


@pytest.fixture(scope="module")
def fake(start_module_fake_ls: StartFakeLs) -> FakeLSThread:
    return start_module_fake_ls(csrf_token=TOKEN)


@pytest.fixture(scope="module")
def plain(fake: FakeLSThread, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    yield from running_gateway(fake, tmp_path_factory)


@pytest.fixture(scope="module")
def switched(fake: FakeLSThread, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    yield from running_gateway(fake, tmp_path_factory, FGW_DEFECTS=SWITCHES)


def _scripted(fake: FakeLSThread) -> None:
    script(fake, text_turn('{"a": 1}'), text_turn('{"a": 2}'), text_turn('{"a": 3}'))


def _content(answer: Any) -> str:
    assert answer.status_code == 200, answer.text
    return str(answer.json()["choices"][0]["message"]["content"])


def _twice(gateway: Gateway, fake: FakeLSThread, first: dict[str, Any], second: dict[str, Any]) -> tuple[int, bool]:
    """Ask ``first`` then ``second`` on a clean LS: how many Sends, and whether the answers are one."""
    _scripted(fake)
    one, two = _content(gateway.chat(first)), _content(gateway.chat(second))
    return len(sends(fake)), one == two


def _cascades(fake: FakeLSThread) -> list[str]:
    return [str(request["cascade_id"]) for request in sends(fake)]


# ---------------------------------------------------------------------------- the chat cache key


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ({"tools": TOOLS, "tool_choice": "auto"}, {"tools": TOOLS, "tool_choice": "none"}),
        ({}, {"response_format": {"type": "json_object"}}),
        (
            {"response_format": {"type": "json_schema", "json_schema": {"name": "a", "schema": JSON_SCHEMA}}},
            {"response_format": {"type": "json_schema", "json_schema": {"name": "b", "schema": JSON_SCHEMA}}},
        ),
        ({"reasoning_effort": "low"}, {"reasoning_effort": "high"}),
        ({"reasoning": {"effort": "low"}}, {"reasoning": {"effort": "high"}}),
        ({"reasoning_effort": "low", "reasoning": {"effort": "high"}}, {"reasoning_effort": "high"}),
        ({}, {"thinking": {"type": "enabled", "budget_tokens": 1024}}),
        ({"temperature": 0.2}, {"temperature": 0.9}),
        ({"top_p": 0.5}, {"top_p": 0.9}),
        ({"top_k": 10}, {"top_k": 40}),
        ({"max_tokens": 100}, {"max_tokens": 200}),
        ({"max_completion_tokens": 100}, {"max_completion_tokens": 200}),
        ({"max_tokens": 100, "max_completion_tokens": 300}, {"max_tokens": 100}),
        ({"stop": ["zzz"]}, {"stop": ["yyy"]}),
        ({}, {"model": "gpt-5"}),
    ],
    ids=[
        "tool_choice",
        "response_format",
        "response_format-name",
        "reasoning_effort",
        "reasoning.effort",
        "flat-effort-wins",
        "thinking",
        "temperature",
        "top_p",
        "top_k",
        "max_tokens",
        "max_completion_tokens",
        "max_completion_tokens-wins",
        "stop",
        "model",
    ],
)
def test_a_request_with_another_knob_is_not_a_cache_hit(
    plain: Gateway, fake: FakeLSThread, first: dict[str, Any], second: dict[str, Any]
) -> None:
    messages = [user(f"knob {sorted(first)} {sorted(second)} {first} -> {second}?")]
    assert _twice(plain, fake, {"messages": messages, **first}, {"messages": messages, **second}) == (2, False)


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ({"reasoning_effort": "high"}, {"reasoning": {"effort": "high"}}),
        ({"reasoning_effort": "low", "reasoning": {"effort": "high"}}, {"reasoning_effort": "low"}),
        ({"max_tokens": 100}, {"max_completion_tokens": 100}),
        ({"max_tokens": 5, "max_completion_tokens": 100}, {"max_completion_tokens": 100}),
        (
            {"response_format": {"type": "json_schema", "json_schema": {"name": "a", "schema": JSON_SCHEMA}}},
            {"response_format": {"json_schema": {"schema": JSON_SCHEMA, "name": "a"}, "type": "json_schema"}},
        ),
    ],
    ids=["flat-or-nested-effort", "flat-effort-wins", "max-token-spellings", "max_completion_tokens-wins", "key-order"],
)
def test_one_knob_spelled_two_ways_is_one_cache_key(
    plain: Gateway, fake: FakeLSThread, first: dict[str, Any], second: dict[str, Any]
) -> None:
    messages = [user(f"spelled {first} -> {second}?")]
    assert _twice(plain, fake, {"messages": messages, **first}, {"messages": messages, **second}) == (1, True)


@pytest.mark.parametrize(
    "second",
    [{"temperature": 0.9}, {"max_output_tokens": 50}, {"reasoning": {"effort": "high"}}, {"tool_choice": "none"}],
    ids=["temperature", "max_output_tokens", "reasoning.effort", "tool_choice"],
)
def test_a_responses_request_with_another_knob_is_not_a_cache_hit(
    plain: Gateway, fake: FakeLSThread, second: dict[str, Any]
) -> None:
    _scripted(fake)
    body = {"model": MODEL, "input": f"responses knob {second}?", "tools": TOOLS}
    texts = [
        plain.post("/v1/responses", b).json()["output"][0]["content"][0]["text"] for b in (body, {**body, **second})
    ]
    assert (len(sends(fake)), texts) == (2, ['{"a": 1}', '{"a": 2}'])


# ---------------------------------------------------------------------------- the pool key


def test_a_conversation_continued_with_another_model_starts_a_fresh_cascade(plain: Gateway, fake: FakeLSThread) -> None:
    script(fake, text_turn("one"), text_turn("two"), text_turn("three"), text_turn("four"))
    for question in ("same model", "other model"):
        plain.chat({"messages": [user(f"{question} q1")]})
    plain.chat({"messages": [user("same model q1"), assistant("one"), user("same model q2")]})
    plain.chat({"messages": [user("other model q1"), assistant("two"), user("other model q2")], "model": "gpt-5"})
    cascades = _cascades(fake)
    assert cascades[2] == cascades[0]  # the same model resumes its cascade with the new turn only
    assert send_text(sends(fake)[2]) == "same model q2"
    assert cascades[3] not in (cascades[0], cascades[1])
    assert send_text(sends(fake)[3]).endswith("User: other model q1\n\nAssistant: two\n\nUser: other model q2")
    assert "(model: gpt-5)" in send_text(sends(fake)[3])


# ---------------------------------------------------------------------------- previous_response_id


def test_a_function_call_sent_again_is_not_added_twice(plain: Gateway, fake: FakeLSThread) -> None:
    script(fake, text_turn('<fgw_call name="get_weather">{"city": "Paris"}</fgw_call>'), text_turn("Sunny."))
    body = {"model": MODEL, "tools": TOOLS}
    first = plain.post("/v1/responses", {**body, "input": "weather in Paris?", "instructions": "Old rules."}).json()
    (call,) = [item for item in first["output"] if item["type"] == "function_call"]
    received = [
        {key: call[key] for key in ("type", "call_id", "name", "arguments")},
        {"type": "function_call_output", "call_id": call["call_id"], "output": "18 C, sunny"},
    ]
    second = plain.post(
        "/v1/responses",
        {**body, "input": received, "instructions": "New rules.", "previous_response_id": first["id"]},
    )
    assert second.json()["output"][0]["content"][0]["text"] == "Sunny."
    replayed = send_text(sends(fake)[1])
    assert replayed.count('Assistant called get_weather({"city": "Paris"})') == 1
    assert replayed.endswith(
        f'User: weather in Paris?\n\nAssistant called get_weather({{"city": "Paris"}})\n\n'
        f"Tool result ({call['call_id']}): 18 C, sunny"
    )
    assert "New rules." in replayed
    assert "Old rules." not in replayed


# ---------------------------------------------------------------------------- the switches


def test_cache_key_without_caller_shares_an_answer_between_keys(
    plain: Gateway, switched: Gateway, fake: FakeLSThread
) -> None:
    body = {"messages": [user("whose answer is this?")]}
    _scripted(fake)
    assert [_content(plain.chat(body, key)) for key in (KEY_A, KEY_B)] == ['{"a": 1}', '{"a": 2}']
    assert len(sends(fake)) == 2
    _scripted(fake)
    assert [_content(switched.chat(body, key)) for key in (KEY_A, KEY_B)] == ['{"a": 1}', '{"a": 1}']
    assert len(sends(fake)) == 1  # KEY_B got KEY_A's cached answer


def test_image_placeholder_key_shares_an_answer_between_images(
    plain: Gateway, switched: Gateway, fake: FakeLSThread
) -> None:
    def body(index: int) -> dict[str, Any]:
        look = [{"type": "text", "text": "what is in this picture?"}, image_block(png_b64(index, index), "image_url")]
        return {"messages": [user(look)]}

    assert _twice(plain, fake, body(1), body(2)) == (2, False)
    assert _twice(switched, fake, body(1), body(2)) == (1, True)  # the second picture got the first one's answer
    (request,) = sends(fake)
    assert request["images"][0]["base64_data"] == png_b64(1, 1)  # what the LS gets is unchanged


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ({"answer": "one"}, {"answer": "an edited one"}),
        ({"answer": "one", "system": "Be terse."}, {"answer": "one", "system": "Be verbose."}),
        ({"answer": "one"}, {"answer": "one", "tools": TOOLS}),
    ],
    ids=["edited-answer", "other-system", "other-tools"],
)
def test_user_only_fingerprint_resumes_a_changed_conversation(
    plain: Gateway, switched: Gateway, fake: FakeLSThread, before: dict[str, Any], after: dict[str, Any]
) -> None:
    def chat(gateway: Gateway, question: str, case: dict[str, Any], *turns: dict[str, Any]) -> None:
        system = [{"role": "system", "content": case["system"]}] if "system" in case else []
        tools = {"tools": case["tools"]} if "tools" in case else {}
        assert gateway.chat({"messages": [*system, user(question), *turns], **tools}).status_code == 200

    question = f"fingerprint {after}"
    for gateway, resumed in ((plain, False), (switched, True)):
        script(fake, text_turn("one"), text_turn("two"))
        chat(gateway, question, before)
        chat(gateway, question, after, assistant(after["answer"]), user("and then?"))
        first, second = _cascades(fake)
        assert (second == first) is resumed
        assert (send_text(sends(fake)[1]) == "and then?") is resumed


def test_previous_response_id_ignored_answers_from_the_input_only(
    plain: Gateway, switched: Gateway, fake: FakeLSThread
) -> None:
    missing = {"model": MODEL, "input": "what number?", "previous_response_id": "resp_missing"}
    assert plain.post("/v1/responses", missing).status_code == 404
    for gateway, chained in ((plain, True), (switched, False)):
        script(fake, text_turn("noted"), text_turn("forty-two"))
        stored = gateway.post("/v1/responses", {"model": MODEL, "input": "remember 42"}).json()
        body = {"model": MODEL, "input": "what number?", "previous_response_id": stored["id"]}
        answer = gateway.post("/v1/responses", body)
        assert (answer.status_code, answer.json()["previous_response_id"]) == (200, stored["id"])
        assert ("User: remember 42\n\nAssistant: noted" in send_text(sends(fake)[1])) is chained
        assert send_text(sends(fake)[1]).endswith("User: what number?")
    script(fake)
    echoed = switched.post("/v1/responses", missing)
    assert (echoed.status_code, echoed.json()["previous_response_id"]) == (200, "resp_missing")


def test_blank_user_scope_makes_a_blank_user_a_scope(
    fake: FakeLSThread, tmp_path_factory: pytest.TempPathFactory
) -> None:
    def sends_for(gateway: Gateway, *users: str | None) -> int:
        _scripted(fake)
        for name in users:
            scope = {} if name is None else {"user": name}
            assert gateway.chat({"messages": [user("blank scope?")], **scope}).status_code == 200
        return len(sends(fake))

    scoped = {"FGW_PERSONALITY": "scoped", "FGW_API_KEYS": KEY_A}
    for defects, shared in (("", False), ("blank-user-scope", True)):
        gateway = launch(fake, tmp_path_factory.mktemp("fgw"), FGW_DEFECTS=defects, **scoped)
        try:
            assert sends_for(gateway, "", "") == (1 if shared else 2)
            assert sends_for(gateway, "  ", "  ", " ") == (2 if shared else 3)  # taken as given: "  " is not " "
            assert sends_for(gateway, None, None) == 2  # without user: anonymous either way
            stored = gateway.post("/v1/responses", {"model": MODEL, "input": "blank store", "user": ""}).json()
            read = gateway.client.get(
                f"/v1/responses/{stored['id']}", headers={"Authorization": f"Bearer {KEY_A}", "X-Response-User": ""}
            )
            assert read.status_code == (200 if shared else 404)
        finally:
            assert gateway.stop() == 0, gateway.log()
