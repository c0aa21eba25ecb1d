"""Requests to conversations: Chat ``messages`` and Responses ``input`` items become one list of
entries (user and assistant turns, tool calls and tool results) plus the system text."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tests.support.foreigngw.http_io import bad_request

USER, ASSISTANT, CALL, RESULT = "user", "assistant", "call", "result"
TEXT_TYPES = frozenset({"text", "input_text", "output_text"})
SYSTEM_ROLES = frozenset({"system", "developer"})


@dataclass(frozen=True)
class Entry:
    """One conversation entry. ``content`` is a turn's string or parts list (user, assistant) or a
    tool result's text; ``name``/``arguments``/``call_id`` describe calls and results."""

    kind: str
    content: Any = None
    name: str = ""
    arguments: str = ""
    call_id: str = ""

    def key(self) -> list[Any]:
        """What identifies the entry when a conversation is matched against the pool: assistant
        turns by their text only (clients send it back as a string or as parts)."""
        if self.kind == ASSISTANT:
            return [ASSISTANT, text_of(self.content)]
        if self.kind == CALL:
            return [CALL, self.name, self.arguments]
        return [self.kind, self.content, self.call_id]


@dataclass
class Conversation:
    system: str = ""
    entries: list[Entry] = field(default_factory=list)

    def current_index(self) -> int:
        """The position of the last user entry (the current turn), -1 when there is none."""
        for index in range(len(self.entries) - 1, -1, -1):
            if self.entries[index].kind == USER:
                return index
        return -1

    def has_tool_traffic(self) -> bool:
        return any(entry.kind in (CALL, RESULT) for entry in self.entries)


def text_of(content: Any) -> str:
    """The text of a content value: a string, or the text parts of a list joined with ''."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            block["text"]
            for block in content
            if isinstance(block, Mapping)
            and isinstance(block.get("text"), str)
            and (block.get("type") in TEXT_TYPES or block.get("type") is None)
        )
    return ""


def has_text(content: Any) -> bool:
    """False for an empty or blank string and for a parts list without a non-blank text part."""
    return bool(text_of(content).strip())


def _as_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return text_of(value)
    return "" if value is None else json.dumps(value, ensure_ascii=False)


def _content(message: Mapping[str, Any], where: str) -> Any:
    content = message.get("content")
    if content is not None and not isinstance(content, str | list):
        raise bad_request(f"{where}.content must be a string, a list of parts or null")
    return content


def chat_conversation(messages: Any) -> Conversation:
    """The conversation of Chat ``messages`` (system and developer messages give the system text)."""
    if not isinstance(messages, list) or not messages:
        raise bad_request("messages must be a non-empty list", param="messages")
    system: list[str] = []
    entries: list[Entry] = []
    for index, message in enumerate(messages):
        where = f"messages[{index}]"
        if not isinstance(message, Mapping) or not isinstance(message.get("role"), str):
            raise bad_request(f"{where} must be an object with a role", param="messages")
        role, content = message["role"], _content(message, where)
        if role in SYSTEM_ROLES:
            system.append(_as_text(content))
        elif role == USER:
            entries.append(Entry(USER, content if content is not None else ""))
        elif role == ASSISTANT:
            calls = message.get("tool_calls") or []
            if not isinstance(calls, list):
                raise bad_request(f"{where}.tool_calls must be a list", param="messages")
            if content or not calls:
                entries.append(Entry(ASSISTANT, content if content is not None else ""))
            entries.extend(_chat_call(call, f"{where}.tool_calls") for call in calls)
        elif role in ("tool", "function"):
            call_id = message.get("tool_call_id") or message.get("name") or ""
            entries.append(Entry(RESULT, _as_text(content), call_id=str(call_id)))
        else:
            raise bad_request(f"{where} has an unknown role {role!r}", param="messages")
    return Conversation("\n".join(part for part in system if part), entries)


def _chat_call(call: Any, where: str) -> Entry:
    function = call.get("function") if isinstance(call, Mapping) else None
    if not isinstance(function, Mapping) or not isinstance(function.get("name"), str):
        raise bad_request(f"{where}: every tool call needs a function with a name", param="messages")
    arguments = function.get("arguments")
    return Entry(CALL, name=function["name"], arguments=_as_text(arguments), call_id=str(call.get("id") or ""))


def input_items(value: Any) -> list[dict[str, Any]]:
    """Responses ``input`` as a list of items (a string is one user message)."""
    if isinstance(value, str):
        return [{"type": "message", "role": "user", "content": value}]
    if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
        raise bad_request("input must be a string or a list of items", param="input")
    return list(value)


def responses_conversation(items: Sequence[Mapping[str, Any]], instructions: Any) -> Conversation:
    """The conversation of Responses items; ``instructions`` and system/developer messages give the
    system text. Reasoning items are left out."""
    system = [instructions] if isinstance(instructions, str) and instructions else []
    entries: list[Entry] = []
    for index, item in enumerate(items):
        where = f"input[{index}]"
        kind = item.get("type", "message")
        if kind == "message":
            role = item.get("role")
            content = _content(item, where)
            if role in SYSTEM_ROLES:
                system.append(_as_text(content))
            elif role in (USER, ASSISTANT):
                entries.append(Entry(str(role), content if content is not None else ""))
            else:
                raise bad_request(f"{where} has an unknown role {role!r}", param="input")
        elif kind == "function_call":
            if not isinstance(item.get("name"), str):
                raise bad_request(f"{where}: a function_call needs a name", param="input")
            entries.append(Entry(CALL, name=item["name"], arguments=_as_text(item.get("arguments")), call_id=_id(item)))
        elif kind == "function_call_output":
            entries.append(Entry(RESULT, _as_text(item.get("output")), call_id=_id(item)))
        elif kind != "reasoning":
            raise bad_request(f"{where} has an unsupported type {kind!r}", param="input")
    return Conversation("\n".join(part for part in system if part), entries)


def _id(item: Mapping[str, Any]) -> str:
    return str(item.get("call_id") or item.get("id") or "")
