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
* a notice is a leading string prefix, or a leading text block of a parts array; both stages'
  notices may lead one text (engine.md Q3.5), and a notice is never cut (:func:`cut_notices`).

Lengths are JavaScript's, in UTF-16 units (:func:`utf16_units`), as the seed measures them. What a
store must do with a write (refuse it, or keep it) is decided from the seed's rules alone, never by
asking a store: :func:`refusal_causes` lists the strings that could make a store refuse a write (none:
a refusal is wrong), :func:`must_refuse` proves that a write cannot be kept.

The exact texts are the reference's (engine.md §3.C); the strip pattern is the handler's.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from conformance.models.js_text import utf16_units

TRUNCATION_MARKER = "\n\n[... truncated by the response store to stay within RESPONSE_STORE_MAX_BYTES ...]"
ARGUMENTS_TRUNCATION_JSON = (
    '{"__truncated__":"[... tool call arguments truncated by the response store to stay within '
    'RESPONSE_STORE_MAX_BYTES ...]"}'
)
NOTICE = re.compile(r"^\[\.\.\. (\d+) earlier message\(s\) dropped by the response store[^\]]*\]\n\n")
# NOTICE unanchored, to find the notices that follow one another at the start of a text.
_NOTICE_AT = re.compile(NOTICE.pattern.removeprefix("^"))
# How a notice opens, up to its free-worded rest (a cut notice keeps a prefix of this, or of a whole one).
_NOTICE_OPENING = re.compile(r"\[\.\.\. (\d+)")
_NOTICE_WORDS = " earlier message(s) dropped by the response store"
#: The byte stage's notice (engine.md §3.C, the seed's exact text), as it reads for ``count`` dropped.
BYTE_NOTICE = (
    "[... {count} earlier message(s) dropped by the response store to stay within RESPONSE_STORE_MAX_BYTES ...]\n\n"
)
#: Seed 003's content stage, in UTF-16 units: a cut adds the marker; a JSON-document ``arguments``
#: value is replaced by the document. A string is rewritten only when its replacement is shorter (the
#: floor); a candidate halved to no shorter value rejects the write; at most 64 passes.
MARKER_UNITS = len(TRUNCATION_MARKER)
DOCUMENT_UNITS = len(ARGUMENTS_TRUNCATION_JSON)
MAX_PASSES = 64
# The seed's UNSHRINKABLE_KEYS (the engine adds call_id: a seed store may still cut one).
_SEED_UNSHRINKABLE = frozenset({"type", "role", "id", "tool_call_id", "name"})
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
    grew: bool = False  # a truncation (the marker, or the document) not shorter than the value it replaced


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

    def grown(self) -> list[str]:
        """Truncations that did not shrink the value they replaced (seed 003: never)."""
        return [p.text for p in self.problems if p.grew]

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
        body, found = _without_notices(message)
        traced.notices += [Notice(position, count, as_block) for count, as_block in found]
        origin = _origin(body, by_call, len(submitted))
        if origin is None:
            traced.problems.append(Problem(where, "", f"{where} comes from no submitted message: {_short(message)}"))
            continue
        traced.origins.append(origin)
        original = submitted[origin]
        if found and original.get("content") is None and body.get("content") == "":
            # The notices became the content of a message that had none (absent, or null on a Chat call).
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
            found += [Notice(position, count, as_block) for count, as_block in _without_notices(message)[1]]
    return found


def cut_notices(stored: Sequence[Any]) -> list[str]:
    """Stored texts in which a notice was cut: after their whole leading notices (if any) comes the
    start of another notice, then the truncation marker. A cut notice no longer matches the strip
    pattern, and the drop it reported turns silent: a store keeps a text's notices whole."""
    found = []
    for position, message in enumerate(stored):
        if not isinstance(message, Mapping):
            continue
        body, notices = _without_notices(message)
        content = body.get("content")
        if isinstance(content, list):
            content = next((b.get("text") for b in content if isinstance(b, Mapping) and _is_text_block(b)), None)
        if isinstance(content, str) and _opens_with_a_cut_notice(content):
            shown = content[: content.index(TRUNCATION_MARKER) + len(TRUNCATION_MARKER)]
            found.append(
                f"stored message {position}: after {len(notices)} whole notice(s), its text goes on with the start "
                f"of another, cut: {shown!r}"
            )
    return found


def entry_bytes_bound(messages: Sequence[Any]) -> int:
    """An upper bound of what ``messages`` cost a store by the accountings the kit knows: seed 003's
    (64 bytes a message; 2 a UTF-16 unit of every string value; 8 a scalar; 32 an array item) and the
    entry's JSON in UTF-8 (keys and all) with 64 bytes a message for what a store adds (ids, statuses)."""
    seed = sum(64 + _seed_cost(message) for message in messages)
    encoded = len(json.dumps(list(messages), ensure_ascii=False).encode("utf-8", "surrogatepass"))
    return max(seed, encoded + 64 * len(messages))


