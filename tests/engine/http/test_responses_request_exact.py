"""parse_responses_request: what a POST /v1/responses body becomes (chat tools, tool_choice, text.format,
the echoed fields, persistence) and the exact 400 / 404 for every refusal."""

from __future__ import annotations

from typing import Any

import pytest

from engine.http.errors import ApiError
from engine.http.responses_request import parse_responses_request
from engine.model_catalogue import ModelCatalogue

CATALOGUE = ModelCatalogue.default()
MODEL = "claude-sonnet-4-6"
SCHEMA = {"type": "object", "properties": {"a": {"type": "string"}}}
TOOL = {"type": "function", "name": "lookup", "description": "finds", "parameters": {"type": "object"}, "strict": True}


def _body(**fields: Any) -> dict[str, Any]:
    return {"model": MODEL, "input": "hi", **fields}


def _refusal(body: object) -> tuple[int, str, str | None, str | None]:
    with pytest.raises(ApiError) as caught:
        parse_responses_request(body, CATALOGUE)
    error = caught.value
    return error.status, error.message, error.param, error.code


def test_a_minimal_body_asks_for_persistence_and_echoes_the_defaults() -> None:
    parsed = parse_responses_request(_body(), CATALOGUE)
    assert parsed.model.name == MODEL
    assert [item["content"] for item in parsed.input_items] == [[{"type": "input_text", "text": "hi"}]]
    assert (parsed.instructions, parsed.previous_response_id, parsed.store, parsed.stream) == (None, None, True, False)
    assert (list(parsed.chat_tools), parsed.chat_tool_choice, parsed.schema, parsed.wants_json) == (
        [],
        None,
        None,
        False,
    )
    assert parsed.echo == {
        "temperature": None,
        "top_p": None,
        "max_output_tokens": None,
        "metadata": {},
        "user": None,
        "tools": [],
        "tool_choice": "auto",
        "text": {"format": {"type": "text"}},
        "parallel_tool_calls": True,
    }


def test_the_given_fields_are_echoed_and_tools_are_translated_to_chat_form() -> None:
    body = _body(
        instructions="be brief",
        previous_response_id="resp_1",
        stream=True,
        store=False,
        temperature=0.5,
        top_p=1,
        max_output_tokens=1,
        metadata={"k": "v"},
        user="u",
        tools=[TOOL, {"type": "function", "name": "bare"}],
        tool_choice={"type": "function", "name": "lookup"},
        parallel_tool_calls=False,
        text={"format": {"type": "json_schema", "name": "out", "schema": SCHEMA}},
    )
    parsed = parse_responses_request(body, CATALOGUE)
    assert parsed.body is body
    assert (parsed.instructions, parsed.previous_response_id, parsed.store, parsed.stream) == (
        "be brief",
        "resp_1",
        False,
        True,
    )
    assert parsed.chat_tools == [
        {
            "type": "function",
            "function": {"name": "lookup", "description": "finds", "parameters": {"type": "object"}},
        },
        {"type": "function", "function": {"name": "bare"}},
    ]
    assert parsed.chat_tool_choice == {"type": "function", "function": {"name": "lookup"}}
    assert (parsed.schema, parsed.wants_json) == (SCHEMA, True)
    assert parsed.echo == {
        "temperature": 0.5,
        "top_p": 1,
        "max_output_tokens": 1,
        "metadata": {"k": "v"},
        "user": "u",
        "tools": [TOOL, {"type": "function", "name": "bare"}],
        "tool_choice": {"type": "function", "name": "lookup"},
        "text": {"format": {"type": "json_schema", "name": "out", "schema": SCHEMA}},
        "parallel_tool_calls": False,
    }


@pytest.mark.parametrize(
    ("store", "persist"), [(True, True), (None, False), (0, False), ("off", False), ("yes", True), ([], True)]
)
def test_store_follows_wants_persistence(store: object, persist: bool) -> None:
    assert parse_responses_request(_body(store=store), CATALOGUE).store is persist


@pytest.mark.parametrize(
    ("text", "schema", "wants_json", "echoed"),
    [
        (None, None, False, {"format": {"type": "text"}}),
        ({}, None, False, {"format": {"type": "text"}}),
        ({"format": None}, None, False, {"format": None}),
        ({"verbosity": "low"}, None, False, {"format": {"type": "text"}}),
        ({"format": {"type": "text"}}, None, False, {"format": {"type": "text"}}),
        ({"format": {"type": "json_object"}}, None, True, {"format": {"type": "json_object"}}),
    ],
)
def test_text_format_decides_the_schema_and_whether_json_is_wanted(
    text: object, schema: object, wants_json: bool, echoed: object
) -> None:
    parsed = parse_responses_request(_body(text=text), CATALOGUE)
    assert (parsed.schema, parsed.wants_json, parsed.echo["text"]) == (schema, wants_json, echoed)


@pytest.mark.parametrize("choice", ["auto", "none", "required"])
def test_string_tool_choices_pass_through(choice: str) -> None:
    parsed = parse_responses_request(_body(tools=[TOOL], tool_choice=choice), CATALOGUE)
    assert (parsed.chat_tool_choice, parsed.echo["tool_choice"]) == (choice, choice)


def test_an_empty_input_array_of_reasoning_only_is_accepted_when_chained() -> None:
    parsed = parse_responses_request(_body(input=[{"type": "reasoning"}], previous_response_id="r"), CATALOGUE)
    assert list(parsed.input_items) == []


