"""STORE: the kit's model of a trimmed response-store entry (seed 003, engine.md §3.B).

The kit never asks the reference how to trim. It knows the conversation it submitted, and every
generated message carries a token of its own (``⟦m7⟧`` at the start of its first text, or the id of
its tool call), so each stored message can be traced to the message it came from. From that
tracing alone the rules are checkable for any trimming policy:

* a stored string is the original, or an allowed rewrite of it: a JSON-document ``arguments`` value
  replaced whole by :data:`ARGUMENTS_TRUNCATION_JSON`, any other string cut to a prefix plus
  :data:`TRUNCATION_MARKER`, never longer than the original;
* where messages were dropped (a *seam*: the first stored message whose origin does not follow its
  predecessor's), a notice naming how many sits at the seam, or on the message before it when the
  seam is the newest message;
* a notice is a leading string prefix, or a leading text block of a parts array.

The exact texts are the reference's (engine.md §3.C); the strip pattern is the handler's.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

TRUNCATION_MARKER = "\n\n[... truncated by the response store to stay within RESPONSE_STORE_MAX_BYTES ...]"
ARGUMENTS_TRUNCATION_JSON = (
    '{"__truncated__":"[... tool call arguments truncated by the response store to stay within '
    'RESPONSE_STORE_MAX_BYTES ...]"}'
)
NOTICE = re.compile(r"^\[\.\.\. (\d+) earlier message\(s\) dropped by the response store[^\]]*\]\n\n")
# The text block a notice becomes on a parts array (any of the text block types a gateway may use).
TEXT_BLOCKS = frozenset({"text", "input_text", "output_text"})
_TOKEN = re.compile(r"⟦m(\d+)⟧")
# Strings a store must keep as they are: what pairs a call with its result, and the shape keys.
PAIRING_KEYS = frozenset({"id", "call_id", "tool_call_id", "name", "type", "role"})
_JSON_SPACE = " \t\n\r"
# JS \s: the whitespace a gateway's document test (first non-space character) skips.
_JS_SPACE = frozenset(" \t\n\r\v\f\u00a0\u1680\u2028\u2029\u202f\u205f\u3000\ufeff") | {
    chr(c) for c in range(0x2000, 0x200B)
}


def token(index: int) -> str:
    """The token message ``index`` of a generated conversation starts its first text with."""
    return f"⟦m{index}⟧"


def looks_like_json_document(text: str) -> bool:
    for char in text:
        if char not in _JS_SPACE:
            return char in "{["
    return False


@dataclass(frozen=True)
class Notice:
    """A drop notice found on a stored message: where, and how many it says were dropped."""

    position: int
    count: int
    as_block: bool


@dataclass(frozen=True)
class Rewrite:
    path: str
    key: str
    kind: str  # "compacted" (a JSON document replaced whole) or "cut" (a prefix and the marker)
    original_json: bool


@dataclass(frozen=True)
class Problem:
    path: str
    key: str
    text: str
    json_arguments: bool = False  # at an ``arguments`` value whose original is a JSON document


@dataclass
class Traced:
    """Stored messages traced to the submitted ones: ``origins[i]`` is the index in the submitted
    conversation stored message ``i`` came from, ``notices`` the notices found, ``rewrites`` every
    string the store changed (path, kind), ``problems`` what no allowed rewrite explains."""

    origins: list[int] = field(default_factory=list)
    notices: list[Notice] = field(default_factory=list)
    rewrites: list[Rewrite] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)

    def problems_at(self, *keys: str) -> list[str]:
        """The problems at strings under these keys ("" for problems with whole messages)."""
        return [p.text for p in self.problems if p.key in keys]

    def json_argument_problems(self) -> list[str]:
        return [p.text for p in self.problems if p.json_arguments]

    def other_string_problems(self) -> list[str]:
        """Problems at strings that are neither pairing keys nor JSON-document arguments."""
        return [p.text for p in self.problems if p.key and p.key not in PAIRING_KEYS and not p.json_arguments]

    def seams(self) -> list[int]:
        """Stored positions where earlier submitted messages are missing: the first stored message
        when it is not the first submitted, and each message not following its predecessor."""
        out = [0] if self.origins and self.origins[0] != 0 else []
        out += [i for i in range(1, len(self.origins)) if self.origins[i] != self.origins[i - 1] + 1]
        return out


def trace(stored: Sequence[Any], submitted: Sequence[Mapping[str, Any]]) -> Traced:
    """Trace ``stored`` back to ``submitted`` (see the module docstring)."""
    by_call = _call_index(submitted)
    traced = Traced()
    for position, message in enumerate(stored):
        where = f"stored message {position}"
        if not isinstance(message, Mapping):
            traced.problems.append(Problem(where, "", f"{where} is not an object: {_short(message)}"))
            continue
        body, notice = _without_notice(message)
        if notice is not None:
            traced.notices.append(Notice(position, notice[0], notice[1]))
        origin = _origin(body, by_call, len(submitted))
        if origin is None:
            traced.problems.append(Problem(where, "", f"{where} comes from no submitted message: {_short(message)}"))
            continue
        traced.origins.append(origin)
        original = submitted[origin]
        if notice is not None and original.get("content") is None and body.get("content") == "":
            # The notice became the content of a message that had none (absent, or null on a Chat call).
            body = {k: v for k, v in body.items() if k != "content"}
            if "content" in original:
                body["content"] = None
        _compare(body, original, f"{where} (submitted {origin})", traced)
    if traced.origins != sorted(set(traced.origins)):
        text = f"stored messages are out of order or repeated: origins {traced.origins}"
        traced.problems.append(Problem("", "", text))
    return traced


def arguments_slots(value: Any, path: str = "") -> Iterator[tuple[str, str]]:
    """Every string stored under a key named ``arguments`` (Chat ``tool_calls[].function.arguments``,
    Responses ``function_call`` items and blocks), with its path."""
    if isinstance(value, Mapping):
        for key, item in value.items():
            if key == "arguments" and isinstance(item, str):
                yield f"{path}/{key}", item
            else:
                yield from arguments_slots(item, f"{path}/{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from arguments_slots(item, f"{path}/{index}")


def parses(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def notices_in(stored: Sequence[Any]) -> list[Notice]:
    found = []
    for position, message in enumerate(stored):
        if isinstance(message, Mapping):
            notice = _without_notice(message)[1]
            if notice is not None:
                found.append(Notice(position, notice[0], notice[1]))
    return found


def text_of(message: Mapping[str, Any]) -> str | None:
    """The first text of a message: string content, a text block's text, or a tool output."""
    for key in ("content", "output"):
        value = message.get(key)
        if isinstance(value, str):
            return value
        if isinstance(value, list):
            for block in value:
                if isinstance(block, Mapping) and isinstance(block.get("text"), str):
                    return str(block["text"])
    return None


