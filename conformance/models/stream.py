"""An answer streamed as server-sent events, read as OpenAI chat-completion chunks: what every family
that judges a stream (SO, ACC) reads from it."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

DONE = "[DONE]"


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
