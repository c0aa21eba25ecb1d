"""Messages and oracles for the trimming tests (tests/engine/test_store_trim*.py)."""

from __future__ import annotations

import json
from typing import Any

from engine.store.trim import NOTICE_PATTERN


def user(text: Any) -> dict[str, Any]:
    return {"role": "user", "content": text}


def system(text: str) -> dict[str, Any]:
    return {"role": "system", "content": text}


def call(arguments: Any, call_id: str = "call_1", name: str = "f") -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def assistant_call(arguments: Any, content: Any = None) -> dict[str, Any]:
    return {"role": "assistant", "content": content, "tool_calls": [call(arguments)]}


def json_args(units: int) -> str:
    """A JSON document of exactly ``units`` characters."""
    text = '{"a":"' + "x" * (units - 8) + '"}'
    assert len(text) == units
    assert json.loads(text)
    return text


def leading_notices(text: str) -> str:
    """The drop notices ``text`` opens with (both stages' may lead), matched one after the other."""
    rest = text
    while found := NOTICE_PATTERN.match(rest):
        rest = rest[found.end() :]
    return text[: len(text) - len(rest)]
