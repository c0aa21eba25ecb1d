"""The OpenAI Responses objects: the response object, its output items built from a chat turn's
events, its usage, and the SSE events of a streamed response (``event: <type>`` / ``data: <json>``,
every event with a ``sequence_number``)."""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

from engine.http.front import ChatEvent
from engine.http.responses_items import Item, new_id
from engine.js import compact_json_text

StreamEvent = tuple[str, dict[str, Any]]


def responses_usage(chat_usage: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """A chat usage block in Responses form (input/output tokens)."""
    if not chat_usage:
        return None
    prompt = int(chat_usage.get("prompt_tokens", 0))
    completion = int(chat_usage.get("completion_tokens", 0))
    cached = int((chat_usage.get("prompt_tokens_details") or {}).get("cached_tokens", 0))
    reasoning = int((chat_usage.get("completion_tokens_details") or {}).get("reasoning_tokens", 0))
    return {
        "input_tokens": prompt,
        "input_tokens_details": {"cached_tokens": cached},
        "output_tokens": completion,
        "output_tokens_details": {"reasoning_tokens": reasoning},
        "total_tokens": int(chat_usage.get("total_tokens", prompt + completion)),
    }


def response_object(
    *,
    response_id: str,
    created_at: int,
    model: str,
    status: str,
    output: Sequence[Mapping[str, Any]],
    echo: Mapping[str, Any],
    store: bool,
    usage: Mapping[str, Any] | None = None,
    instructions: str | None = None,
    previous_response_id: str | None = None,
    error: Mapping[str, Any] | None = None,
    incomplete_reason: str | None = None,
) -> dict[str, Any]:
    return {
        "id": response_id,
        "object": "response",
        "created_at": created_at,
        "status": status,
        "error": dict(error) if error is not None else None,
        "incomplete_details": {"reason": incomplete_reason} if incomplete_reason else None,
        "instructions": instructions,
        "max_output_tokens": echo.get("max_output_tokens"),
        "model": model,
        "output": [dict(item) for item in output],
        "parallel_tool_calls": echo.get("parallel_tool_calls", True),
        "previous_response_id": previous_response_id,
        "reasoning": {"effort": None, "summary": None},
        "store": store,
        "temperature": echo.get("temperature"),
        "text": echo.get("text", {"format": {"type": "text"}}),
        "tool_choice": echo.get("tool_choice", "auto"),
        "tools": list(echo.get("tools", [])),
        "top_p": echo.get("top_p"),
        "truncation": "disabled",
        "usage": dict(usage) if usage is not None else None,
        "user": echo.get("user"),
        "metadata": dict(echo.get("metadata") or {}),
    }


class OutputBuilder:
    """The output items of one turn, from its :class:`ChatEvent` values in order.

    :meth:`feed` returns the stream events each chat event makes (a non-streamed response ignores
    them). Thinking becomes one ``reasoning`` item (summary text), closed when anything else comes;
    text opens an assistant ``message`` item, closed by a tool call or the finish; each tool call is
    one ``function_call`` item. A turn that produced nothing still answers with an empty message.
    """

    def __init__(self) -> None:
        self.items: list[Item] = []
        self._message: Item | None = None
        self._text: list[str] = []
        self._reasoning: Item | None = None
        self._thinking: list[str] = []

    @property
    def stored_items(self) -> list[Item]:
        """The items a store keeps: reasoning is never stored."""
        return [item for item in self.items if item["type"] != "reasoning"]

    def feed(self, event: ChatEvent) -> list[StreamEvent]:
        events: list[StreamEvent] = []
        if event.kind == "reasoning":
            if self._reasoning is None:
                self._reasoning = {"type": "reasoning", "id": new_id("rs"), "summary": []}
                events.append(self._added(self._reasoning))
            self._thinking.append(event.text)
            return events
        events += self._close_reasoning()
        if event.kind == "content" and event.text:
            if self._message is None:
                events += self._open_message()
            assert self._message is not None
            self._text.append(event.text)
            events.append(("response.output_text.delta", {**self._part_ref(), "delta": event.text, "logprobs": []}))
        elif event.kind == "tool_call" and event.call is not None:
            events += self._close_message()
            call = event.call
            item: Item = {
                "type": "function_call",
                "id": new_id("fc"),
                "call_id": call.id,
                "name": call.name,
                "arguments": "",
                "status": "in_progress",
            }
            events.append(self._added(item))
            ref = {"item_id": item["id"], "output_index": len(self.items) - 1}
            events.append(("response.function_call_arguments.delta", {**ref, "delta": call.arguments}))
            events.append(
                ("response.function_call_arguments.done", {**ref, "name": call.name, "arguments": call.arguments})
            )
            item.update(arguments=call.arguments, status="completed")
            events.append(self._done(item))
        elif event.kind == "finish":
            if not self.items:
                events += self._open_message()
            events += self._close_message()
        return events

    # ------------------------------------------------------------------------------------ internals

    def _added(self, item: Item) -> StreamEvent:
        self.items.append(item)
        return "response.output_item.added", {"output_index": len(self.items) - 1, "item": dict(item)}

    def _done(self, item: Item) -> StreamEvent:
        return "response.output_item.done", {"output_index": self.items.index(item), "item": _copy(item)}

    def _part_ref(self) -> dict[str, Any]:
        assert self._message is not None
        return {"item_id": self._message["id"], "output_index": self.items.index(self._message), "content_index": 0}

    def _open_message(self) -> list[StreamEvent]:
        message: Item = {"type": "message", "id": new_id("msg"), "status": "in_progress", "role": "assistant"}
        message["content"] = []
        added = self._added(message)
        self._message, self._text = message, []
        part = {"type": "output_text", "text": "", "annotations": []}
        return [added, ("response.content_part.added", {**self._part_ref(), "part": part})]

    def _close_message(self) -> list[StreamEvent]:
        if self._message is None:
            return []
        text = "".join(self._text)
        part = {"type": "output_text", "text": text, "annotations": []}
        ref = self._part_ref()
        self._message.update(status="completed", content=[part])
        events = [
            ("response.output_text.done", {**ref, "text": text, "logprobs": []}),
            ("response.content_part.done", {**ref, "part": dict(part)}),
            self._done(self._message),
        ]
        self._message = None
        return events

    def _close_reasoning(self) -> list[StreamEvent]:
        if self._reasoning is None:
            return []
        self._reasoning["summary"] = [{"type": "summary_text", "text": "".join(self._thinking)}]
        done = self._done(self._reasoning)
        self._reasoning = None
        return [done]


class EventWriter:
    """SSE frames of one streamed response, numbered from 0."""

    def __init__(self) -> None:
        self._sequence = 0

    def frame(self, kind: str, payload: Mapping[str, Any]) -> bytes:
        data = {"type": kind, "sequence_number": self._sequence, **payload}
        self._sequence += 1
        return f"event: {kind}\ndata: {compact_json_text(data)}\n\n".encode()


def _copy(item: Item) -> Item:
    return copy.deepcopy(item)
