"""OpenAI function tools in NO_TOOL emulation: the preamble that teaches the model a text markup,
and the parser that turns that markup in the model's reply back into tool calls.

In emulation the LS never sees the caller's tools; the model is told to write each call as

    <tool_call>{"name": "NAME", "arguments": {...}}</tool_call>

and :class:`ToolMarkupParser` reads those blocks out of the streamed text (docs/tool-markup.md).
The native bridge (:mod:`engine.cascade.tool_steps`) is the other path and shares nothing with this one.

A block ends at the first ``</tool_call>`` after its opening tag; the preamble asks the model to
write that text inside a JSON string as ``<\\/tool_call>`` (a valid JSON escape).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from engine.js import compact_json_text

OPEN_TAG: Final = "<tool_call>"
CLOSE_TAG: Final = "</tool_call>"
TOOL_NAME_PATTERN: Final = re.compile(r"[A-Za-z0-9_-]{1,64}")
TOOL_CHOICE_MODES: Final = ("none", "auto", "required")

_CLOSE_TAIL: Final = len(CLOSE_TAG) - 1  # what a block keeps back: a close tag split across feeds
_NO_PARAMETERS: Final = {"type": "object", "properties": {}}


class ToolSpecError(ValueError):
    """A request's ``tools`` or ``tool_choice`` is malformed (the HTTP layer answers 400)."""


@dataclass(frozen=True)
class ParsedToolCall:
    """One call read out of the model's text.

    ``arguments`` is the arguments object re-serialised as compact JSON
    (``json.dumps(separators=(",", ":"), ensure_ascii=False)``, key order kept), whether the model
    wrote an object or a JSON string holding one; an absent ``arguments`` is ``{}``.
    """

    id: str
    name: str
    arguments: str


#: What the parser yields: visible text (never empty) or a tool call.
Segment = str | ParsedToolCall


def tool_call_id(seed: str, index: int) -> str:
    """``call_`` + the first 24 hex digits of sha256(``seed`` NUL ``index``): stable per request and position."""
    return "call_" + hashlib.sha256(f"{seed}\0{index}".encode()).hexdigest()[:24]


# ------------------------------------------------------------------------------------ validation


def _function_of(index: int, entry: object) -> Mapping[str, Any]:
    where = f"tools[{index}]"
    if not isinstance(entry, Mapping):
        raise ToolSpecError(f"{where} must be an object")
    if entry.get("type") != "function":
        raise ToolSpecError(f"{where}.type must be 'function', got {entry.get('type')!r}")
    function = entry.get("function")
    if not isinstance(function, Mapping):
        raise ToolSpecError(f"{where}.function must be an object")
    name = function.get("name")
    if not isinstance(name, str) or not name:
        raise ToolSpecError(f"{where}.function.name must be a non-empty string")
    if not TOOL_NAME_PATTERN.fullmatch(name):
        raise ToolSpecError(f"{where}.function.name {name!r} must match ^[A-Za-z0-9_-]{{1,64}}$")
    description = function.get("description")
    if description is not None and not isinstance(description, str):
        raise ToolSpecError(f"{where}.function.description must be a string")
    parameters = function.get("parameters")
    if parameters is not None and not isinstance(parameters, Mapping):
        raise ToolSpecError(f"{where}.function.parameters must be an object")
    return function


def _tool_names(tools: object) -> list[str]:
    if tools is None:
        return []
    if not isinstance(tools, list | tuple):
        raise ToolSpecError("tools must be an array")
    names: list[str] = []
    for index, entry in enumerate(tools):
        name = str(_function_of(index, entry)["name"])
        if name in names:
            raise ToolSpecError(f"tools[{index}]: duplicate function name {name!r}")
        names.append(name)
    return names


