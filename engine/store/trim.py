"""Trimming a conversation to the response store's limits (seed 003, engine.md §3.B).

Pure functions over JSON-like values (dicts, lists, strings, numbers): Chat-shaped messages and
Responses-shaped items alike. Nothing here mutates its input: every rewrite is copy-on-write.

The rules:

* The count stage (:func:`truncate_messages`) keeps the leading system messages (at most
  ``max_messages - 1``) and the newest turns; the turns it drops leave a notice at the seam (the
  first kept message after the head, or the last head message when the seam is the newest
  message), and a warning.
* The byte stage (:func:`cap_entry_bytes`) keeps up to 8 leading system messages and walks back
  from the newest message while messages fit; its notice goes on the first kept message.
* Content trimming (:func:`trim_content_to_fit`) halves the biggest shrinkable string, at most 64
  passes. A JSON-document ``arguments`` value (first non-space character ``{`` or ``[``, decided
  without parsing) is never cut: it is replaced whole by :data:`ARGUMENTS_TRUNCATION_JSON`. Other
  strings keep a prefix plus :data:`TRUNCATION_MARKER`. A replacement never grows a value; a
  candidate that cannot shrink rejects the write (:class:`StoreWriteRejected`).

Cost is linear in the payload: sizes are computed once per string and kept up to date, slots are
found in one walk, and megabyte strings are never parsed.
"""

from __future__ import annotations

import heapq
import logging
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Final, Literal

from engine.js import JS_SPACE_CLASS

TRUNCATION_MARKER: Final = "\n\n[... truncated by the response store to stay within RESPONSE_STORE_MAX_BYTES ...]"
ARGUMENTS_TRUNCATION_JSON: Final = (
    '{"__truncated__":"[... tool call arguments truncated by the response store to stay within'
    ' RESPONSE_STORE_MAX_BYTES ...]"}'
)
#: The handler's strip regex. ``re.ASCII`` so ``\d`` is JS's ``[0-9]``, not every Unicode digit.
NOTICE_PATTERN: Final = re.compile(
    r"^\[\.\.\. \d+ earlier message\(s\) dropped by the response store[^\]]*\]\n\n", re.ASCII
)
#: Identifiers and discriminators, never cut. The mirror's five plus ``call_id``: a Responses
#: ``function_call`` item and its ``function_call_output`` pair by ``call_id`` the way a Chat tool call
#: and its result pair by ``id`` / ``tool_call_id``, and a cut id orphans the result.
UNSHRINKABLE_KEYS: Final = frozenset({"type", "role", "id", "tool_call_id", "name", "call_id"})
MAX_PASSES: Final = 64

_MARKER_UNITS: Final = len(TRUNCATION_MARKER)  # both ASCII: UTF-16 length == len
_ARGS_JSON_UNITS: Final = len(ARGUMENTS_TRUNCATION_JSON)
_SLOT_MAX_DEPTH: Final = 5  # shrinkableSlots: containers deeper than this are not walked
_STR_BYTES_MAX_DEPTH: Final = 4  # strBytes: a container deeper than this costs a flat 32
_BYTE_HEAD_MAX: Final = 8  # capEntryBytes keeps at most this many leading system messages
_CHUNK: Final = 1 << 14  # code points encoded at a time (small chunks measured fastest, and bound memory)
_CACHE_FROM: Final = 4096  # strings this long are measured once per trim and remembered
_LEADING_SPACE: Final = re.compile(f"{JS_SPACE_CLASS}*")
_NOTICE_KEYS: Final = ("content", "text")  # where prepend_notice puts a notice
# NOTICE_PATTERN unanchored: ``match(text, pos)`` anchors at ``pos``, where ``^`` never matches past 0.
_NOTICE_AT: Final = re.compile(NOTICE_PATTERN.pattern.removeprefix("^"), re.ASCII)
_STAGE_LIMIT: Final = {"messages": "RESPONSE_STORE_MAX_MESSAGES", "bytes": "RESPONSE_STORE_MAX_BYTES"}
_LOG = logging.getLogger("engine.response_store")

Message = dict[str, Any]
Path = tuple[Any, ...]


