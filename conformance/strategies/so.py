"""SO: JSON Schemas with a conforming instance, answers that violate them, tool-call turns.

Payloads are never wrapped in code fences (see :mod:`conformance.models.so`). Every violating
payload is checked against the kit's model before it is used, so a case never mislabels itself.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import assume
from hypothesis import strategies as st

from conformance.models.so import conforms
from conformance.strategies.text import unicode_text
from conformance.targets import Target

Case = dict[str, Any]
_NAMES = ("answer", "count", "tags", "ok", "kind", "note", "größe", "名前")
_KINDS = ("string", "integer", "boolean", "array", "enum")
_ENUM = ("alpha", "beta", "gamma")
VIOLATIONS = ("wrong_type", "missing_required", "extra_property", "prose", "truncated", "array")


def _schema_of(kind: str) -> dict[str, Any]:
    if kind == "array":
        return {"type": "array", "items": {"type": "string"}}
    if kind == "enum":
        return {"enum": list(_ENUM)}
    return {"type": kind}


def _value_of(kind: str) -> st.SearchStrategy[Any]:
    return {
        "string": unicode_text(max_size=30),
        "integer": st.integers(-(2**40), 2**40),
        "boolean": st.booleans(),
        "array": st.lists(unicode_text(max_size=12), max_size=4),
        "enum": st.sampled_from(_ENUM),
    }[kind]


_WRONG = {"string": 12, "integer": "twelve", "boolean": "yes", "array": {"not": "a list"}, "enum": "delta"}


@st.composite
def schemas(draw: st.DrawFn) -> tuple[dict[str, Any], dict[str, Any]]:
    """An object schema (``additionalProperties: false``) and an instance of it."""
    names = draw(st.lists(st.sampled_from(_NAMES), min_size=1, max_size=4, unique=True))
    kinds = {name: draw(st.sampled_from(_KINDS)) for name in names}
    required = draw(st.lists(st.sampled_from(names), min_size=1, unique=True))
    schema = {
        "type": "object",
        "properties": {name: _schema_of(kind) for name, kind in kinds.items()},
        "required": sorted(required),
        "additionalProperties": False,
    }
    instance = {name: draw(_value_of(kinds[name])) for name in names if name in required or draw(st.booleans())}
    return schema, instance


def _render(value: Any, ascii_only: bool, indent: bool) -> str:
    return json.dumps(value, ensure_ascii=ascii_only, indent=2 if indent else None)


@st.composite
def split_text(draw: st.DrawFn, text: str) -> list[str]:
    """``text`` as 1-3 consecutive chunks (split anywhere)."""
    cuts = sorted(draw(st.lists(st.integers(1, max(1, len(text) - 1)), max_size=2, unique=True)))
    pieces = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]
    return [p for p in pieces if p] or [text]


def _violate(kind: str, schema: dict[str, Any], instance: dict[str, Any], draw: st.DrawFn) -> Any:
    properties = schema["properties"]
    if kind == "wrong_type":
        name = draw(st.sampled_from(sorted(properties)))
        property_kind = "enum" if "enum" in properties[name] else properties[name]["type"]
        return {**instance, name: _WRONG[property_kind]}
    if kind == "missing_required":
        return {k: v for k, v in instance.items() if k != schema["required"][0]}
    if kind == "extra_property":
        return {**instance, "unexpected_field": 1}
    if kind == "array":
        return [instance]
    return None  # prose and truncated are texts, not values


@st.composite
def answers(draw: st.DrawFn, *, conforming: bool) -> Case:
    schema, instance = draw(schemas())
    ascii_only, indent = draw(st.booleans()), draw(st.booleans())
    if conforming:
        payload = _render(instance, ascii_only, indent)
        violation = None
    else:
        violation = draw(st.sampled_from(VIOLATIONS))
        if violation == "prose":
            payload = "The answer is " + draw(unicode_text(min_size=1, max_size=30))
        elif violation == "truncated":
            full = _render(instance, ascii_only, indent)
            payload = full[: max(1, len(full) // 2)]
        else:
            payload = _render(_violate(violation, schema, instance, draw), ascii_only, indent)
    if conforms(payload, schema) != conforming or not payload.strip():
        # The model decides; a draw that does not say what it claims (e.g. "missing" an optional
        # field that was absent anyway) is redrawn.
        assume(False)
    return {
        "schema": schema,
        "payload": payload,
        "violation": violation,
        "chunks": draw(split_text(payload)),
        "thinking": draw(st.one_of(st.just(""), unicode_text(min_size=1, max_size=20))),
        "stream": draw(st.booleans()),
        "include_usage": draw(st.booleans()),
        "usage": {"input_tokens": draw(st.integers(1, 5000)), "output_tokens": draw(st.integers(1, 900))},
    }


def violating_cases(target: Target) -> st.SearchStrategy[Case]:
    return answers(conforming=False)


def conforming_cases(target: Target) -> st.SearchStrategy[Case]:
    return answers(conforming=True).map(lambda case: {**case, "stream": True})


@st.composite
def tool_call_cases(draw: st.DrawFn, target: Target) -> Case:
    """A turn that answers a json_schema request with tool calls (and maybe prose that would violate)."""
    case = draw(answers(conforming=False))
    names = draw(
        st.lists(st.sampled_from(("lookup", "search_docs", "get_weather")), min_size=1, max_size=2, unique=True)
    )
    calls = [
        {"id": f"call_{k}", "name": name, "arguments_json": json.dumps({"q": draw(unicode_text(max_size=20))})}
        for k, name in enumerate(names)
    ]
    prose = draw(st.one_of(st.just(""), st.just("Let me look that up.")))
    return {**case, "chunks": [prose] if prose else [], "tool_calls": calls}
