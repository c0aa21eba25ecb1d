"""The durable history of one session (seed 002): frozen items, their JSON, and the append-only :class:`History`.

* Items: :class:`Message`, :class:`ToolCall` and :class:`ToolResult`; only a ToolResult carries images
  (:class:`ImageAttachment`), as durable detail that every later request, a restore, pruning and compaction see.
* JSON is Yoi's engine Item form: ``{"type": "message" | "tool_call" | "tool_result", ...}``. A tool result omits
  ``content`` when None, ``is_error`` when false and ``attachments`` when empty, and a missing key takes that
  default, so older records load. An attachment is ``{"type": "image", "payload": {"mime_type", "data"}}`` with
  ``data`` in standard padded base64. :func:`item_from_json` refuses anything else with a ValueError naming the
  field (unknown keys and non-canonical base64 included: a record that does not round-trip is not trusted).
* :class:`History` changes only through :meth:`History.commit`, :meth:`History.record_prune` and
  :meth:`History.compact`. Each operation is a list of :class:`Change` records, handed to the observers (the
  session log) *before* memory changes: an observer that raises leaves the history as it was, so nothing is
  visible that is not durable. :meth:`History.apply` replays a recorded change.
"""

from __future__ import annotations

import base64
import binascii
import re
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal, TypeAlias, get_args

Role: TypeAlias = Literal["system", "user", "assistant"]
ChangeKind: TypeAlias = Literal["item", "prune", "compact"]

ROLES: Final = frozenset(get_args(Role))
CHANGE_KINDS: Final = frozenset(get_args(ChangeKind))
# A MIME type that cannot break the data URL it is put in (no ";", ",", spaces).
_MIME: Final = re.compile(r"image/[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]*", re.ASCII)
_FIELDS: Final = {
    "message": ({"type", "role", "text"}, set()),
    "tool_call": ({"type", "call_id", "name", "arguments"}, set()),
    "tool_result": ({"type", "call_id", "summary"}, {"content", "is_error", "attachments"}),
}


def _require(where: str, value: object, kind: type | tuple[type, ...]) -> None:
    if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
        names = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise ValueError(f"{where}: expected {names}, got {type(value).__name__}")


@dataclass(frozen=True)
class ImageAttachment:
    mime_type: str
    data: bytes

    def __post_init__(self) -> None:
        _require("mime_type", self.mime_type, str)
        if not _MIME.fullmatch(self.mime_type):
            raise ValueError(f"mime_type: {self.mime_type!r:.60} is not an image/<subtype> MIME type")
        _require("data", self.data, bytes)

    def __repr__(self) -> str:
        return f"ImageAttachment(mime_type={self.mime_type!r}, data=<{len(self.data)} bytes>)"


@dataclass(frozen=True)
class Message:
    role: Role
    text: str

    def __post_init__(self) -> None:
        if self.role not in ROLES:
            raise ValueError(f"role: {self.role!r:.40} is not one of {', '.join(sorted(ROLES))}")
        _require("text", self.text, str)


@dataclass(frozen=True)
class ToolCall:
    call_id: str
    name: str
    arguments: str

    def __post_init__(self) -> None:
        _require("call_id", self.call_id, str)
        _require("name", self.name, str)
        _require("arguments", self.arguments, str)


@dataclass(frozen=True)
class ToolResult:
    call_id: str
    summary: str
    content: str | None = None
    is_error: bool = False
    attachments: tuple[ImageAttachment, ...] = ()

    def __post_init__(self) -> None:
        _require("call_id", self.call_id, str)
        _require("summary", self.summary, str)
        if self.content is not None:
            _require("content", self.content, str)
        _require("is_error", self.is_error, bool)
        _require("attachments", self.attachments, tuple)
        for index, attachment in enumerate(self.attachments):
            _require(f"attachments[{index}]", attachment, ImageAttachment)


Item: TypeAlias = Message | ToolCall | ToolResult


def image_data_url(att: ImageAttachment) -> str:
    return f"data:{att.mime_type};base64,{_b64(att.data)}"


def result_text(r: ToolResult) -> str:
    """The text a result shows the model: its summary, then its content on the next line when there is one."""
    return r.summary if r.content is None else r.summary + "\n" + r.content


# ------------------------------------------------------------------------------------ JSON


def item_to_json(item: Item) -> dict[str, Any]:
    if isinstance(item, Message):
        return {"type": "message", "role": item.role, "text": item.text}
    if isinstance(item, ToolCall):
        return {"type": "tool_call", "call_id": item.call_id, "name": item.name, "arguments": item.arguments}
    doc: dict[str, Any] = {"type": "tool_result", "call_id": item.call_id, "summary": item.summary}
    if item.content is not None:
        doc["content"] = item.content
    if item.is_error:
        doc["is_error"] = True
    if item.attachments:
        doc["attachments"] = [_attachment_to_json(att) for att in item.attachments]
    return doc


