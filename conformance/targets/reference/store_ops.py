"""The store operations on the reference target: the engine's :class:`engine.store.memory.ResponseStore`.

A put stores what the Responses front stores for a turn: the conversation, then the output items
its :class:`engine.http.responses_shapes.OutputBuilder` makes of the answer. Entries are read back
verbatim, and the answer served from an entry is what ``GET /v1/responses/{id}`` serves
(:func:`engine.http.responses_items.stored_output`). The two callers are two tenants.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from conformance.targets._http_store import answer_text
from engine.chat import ParsedToolCall
from engine.http import ChatEvent, OutputBuilder, stored_output
from engine.store import ResponseStore, StoreLimits

_CALLERS = ("conformance:user:alpha", "conformance:user:beta")
_STORE_LOG = "engine.response_store"


class StoreOperations:
    _store: ResponseStore | None = None

    def store_open(self, limits: dict[str, int]) -> dict[str, Any]:
        self.store_close()
        # The total budget is left large: the kit's limits are the trimming ones (messages, entry bytes).
        total = max(StoreLimits().max_bytes, 4 * limits["max_entry_bytes"])
        self._store = ResponseStore(
            StoreLimits(max_messages=limits["max_messages"], entry_bytes=limits["max_entry_bytes"], max_bytes=total)
        )
        return {}

    def store_put(self, messages: list[dict[str, Any]], caller: int, answer: dict[str, Any]) -> dict[str, Any]:
        entry = "resp_" + uuid.uuid4().hex
        output = answer_items(answer)
        with _captured_warnings() as warnings:
            result = self._open_store().put(entry, [*messages, *output], _CALLERS[caller])
        if not result.stored:
            return {"rejected": result.reason or "refused without a reason"}
        return {"id": entry, "appended": output, "warnings": warnings}

    def store_get(self, id: str, caller: int) -> dict[str, Any]:
        lookup = self._open_store().get(id, _CALLERS[caller])
        if not lookup.ok or lookup.entry is None:
            return {"not_found": True}
        messages = lookup.entry.messages
        return {"messages": messages, "answer": answer_text(stored_output(messages))}

    def store_delete(self, id: str, caller: int) -> dict[str, Any]:
        return {"deleted": self._open_store().delete(id, _CALLERS[caller])}

    def store_close(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None

    def _open_store(self) -> ResponseStore:
        if self._store is None:
            raise RuntimeError("no response store is open: call store.open first")
        return self._store


def answer_items(answer: dict[str, Any]) -> list[dict[str, Any]]:
    """The output items the Responses front stores for a turn answered with ``answer``."""
    builder = OutputBuilder()
    if "text" in answer:
        builder.feed(ChatEvent("content", text=answer["text"]))
    else:
        call = answer["tool_call"]
        parsed = ParsedToolCall(id="call_" + uuid.uuid4().hex[:12], name=call["name"], arguments=call["arguments"])
        builder.feed(ChatEvent("tool_call", call=parsed))
    builder.feed(ChatEvent("finish", text="stop"))
    return builder.stored_items


class _Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


@contextmanager
def _captured_warnings() -> Iterator[list[str]]:
    """The warnings the store logs while the block runs (its own logger, this thread's writes only)."""
    handler = _Collect()
    logger = logging.getLogger(_STORE_LOG)
    level, propagate = logger.level, logger.propagate
    # Heard even when the run quiets the engine's logs; passed on only where they would have been.
    logger.propagate = propagate and logger.isEnabledFor(logging.WARNING)
    logger.setLevel(logging.WARNING)
    logger.addHandler(handler)
    try:
        yield handler.lines
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
        logger.propagate = propagate
