"""A chat-completions request body, checked: every refusal is an :class:`ApiError` naming the parameter."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from engine.chat.structured_output import ResponseFormatError, requested_schema
from engine.chat.tool_markup import ToolSpecError, validate_tools
from engine.http.errors import ApiError, bad_request
from engine.model_catalogue import ModelCatalogue, ModelInfo

ROLES = frozenset({"system", "developer", "user", "assistant", "tool"})
_NUMBER_PARAMS = ("temperature", "top_p", "frequency_penalty", "presence_penalty")
_COUNT_PARAMS = ("max_tokens", "max_completion_tokens")
# Parameters the LS cannot honour: refused unless they ask for the default (REQ-2).
_PENALTIES = ("frequency_penalty", "presence_penalty")
_MAX_STOP_SEQUENCES = 4
# A conversation ends with something to answer: a user message or tool results.
_ANSWERABLE_LAST = frozenset({"user", "tool"})


@dataclass(frozen=True)
class ChatRequest:
    body: Mapping[str, Any]
    model: ModelInfo
    messages: Sequence[Mapping[str, Any]]
    stream: bool
    include_usage: bool
    tools: Sequence[Mapping[str, Any]]
    tool_choice: object
    schema: Mapping[str, Any] | None
    wants_json: bool
    stop: tuple[str, ...] = ()
    session_id: str | None = None  # the durable session the request names (X-Session-Id), engine.http.sessions


def parse_chat_request(body: object, catalogue: ModelCatalogue) -> ChatRequest:
    if not isinstance(body, dict):
        raise bad_request("the request body must be a JSON object")
    model = resolve_model(body, catalogue)
    messages = _messages(body.get("messages"))
    stream = optional_bool(body, "stream")
    include_usage = False
    options = body.get("stream_options")
    if options is not None:
        if not isinstance(options, dict):
            raise bad_request("'stream_options' must be an object", param="stream_options")
        include_usage = optional_bool(options, "include_usage", where="stream_options.include_usage")
    n = body.get("n")
    if n is not None and (isinstance(n, bool) or n != 1):
        raise bad_request("only n=1 is supported", param="n")
    check_sampling_params(body, numbers=_NUMBER_PARAMS, counts=_COUNT_PARAMS)
    refuse_unservable(body)
    stop = stop_sequences(body.get("stop"))
    tools = body.get("tools")
    tool_choice = body.get("tool_choice")
    try:
        validate_tools(tools if tools is not None else [], tool_choice)
    except ToolSpecError as exc:
        raise bad_request(str(exc), param="tools") from None
    response_format = body.get("response_format")
    try:
        schema = requested_schema(response_format)
    except ResponseFormatError as exc:
        raise bad_request(str(exc), param="response_format") from None
    wants_json = schema is not None or (
        isinstance(response_format, dict) and response_format.get("type") == "json_object"
    )
    return ChatRequest(
        body=body,
        model=model,
        messages=messages,
        stream=stream,
        include_usage=include_usage,
        tools=list(tools or []),
        tool_choice=tool_choice,
        schema=schema,
        wants_json=wants_json,
        stop=stop,
    )


def resolve_model(body: Mapping[str, Any], catalogue: ModelCatalogue) -> ModelInfo:
    """The served model ``body["model"]`` names: 400 when absent, 404 ``model_not_found`` when unknown."""
    model_name = body.get("model")
    if not isinstance(model_name, str) or not model_name:
        raise bad_request("'model' is required and must be a non-empty string", param="model")
    model = catalogue.get(model_name)
    if model is None:
        raise ApiError(
            404,
            f"The model {model_name!r} does not exist; GET /v1/models lists the models served",
            param="model",
            code="model_not_found",
        )
    return model


def check_sampling_params(body: Mapping[str, Any], *, numbers: Sequence[str], counts: Sequence[str]) -> None:
    """``numbers``: finite numbers when present; ``counts``: positive integers when present."""
    for name in numbers:
        value = body.get(name)
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value)
        ):
            raise bad_request(f"'{name}' must be a number", param=name)
    for name in counts:
        value = body.get(name)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            raise bad_request(f"'{name}' must be a positive integer", param=name)


def refuse_unservable(body: Mapping[str, Any]) -> None:
    """400 for what the LS cannot do as asked, rather than a 200 that ignored it: log probabilities, a
    seed, a non-zero penalty, a logit bias (REQ-2). The defaults (absent, null, false, 0, {}) pass."""
    if body.get("logprobs") not in (None, False):
        raise bad_request(
            "'logprobs' is not supported: the language server reports no token probabilities", param="logprobs"
        )
    if body.get("top_logprobs") is not None:
        raise bad_request(
            "'top_logprobs' is not supported: the language server reports no token probabilities", param="top_logprobs"
        )
    if body.get("seed") is not None:
        raise bad_request("'seed' is not supported: the language server cannot sample deterministically", param="seed")
    for name in _PENALTIES:
        if body.get(name) not in (None, 0):
            raise bad_request(f"'{name}' is not supported: only 0 (the default) is served", param=name)
    if body.get("logit_bias") not in (None, {}):
        raise bad_request(
            "'logit_bias' is not supported: the language server takes no token biases", param="logit_bias"
        )


def stop_sequences(value: object) -> tuple[str, ...]:
    """``stop`` as up to four non-empty strings (a string is one); absent or null is none."""
    if value is None:
        return ()
    sequences = [value] if isinstance(value, str) else value
    if (
        not isinstance(sequences, list)
        or not 1 <= len(sequences) <= _MAX_STOP_SEQUENCES
        or not all(isinstance(s, str) and s for s in sequences)
    ):
        raise bad_request(
            f"'stop' must be a non-empty string or an array of 1 to {_MAX_STOP_SEQUENCES} non-empty strings",
            param="stop",
        )
    return tuple(sequences)


def optional_bool(holder: Mapping[str, Any], key: str, *, where: str | None = None) -> bool:
    value = holder.get(key)
    if value is None:
        return False
    if not isinstance(value, bool):
        raise bad_request(f"'{where or key}' must be a boolean", param=where or key)
    return value


def _messages(value: object) -> list[Mapping[str, Any]]:
    if not isinstance(value, list) or not value:
        raise bad_request("'messages' must be a non-empty array of message objects", param="messages")
    for index, message in enumerate(value):
        where = f"messages[{index}]"
        if not isinstance(message, dict):
            raise bad_request(f"{where} must be an object", param=where)
        role = message.get("role")
        if role not in ROLES:
            raise bad_request(f"{where}.role must be one of {', '.join(sorted(ROLES))}, not {role!r}", param=where)
        content = message.get("content")
        if content is not None and not isinstance(content, str | list):
            raise bad_request(f"{where}.content must be a string, an array of parts or null", param=where)
        if isinstance(content, list) and not all(isinstance(part, dict) for part in content):
            raise bad_request(f"{where}.content parts must be objects", param=where)
        if role == "tool" and not isinstance(message.get("tool_call_id"), str):
            raise bad_request(f"{where}.tool_call_id must be a string", param=where)
        calls = message.get("tool_calls")
        if calls is not None:
            _tool_calls(calls, where)
        if content is None and role != "assistant":
            raise bad_request(f"{where}.content is required for role {role}", param=where)
    _something_to_answer(value)
    return value


def _something_to_answer(messages: list[Mapping[str, Any]]) -> None:
    """The last message is a user message with text or an image, or tool results (REQ-2)."""
    last = messages[-1]
    where = f"messages[{len(messages) - 1}]"
    if last.get("role") not in _ANSWERABLE_LAST:
        raise bad_request(
            f"nothing to answer: the conversation ends with role {last.get('role')}, not user or tool",
            param=where,
        )
    if last.get("role") == "user" and not _has_input(last.get("content")):
        raise bad_request("nothing to answer: the last user message is empty", param=where)


def _has_input(content: object) -> bool:
    if isinstance(content, str):
        return bool(content.strip())
    if isinstance(content, list):
        for part in content:
            if part.get("type") == "text":
                if isinstance(part.get("text"), str) and part["text"].strip():
                    return True
            elif part.get("type") is not None:
                return True  # an image, a file: something to look at
    return False


def _tool_calls(calls: object, where: str) -> None:
    if not isinstance(calls, list):
        raise bad_request(f"{where}.tool_calls must be an array", param=where)
    for index, call in enumerate(calls):
        function = call.get("function") if isinstance(call, dict) else None
        if (
            not isinstance(call, dict)
            or not isinstance(call.get("id"), str)
            or not isinstance(function, dict)
            or not isinstance(function.get("name"), str)
            or not isinstance(function.get("arguments"), str)
        ):
            raise bad_request(
                f"{where}.tool_calls[{index}] must be {{id, type: function, function: {{name, arguments: string}}}}",
                param=where,
            )