def item_from_json(doc: object) -> Item:
    """The item ``doc`` describes; ValueError naming the field for anything :func:`item_to_json` never writes."""
    _require("item", doc, dict)
    assert isinstance(doc, dict)
    kind = doc.get("type")
    if kind not in _FIELDS:
        raise ValueError(f"item.type: {kind!r:.40} is not one of message, tool_call, tool_result")
    required, optional = _FIELDS[kind]
    _check_keys(kind, doc, required, optional)
    if kind == "message":
        _require("message.role", doc["role"], str)
        _require("message.text", doc["text"], str)
        if doc["role"] not in ROLES:
            raise ValueError(f"message.role: {doc['role']!r:.40} is not one of {', '.join(sorted(ROLES))}")
        return Message(doc["role"], doc["text"])
    for key in required - {"type"}:
        _require(f"{kind}.{key}", doc[key], str)
    if kind == "tool_call":
        return ToolCall(doc["call_id"], doc["name"], doc["arguments"])
    content = doc.get("content")
    if content is not None:
        _require("tool_result.content", content, str)
    is_error = doc.get("is_error", False)
    _require("tool_result.is_error", is_error, bool)
    attachments = doc.get("attachments", [])
    _require("tool_result.attachments", attachments, list)
    atts = tuple(_attachment_from_json(f"tool_result.attachments[{i}]", att) for i, att in enumerate(attachments))
    return ToolResult(doc["call_id"], doc["summary"], content, is_error, atts)


def _attachment_to_json(att: ImageAttachment) -> dict[str, Any]:
    return {"type": "image", "payload": {"mime_type": att.mime_type, "data": _b64(att.data)}}


def _attachment_from_json(where: str, doc: object) -> ImageAttachment:
    _require(where, doc, dict)
    assert isinstance(doc, dict)
    _check_keys(where, doc, {"type", "payload"}, set())
    if doc["type"] != "image":
        raise ValueError(f"{where}.type: {doc['type']!r:.40} is not 'image'")
    payload = doc["payload"]
    _require(f"{where}.payload", payload, dict)
    _check_keys(f"{where}.payload", payload, {"mime_type", "data"}, set())
    mime, data = payload["mime_type"], payload["data"]
    _require(f"{where}.payload.mime_type", mime, str)
    if not _MIME.fullmatch(mime):
        raise ValueError(f"{where}.payload.mime_type: {mime!r:.60} is not an image/<subtype> MIME type")
    _require(f"{where}.payload.data", data, str)
    return ImageAttachment(mime, _unb64(f"{where}.payload.data", data))


def _check_keys(where: str, doc: Mapping[str, object], required: set[str], optional: set[str]) -> None:
    missing = sorted(required - doc.keys())
    if missing:
        raise ValueError(f"{where}.{missing[0]}: missing")
    unknown = sorted(str(key) for key in doc.keys() - required - optional)
    if unknown:
        raise ValueError(f"{where}.{unknown[0]}: unknown field")


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _unb64(where: str, text: str) -> bytes:
    try:
        data = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise ValueError(f"{where}: not standard padded base64 ({exc})") from exc
    if _b64(data) != text:  # stray padding bits: it would not round-trip
        raise ValueError(f"{where}: not canonical standard padded base64")
    return data


# ------------------------------------------------------------------------------------ history


@dataclass(frozen=True)
class Change:
    """One durable change, as the session log records it: ``body`` is a JSON object.

    ``item``: an :func:`item_to_json` document, appended. ``prune``: ``{"call_ids": [...]}``, sorted, each the
    call id of a result not yet pruned. ``compact``: ``{"summary": str, "retain_from": int}``, the split after
    pulling it back, so replaying it needs no pull-back.
    """

    kind: ChangeKind
    body: Mapping[str, Any]


_State: TypeAlias = tuple[tuple[Item, ...], frozenset[str]]
#: Called with the records of one operation before the history shows them; raising refuses the operation.
HistoryObserver: TypeAlias = Callable[[Sequence[Change]], None]


