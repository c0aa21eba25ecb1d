"""The kit's model of REQ: what ``stop`` leaves of an answer."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any


def stop_sequences(stop: str | Sequence[str]) -> list[str]:
    return [stop] if isinstance(stop, str) else list(stop)


def text_before_stop(text: str, stop: str | Sequence[str]) -> str:
    """``text`` up to (not including) the earliest occurrence of any stop sequence; all of it when none occurs."""
    found = [i for i in (text.find(s) for s in stop_sequences(stop)) if i >= 0]
    return text[: min(found)] if found else text


# What a JavaScript gateway writes for an object it concatenated as a string.
OBJECT_RENDERED = "[object Object]"


def _texts(content: Any) -> list[str]:
    """The texts a content carries, each part on its own (a gateway joins parts as it likes)."""
    if isinstance(content, str):
        return [content]
    if isinstance(content, list):
        return [str(p.get("text", "")) for p in content if isinstance(p, dict) and p.get("type") == "text"]
    return []


def _json_forms(value: str) -> tuple[str, ...]:
    """``value`` as it appears inside a JSON document: as is, or with non-ASCII escaped."""
    return tuple(dict.fromkeys((value, json.dumps(value)[1:-1])))


def history_pieces(messages: list[dict[str, Any]]) -> list[tuple[str, tuple[str, ...]]]:
    """What a fresh cascade's Send must carry, in order: each piece named, with the forms it may take.
    User and assistant texts and tool results as given (surrounding whitespace aside), each tool call's
    name and argument values."""
    pieces: list[tuple[str, tuple[str, ...]]] = []
    for index, message in enumerate(messages):
        role = message.get("role")
        where = f"messages[{index}] ({role})"
        for text in _texts(message.get("content")):
            if text.strip():
                pieces.append((f"{where} text", (text.strip(),)))
        for call in message.get("tool_calls") or ():
            function = call["function"]
            pieces.append((f"{where} tool call name", (function["name"],)))
            for key, value in json.loads(function["arguments"]).items():
                pieces.append((f"{where} tool call {function['name']} argument {key}", _json_forms(value)))
    return pieces


def responses_input(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A chat conversation as the Responses API's input items: messages (parts as ``input_text`` for the user,
    ``output_text`` for the assistant), each tool call a ``function_call`` and each result a
    ``function_call_output``, in order."""
    items: list[dict[str, Any]] = []
    for message in messages:
        role, content = message.get("role"), message.get("content")
        if role == "tool":
            output = content if isinstance(content, str) else _parts(content, "input_text")
            items.append({"type": "function_call_output", "call_id": message["tool_call_id"], "output": output})
            continue
        if content:
            kind = "input_text" if role == "user" else "output_text"
            items.append({"role": role, "content": content if isinstance(content, str) else _parts(content, kind)})
        for call in message.get("tool_calls") or ():
            function = call["function"]
            items.append(
                {
                    "type": "function_call",
                    "call_id": call["id"],
                    "name": function["name"],
                    "arguments": function["arguments"],
                }
            )
    return items


def _parts(content: Any, kind: str) -> list[dict[str, Any]]:
    return [{"type": kind, "text": text} for text in _texts(content)]
