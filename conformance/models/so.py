"""SO: the kit's own model of structured output (seed 001 D2), written without the engine.

An answer conforms when its text, stripped of surrounding whitespace, parses as strict JSON and
validates against the requested schema (``jsonschema``, the schema's own dialect). The strategies
generate unfenced payloads only, so how a gateway strips code fences never decides a verdict.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import jsonschema

VIOLATION_CODE = "STRUCTURED_OUTPUT_NOT_CONFORMING"
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
