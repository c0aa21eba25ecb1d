"""SCOPE: what a gateway shares, and with whom. Every example meets every kind of change once (the order
drawn), so no kind depends on the draws of a derandomized run; the values of each change are drawn."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st

from conformance.strategies.text import identifiers, unicode_text
from conformance.targets import Target

Case = dict[str, Any]

# Per-user signals that name nobody: each must behave exactly as no signal.
BLANK_SIGNALS = ("", " ", "  ", "\t", "\n", " \t\n")

# What SCOPE-2 changes in a request, each on its own: every one can change the answer.
ANSWER_CHANGES = (
    "image",
    "response_format",
    "reasoning effort",
    "nested reasoning effort",
    "stop",
    "temperature",
    "top_p",
    "top_k",
    "max_tokens",
    "max_completion_tokens",
    "tools",
)

# How SCOPE-3 changes a conversation before its next turn: each must start a fresh cascade.
HISTORY_CHANGES = (
    "edited answer",
    "regenerated answer",
    "system prompt",
    "tools",
    "image",
    "model",
    "caller",
)


def _question() -> st.SearchStrategy[str]:
    return unicode_text(min_size=1, max_size=30)


def _tool(name: str) -> dict[str, Any]:
    parameters = {"type": "object", "properties": {"q": {"type": "string"}}}
    return {"type": "function", "function": {"name": name, "description": f"Look up {name}.", "parameters": parameters}}


@st.composite
def caller_cases(draw: st.DrawFn, target: Target) -> Case:
    """SCOPE-1: a question asked by each caller of a pair, a conversation one caller starts and another
    continues, and two blank signals (distinct) to send in place of none."""
    blanks = draw(st.lists(st.sampled_from(BLANK_SIGNALS), min_size=2, max_size=2, unique=True))
    return {
        "question": draw(_question()),
        "follow_up": draw(_question()),
        "stream": draw(st.booleans()),
        "blanks": blanks,
    }


@st.composite
def _change(draw: st.DrawFn, kind: str) -> dict[str, Any]:
    """The request fields one SCOPE-2 change sets (``image``: which of two same-size images)."""
    if kind == "image":
        return {"seed": draw(st.integers(0, 2**16))}
    if kind == "response_format":
        schema = {"type": "object", "properties": {draw(identifiers()): {"type": "string"}}}
        return {"response_format": {"type": "json_schema", "json_schema": {"name": "answer", "schema": schema}}}
    if kind == "reasoning effort":
        return {"reasoning_effort": draw(st.sampled_from(("low", "medium")))}
    if kind == "nested reasoning effort":
        # Flat and nested name one setting: another value than the flat change's, or the two are one request.
        return {"reasoning": {"effort": "high"}}
    if kind == "stop":
        return {"stop": [draw(unicode_text(min_size=1, max_size=8))]}
    if kind == "temperature":
        return {"temperature": draw(st.integers(1, 19)) / 10}
    if kind == "top_p":
        return {"top_p": draw(st.integers(1, 9)) / 10}
    if kind == "top_k":
        return {"top_k": draw(st.integers(1, 100))}
    if kind in ("max_tokens", "max_completion_tokens"):
        # Two spellings of one limit (as the efforts above): odd for one, even for the other.
        return {kind: 2 * draw(st.integers(128, 4096)) + (kind == "max_tokens")}
    assert kind == "tools", kind
    return {"tools": [_tool(draw(identifiers("lookup_")))]}


@st.composite
def answer_change_cases(draw: st.DrawFn, target: Target) -> Case:
    """SCOPE-2: a question, its scripted answer (a JSON document, so a schema request conforms too), and every
    change of :data:`ANSWER_CHANGES` in a drawn order."""
    order = draw(st.permutations(ANSWER_CHANGES))
    return {
        "question": draw(_question()),
        "answer": json.dumps({"note": draw(unicode_text(max_size=30))}, ensure_ascii=False),
        "stream": draw(st.booleans()),
        "changes": [{"kind": kind, **draw(_change(kind))} for kind in order],
    }


@st.composite
def history_change_cases(draw: st.DrawFn, target: Target) -> Case:
    """SCOPE-3: a conversation's texts, and every change of :data:`HISTORY_CHANGES` in a drawn order, with
    the values each needs (another system prompt, another tool, an edit, which of two same-size images)."""
    tools = draw(st.lists(identifiers("tool_"), min_size=2, max_size=2, unique=True))
    systems = draw(st.lists(unicode_text(min_size=1, max_size=30), min_size=2, max_size=2, unique=True))
    return {
        "questions": draw(st.lists(_question(), min_size=2, max_size=2)),
        "systems": systems,
        "tools": [_tool(name) for name in tools],
        "edit": draw(unicode_text(min_size=1, max_size=20)),
        "image_seed": draw(st.integers(0, 2**16)),
        "stream": draw(st.booleans()),
        "changes": list(draw(st.permutations(HISTORY_CHANGES))),
    }


@st.composite
def chain_cases(draw: st.DrawFn, target: Target) -> Case:
    """SCOPE-4: a stored Responses turn (instructions, an earlier tool round in its input, a question), then a
    turn chained to it with other instructions that re-sends the earlier tool call."""
    instructions = draw(st.lists(unicode_text(min_size=1, max_size=30), min_size=2, max_size=2, unique=True))
    return {
        "instructions": instructions,
        "questions": draw(st.lists(_question(), min_size=3, max_size=3)),
        "tool": draw(identifiers("tool_")),
        "output": draw(unicode_text(min_size=1, max_size=30)),
        "stream": draw(st.booleans()),
    }