def _call_index(submitted: Sequence[Mapping[str, Any]]) -> dict[tuple[str, str], int]:
    """Submitted messages by the call id they carry: a call (``tool_calls`` or a ``function_call``
    item) and its result (a ``tool`` message or a ``function_call_output`` item)."""
    index: dict[tuple[str, str], int] = {}
    for i, message in enumerate(submitted):
        for kind, call_id in _call_ids(message):
            index.setdefault((kind, call_id), i)
    return index


def _call_ids(message: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    for call in message.get("tool_calls") or ():
        if isinstance(call, Mapping) and isinstance(call.get("id"), str):
            yield "call", call["id"]
    if message.get("type") == "function_call" and isinstance(message.get("call_id"), str):
        yield "call", message["call_id"]
    if message.get("type") == "function_call_output" and isinstance(message.get("call_id"), str):
        yield "result", message["call_id"]
    if message.get("role") == "tool" and isinstance(message.get("tool_call_id"), str):
        yield "result", message["tool_call_id"]


def _origin(message: Mapping[str, Any], by_call: Mapping[tuple[str, str], int], size: int) -> int | None:
    for key in _call_ids(message):
        if key in by_call:
            return by_call[key]
    text = text_of(message)
    if text is not None:
        found = _TOKEN.match(text)
        if found is not None and int(found.group(1)) < size:
            return int(found.group(1))
    return None


def _without_notice(message: Mapping[str, Any]) -> tuple[Mapping[str, Any], tuple[int, bool] | None]:
    """``message`` with a leading drop notice taken off, and the notice's count and form."""
    content = message.get("content")
    if isinstance(content, str):
        found = NOTICE.match(content)
        if found is not None:
            return {**message, "content": content[found.end() :]}, (int(found.group(1)), False)
    if isinstance(content, list) and content and isinstance(content[0], Mapping):
        block = content[0]
        text = block.get("text")
        if block.get("type") in TEXT_BLOCKS and isinstance(text, str):
            found = NOTICE.match(text)
            if found is not None and found.end() == len(text):
                return {**message, "content": content[1:]}, (int(found.group(1)), True)
    return message, None


def _compare(stored: Any, original: Any, path: str, traced: Traced, key: str = "") -> None:
    if isinstance(original, str) and isinstance(stored, str):
        if stored != original:
            kind = _rewrite_kind(stored, original, key)
            if kind is None:
                text = f"{path}: rewritten in a way no rule allows: {_pair(stored, original)}"
                json_arguments = key == "arguments" and looks_like_json_document(original)
                traced.problems.append(Problem(path, key, text, json_arguments))
            else:
                traced.rewrites.append(Rewrite(path, key, kind, looks_like_json_document(original)))
        return
    if isinstance(original, Mapping) and isinstance(stored, Mapping):
        if set(stored) != set(original):
            text = f"{path}: keys {sorted(stored)} differ from the submitted {sorted(original)}"
            traced.problems.append(Problem(path, key, text))
            return
        for name in original:
            _compare(stored[name], original[name], f"{path}/{name}", traced, name)
        return
    if isinstance(original, list) and isinstance(stored, list):
        if len(stored) != len(original):
            traced.problems.append(Problem(path, key, f"{path}: {len(stored)} items, submitted {len(original)}"))
            return
        for index, (s, o) in enumerate(zip(stored, original, strict=True)):
            _compare(s, o, f"{path}/{index}", traced, key)
        return
    if stored != original or type(stored) is not type(original):
        traced.problems.append(Problem(path, key, f"{path}: {_pair(stored, original)}"))


def _rewrite_kind(stored: str, original: str, key: str) -> str | None:
    """How ``stored`` may have come from ``original``: ``compacted`` (a JSON-document ``arguments``
    replaced whole), ``cut`` (a prefix plus the marker, shorter); None when no rule allows it."""
    if key in PAIRING_KEYS:
        return None
    if key == "arguments" and looks_like_json_document(original):
        return "compacted" if stored == ARGUMENTS_TRUNCATION_JSON and len(stored) < len(original) else None
    if stored.endswith(TRUNCATION_MARKER) and len(stored) < len(original):
        kept = stored[: -len(TRUNCATION_MARKER)]
        shared = _common_prefix(kept, original)
        # A string cut twice keeps a prefix of its first cut: the original's prefix, then the marker's.
        # The first cut may have ended where the original went on like the marker (a blank line), so
        # every split of ``kept`` within the shared prefix is tried, not only the longest.
        doubled = TRUNCATION_MARKER * 2
        if any(doubled.startswith(kept[split:]) for split in range(max(1, len(kept) - len(doubled)), shared + 1)):
            return "cut"
    return None


def _common_prefix(a: str, b: str) -> int:
    size = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        size += 1
    return size


def _pair(stored: Any, original: Any) -> str:
    return f"stored {_short(stored)}, submitted {_short(original)}"


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False) if not isinstance(value, str) else repr(value)
    return text if len(text) <= 160 else f"{text[:120]}... ({len(text)} characters)"