def _forced_name(tool_choice: object) -> str | None:
    """The function a named ``tool_choice`` forces, or None for a mode string / absent."""
    if tool_choice is None:
        return None
    if isinstance(tool_choice, str):
        if tool_choice not in TOOL_CHOICE_MODES:
            raise ToolSpecError(f"tool_choice must be 'none', 'auto', 'required' or a function, got {tool_choice!r}")
        return None
    if not isinstance(tool_choice, Mapping) or tool_choice.get("type") != "function":
        raise ToolSpecError("tool_choice object must be {'type': 'function', 'function': {'name': ...}}")
    function = tool_choice.get("function")
    name = function.get("name") if isinstance(function, Mapping) else None
    if not isinstance(name, str) or not name:
        raise ToolSpecError("tool_choice.function.name must be a non-empty string")
    return name


def validate_tools(tools: object, tool_choice: object) -> None:
    """Raise :class:`ToolSpecError` unless ``tools`` (None = absent) and ``tool_choice`` are well formed.

    An empty ``tools`` list counts as no tools; without tools only an absent, ``"none"`` or
    ``"auto"`` tool_choice is accepted.
    """
    names = _tool_names(tools)
    forced = _forced_name(tool_choice)
    if not names and (tool_choice == "required" or forced is not None):
        raise ToolSpecError(f"tool_choice {tool_choice!r} requires tools")
    if forced is not None and forced not in names:
        raise ToolSpecError(f"tool_choice names function {forced!r}, which is not in tools")


# ------------------------------------------------------------------------------------ preamble


def _choice_rule(tool_choice: object) -> str:
    forced = _forced_name(tool_choice)
    if forced is not None:
        return f"In this reply you must call the function {forced} (at least one <tool_call> block naming it)."
    if tool_choice == "none":
        return "In this reply do not call any function: answer in plain text only, with no <tool_call> block."
    if tool_choice == "required":
        return "In this reply you must call at least one function."
    return "Call a function only when it helps; otherwise answer in plain text."


def tool_preamble(tools: Sequence[Mapping[str, Any]], tool_choice: object) -> str:
    """The tool preamble for the LS: each function (in the given order) and the call markup.

    Empty for no tools. Validates first (raises :class:`ToolSpecError` like :func:`validate_tools`);
    the same input always gives the same text.
    """
    validate_tools(list(tools), tool_choice)
    if not tools:
        return ""
    lines = [
        "You can call the following functions. Each is given with its name, its description and the "
        "JSON Schema of its arguments.",
        "",
    ]
    for tool in tools:
        function = tool["function"]
        lines.append(f"Function: {function['name']}")
        description = function.get("description")
        if description:
            lines.append(f"Description: {description}")
        parameters = function.get("parameters")
        lines.append(f"Parameters: {compact_json_text(_NO_PARAMETERS if parameters is None else parameters)}")
        lines.append("")
    lines += [
        "To call a function, write exactly this markup, with the arguments as a JSON object matching "
        "the function's parameters:",
        f'{OPEN_TAG}{{"name": "NAME", "arguments": {{...}}}}{CLOSE_TAG}',
        f"Write one {OPEN_TAG} block per call; to make several calls, write several blocks. Put nothing "
        "inside a block but that JSON object. Inside a JSON string write </tool_call> as <\\/tool_call>. "
        "The results of your calls are given to you in a later message.",
        _choice_rule(tool_choice),
    ]
    return "\n".join(lines)


# ------------------------------------------------------------------------------------ parsing


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):  # 1e999 would be re-serialised as the non-JSON Infinity
        raise ValueError(f"number out of range: {text}")
    return value


def _reject_constant(name: str) -> object:
    raise ValueError(f"not JSON: {name}")


def _loads(text: str) -> object:
    return json.loads(text, parse_float=_finite_float, parse_constant=_reject_constant)


def _read_call(body: str) -> tuple[str, str] | None:
    """(name, compact arguments) of a well-formed block body, else None."""
    try:
        parsed = _loads(body)
        if not isinstance(parsed, dict):
            return None
        name = parsed.get("name")
        arguments = parsed.get("arguments", {})
        if isinstance(arguments, str):
            arguments = _loads(arguments)
        if not isinstance(name, str) or not name or not isinstance(arguments, dict):
            return None
        return name, compact_json_text(arguments)
    except (ValueError, RecursionError):
        return None


