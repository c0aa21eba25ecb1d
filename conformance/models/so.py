"""SO: the kit's own model of structured output (seed 001 D2), written without the engine.

An answer conforms when its text, stripped of surrounding whitespace, parses as strict JSON and
validates against the requested schema (``jsonschema``, the schema's own dialect). The strategies
generate unfenced payloads only, so how a gateway strips code fences never decides a verdict.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import jsonschema

VIOLATION_CODE = "STRUCTURED_OUTPUT_NOT_CONFORMING"
DONE = "[DONE]"
# Per-response identity, not content: left out when two streams are compared frame by frame.
_VOLATILE_KEYS = ("id", "created", "system_fingerprint")


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def conforms(text: str, schema: Mapping[str, Any]) -> bool:
    try:
        value = json.loads(text.strip(), parse_constant=_reject_constant)
    except ValueError:
        return False
    validator = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    return bool(validator(schema).is_valid(value))


@dataclass
class StreamView:
    """An event stream read as OpenAI chunks."""

    events: list[str]
    chunks: list[dict[str, Any]] = field(default_factory=list)
    unparsable: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        for event in self.events:
            if event == DONE:
                continue
            try:
                parsed = json.loads(event)
            except ValueError:
                self.unparsable.append(event)
                continue
            if isinstance(parsed, dict):
                self.chunks.append(parsed)
            else:
                self.unparsable.append(event)

    @property
    def done(self) -> bool:
        return DONE in self.events

    @property
    def errors(self) -> list[dict[str, Any]]:
        return [c["error"] for c in self.chunks if isinstance(c.get("error"), dict)]

    def deltas(self) -> list[dict[str, Any]]:
        return [
            choice.get("delta") or {}
            for chunk in self.chunks
            for choice in chunk.get("choices") or ()
            if isinstance(choice, dict)
        ]

    @property
    def content(self) -> str:
        return "".join(str(d.get("content") or "") for d in self.deltas())

    @property
    def tool_call_names(self) -> list[str]:
        names = []
        for delta in self.deltas():
            for call in delta.get("tool_calls") or ():
                name = (call.get("function") or {}).get("name")
                if name:
                    names.append(name)
        return names

    @property
    def finish_reasons(self) -> list[str]:
        return [
            choice["finish_reason"]
            for chunk in self.chunks
            for choice in chunk.get("choices") or ()
            if isinstance(choice, dict) and choice.get("finish_reason")
        ]

    @property
    def usage(self) -> dict[str, Any] | None:
        found = [c["usage"] for c in self.chunks if isinstance(c.get("usage"), dict)]
        return found[-1] if found else None


def error_code(body: object) -> object:
    error = body.get("error") if isinstance(body, dict) else None
    return error.get("code") if isinstance(error, dict) else None


def comparable_frames(events: Sequence[str]) -> list[Any]:
    """The events with per-response identity left out, for a frame-by-frame comparison."""
    frames: list[Any] = []
    for event in events:
        try:
            parsed = json.loads(event)
        except ValueError:
            frames.append(event)
            continue
        if isinstance(parsed, dict):
            parsed = {k: v for k, v in parsed.items() if k not in _VOLATILE_KEYS}
        frames.append(parsed)
    return frames