class History:
    """The append-only durable history of one session; thread-safe; its values are immutable snapshots."""

    def __init__(self, items: Iterable[Item] = (), pruned: Iterable[str] = ()) -> None:
        self._lock = threading.RLock()
        self._observers: list[HistoryObserver] = []
        self._items: tuple[Item, ...] = ()
        self._pruned: frozenset[str] = frozenset()
        self._version = 0
        self.commit(*items)
        self.record_prune(pruned)
        self._version = 0

    @property
    def items(self) -> tuple[Item, ...]:
        return self._items

    @property
    def pruned(self) -> frozenset[str]:
        """Call ids whose results a recorded prune decision cleared; sticky until the next compaction."""
        return self._pruned

    @property
    def version(self) -> int:
        """Bumped by every applied change record."""
        return self._version

    def snapshot(self) -> _State:
        """Items and pruned set read together (a concurrent change lands before or after, never between)."""
        with self._lock:
            return self._items, self._pruned

    def add_observer(self, observer: HistoryObserver) -> None:
        with self._lock:
            self._observers.append(observer)

    def remove_observer(self, observer: HistoryObserver) -> None:
        with self._lock:
            self._observers.remove(observer)

    def commit(self, *items: Item) -> None:
        """Append ``items`` (one record each, all handed to the observers at once)."""
        self._update([_item_change(item) for item in items])

    def record_prune(self, call_ids: Iterable[str]) -> None:
        """Record a durable decision to prune these results (already pruned ids are ignored; none left: no record)."""
        with self._lock:
            ids = sorted(frozenset(call_ids) - self._pruned)
            if ids:
                self._update([Change("prune", {"call_ids": ids})])

    def compact(self, summary: str, retain_from: int) -> None:
        """Replace ``items[:retain_from]`` by one system Message(summary); prune decisions are cleared.

        The split is first pulled back so that every retained ToolResult keeps the ToolCall it answers.
        """
        _require("summary", summary, str)
        _require("retain_from", retain_from, int)
        with self._lock:
            if not 0 <= retain_from <= len(self._items):
                raise ValueError(f"retain_from: {retain_from} is outside 0..{len(self._items)}")
            split = retained_split(self._items, retain_from)
            self._update([Change("compact", {"summary": summary, "retain_from": split})])

    def apply(self, change: Change) -> None:
        """Apply a recorded change (observers see it too); ValueError naming the field for a malformed one."""
        self._update([change])

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, History):
            return NotImplemented
        return self.snapshot() == other.snapshot()

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"History({len(self._items)} items, pruned={sorted(self._pruned)}, version={self._version})"

    def _update(self, changes: Sequence[Change]) -> None:
        if not changes:
            return
        with self._lock:
            items, pruned = self._items, self._pruned
            for change in changes:
                items, pruned = _applied(change, items, pruned)
            for observer in list(self._observers):
                observer(changes)
            self._items, self._pruned = items, pruned
            self._version += len(changes)


def _applied(
    change: Change, items: tuple[Item, ...], pruned: frozenset[str]
) -> tuple[tuple[Item, ...], frozenset[str]]:
    """The state after ``change``; ValueError naming the field when it does not apply."""
    body = change.body
    _require("change.body", body, Mapping)
    if change.kind == "item":
        return (*items, item_from_json(body)), pruned
    if change.kind == "prune":
        return items, pruned | _prune_ids(body, items, pruned)
    if change.kind == "compact":
        summary, split = _compact_args(body, items)
        return (Message("system", summary), *items[split:]), frozenset()
    raise ValueError(f"change.kind: {change.kind!r:.40} is not one of {', '.join(sorted(CHANGE_KINDS))}")


def retained_split(items: Sequence[Item], retain_from: int) -> int:
    """``retain_from`` moved back until no retained ToolResult is separated from its (latest earlier) ToolCall."""
    calls: dict[str, int] = {}
    answered: list[tuple[int, int]] = []  # (result index, index of its call)
    for index, item in enumerate(items):
        if isinstance(item, ToolCall):
            calls[item.call_id] = index
        elif isinstance(item, ToolResult) and item.call_id in calls:
            answered.append((index, calls[item.call_id]))
    split = retain_from
    for result_index, call_index in reversed(answered):
        if result_index >= split > call_index:
            split = call_index
    return split


def _item_change(item: Item) -> Change:
    if not isinstance(item, Message | ToolCall | ToolResult):
        raise ValueError(f"item: expected Message, ToolCall or ToolResult, got {type(item).__name__}")
    return Change("item", item_to_json(item))


def _prune_ids(body: Mapping[str, Any], items: tuple[Item, ...], pruned: frozenset[str]) -> frozenset[str]:
    _check_keys("prune", body, {"call_ids"}, set())
    ids = body["call_ids"]
    _require("prune.call_ids", ids, list)
    if not ids:
        raise ValueError("prune.call_ids: empty")
    results = {item.call_id for item in items if isinstance(item, ToolResult)}
    for index, call_id in enumerate(ids):
        _require(f"prune.call_ids[{index}]", call_id, str)
        if call_id not in results:
            raise ValueError(f"prune.call_ids[{index}]: {call_id!r:.60} is not the call id of a result in history")
        if call_id in pruned or call_id in ids[:index]:
            raise ValueError(f"prune.call_ids[{index}]: {call_id!r:.60} is already pruned")
    return frozenset(ids)


def _compact_args(body: Mapping[str, Any], items: tuple[Item, ...]) -> tuple[str, int]:
    _check_keys("compact", body, {"summary", "retain_from"}, set())
    summary, split = body["summary"], body["retain_from"]
    _require("compact.summary", summary, str)
    _require("compact.retain_from", split, int)
    if not 0 <= split <= len(items):
        raise ValueError(f"compact.retain_from: {split} is outside 0..{len(items)}")
    if retained_split(items, split) != split:
        raise ValueError(f"compact.retain_from: {split} separates a retained ToolResult from its ToolCall")
    return summary, split
