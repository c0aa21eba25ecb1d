"""A ``POST /v1/responses`` body, checked: every refusal is an :class:`ApiError` naming the parameter.

Tools, ``tool_choice`` and ``text.format`` are translated to their chat-completions forms here, so a
Responses turn runs through the same tool preamble and structured-output checks as a chat turn.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from engine.chat.structured_output import ResponseFormatError, requested_schema
from engine.chat.tool_markup import ToolSpecError, validate_tools
from engine.http.chat_request import check_sampling_params, optional_bool, resolve_model
from engine.http.errors import bad_request
from engine.http.responses_items import Item, normalize_input
from engine.model_catalogue import ModelCatalogue, ModelInfo
from engine.store import MISSING, wants_persistence

_ECHOED = ("temperature", "top_p", "max_output_tokens", "metadata", "user")


@dataclass(frozen=True)
class ResponsesRequest:
    body: Mapping[str, Any]
    model: ModelInfo
    input_items: Sequence[Item]  # normalised, ids assigned; instructions are not among them
    instructions: str | None
    previous_response_id: str | None
    store: bool  # persistence asked for (wantsPersistence); whether it happens also needs a store
    stream: bool
    chat_tools: Sequence[Mapping[str, Any]]  # the tools in chat-completions form
    chat_tool_choice: object
    schema: Mapping[str, Any] | None
    wants_json: bool
    echo: Mapping[str, Any]  # request fields the response object repeats (tools, tool_choice, text, ...)


def parse_responses_request(body: object, catalogue: ModelCatalogue) -> ResponsesRequest:
    if not isinstance(body, dict):
        raise bad_request("the request body must be a JSON object")
    model = resolve_model(body, catalogue)
    if "input" not in body:
        raise bad_request("'input' is required: a string or an array of input items", param="input")
    items = normalize_input(body["input"])
    instructions = body.get("instructions")
    if instructions is not None and not isinstance(instructions, str):
        raise bad_request("'instructions' must be a string", param="instructions")
    previous = body.get("previous_response_id")
    if previous is not None and (not isinstance(previous, str) or not previous):
        raise bad_request("'previous_response_id' must be a non-empty string", param="previous_response_id")
    if not items and previous is None:
        raise bad_request("'input' holds no message, function call or function call output", param="input")
    stream = optional_bool(body, "stream")
    parallel = body.get("parallel_tool_calls")
    if parallel is not None and not isinstance(parallel, bool):
        raise bad_request("'parallel_tool_calls' must be a boolean", param="parallel_tool_calls")
    if body.get("background") is True:
        raise bad_request("background responses are not supported", param="background")
    check_sampling_params(body, numbers=("temperature", "top_p"), counts=("max_output_tokens",))
    metadata = body.get("metadata")
    if metadata is not None and not isinstance(metadata, dict):
        raise bad_request("'metadata' must be an object", param="metadata")
    tools = _tools(body.get("tools"))
    tool_choice = _tool_choice(body.get("tool_choice"))
    try:
        validate_tools(tools, tool_choice)
    except ToolSpecError as exc:
        raise bad_request(str(exc), param="tools" if "tool_choice" not in str(exc) else "tool_choice") from None
    text = body.get("text")
    schema, wants_json = _text_format(text)
    echo: dict[str, Any] = {name: body.get(name) for name in _ECHOED}
    echo["metadata"] = metadata or {}
    echo["tools"] = list(body.get("tools") or [])
    echo["tool_choice"] = body.get("tool_choice", "auto")
    echo["text"] = text if isinstance(text, dict) and "format" in text else {"format": {"type": "text"}}
    echo["parallel_tool_calls"] = True if parallel is None else parallel
    return ResponsesRequest(
        body=body,
        model=model,
        input_items=items,
        instructions=instructions,
        previous_response_id=previous,
        store=wants_persistence(body.get("store", MISSING)),
        stream=stream,
        chat_tools=tools,
        chat_tool_choice=tool_choice,
        schema=schema,
        wants_json=wants_json,
        echo=echo,
    )


def _tools(value: object) -> list[dict[str, Any]]:
    """Responses function tools ``{type, name, description, parameters, strict}`` in chat form."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise bad_request("'tools' must be an array of function tools", param="tools")
    tools: list[dict[str, Any]] = []
    for index, tool in enumerate(value):
        where = f"tools[{index}]"
        if not isinstance(tool, dict) or tool.get("type") != "function":
            kind = tool.get("type") if isinstance(tool, dict) else None
            raise bad_request(f"{where}: only function tools are supported (got type {kind!r})", param="tools")
        name = tool.get("name")
        if not isinstance(name, str) or not name:
            raise bad_request(f"{where}.name must be a non-empty string", param="tools")
        description, parameters = tool.get("description"), tool.get("parameters")
        if description is not None and not isinstance(description, str):
            raise bad_request(f"{where}.description must be a string", param="tools")
        if parameters is not None and not isinstance(parameters, dict):
            raise bad_request(f"{where}.parameters must be an object (a JSON Schema)", param="tools")
        function: dict[str, Any] = {"name": name}
        if description is not None:
            function["description"] = description
        if parameters is not None:
            function["parameters"] = parameters
        tools.append({"type": "function", "function": function})
    return tools


def _tool_choice(value: object) -> object:
    """``"auto"`` / ``"none"`` / ``"required"`` as they are; ``{type: function, name}`` in chat form."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, dict) and value.get("type") == "function":
        name = value.get("name")
        if not isinstance(name, str) or not name:
            raise bad_request("tool_choice.name must be a non-empty string", param="tool_choice")
        return {"type": "function", "function": {"name": name}}
    raise bad_request(
        "'tool_choice' must be 'none', 'auto', 'required' or {type: 'function', name}", param="tool_choice"
    )


def _text_format(text: object) -> tuple[Mapping[str, Any] | None, bool]:
    """``text.format`` as (the JSON Schema asked for, whether JSON is asked for)."""
    if text is None:
        return None, False
    if not isinstance(text, dict):
        raise bad_request("'text' must be an object", param="text")
    fmt = text.get("format")
    if fmt is None:
        return None, False
    if not isinstance(fmt, dict):
        raise bad_request("'text.format' must be an object", param="text.format")
    kind = fmt.get("type")
    if kind == "json_schema":
        chat_format: object = {
            "type": "json_schema",
            "json_schema": {"name": fmt.get("name"), "schema": fmt.get("schema")},
        }
    else:
        chat_format = fmt
    try:
        schema = requested_schema(chat_format)
    except ResponseFormatError as exc:
        message = (
            str(exc).replace("response_format.json_schema.", "text.format.").replace("response_format", "text.format")
        )
        raise bad_request(message, param="text.format") from None
    return schema, schema is not None or kind == "json_object"