class StoreWriteRejected(Exception):
    """Content trimming met a candidate that would not shrink its value: the write is refused, never looped on."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class TrimOutcome:
    """What :func:`trim_for_store` kept and what it did to get there.

    ``messages`` shares every untouched subtree with the caller's input (only the containers on the
    path to a rewritten value are new), so a store that keeps it must copy it first.
    """

    messages: list[Message]
    dropped_by_count: int
    dropped_by_bytes: int
    rewritten_slots: int
    warnings: tuple[str, ...]


# ------------------------------------------------------------------------------------ text


def dropped_turns_notice(count: int, stage: Literal["messages", "bytes"]) -> str:
    """The notice a limiter leaves where it dropped ``count`` messages; it matches :data:`NOTICE_PATTERN`."""
    if stage not in _STAGE_LIMIT:
        raise ValueError(f"stage must be 'messages' or 'bytes', got {stage!r}")
    limit = _STAGE_LIMIT[stage]
    return f"[... {count} earlier message(s) dropped by the response store to stay within {limit} ...]\n\n"


def strip_notice(text: str) -> str:
    """``text`` without one leading drop notice (the handler's strip), else ``text`` unchanged."""
    return NOTICE_PATTERN.sub("", text, count=1)


def looks_like_json_document(text: str) -> bool:
    """Whether the first character that is not JS whitespace is ``{`` or ``[``.

    Deliberately not a parse: the value can be megabytes and only its leading whitespace is read.
    """
    match = _LEADING_SPACE.match(text)
    start = match.end() if match else 0
    return text[start : start + 1] in ("{", "[")


def _utf16_units(text: str) -> int:
    """``text.length`` in JavaScript, without a full UTF-16 copy of a huge string."""
    if text.isascii():  # O(1): CPython keeps the flag
        return len(text)
    return sum(
        len(text[start : start + _CHUNK].encode("utf-16-le", "surrogatepass")) // 2
        for start in range(0, len(text), _CHUNK)
    )


class _Sizer:
    """UTF-16 lengths for one trim: a long string is measured once, then remembered by identity."""

    def __init__(self) -> None:
        self._known: dict[int, tuple[str, int]] = {}

    def units(self, text: str) -> int:
        if len(text) < _CACHE_FROM:
            return _utf16_units(text)
        hit = self._known.get(id(text))
        if hit is not None and hit[0] is text:
            return hit[1]
        return self.remember(text, _utf16_units(text))

    def remember(self, text: str, units: int) -> int:
        if len(text) >= _CACHE_FROM:
            self._known[id(text)] = (text, units)  # holding the string keeps its id from being reused
        return units


# ------------------------------------------------------------------------------------ size


def approx_bytes(messages: Sequence[Mapping[str, Any]]) -> int:
    """The mirror's ``approxBytes``: the store's size estimate of a conversation (see :func:`_message_cost`)."""
    return sum(_message_cost(message, _utf16_units) for message in messages)


def _message_cost(message: object, measure: Callable[[str], int]) -> int:
    """64 + ``strBytes`` of every key, a ``tool_calls`` list charged as the mirror does.

    DEPARTURE from the mirror (engine.md Q3.6 keeps it): the mirror charges only ``content``,
    ``tool_calls`` and ``tool_call_id``. Our engine stores Responses items top-level, so an uncharged
    ``{"type": "function_call", "arguments": <50 MB>}`` or ``function_call_output.output`` would sit in
    the store over every cap; every other key is charged with ``strBytes`` too. A non-list
    ``tool_calls`` is such an other key. Inside a listed tool call only ``id``, ``function.name`` and
    ``function.arguments`` are charged, as in the mirror.
    """
    if not isinstance(message, Mapping):
        return 64
    total = 64
    for key, value in message.items():
        if key == "tool_calls" and isinstance(value, list | tuple):
            for call in value:
                total += 96
                if isinstance(call, Mapping):
                    function = call.get("function")
                    total += _str_bytes(call.get("id"), 0, measure)
                    if isinstance(function, Mapping):
                        total += _str_bytes(function.get("name"), 0, measure)
                        total += _str_bytes(function.get("arguments"), 0, measure)
        else:
            total += _str_bytes(value, 0, measure)
    return total


def _str_bytes(value: object, depth: int, measure: Callable[[str], int]) -> int:
    """The mirror's ``strBytes``: 2 per UTF-16 unit, 8 per scalar, 32 per array item, 32 past depth 4."""
    if value is None:
        return 0
    if isinstance(value, str):
        return 2 * measure(value)
    if isinstance(value, bool | int | float):
        return 8
    if depth > _STR_BYTES_MAX_DEPTH:
        return 32
    if isinstance(value, list | tuple):
        return sum(32 + _str_bytes(item, depth + 1, measure) for item in value)
    if isinstance(value, Mapping):
        return sum(_str_bytes(item, depth + 1, measure) for item in value.values())
    return 0


# ------------------------------------------------------------------------------------ notices


def prepend_notice(message: Mapping[str, Any], notice: str) -> Message:
    """A copy of ``message`` whose content starts with ``notice``; ``message`` itself is not touched.

    String content is prefixed; list content gets a new leading ``{"type": "text"}`` block (never
    flattened); any other content (absent, null, a number) becomes the notice.
    """
    noticed = dict(message)
    content = message.get("content")
    if isinstance(content, str):
        noticed["content"] = notice + content
    elif isinstance(content, list | tuple):
        noticed["content"] = [{"type": "text", "text": notice}, *content]
    else:
        noticed["content"] = notice
    return noticed


def _prepend(message: Message, notice: str, sizer: _Sizer) -> Message:
    noticed = prepend_notice(message, notice)
    old, new = message.get("content"), noticed["content"]
    if isinstance(old, str) and isinstance(new, str):
        sizer.remember(new, len(notice) + sizer.units(old))  # the notice is ASCII and ends in "\n\n"
    return noticed


def _warn(warnings: list[str], text: str) -> None:
    _LOG.warning("%s", text)
    warnings.append(text)


def _leading_system(messages: Sequence[Message]) -> int:
    """How many messages lead with ``role == "system"`` (the mirror's test; ``developer`` does not count)."""
    lead = 0
    while lead < len(messages) and messages[lead].get("role") == "system":
        lead += 1
    return lead


# ------------------------------------------------------------------------------------ count stage


def truncate_messages(messages: Sequence[Mapping[str, Any]], max_messages: int) -> tuple[list[Message], int]:
    """The count stage: ``(kept, dropped)``, the leading system messages (at most ``max_messages - 1``) and
    the newest turns. ``dropped_turns_notice(dropped, "messages")`` goes on the seam (the first kept message
    after the head), or on the last head message when the seam is the newest, which stays byte-identical.
    With no head (``max_messages == 1``) the newest carries it: never silent outranks byte identity (Q3.4).
    """
    _check_limit("max_messages", max_messages)
    return _truncate(_as_messages(messages), max_messages, _Sizer(), [])


def _truncate(
    messages: list[Message], max_messages: int, sizer: _Sizer, warnings: list[str]
) -> tuple[list[Message], int]:
    if len(messages) <= max_messages:
        return list(messages), 0
    head = messages[: min(_leading_system(messages), max_messages - 1)]
    budget = max_messages - len(head)  # >= 1; a bare messages[-0:] would keep everything
    out = [*head, *messages[len(messages) - budget :]] if budget > 0 else list(head)
    dropped = len(messages) - len(out)
    seam = len(head) - 1 if head and len(head) == len(out) - 1 else len(head)
    out[seam] = _prepend(out[seam], dropped_turns_notice(dropped, "messages"), sizer)
    _warn(warnings, f"[response-store] dropped {dropped} message(s) to fit RESPONSE_STORE_MAX_MESSAGES")
    if seam == len(out) - 1:
        _warn(warnings, "[response-store] the drop notice went on the newest message: no earlier message was kept")
    return out, dropped


# ------------------------------------------------------------------------------------ byte stage


def cap_entry_bytes(messages: Sequence[Mapping[str, Any]], max_entry_bytes: int) -> tuple[list[Message], int]:
    """The byte stage (the mirror's ``capEntryBytes`` without its content fallback): ``(kept, dropped)``.

    Only when :func:`approx_bytes` is over ``max_entry_bytes``: keeps up to 8 leading system messages,
    then walks back from the newest message adding messages while they fit. The newest is always kept;
    a message that overshoots is kept and ends the walk. Drops leave
    ``dropped_turns_notice(dropped, "bytes")`` on the first kept message, and a warning.
    """
    _check_limit("max_entry_bytes", max_entry_bytes)
    return _cap_bytes(_as_messages(messages), max_entry_bytes, _Sizer(), [])


def _cap_bytes(
    messages: list[Message], max_entry_bytes: int, sizer: _Sizer, warnings: list[str]
) -> tuple[list[Message], int]:
    costs = [_message_cost(message, sizer.units) for message in messages]
    if sum(costs) <= max_entry_bytes:
        return list(messages), 0
    lead = _leading_system(messages)
    head_len = min(lead, _BYTE_HEAD_MAX)
    used = sum(costs[:head_len])
    start = len(messages)
    while start > head_len:
        cost = costs[start - 1]
        if used + cost > max_entry_bytes and start < len(messages):
            break
        used += cost
        start -= 1
        if used > max_entry_bytes:
            break
    trimmed = [*messages[:head_len], *messages[start:]]
    dropped = len(messages) - len(trimmed)
    if dropped and trimmed:
        trimmed[0] = _prepend(trimmed[0], dropped_turns_notice(dropped, "bytes"), sizer)
        _warn(warnings, f"[response-store] dropped {dropped} message(s) to fit RESPONSE_STORE_MAX_BYTES")
    return trimmed, dropped


# ------------------------------------------------------------------------------------ content stage


@dataclass
class _Slot:
    """A string that may be rewritten: where it is, its current value and that value's UTF-16 length.

    Once cut, the value is ``source[:cut] + TRUNCATION_MARKER``. Halving a cut value again keeps a
    shorter prefix of the same source, so the value is only built once, when it is written.
    """

    path: Path  # (message index, key, ...)
    source: str
    units: int
    json: bool  # a JSON-document ``arguments`` value: replaced whole, never cut
    bmp: bool  # ``source`` has no astral character: one code point per UTF-16 unit
    charged: bool = True  # whether approx_bytes counts it (a listed tool call's extra keys are not)
    notice: int = 0  # code points of leading drop notices: a cut keeps at least these
    cut: int = -1  # code points of ``source`` kept before the marker; -1 while the value is ``source``

    def value(self) -> str:
        return self.source if self.cut < 0 else self.source[: self.cut] + TRUNCATION_MARKER


def _slot_kind(key: object, value: str, measure: Callable[[str], int]) -> tuple[bool, int, int] | None:
    """``(json, units, notice)`` when ``value`` under ``key`` may be shrunk, else None.

    The floor is the length of the replacement actually used, so a JSON slot needs more than 121 units
    and any other more than 83. A string directly in a list has its index as key, as in the mirror:
    never unshrinkable, never a JSON ``arguments`` slot. Text that opens with drop notices keeps them
    whole (a cut notice no longer matches :data:`NOTICE_PATTERN`: the drop would turn silent): a cut
    keeps at least the notices (:func:`_halve`), so it needs more than the notices and a marker.
    """
    if isinstance(key, str) and key in UNSHRINKABLE_KEYS:
        return None
    is_json = key == "arguments" and looks_like_json_document(value)
    notice = _notices_length(value) if key in _NOTICE_KEYS else 0
    floor = _slot_floor(is_json, notice)
    if 2 * len(value) <= floor:  # a code point is at most 2 units: too short without measuring
        return None
    units = measure(value)
    return (is_json, units, notice) if units > floor else None


def _notices_length(text: str) -> int:
    """How many leading characters of ``text`` are drop notices (both stages' may lead, Q3.5)."""
    end = 0
    while (found := _NOTICE_AT.match(text, end)) is not None:
        end = found.end()
    return end


def _slot_floor(is_json: bool, notice: int) -> int:
    """The units a slot must exceed to be rewritten: the replacement's length (a noticed text's shortest
    cut is its notices and the marker)."""
    if notice:
        return notice + _MARKER_UNITS
    return _ARGS_JSON_UNITS if is_json else _MARKER_UNITS


def _is_charged(message: Message, path: Path) -> bool:
    if path[1] != "tool_calls" or not isinstance(message.get("tool_calls"), list | tuple):
        return True
    return path[3:4] == ("id",) or path[3:5] in (("function", "name"), ("function", "arguments"))


def _collect_slots(node: object, path: Path, depth: int, measure: Callable[[str], int], out: list[_Slot]) -> None:
    """The mirror's ``shrinkableSlots`` walk, in document order."""
    if depth > _SLOT_MAX_DEPTH:
        return
    if isinstance(node, list | tuple):
        items: Any = enumerate(node)
    elif isinstance(node, Mapping):
        items = node.items()
    else:
        return
    for key, value in items:
        if isinstance(value, str):
            kind = _slot_kind(key, value, measure)
            if kind is not None:
                is_json, units, notice = kind
                out.append(_Slot((*path, key), value, units, is_json, bmp=units == len(value), notice=notice))
        elif isinstance(value, list | tuple | Mapping):
            _collect_slots(value, (*path, key), depth + 1, measure, out)


def _code_points_within(text: str, limit: int) -> tuple[int, int]:
    """The largest ``k`` whose ``text[:k]`` is at most ``limit`` UTF-16 units, and that length."""
    cut = used = 0
    while cut < len(text):
        chunk = text[cut : cut + _CHUNK]
        units = _utf16_units(chunk)
        if used + units <= limit:
            cut, used = cut + len(chunk), used + units
            continue
        low, high = 0, len(chunk)  # chunk[:low] fits, chunk[:high] does not
        while high - low > 1:
            middle = (low + high) // 2
            if used + _utf16_units(chunk[:middle]) <= limit:
                low = middle
            else:
                high = middle
        return cut + low, used + _utf16_units(chunk[:low])
    return cut, used


def _halve(slot: _Slot) -> tuple[int, int]:
    """``(cut, units)`` of the slot's value halved: its first ``max(1, units // 2)`` UTF-16 units plus the marker,
    but never fewer than its leading notices, which are kept whole (they are ASCII: units are code points).

    Only whole code points are kept, and a surrogate pair held as two code points is not split either.
    """
    keep = max(slot.notice, 1, slot.units // 2)
    prefix_units = slot.units if slot.cut < 0 else slot.units - _MARKER_UNITS
    if keep >= prefix_units:  # the kept part would reach into the old marker: no shorter candidate
        return -1, keep + _MARKER_UNITS
    source = slot.source
    cut, kept = (keep, keep) if slot.bmp else _code_points_within(source, keep)
    if 0 < cut < len(source) and "\ud800" <= source[cut - 1] <= "\udbff" and "\udc00" <= source[cut] <= "\udfff":
        cut, kept = cut - 1, kept - 1
    return cut, kept + _MARKER_UNITS


def _cut_looks_like_json(source: str, cut: int) -> bool:
    """:func:`looks_like_json_document` of ``source[:cut] + TRUNCATION_MARKER`` without building it."""
    match = _LEADING_SPACE.match(source, 0, cut)
    start = match.end() if match else 0
    return source[start] in "{[" if start < cut else True  # all space: next comes the marker's "\n\n["


def trim_content_to_fit(messages: Sequence[Mapping[str, Any]], max_entry_bytes: int) -> tuple[list[Message], int]:
    """Rewrite the biggest shrinkable strings until the conversation fits: ``(messages, slots_rewritten)``.

    At most 64 passes while :func:`approx_bytes` is over ``max_entry_bytes``; each rewrites the biggest
    slot (the first in document order on a tie). A JSON-document ``arguments`` value becomes
    :data:`ARGUMENTS_TRUNCATION_JSON`; any other string keeps ``max(1, len // 2)`` UTF-16 units plus
    :data:`TRUNCATION_MARKER`. When nothing is left to cut the messages are returned even if still over.
    Raises :class:`StoreWriteRejected` when the chosen candidate is not strictly shorter than its value.
    ``slots_rewritten`` counts passes (a string halved twice counts twice).
    """
    _check_limit("max_entry_bytes", max_entry_bytes)
    return _trim_content(_as_messages(messages), max_entry_bytes, _Sizer())


def _trim_content(messages: list[Message], max_entry_bytes: int, sizer: _Sizer) -> tuple[list[Message], int]:
    out = list(messages)
    total = sum(_message_cost(message, sizer.units) for message in out)
    if total <= max_entry_bytes:
        return out, 0
    slots: list[_Slot] = []
    for index, message in enumerate(out):
        _collect_slots(message, (index,), 0, sizer.units, slots)
    # (-units, document order): the heap top is the mirror's "biggest, first found on a tie"
    heap = [
        (-slot.units, order, replace(slot, charged=_is_charged(out[slot.path[0]], slot.path)))
        for order, slot in enumerate(slots)
    ]
    heapq.heapify(heap)
    done: dict[int, _Slot] = {}  # document order -> the slot's final state, written once at the end
    passes = 0
    while total > max_entry_bytes and passes < MAX_PASSES and heap:
        _, order, slot = heapq.heappop(heap)
        if slot.json:
            after = _Slot(slot.path, ARGUMENTS_TRUNCATION_JSON, _ARGS_JSON_UNITS, True, True, slot.charged)
        else:
            cut, units = _halve(slot)
            if units >= slot.units:
                raise StoreWriteRejected(
                    f"the largest shrinkable string (message {slot.path[0]}, at {list(slot.path[1:])!r}) cannot"
                    f" shrink: its {slot.units}-unit value would become {units} units"
                )
            # an all-space prefix of a non-JSON ``arguments`` value now starts like JSON (the marker's "[")
            is_json = slot.path[-1] == "arguments" and _cut_looks_like_json(slot.source, cut)
            after = replace(slot, units=units, cut=cut, json=is_json)
        passes += 1
        done[order] = after
        if slot.charged:
            total -= 2 * (slot.units - after.units)
        if after.units > _slot_floor(after.json, after.notice):
            heapq.heappush(heap, (-after.units, order, after))
    owned: set[int] = set()  # containers this trim copied and may write in place
    for slot in done.values():
        _write_at(out, slot.path, slot.value(), owned)
    return out, passes


def _write_at(out: list[Message], path: Path, value: str, owned: set[int]) -> None:
    """Copy-on-write assignment: copies each container on ``path`` the first time, never the caller's."""
    node: Any = out
    key: Any = path[0]
    for next_key in path[1:]:
        child = node[key]
        if id(child) not in owned:
            child = list(child) if isinstance(child, list | tuple) else dict(child)
            owned.add(id(child))  # the copy stays in ``out``, so its id is not reused
            node[key] = child
        node, key = child, next_key
    node[key] = value


# ------------------------------------------------------------------------------------ all stages


def trim_for_store(messages: Sequence[Mapping[str, Any]], *, max_messages: int, max_entry_bytes: int) -> TrimOutcome:
    """What the store keeps of ``messages``: the count stage, the byte stage, then content trimming.

    Each limiter's notice names only the turns it dropped; when both drop, the count stage's notice
    usually went with the messages the byte stage dropped. Raises :class:`StoreWriteRejected` (see
    :func:`trim_content_to_fit`) and ``ValueError`` for a limit below 1 or a message that is not a mapping.
    """
    _check_limit("max_messages", max_messages)
    _check_limit("max_entry_bytes", max_entry_bytes)
    sizer, warnings = _Sizer(), list[str]()
    kept, by_count = _truncate(_as_messages(messages), max_messages, sizer, warnings)
    kept, by_bytes = _cap_bytes(kept, max_entry_bytes, sizer, warnings)
    kept, rewritten = _trim_content(kept, max_entry_bytes, sizer)
    return TrimOutcome(kept, by_count, by_bytes, rewritten, tuple(warnings))


def _check_limit(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be an integer of at least 1, got {value!r}")


def _as_messages(messages: Sequence[Mapping[str, Any]]) -> list[Message]:
    """``messages`` as a list of dicts (a dict is kept as is, another mapping copied once)."""
    if isinstance(messages, str | bytes) or not isinstance(messages, Sequence):
        raise ValueError(f"messages must be a sequence of mappings, got {type(messages).__name__}")
    out: list[Message] = []
    for index, message in enumerate(messages):
        if not isinstance(message, Mapping):
            raise ValueError(f"message {index} is a {type(message).__name__}, not a mapping")
        out.append(message if isinstance(message, dict) else dict(message))
    return out
