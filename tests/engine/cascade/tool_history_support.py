"""OpenAI-style tool histories for the additional_steps tests (mapping and delta)."""

from __future__ import annotations

import json
from collections.abc import Sequence

Msg = dict[str, object]


def call(call_id: str, name: str, args: object) -> Msg:
    arguments = args if isinstance(args, str) else json.dumps(args)
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def tool_round(calls: Sequence[tuple[str, str, object, object]], text: str = "") -> list[Msg]:
    """One assistant turn with tool calls and its results: (id, tool name, args, result or None)."""
    messages: list[Msg] = [
        {"role": "assistant", "content": text, "tool_calls": [call(i, n, a) for i, n, a, _ in calls]}
    ]
    messages += [{"role": "tool", "tool_call_id": i, "content": r} for i, _, _, r in calls if r is not None]
    return messages


def three_rounds() -> list[Msg]:
    """The seed's shape: 3 mapped steps in the history, the newest round holds 1."""
    return [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "fix the build"},
        *tool_round([("c1", "Bash", {"command": "make"}, "error: x")]),
        *tool_round([("c2", "Read", {"file_path": "/src/x.c"}, "int x;")]),
        *tool_round([("c3", "Bash", {"command": "make"}, "ok")]),
    ]
