"""A request's knobs: what it asks of the answer beyond its conversation, tools and stop sequences
(tool choice, output format, reasoning effort, thinking, sampling, the token cap), as one canonical
JSON text the response cache key covers. The gateway passes none of them to the LS, but another
value can be another answer, so two requests that differ in one never share a cached answer.

Spellings of one knob are one value: reasoning effort given flat (``reasoning_effort``) or nested
(``reasoning: {effort}``), the flat one winning when both are given; Chat's token cap given as
``max_tokens`` or ``max_completion_tokens``, the latter winning. Objects are compared with their
keys sorted.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

_SAMPLING = ("temperature", "top_p", "top_k")


def canonical(value: Any) -> str:
    """``value`` as JSON with its objects' keys sorted and no spaces."""
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def _given(body: Mapping[str, Any], *names: str) -> Any:
    """The first of ``names`` the body gives a non-null value, None when it gives none."""
    return next((body[name] for name in names if body.get(name) is not None), None)


def _effort(body: Mapping[str, Any]) -> Any:
    flat = body.get("reasoning_effort")
    if flat is not None:
        return flat
    nested = body.get("reasoning")
    return nested.get("effort") if isinstance(nested, Mapping) else None


def _knobs(body: Mapping[str, Any], output: str, caps: tuple[str, ...]) -> str:
    """The knobs of a body whose output format is its ``output`` field and whose token cap is the first of
    ``caps`` given."""
    return canonical(
        {
            "tool_choice": body.get("tool_choice"),
            output: body.get(output),
            "reasoning_effort": _effort(body),
            "thinking": body.get("thinking"),
            **{name: body.get(name) for name in _SAMPLING},
            "max_tokens": _given(body, *caps),
        }
    )


def chat_knobs(body: Mapping[str, Any]) -> str:
    """The knobs of a Chat body (its ``stop`` is in the turn already, parsed)."""
    return _knobs(body, "response_format", ("max_completion_tokens", "max_tokens"))


def responses_knobs(body: Mapping[str, Any]) -> str:
    """The knobs of a Responses body (``text`` holds its output format)."""
    return _knobs(body, "text", ("max_output_tokens",))
