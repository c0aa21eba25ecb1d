"""parse_chat_request: what a chat-completions body becomes, and the exact 400/404 for every refusal."""

from __future__ import annotations

from typing import Any

import pytest

from engine.http.chat_request import check_sampling_params, optional_bool, parse_chat_request
from engine.http.errors import ApiError
from engine.model_catalogue import ModelCatalogue

CATALOGUE = ModelCatalogue.default()
MODEL = "claude-sonnet-4-6"
HI = [{"role": "user", "content": "hi"}]
ROLE_LIST = "assistant, developer, system, tool, user"
CALL_SHAPE = "must be {id, type: function, function: {name, arguments: string}}"
TOOL = {"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}
SCHEMA = {"type": "object"}


def _refusal(body: object) -> ApiError:
    with pytest.raises(ApiError) as caught:
        parse_chat_request(body, CATALOGUE)
    return caught.value


def _call(**function: Any) -> dict[str, Any]:
    return {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}", **function}}


@pytest.mark.parametrize(
    ("body", "message", "param"),
    [
        ([], "the request body must be a JSON object", None),
        ({"messages": HI}, "'model' is required and must be a non-empty string", "model"),
        ({"model": "", "messages": HI}, "'model' is required and must be a non-empty string", "model"),
        ({"model": 5, "messages": HI}, "'model' is required and must be a non-empty string", "model"),
        ({"model": MODEL}, "'messages' must be a non-empty array of message objects", "messages"),
        ({"model": MODEL, "messages": []}, "'messages' must be a non-empty array of message objects", "messages"),
        ({"model": MODEL, "messages": "hi"}, "'messages' must be a non-empty array of message objects", "messages"),
        ({"model": MODEL, "messages": [*HI, "x"]}, "messages[1] must be an object", "messages[1]"),
        (
            {"model": MODEL, "messages": [{"role": "wizard", "content": "x"}]},
            f"messages[0].role must be one of {ROLE_LIST}, not 'wizard'",
            "messages[0]",
        ),
        (
            {"model": MODEL, "messages": [{"content": "x"}]},
            f"messages[0].role must be one of {ROLE_LIST}, not None",
            "messages[0]",
        ),
        (
            {"model": MODEL, "messages": [{"role": "user", "content": 5}]},
            "messages[0].content must be a string, an array of parts or null",
            "messages[0]",
        ),
        (
            {"model": MODEL, "messages": [{"role": "user", "content": [{"type": "text", "text": "a"}, "b"]}]},
            "messages[0].content parts must be objects",
            "messages[0]",
        ),
        (
            {"model": MODEL, "messages": [{"role": "tool", "content": "r"}]},
            "messages[0].tool_call_id must be a string",
            "messages[0]",
        ),
        (
            {"model": MODEL, "messages": [{"role": "tool", "content": "r", "tool_call_id": 7}]},
            "messages[0].tool_call_id must be a string",
            "messages[0]",
        ),
        (
            {"model": MODEL, "messages": [{"role": "assistant", "content": None, "tool_calls": {}}]},
            "messages[0].tool_calls must be an array",
            "messages[0]",
        ),
        (
            {"model": MODEL, "messages": [{"role": "user", "content": None}]},
            "messages[0].content is required for role user",
            "messages[0]",
        ),
        (
            {"model": MODEL, "messages": [*HI, {"role": "system"}]},
            "messages[1].content is required for role system",
            "messages[1]",
        ),
        ({"model": MODEL, "messages": HI, "stream": "yes"}, "'stream' must be a boolean", "stream"),
        ({"model": MODEL, "messages": HI, "stream": 1}, "'stream' must be a boolean", "stream"),
        (
            {"model": MODEL, "messages": HI, "stream_options": []},
            "'stream_options' must be an object",
            "stream_options",
        ),
        (
            {"model": MODEL, "messages": HI, "stream_options": {"include_usage": "yes"}},
            "'stream_options.include_usage' must be a boolean",
            "stream_options.include_usage",
        ),
        ({"model": MODEL, "messages": HI, "n": 2}, "only n=1 is supported", "n"),
        ({"model": MODEL, "messages": HI, "n": 0}, "only n=1 is supported", "n"),
        ({"model": MODEL, "messages": HI, "n": True}, "only n=1 is supported", "n"),
        (
            {"model": MODEL, "messages": HI, "tools": [{"type": "function"}]},
            "tools[0].function must be an object",
            "tools",
        ),
        (
            {"model": MODEL, "messages": HI, "tool_choice": "sometimes"},
            "tool_choice must be 'none', 'auto', 'required' or a function, got 'sometimes'",
            "tools",
        ),
        (
            {"model": MODEL, "messages": HI, "response_format": {"type": "json_schema"}},
            "response_format.json_schema must be an object",
            "response_format",
        ),
        (
            {"model": MODEL, "messages": HI, "response_format": "json"},
            "response_format must be an object",
            "response_format",
        ),
    ],
)
def test_a_malformed_request_is_a_400_naming_its_parameter(body: object, message: str, param: str | None) -> None:
    error = _refusal(body)
    assert (error.status, error.message, error.param, error.type, error.code) == (
        400,
        message,
        param,
        "invalid_request_error",
        None,
    )


@pytest.mark.parametrize(
    "calls",
    [
        ["c"],
        [{"type": "function", "function": {"name": "f", "arguments": "{}"}}],
        [{"id": "c1", "type": "function"}],
        [{"id": "c1", "type": "function", "function": "f"}],
        [_call(name=None)],
        [_call(arguments={})],
        [_call(), {**_call(), "id": 3}],
    ],
    ids=["not-object", "no-id", "no-function", "function-not-object", "no-name", "arguments-not-string", "second"],
)
def test_a_malformed_tool_call_in_history_is_refused_with_its_index(calls: list[Any]) -> None:
    body = {"model": MODEL, "messages": [*HI, {"role": "assistant", "content": None, "tool_calls": calls}]}
    error = _refusal(body)
    index = len(calls) - 1
    assert (error.status, error.message, error.param) == (
        400,
        f"messages[1].tool_calls[{index}] {CALL_SHAPE}",
        "messages[1]",
    )


def test_an_unknown_model_is_a_404_model_not_found() -> None:
    error = _refusal({"model": "gpt-nope", "messages": HI})
    assert error.body() == {
        "error": {
            "message": "The model 'gpt-nope' does not exist; GET /v1/models lists the models served",
            "type": "invalid_request_error",
            "param": "model",
            "code": "model_not_found",
        }
    }
    assert error.status == 404


@pytest.mark.parametrize("name", ["temperature", "top_p", "frequency_penalty", "presence_penalty"])
@pytest.mark.parametrize("value", ["hot", True, float("inf"), float("nan"), [1]])
def test_sampling_numbers_must_be_finite_numbers(name: str, value: object) -> None:
    error = _refusal({"model": MODEL, "messages": HI, name: value})
    assert (error.status, error.message, error.param) == (400, f"'{name}' must be a number", name)


@pytest.mark.parametrize("name", ["max_tokens", "max_completion_tokens"])
@pytest.mark.parametrize("value", [0, -1, 1.0, True, "5"])
def test_token_counts_must_be_positive_integers(name: str, value: object) -> None:
    error = _refusal({"model": MODEL, "messages": HI, name: value})
    assert (error.status, error.message, error.param) == (400, f"'{name}' must be a positive integer", name)


def test_accepted_sampling_values_at_their_edges() -> None:
    body = {"temperature": 0, "top_p": 1.5, "frequency_penalty": -2, "max_tokens": 1, "max_completion_tokens": 1}
    check_sampling_params(body, numbers=("temperature", "top_p", "frequency_penalty"), counts=("max_tokens",))
    served = {**body, "frequency_penalty": 0, "presence_penalty": 0.0}
    parse_chat_request({"model": MODEL, "messages": HI, "n": 1, **served}, CATALOGUE)


DEFAULTS: dict[str, Any] = {
    "logprobs": False,
    "top_logprobs": None,
    "seed": None,
    "frequency_penalty": 0,
    "logit_bias": {},
}


def test_unservable_parameters_at_their_defaults_are_served() -> None:
    parse_chat_request({"model": MODEL, "messages": HI, **DEFAULTS, "presence_penalty": 0}, CATALOGUE)


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("logprobs", True, "'logprobs' is not supported: the language server reports no token probabilities"),
        ("top_logprobs", 0, "'top_logprobs' is not supported: the language server reports no token probabilities"),
        ("seed", 0, "'seed' is not supported: the language server cannot sample deterministically"),
        ("seed", 42, "'seed' is not supported: the language server cannot sample deterministically"),
        ("frequency_penalty", 0.01, "'frequency_penalty' is not supported: only 0 (the default) is served"),
        ("presence_penalty", -2, "'presence_penalty' is not supported: only 0 (the default) is served"),
        ("logit_bias", {"50256": -100}, "'logit_bias' is not supported: the language server takes no token biases"),
    ],
)
def test_a_parameter_the_ls_cannot_honour_is_refused(name: str, value: object, message: str) -> None:
    error = _refusal({"model": MODEL, "messages": HI, name: value})
    assert (error.status, error.message, error.param) == (400, message, name)