def _seed_cost(value: Any) -> int:
    if isinstance(value, str):
        return 2 * utf16_units(value)
    if isinstance(value, Mapping):
        return sum(_seed_cost(item) for item in value.values())
    if isinstance(value, list | tuple):
        return sum(32 + _seed_cost(item) for item in value)
    return 0 if value is None else 8


def refusal_causes(messages: Sequence[Any]) -> list[str]:
    """Where the strings are that could make seed 003's store refuse this write: longer than the
    83-unit marker, so their cut is shorter and they may be rewritten, and not a JSON-document
    ``arguments`` value (replaced by the 121-unit document, which is shorter: never refused) nor
    under a key the seed never cuts. No other string is ever a candidate (its shortest cut, with
    whatever notices lead it, is not shorter), so a write without these is stored, over its budget if
    need be ("nothing is left to cut"): refusing it is wrong."""
    return [path for path, key, text in _strings(messages, "") if _may_be_refused_over(key, text)]


def must_refuse(submitted: Sequence[Any], limits: Mapping[str, int]) -> str | None:
    """Why seed 003's store must refuse the write ``submitted`` (the conversation and the answer's
    items, newest last) under ``limits``, when the kit can prove it; else None (a store may keep it).

    The proof: the count stage leaves the write whole (it is within the cap); the newest message,
    which both stages keep, costs more than the budget on its own (64 bytes, and 2 a UTF-16 unit of a
    text T in its content, in every accounting of the seed); T has 84 to 166 units, so halving it
    (half its units and the 83-unit marker) never shrinks it; no notice can join T (the byte stage's
    goes on a leading system message, which it keeps, or is a block of its own beside T in a parts
    array). So the content stage, while the entry is over budget, picks T sooner or later and finds
    that it cannot shrink, which rejects the write, unless its 64 passes run out first: the passes
    every other candidate can take (a halving each time the excess over 166 units halves, one
    replacement for a JSON document) must leave one for T.
    """
    if not 2 <= len(submitted) <= int(limits["max_messages"]) or not isinstance(submitted[-1], Mapping):
        return None
    budget = int(limits["max_entry_bytes"])
    head = isinstance(submitted[0], Mapping) and submitted[0].get("role") == "system"
    content = submitted[-1].get("content")
    texts = [(content, False)] if isinstance(content, str) else []
    if isinstance(content, list):
        texts = [(b["text"], True) for b in content if isinstance(b, Mapping) and isinstance(b.get("text"), str)]
    for text, in_parts in texts:
        units = utf16_units(text)
        halved = units // 2 + MARKER_UNITS
        if units <= MARKER_UNITS or halved < units or 64 + 2 * units <= budget:
            continue
        if NOTICE.match(text) is not None or not (head or in_parts):
            continue
        if _passes_besides(submitted, text) >= MAX_PASSES:
            continue
        return (
            f"the newest message, which the count and byte stages both keep, costs at least {64 + 2 * units} bytes "
            f"on its own (64, and 2 a UTF-16 unit of its {units}-unit text) against an entry budget of {budget}; "
            f"that text cannot shrink (halved, it keeps {units // 2} units and gains the {MARKER_UNITS}-unit marker: "
            f"{halved} units) and no notice can join it, so the content stage meets a candidate that cannot shrink "
            "before its passes run out, and seed 003 rejects the write"
        )
    return None


# Passes the stages' own notices might take as candidates (a seed store that cuts noticed texts).
_NOTICE_PASSES = 8


def _passes_besides(submitted: Sequence[Any], text: str) -> int:
    """At most how many passes of the content stage go to candidates other than ``text`` (one of them,
    the newest message's, left out once) before every one left is at most 166 units and cannot shrink."""
    passes, skipped = _NOTICE_PASSES, False
    for _path, key, value in _strings(submitted, ""):
        if value is text and not skipped:
            skipped = True
        elif key == "arguments" and looks_like_json_document(value):
            passes += utf16_units(value) > DOCUMENT_UNITS
        elif _may_be_refused_over(key, value):
            passes += utf16_units(value).bit_length() + 1
    return passes


def _may_be_refused_over(key: Any, text: str) -> bool:
    if isinstance(key, str) and key in _SEED_UNSHRINKABLE:
        return False
    if key == "arguments" and looks_like_json_document(text):
        return False
    return len(text) > MARKER_UNITS or utf16_units(text) > MARKER_UNITS


