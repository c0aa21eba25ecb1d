"""Hand-built conversations for the unit tests of the STORE model (conformance/models/store.py):
messages in the Chat and Responses shapes the kit's strategies generate, each carrying its token or
call id, and the drop notice as the reference writes it (engine.md §3.C)."""

from __future__ import annotations

from typing import Any

from conformance.models.store import token

Message = dict[str, Any]


def notice(count: int, limit: str = "RESPONSE_STORE_MAX_MESSAGES") -> str:
    """The notice a limiter leaves where it dropped ``count`` messages."""
    return f"[... {count} earlier message(s) dropped by the response store to stay within {limit} ...]\n\n"


def user(index: int, body: str = "hello") -> Message:
    return {"role": "user", "content": f"{token(index)} {body}"}


def parts_user(index: int, block: str = "text", body: str = "hello") -> Message:
    return {"role": "user", "content": [{"type": block, "text": f"{token(index)} {body}"}]}


def chat_call(call_id: str, arguments: str = "{}", name: str = "write") -> Message:
    function = {"name": name, "arguments": arguments}
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": call_id, "type": "function", "function": function}],
    }


def chat_result(call_id: str, content: str) -> Message:
    return {"role": "tool", "tool_call_id": call_id, "content": content}


def call_item(call_id: str, arguments: str = "{}", name: str = "write") -> Message:
    return {"type": "function_call", "id": f"fc_{call_id}", "call_id": call_id, "name": name, "arguments": arguments}


def output_item(call_id: str, output: str) -> Message:
    return {"type": "function_call_output", "id": f"fco_{call_id}", "call_id": call_id, "output": output}


def with_extra(message: Message, value: Any) -> Message:
    """``message`` with one more field, ``extra``: where a test puts the value it compares."""
    return {**message, "extra": value}