STOP_RULE = "'stop' must be a non-empty string or an array of 1 to 4 non-empty strings"


@pytest.mark.parametrize(
    ("stop", "parsed"),
    [(None, ()), ("x", ("x",)), (["a"], ("a",)), (["a", "b", "c", "d"], ("a", "b", "c", "d")), (["\n\n"], ("\n\n",))],
)
def test_stop_sequences_up_to_four(stop: object, parsed: tuple[str, ...]) -> None:
    assert parse_chat_request({"model": MODEL, "messages": HI, "stop": stop}, CATALOGUE).stop == parsed


@pytest.mark.parametrize("stop", ["", [], ["a", "b", "c", "d", "e"], [""], ["a", 5], 5, {"a": 1}])
def test_a_malformed_stop_is_refused(stop: object) -> None:
    error = _refusal({"model": MODEL, "messages": HI, "stop": stop})
    assert (error.status, error.message, error.param) == (400, STOP_RULE, "stop")


@pytest.mark.parametrize(
    ("messages", "message", "param"),
    [
        (
            [*HI, {"role": "assistant", "content": "hello"}],
            "nothing to answer: the conversation ends with role assistant, not user or tool",
            "messages[1]",
        ),
        (
            [{"role": "system", "content": "be brief"}],
            "nothing to answer: the conversation ends with role system, not user or tool",
            "messages[0]",
        ),
        ([{"role": "user", "content": ""}], "nothing to answer: the last user message is empty", "messages[0]"),
        ([{"role": "user", "content": " \n\t"}], "nothing to answer: the last user message is empty", "messages[0]"),
        ([{"role": "user", "content": []}], "nothing to answer: the last user message is empty", "messages[0]"),
        (
            [{"role": "user", "content": [{"type": "text", "text": "  "}]}],
            "nothing to answer: the last user message is empty",
            "messages[0]",
        ),
    ],
)
def test_a_conversation_with_nothing_to_answer_is_refused(
    messages: list[dict[str, Any]], message: str, param: str
) -> None:
    error = _refusal({"model": MODEL, "messages": messages})
    assert (error.status, error.message, error.param) == (400, message, param)


