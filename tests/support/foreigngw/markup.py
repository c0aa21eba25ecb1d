"""Tools without a native bridge: the tool preamble the prompt carries, and the ``<fgw_call>``
markup the answer text may hold (the only source of tool calls; LS proposals are ignored)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from tests.support.foreigngw.http_io import bad_request

CALL_MARKUP = re.compile(r'<fgw_call name="([^"<>]*)">(.*?)</fgw_call>', re.DOTALL)


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    parameters: Any


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    arguments: str


def parse_tools(value: Any) -> tuple[ToolSpec, ...]:
    """Chat tools (``{"type": "function", "function": {...}}``) or Responses tools (the function's
    fields at the top level)."""
    if value is None:
        return ()
    if not isinstance(value, list):
        raise bad_request("tools must be a list", param="tools")
    specs = []
    for index, tool in enumerate(value):
        if not isinstance(tool, Mapping):
            raise bad_request(f"tools[{index}] must be an object", param="tools")
        nested = tool.get("function")
        function: Mapping[str, Any] = nested if isinstance(nested, Mapping) else tool
        name = function.get("name")
        if not isinstance(name, str) or not name:
            raise bad_request(f"tools[{index}] needs a function name", param="tools")
        description = function.get("description")
        specs.append(ToolSpec(name, description if isinstance(description, str) else "", function.get("parameters")))
    return tuple(specs)


def preamble(tools: tuple[ToolSpec, ...]) -> str:
    """The tool section of the first text item: each tool, then how to call one."""
    lines = ["You can call these tools:"]
    for tool in tools:
        lines.append(f"- {tool.name}: {tool.description or '(no description)'}")
        if tool.parameters is not None:
            lines.append(f"  parameters (JSON schema): {json.dumps(tool.parameters, ensure_ascii=False)}")
    lines.append(
        'To call a tool, write <fgw_call name="NAME">{json arguments}</fgw_call> in your answer, '
        "one element per call; the results come back in the next turn."
    )
    return "\n".join(lines)


def split_calls(text: str, next_id: Callable[[], str]) -> tuple[str, tuple[ToolCall, ...]]:
    """The answer's content without the markup, and the calls the markup holds (in order)."""
    calls = tuple(ToolCall(next_id(), found.group(1), found.group(2).strip()) for found in CALL_MARKUP.finditer(text))
    if not calls:
        return text, ()
    return CALL_MARKUP.sub("", text).strip(), calls