FORMAT_SHAPE = "'text.format' must be an object"
REFUSALS: list[tuple[object, int, str, str | None, str | None]] = [
    ([], 400, "the request body must be a JSON object", None, None),
    ({"input": "hi"}, 400, "'model' is required and must be a non-empty string", "model", None),
    (
        {"model": "nope", "input": "hi"},
        404,
        "The model 'nope' does not exist; GET /v1/models lists the models served",
        "model",
        "model_not_found",
    ),
    ({"model": MODEL}, 400, "'input' is required: a string or an array of input items", "input", None),
    (_body(input=[]), 400, "'input' must be a string or a non-empty array of input items", "input", None),
    (_body(instructions=1), 400, "'instructions' must be a string", "instructions", None),
    (
        _body(previous_response_id=""),
        400,
        "'previous_response_id' must be a non-empty string",
        "previous_response_id",
        None,
    ),
    (
        _body(previous_response_id=3),
        400,
        "'previous_response_id' must be a non-empty string",
        "previous_response_id",
        None,
    ),
    (
        _body(input=[{"type": "reasoning"}]),
        400,
        "'input' holds no message, function call or function call output",
        "input",
        None,
    ),
    (_body(stream="yes"), 400, "'stream' must be a boolean", "stream", None),
    (_body(parallel_tool_calls=1), 400, "'parallel_tool_calls' must be a boolean", "parallel_tool_calls", None),
    (_body(background=True), 400, "background responses are not supported", "background", None),
    (_body(temperature="hot"), 400, "'temperature' must be a number", "temperature", None),
    (_body(top_p=True), 400, "'top_p' must be a number", "top_p", None),
    (_body(max_output_tokens=0), 400, "'max_output_tokens' must be a positive integer", "max_output_tokens", None),
    (_body(metadata=[]), 400, "'metadata' must be an object", "metadata", None),
    (_body(tools={}), 400, "'tools' must be an array of function tools", "tools", None),
    (_body(tools=["x"]), 400, "tools[0]: only function tools are supported (got type None)", "tools", None),
    (
        _body(tools=[TOOL, {"type": "web_search"}]),
        400,
        "tools[1]: only function tools are supported (got type 'web_search')",
        "tools",
        None,
    ),
    (_body(tools=[{"type": "function"}]), 400, "tools[0].name must be a non-empty string", "tools", None),
    (_body(tools=[{"type": "function", "name": ""}]), 400, "tools[0].name must be a non-empty string", "tools", None),
    (
        _body(tools=[{"type": "function", "name": "f", "description": 1}]),
        400,
        "tools[0].description must be a string",
        "tools",
        None,
    ),
    (
        _body(tools=[{"type": "function", "name": "f", "parameters": []}]),
        400,
        "tools[0].parameters must be an object (a JSON Schema)",
        "tools",
        None,
    ),
    (
        _body(tool_choice={"type": "function"}),
        400,
        "tool_choice.name must be a non-empty string",
        "tool_choice",
        None,
    ),
    (
        _body(tool_choice={"type": "function", "name": ""}),
        400,
        "tool_choice.name must be a non-empty string",
        "tool_choice",
        None,
    ),
    (
        _body(tool_choice={"type": "mcp"}),
        400,
        "'tool_choice' must be 'none', 'auto', 'required' or {type: 'function', name}",
        "tool_choice",
        None,
    ),
    (
        _body(tool_choice=1),
        400,
        "'tool_choice' must be 'none', 'auto', 'required' or {type: 'function', name}",
        "tool_choice",
        None,
    ),
    (_body(tool_choice="required"), 400, "tool_choice 'required' requires tools", "tool_choice", None),
    (
        _body(tools=[TOOL], tool_choice={"type": "function", "name": "other"}),
        400,
        "tool_choice names function 'other', which is not in tools",
        "tool_choice",
        None,
    ),
    (_body(text="json"), 400, "'text' must be an object", "text", None),
    (_body(text={"format": "json"}), 400, FORMAT_SHAPE, "text.format", None),
    (
        _body(text={"format": {"type": "xml"}}),
        400,
        "text.format.type must be one of 'text', 'json_object', 'json_schema' (got \"xml\")",
        "text.format",
        None,
    ),
    (
        _body(text={"format": {"type": "json_schema", "name": "x"}}),
        400,
        "text.format.schema must be an object (a JSON Schema)",
        "text.format",
        None,
    ),
    (
        _body(text={"format": {"type": "json_schema", "schema": {"type": 5}}}),
        400,
        "text.format.schema is not a valid JSON Schema: $.type: 5 is not valid under any of the given schemas",
        "text.format",
        None,
    ),
]


@pytest.mark.parametrize(("body", "status", "message", "param", "code"), REFUSALS)
def test_every_refusal_is_exact(body: object, status: int, message: str, param: str | None, code: str | None) -> None:
    assert _refusal(body) == (status, message, param, code)


def test_a_tool_spec_error_names_tools_unless_it_is_about_tool_choice() -> None:
    duplicate = _body(tools=[{"type": "function", "name": "a"}] * 2)
    assert _refusal(duplicate) == (400, "tools[1]: duplicate function name 'a'", "tools", None)
    unknown = _body(tool_choice="bogus")
    message = "tool_choice must be 'none', 'auto', 'required' or a function, got 'bogus'"
    assert _refusal(unknown) == (400, message, "tool_choice", None)


@pytest.mark.parametrize("background", [False, None, "true", 1])
def test_only_background_true_is_refused(background: object) -> None:
    assert parse_responses_request(_body(background=background), CATALOGUE).model.name == MODEL
