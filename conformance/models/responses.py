"""What a Responses answer says of its turn (TURN-4): the status it reports and the output it carries.

A streamed answer reports its status in its one terminal event (``response.completed``,
``response.incomplete`` or ``response.failed``), whose ``response`` object must say the same; a
non-stream answer and a later read say it in the body's ``status``. The output is compared as a client
reads it: each message's text (its ``output_text`` parts, joined) and each function call's name and
arguments, in order.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

# A stream's terminal events and the status each one reports.
TERMINAL_EVENTS = {
    "response.completed": "completed",
    "response.incomplete": "incomplete",
    "response.failed": "failed",
}


@dataclass(frozen=True)
class ResponseView:
    """``problem``: why the answer reports no single status (None when it does)."""

    status: str | None
    response_id: str | None
    incomplete_reason: Any
    output: tuple[tuple[str, str, str], ...]  # (kind, text or name, arguments)
    problem: str | None = None

    @property
    def function_calls(self) -> int:
        return sum(1 for kind, _, _ in self.output if kind == "function_call")


def body_view(body: Any) -> ResponseView:
    """What a non-stream body or a read reports."""
    if not isinstance(body, Mapping):
        return ResponseView(None, None, None, (), f"the body is no response object: {str(body)[:200]!r}")
    return _response_view(body)


def answer_view(events: Sequence[str] | None, body: Any) -> ResponseView:
    """What an answer reports: a stream (``events``), or else its body."""
    return stream_view(events) if events is not None else body_view(body)


def stream_view(events: Sequence[str]) -> ResponseView:
    """What a stream reports: its one terminal event's type, which its response object must agree with."""
    terminals = [
        (str(event["type"]), event.get("response"))
        for event in _json_events(events)
        if event.get("type") in TERMINAL_EVENTS
    ]
    if len(terminals) != 1:
        named = [kind for kind, _ in terminals]
        return ResponseView(None, None, None, (), f"the stream has {len(terminals)} terminal events {named}, not one")
    kind, response = terminals[0]
    view = body_view(response)
    said = TERMINAL_EVENTS[kind]
    if view.problem is None and view.status != said:
        problem = f"the stream's terminal event {kind} carries a response whose status is {view.status!r}"
        return ResponseView(said, view.response_id, view.incomplete_reason, view.output, problem)
    return ResponseView(said, view.response_id, view.incomplete_reason, view.output, view.problem)


def _response_view(body: Mapping[str, Any]) -> ResponseView:
    status = body.get("status")
    details = body.get("incomplete_details")
    reason = details.get("reason") if isinstance(details, Mapping) else None
    response_id = body.get("id") if isinstance(body.get("id"), str) else None
    problem = None
    if "output_text" in body and not isinstance(body["output_text"], str):
        problem = f"output_text is not a string: {str(body['output_text'])[:200]!r}"
    return ResponseView(
        str(status) if status is not None else None, response_id, reason, _output(body.get("output")), problem
    )


def _output(items: Any) -> tuple[tuple[str, str, str], ...]:
    out: list[tuple[str, str, str]] = []
    for item in items if isinstance(items, list) else ():
        if not isinstance(item, Mapping):
            continue
        if item.get("type") == "message":
            content = item.get("content")
            parts = content if isinstance(content, list) else []
            text = content if isinstance(content, str) else ""
            text += "".join(
                str(p.get("text") or "") for p in parts if isinstance(p, Mapping) and p.get("type") == "output_text"
            )
            out.append(("message", text, ""))
        elif item.get("type") == "function_call":
            out.append(("function_call", str(item.get("name", "")), str(item.get("arguments", ""))))
    return tuple(out)


def announced_id(events: Sequence[str]) -> str | None:
    """The response id a stream announced first (``response.created`` carries it before any output)."""
    for event in _json_events(events):
        response = event.get("response")
        if isinstance(response, dict) and isinstance(response.get("id"), str):
            return str(response["id"])
    return None


def _json_events(events: Sequence[str]) -> Iterator[dict[str, Any]]:
    """The events whose data is a JSON object, parsed (``[DONE]`` and other text left out)."""
    for data in events:
        try:
            event = json.loads(data)
        except ValueError:
            continue
        if isinstance(event, dict):
            yield event
