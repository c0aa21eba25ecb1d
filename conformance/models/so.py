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

from conformance.models.stream import DONE, StreamView

VIOLATION_CODE = "STRUCTURED_OUTPUT_NOT_CONFORMING"


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


def stream_essentials(events: Sequence[str]) -> dict[str, Any]:
    """What a schema check could change in a stream, and nothing poll timing decides: each channel's
    text (content, reasoning) and the tool calls, each in its own order; the role, the finish reasons,
    error frames, the usage and ``[DONE]`` at the end; events that are not JSON objects, in order. Left
    out: chunk boundaries, how the channels interleave, per-response identity (ids, timestamps)."""
    view = StreamView(list(events))
    return {
        "roles": view.roles,
        "content": view.content,
        "reasoning": view.reasoning,
        "tool calls": view.tool_calls,
        "finish reasons": view.finish_reasons,
        "error frames": view.errors,
        "usage": view.usage,
        "other events": view.unparsable,
        "ends with [DONE]": bool(events) and events[-1] == DONE,
    }


def gathered_into_one_frame(judged: Sequence[str], plain: Sequence[str]) -> bool:
    """Whether the json_schema stream delivered its content in one frame where the plain stream took
    several: buffering beyond what the plain stream shows (holding the frames until the answer
    validates, then releasing them as they came, is not)."""
    return StreamView(list(judged)).content_frames == 1 and StreamView(list(plain)).content_frames > 1