def _strings(value: Any, path: str, key: Any = None) -> Iterator[tuple[str, Any, str]]:
    """Every string below ``value``: its path, its key (a list item's is the list's index) and itself."""
    if isinstance(value, str):
        yield path, key, value
    elif isinstance(value, Mapping):
        for name, item in value.items():
            yield from _strings(item, f"{path}/{name}", name)
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            yield from _strings(item, f"{path}/{index}", index)


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


def _without_notices(message: Mapping[str, Any]) -> tuple[Mapping[str, Any], list[tuple[int, bool]]]:
    """``message`` with its leading drop notices taken off (both stages' may lead one text, engine.md
    Q3.5), and each notice's count and form (a string prefix, or a leading text block of its own)."""
    content = message.get("content")
    found: list[tuple[int, bool]] = []
    if isinstance(content, str):
        end = 0
        while (notice := _NOTICE_AT.match(content, end)) is not None:
            found.append((int(notice.group(1)), False))
            end = notice.end()
        return ({**message, "content": content[end:]} if found else message), found
    blocks = 0
    while isinstance(content, list) and blocks < len(content) and isinstance(content[blocks], Mapping):
        block = content[blocks]
        text = block.get("text")
        if not (_is_text_block(block) and isinstance(text, str)):
            break
        end, counts = 0, []
        while (notice := _NOTICE_AT.match(text, end)) is not None:
            counts.append(int(notice.group(1)))
            end = notice.end()
        if not counts or end != len(text):
            break
        found += [(count, True) for count in counts]
        blocks += 1
    if blocks:
        assert isinstance(content, list)
        return {**message, "content": content[blocks:]}, found
    return message, found


def _is_text_block(block: Mapping[str, Any]) -> bool:
    return block.get("type") in TEXT_BLOCKS


def _opens_with_a_cut_notice(text: str) -> bool:
    """Whether ``text`` (after its whole notices) is the start of a notice and then the marker."""
    at = text.find(TRUNCATION_MARKER)
    return at > 0 and _is_notice_prefix(text[:at])


def _is_notice_prefix(kept: str) -> bool:
    """Whether ``kept`` is what a cut leaves of a notice: the start of one, short of its closing ``]\\n\\n``."""
    opening = _NOTICE_OPENING.match(kept)
    if opening is None:
        return "[... ".startswith(kept)
    rest = kept[opening.end() :]
    if _NOTICE_WORDS.startswith(rest):
        return True
    return rest.startswith(_NOTICE_WORDS) and re.fullmatch(r"[^\]]*(\]\n?)?", rest[len(_NOTICE_WORDS) :]) is not None


def _compare(stored: Any, original: Any, path: str, traced: Traced, key: str = "") -> None:
    if isinstance(original, str) and isinstance(stored, str):
        if stored != original:
            kind = _rewrite_kind(stored, original, key)
            if kind is None:
                text = f"{path}: rewritten in a way no rule allows: {_pair(stored, original)}"
                json_arguments = key == "arguments" and looks_like_json_document(original)
                grew = _is_truncation(stored) and not _shorter(stored, original)
                if grew:
                    text += (
                        f"; a truncation that does not shrink the value ({utf16_units(original)} UTF-16 units became "
                        f"{utf16_units(stored)})"
                    )
                traced.problems.append(Problem(path, key, text, json_arguments, grew))
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
        return "compacted" if stored == ARGUMENTS_TRUNCATION_JSON and _shorter(stored, original) else None
    if stored.endswith(TRUNCATION_MARKER) and _shorter(stored, original):
        kept = stored[: -len(TRUNCATION_MARKER)]
        shared = _common_prefix(kept, original)
        # A string cut twice keeps a prefix of its first cut: the original's prefix, then the marker's.
        # The first cut may have ended where the original went on like the marker (a blank line), so
        # every split of ``kept`` within the shared prefix is tried, not only the longest.
        doubled = TRUNCATION_MARKER * 2
        if any(doubled.startswith(kept[split:]) for split in range(max(1, len(kept) - len(doubled)), shared + 1)):
            return "cut"
    return None


def _is_truncation(stored: str) -> bool:
    """Whether ``stored`` is what a truncation writes: the ``__truncated__`` document, or a cut (the marker last)."""
    return stored == ARGUMENTS_TRUNCATION_JSON or stored.endswith(TRUNCATION_MARKER)


def _shorter(stored: str, original: str) -> bool:
    """``stored`` has fewer UTF-16 units than ``original`` (the seed's lengths are JavaScript's)."""
    if len(stored) < len(original) and original.isascii():
        return True
    return utf16_units(stored) < utf16_units(original)


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
