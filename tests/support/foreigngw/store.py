"""The response store (full personality): entries are the conversation items of a Responses call
(the chain, the input as received, the output), trimmed to the store's limits before storing.

1. Count cap: keep the leading system items (at most cap - 1) and the newest items; one notice
   naming how many were dropped goes at the seam (the first item kept after the head), or on the
   last head item when the seam is the newest item, which is never rewritten otherwise.
2. Byte budget (the entry serialized as JSON, UTF-8): the ``arguments`` of function calls, largest
   first, are replaced whole by the ``__truncated__`` document when they are JSON documents and cut
   to a prefix plus the truncation marker otherwise. Other strings are left as they are.

Only the owner reads or deletes an entry.
"""

from __future__ import annotations

import copy
import json
import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tests.support.foreigngw.http_io import log
from tests.support.foreigngw.settings import Settings

MAX_ENTRIES = 2000
NOTICE = "[... {n} earlier message(s) dropped by the response store to stay within RESPONSE_STORE_MAX_MESSAGES ...]\n\n"
TRUNCATION_MARKER = "\n\n[... truncated by the response store to stay within RESPONSE_STORE_MAX_BYTES ...]"
ARGUMENTS_TRUNCATION_JSON = (
    '{"__truncated__":"[... tool call arguments truncated by the response store to stay within '
    'RESPONSE_STORE_MAX_BYTES ...]"}'
)
_SYSTEM_ROLES = ("system", "developer")
_TEXT_BLOCKS = ("input_text", "output_text", "text")


@dataclass(frozen=True)
class Entry:
    owner: str
    items: list[dict[str, Any]]
    response: dict[str, Any]


def _size(items: list[dict[str, Any]]) -> int:
    return len(json.dumps(items, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))


def _is_json_document(text: str) -> bool:
    stripped = text.lstrip()
    return stripped[:1] in ("{", "[")


def _with_notice(item: dict[str, Any], notice: str) -> dict[str, Any]:
    """A copy of ``item`` whose content starts with ``notice`` (a leading text block for parts)."""
    content = item.get("content")
    if isinstance(content, str):
        return {**item, "content": notice + content}
    if isinstance(content, list):
        types = [b.get("type") for b in content if isinstance(b, Mapping) and b.get("type") in _TEXT_BLOCKS]
        kind = types[0] if types else ("output_text" if item.get("role") == "assistant" else "input_text")
        return {**item, "content": [{"type": kind, "text": notice}, *content]}
    return {**item, "content": notice}


def trim_count(items: list[dict[str, Any]], cap: int, *, notice: bool) -> tuple[list[dict[str, Any]], int]:
    """The items the count cap keeps, and how many it dropped."""
    if len(items) <= cap:
        return items, 0
    lead = 0
    while lead < len(items) and items[lead].get("role") in _SYSTEM_ROLES:
        lead += 1
    head = items[: min(lead, cap - 1)]
    kept = [*head, *items[len(items) - (cap - len(head)) :]]
    dropped = len(items) - cap
    if notice:
        seam = len(head)
        at = seam - 1 if seam == len(kept) - 1 and seam > 0 else seam
        kept[at] = _with_notice(kept[at], NOTICE.format(n=dropped))
    return kept, dropped


def _cut(value: str, overflow: int) -> str | None:
    """``value`` cut to a prefix plus the marker, shorter by about ``overflow`` bytes; None when a
    cut would not shrink it."""
    keep = max(1, len(value) - overflow - len(TRUNCATION_MARKER))
    cut = value[:keep] + TRUNCATION_MARKER
    return cut if len(cut) < len(value) else None


def trim_bytes(items: list[dict[str, Any]], budget: int, *, splice: bool) -> tuple[list[dict[str, Any]], int]:
    """The items with function-call arguments shrunk, largest first, until the entry fits (or
    nothing is left to shrink); how many arguments were rewritten."""
    rewritten = 0
    while (size := _size(items)) > budget:
        best: tuple[int, int, str] | None = None  # (length, index, replacement)
        for index, item in enumerate(items):
            value = item.get("arguments")
            if item.get("type") != "function_call" or not isinstance(value, str):
                continue
            if _is_json_document(value) and not splice:
                replacement: str | None = (
                    ARGUMENTS_TRUNCATION_JSON if len(value) > len(ARGUMENTS_TRUNCATION_JSON) else None
                )
            else:
                replacement = _cut(value, size - budget)
            if replacement is not None and (best is None or len(value) > best[0]):
                best = (len(value), index, replacement)
        if best is None:
            break
        items = [*items[: best[1]], {**items[best[1]], "arguments": best[2]}, *items[best[1] + 1 :]]
        rewritten += 1
    return items, rewritten


class ResponseStore:
    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self._entries: OrderedDict[str, Entry] = OrderedDict()
        self._lock = threading.Lock()

    def put(self, response_id: str, owner: str, items: list[dict[str, Any]], response: dict[str, Any]) -> None:
        """Store a trimmed copy (the caller's objects are never changed)."""
        settings = self._settings
        items = copy.deepcopy(items)
        notice = not settings.defect("silent-count-drop")
        items, dropped = trim_count(items, settings.store_max_messages, notice=notice)
        if dropped and notice:
            log(
                f"[response-store] dropped {dropped} message(s) to fit RESPONSE_STORE_MAX_MESSAGES "
                f"({settings.store_max_messages}) in {response_id}"
            )
        splice = settings.defect("splice-arguments")
        items, rewritten = trim_bytes(items, settings.store_max_entry_bytes, splice=splice)
        if rewritten:
            log(f"[response-store] shrank {rewritten} tool call argument(s) of {response_id} to fit the entry budget")
        with self._lock:
            self._entries[response_id] = Entry(owner, items, copy.deepcopy(response))
            while len(self._entries) > MAX_ENTRIES:
                self._entries.popitem(last=False)

    def _get(self, response_id: str, owner: str) -> Entry | None:
        with self._lock:
            entry = self._entries.get(response_id)
        return entry if entry is not None and entry.owner == owner else None

    def items(self, response_id: str, owner: str) -> list[dict[str, Any]] | None:
        entry = self._get(response_id, owner)
        return copy.deepcopy(entry.items) if entry is not None else None

    def response(self, response_id: str, owner: str) -> dict[str, Any] | None:
        entry = self._get(response_id, owner)
        return copy.deepcopy(entry.response) if entry is not None else None

    def delete(self, response_id: str, owner: str) -> bool:
        with self._lock:
            entry = self._entries.get(response_id)
            if entry is None or entry.owner != owner:
                return False
            del self._entries[response_id]
            return True
