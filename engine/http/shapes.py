"""The OpenAI objects the chat front answers with (engine.md §5.A): completion, stream chunks, usage."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from engine.cascade.usage import GeneratorUsage
from engine.chat.tool_markup import ParsedToolCall
from engine.js import compact_json_text

SYSTEM_FINGERPRINT = "fp_cascade_engine"
DONE = "[DONE]"


def openai_usage(usage: GeneratorUsage | None, *, prompt_chars: int, completion_chars: int) -> dict[str, Any]:
    """The usage block: from the wire's generator metadata when the turn had any (prompt tokens count
    fresh input, cache reads and cache writes), else the chars/4 estimate of the mirror's cachedUsage."""
    if usage is not None and usage.has_usage:
        prompt = usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens
        completion = usage.output_tokens
        cached = usage.cache_read_tokens
    else:
        prompt = max(1, math.ceil(prompt_chars / 4))
        completion = max(1, math.ceil(completion_chars / 4))
        cached = 0
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": cached},
        "completion_tokens_details": {"reasoning_tokens": 0},
    }


def tool_call_object(call: ParsedToolCall) -> dict[str, Any]:
    return {"id": call.id, "type": "function", "function": {"name": call.name, "arguments": call.arguments}}


def completion(
    *,
    completion_id: str,
    created: int,
    model: str,
    text: str,
    thinking: str,
    calls: Sequence[ParsedToolCall],
    finish_reason: str,
    usage: Mapping[str, Any],
) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": text if text or not calls else None}
    if thinking:
        message["reasoning_content"] = thinking
    if calls:
        message["tool_calls"] = [tool_call_object(call) for call in calls]
    return {
        "id": completion_id,
        "object": "chat.completion",
        "created": created,
        "model": model,
        "system_fingerprint": SYSTEM_FINGERPRINT,
        "service_tier": "default",
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": finish_reason}],
        "usage": dict(usage),
    }


class ChunkWriter:
    """Stream chunk objects of one completion, serialised as SSE data payloads."""

    def __init__(self, *, completion_id: str, created: int, model: str) -> None:
        self._base = {
            "id": completion_id,
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
            "system_fingerprint": SYSTEM_FINGERPRINT,
            "service_tier": "default",
        }
        self._tool_index = 0

    def _chunk(self, delta: Mapping[str, Any], finish_reason: str | None = None) -> str:
        chunk = {**self._base, "choices": [{"index": 0, "delta": dict(delta), "finish_reason": finish_reason}]}
        return compact_json_text(chunk)

    def role(self) -> str:
        return self._chunk({"role": "assistant", "content": ""})

    def reasoning(self, text: str) -> str:
        return self._chunk({"reasoning_content": text})

    def content(self, text: str) -> str:
        return self._chunk({"content": text})

    def tool_call(self, call: ParsedToolCall) -> str:
        index = self._tool_index
        self._tool_index += 1
        return self._chunk({"tool_calls": [{"index": index, **tool_call_object(call)}]})

    def finish(self, reason: str) -> str:
        return self._chunk({}, reason)

    def usage(self, usage: Mapping[str, Any]) -> str:
        return compact_json_text({**self._base, "choices": [], "usage": dict(usage)})


def error_frame(body: Mapping[str, Any]) -> str:
    return compact_json_text(body)


def sse(data: str) -> bytes:
    return f"data: {data}\n\n".encode()


HEARTBEAT = b": ping\n\n"