@pytest.mark.parametrize(
    "last",
    [
        {"role": "user", "content": "x"},
        {"role": "user", "content": [{"type": "text", "text": " "}, {"type": "image_url", "image_url": {"url": "u"}}]},
        {"role": "tool", "content": "", "tool_call_id": "c1"},
    ],
)
def test_a_user_message_with_one_character_an_image_or_tool_results_is_answered(last: dict[str, Any]) -> None:
    parse_chat_request({"model": MODEL, "messages": [last]}, CATALOGUE)


def test_optional_bool_names_the_key_unless_told_where() -> None:
    assert optional_bool({}, "k") is False
    assert optional_bool({"k": None}, "k") is False
    assert optional_bool({"k": True}, "k") is True
    with pytest.raises(ApiError) as caught:
        optional_bool({"k": 0}, "k")
    assert (caught.value.message, caught.value.param) == ("'k' must be a boolean", "k")


def test_a_minimal_request_takes_every_default() -> None:
    body = {"model": MODEL, "messages": HI}
    request = parse_chat_request(body, CATALOGUE)
    assert request.body is body
    assert request.model == CATALOGUE.get(MODEL)
    assert list(request.messages) == HI
    assert (request.stream, request.include_usage, request.tools, request.tool_choice) == (False, False, [], None)
    assert (request.schema, request.wants_json, request.session_id, request.stop) == (None, False, None, ())


def test_every_option_reaches_the_request() -> None:
    response_format = {"type": "json_schema", "json_schema": {"name": "a", "schema": SCHEMA}}
    body = {
        "model": MODEL,
        "messages": [
            {"role": "developer", "content": "be brief"},
            {"role": "user", "content": [{"type": "text", "text": "q"}]},
            {"role": "assistant", "content": None, "tool_calls": [_call()]},
            {"role": "tool", "content": "r", "tool_call_id": "c1"},
        ],
        "stream": True,
        "stream_options": {"include_usage": True},
        "tools": [TOOL],
        "tool_choice": "required",
        "response_format": response_format,
    }
    request = parse_chat_request(body, CATALOGUE)
    assert (request.stream, request.include_usage, request.tools, request.tool_choice) == (
        True,
        True,
        [TOOL],
        "required",
    )
    assert (request.schema, request.wants_json) == (SCHEMA, True)


@pytest.mark.parametrize(
    ("response_format", "wants_json"),
    [({"type": "json_object"}, True), ({"type": "text"}, False), (None, False)],
)
def test_json_object_asks_for_json_without_a_schema(response_format: object, wants_json: bool) -> None:
    request = parse_chat_request({"model": MODEL, "messages": HI, "response_format": response_format}, CATALOGUE)
    assert (request.schema, request.wants_json) == (None, wants_json)


@pytest.mark.parametrize("include_usage", [False, None])
def test_include_usage_is_only_true_when_asked(include_usage: bool | None) -> None:
    options = {} if include_usage is None else {"include_usage": include_usage}
    body = {"model": MODEL, "messages": HI, "stream": False, "stream_options": options}
    request = parse_chat_request(body, CATALOGUE)
    assert (request.stream, request.include_usage) == (False, False)