def _partial_open(text: str, start: int) -> int:
    """Length of the longest tail of ``text[start:]`` that is a proper prefix of the opening tag."""
    for size in range(min(len(OPEN_TAG) - 1, len(text) - start), 0, -1):
        if text.endswith(OPEN_TAG[:size]):
            return size
    return 0


class ToolMarkupParser:
    """Incremental reader of ``<tool_call>`` blocks in a streamed reply; linear in the input.

    Visible text is passed on as soon as it cannot be the start of an opening tag. A complete
    block whose body is a JSON object with a non-empty string ``name`` and an object (or a JSON
    string holding an object, or nothing) as ``arguments`` becomes a :class:`ParsedToolCall`;
    any other block, and an unterminated one at :meth:`finish`, is passed on as visible text,
    tags included. With ``allowed_names``, a call naming another function is visible text too.
    Calls are numbered from 0 for their ids (:func:`tool_call_id` with ``id_seed``).
    """

    def __init__(self, id_seed: str, *, allowed_names: Collection[str] | None = None) -> None:
        self._seed = id_seed
        self._allowed = frozenset(allowed_names) if allowed_names is not None else None
        self._calls = 0
        self._in_block = False
        self._held = ""  # outside a block: a possible partial opening tag; inside: the body's last chars
        self._body: list[str] = []

    @property
    def calls(self) -> int:
        """How many tool calls were parsed so far."""
        return self._calls

    def feed(self, delta: str) -> list[Segment]:
        out = _Segments()
        text = self._held + delta
        pos = 0
        while True:
            if not self._in_block:
                start = text.find(OPEN_TAG, pos)
                if start < 0:
                    keep = _partial_open(text, pos)
                    out.text(text[pos : len(text) - keep])
                    self._held = text[len(text) - keep :]
                    return out.done()
                out.text(text[pos:start])
                pos = start + len(OPEN_TAG)
                self._in_block = True
                self._body = []
                continue
            end = text.find(CLOSE_TAG, pos)
            if end < 0:
                cut = max(pos, len(text) - _CLOSE_TAIL)
                if cut > pos:
                    self._body.append(text[pos:cut])
                self._held = text[cut:]
                return out.done()
            self._body.append(text[pos:end])
            self._close_block("".join(self._body), out)
            pos = end + len(CLOSE_TAG)

    def finish(self) -> list[Segment]:
        """Flush what is held back: a partial opening tag or an unterminated block, as visible text."""
        out = _Segments()
        if self._in_block:
            out.text(OPEN_TAG)
            out.text("".join(self._body))
        out.text(self._held)
        self._in_block = False
        self._body = []
        self._held = ""
        return out.done()

    def _close_block(self, body: str, out: _Segments) -> None:
        self._in_block = False
        self._body = []
        call = _read_call(body)
        if call is None or (self._allowed is not None and call[0] not in self._allowed):
            out.text(OPEN_TAG)
            out.text(body)
            out.text(CLOSE_TAG)
            return
        name, arguments = call
        out.call(ParsedToolCall(id=tool_call_id(self._seed, self._calls), name=name, arguments=arguments))
        self._calls += 1


class _Segments:
    """Builds one feed's output: adjacent text pieces become one segment, empty text none."""

    def __init__(self) -> None:
        self._out: list[Segment] = []
        self._texts: list[str] = []

    def text(self, piece: str) -> None:
        if piece:
            self._texts.append(piece)

    def call(self, call: ParsedToolCall) -> None:
        self._flush()
        self._out.append(call)

    def done(self) -> list[Segment]:
        self._flush()
        return self._out

    def _flush(self) -> None:
        if self._texts:
            self._out.append("".join(self._texts))
            self._texts = []


def parse_tool_markup(
    text: str, id_seed: str = "", *, allowed_names: Collection[str] | None = None
) -> tuple[str, list[ParsedToolCall]]:
    """A whole reply at once: (visible text joined, tool calls in order)."""
    parser = ToolMarkupParser(id_seed, allowed_names=allowed_names)
    segments = parser.feed(text) + parser.finish()
    visible = "".join(s for s in segments if isinstance(s, str))
    return visible, [s for s in segments if isinstance(s, ParsedToolCall)]
