"""Tool turns of an OpenAI conversation lowered to the text the Cascade prompt builder replays.

The prompt builder keeps only user and assistant turns (client.js), so an assistant turn's tool
calls become ``<tool_call>`` markup after its text (the format the model is asked to use, see
docs/tool-markup.md), and each unbroken run of ``tool`` messages becomes one user turn of
``<tool_result>`` blocks. ``developer`` messages count as system messages. The caller's messages
are never mutated.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from engine.js import js_json_text
from engine.prompt.extract import content_to_string


def lower_tool_turns(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    lowered: list[dict[str, Any]] = []
    in_tool_run = False
    for message in messages:
        role = message.get("role")
        if role == "tool":
            block = _result_block(message)
            if in_tool_run:
                lowered[-1]["content"] += "\n" + block
            else:
                lowered.append({"role": "user", "content": block})
            in_tool_run = True
            continue
        in_tool_run = False
        if role == "developer":
            lowered.append({**message, "role": "system"})
        elif role == "assistant" and message.get("tool_calls"):
            text = content_to_string(message.get("content"))
            blocks = [_call_block(call) for call in message["tool_calls"]]
            lowered.append({"role": "assistant", "content": "\n".join([text, *blocks] if text else blocks)})
        else:
            lowered.append(dict(message))
    return lowered


def _call_block(call: Mapping[str, Any]) -> str:
    function = call.get("function") or {}
    arguments = function.get("arguments", "{}")
    try:
        parsed = json.loads(arguments)
    except (TypeError, ValueError):
        parsed = arguments
    payload = {"name": function.get("name", ""), "arguments": parsed}
    return f"<tool_call>{js_json_text(json.dumps(payload, ensure_ascii=False))}</tool_call>"


def _result_block(message: Mapping[str, Any]) -> str:
    call_id = str(message.get("tool_call_id", ""))
    return f'<tool_result tool_call_id="{call_id}">\n{content_to_string(message.get("content"))}\n</tool_result>'
