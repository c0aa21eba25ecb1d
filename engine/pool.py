"""The conversation pool: reuse a Cascade ``cascade_id`` across the turns of one conversation.

A turn looks up the fingerprint of the conversation *before* its newest user/tool turn
(:func:`fingerprint_before`); a hit means the pool already drove that cascade to exactly that
state, so only the newest turn is sent. After the turn the entry is checked back in under the
fingerprint of the whole conversation (:func:`fingerprint_after`, over the messages plus the
assistant turn just produced), which is what the next request's ``fingerprint_before`` asks for.

Fingerprints (engine.md section 2.A) hash a JS ``stableStringify`` serialisation (keys sorted by
UTF-16 code units, JS number and string rendering) of
``{v: 2, caller, model, route, sys, tools, turns}``:

* ``turns``: every non-system message through :func:`project_message` (user/system/unknown roles
  keep canonical content blocks, ``tool`` becomes ``tool_result``, assistant keeps its collapsed
  text and a ``{name, args}`` digest of its tool calls); meta tags are stripped from every text
  (:func:`strip_meta_tags`) and media are digested (:func:`canonical_content_block`). A block with
  no stable digest makes the fingerprint ``None`` (no reuse).
* ``sys``: :func:`system_digest`, the system messages with drifting tokens normalised
  (:func:`normalize_system_prompt_for_hash`); ``''`` when ``hash_system`` is off.
* ``tools``: :func:`tool_context_digest`, only when tools are emulated.

The pool (:class:`ConversationPool`) is an LRU by last access (check-in time) with a TTL per entry
(a hint may lengthen it). Lookups are O(1); expiry uses a lazily pruned heap and eviction pops
the LRU end, so a check-in never scans the pool.

Fixed behaviour (seed 001, D5): a check-in keeps an unknown generator offset unknown (``None``)
instead of coercing it to 0; a non-finite step offset still becomes 0 (baseline, out of scope).
"""

from __future__ import annotations

import functools
import hashlib
import heapq
import itertools
import json
import logging
import math
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from decimal import ROUND_HALF_UP, Decimal
from enum import Enum
from typing import Concatenate, Final, ParamSpec, TypeVar

from engine.js_json import js_number, js_quote, js_string, js_truthy
from engine.utf16 import utf16_len

log = logging.getLogger("engine.pool")

#: CASCADE_POOL_TTL_MS default (30 min), in seconds.
DEFAULT_TTL_S: Final = 1800.0
#: CASCADE_POOL_MAX default.
DEFAULT_MAX_ENTRIES: Final = 500
#: The fingerprint payload version (``v``).
KEY_VERSION: Final = 2
#: Texts longer than this many UTF-16 units are hashed verbatim (not meta-stripped, not audited).
META_STRIP_MAX_CHARS: Final = 262_144
#: The background sweep interval of the baseline (call :meth:`ConversationPool.sweep` this often).
SWEEP_INTERVAL_S: Final = 300.0
#: The TTL hint chat.js passes when the request carries a 1h prompt-cache marker (90 min).
ONE_HOUR_CACHE_TTL_HINT_S: Final = 5400.0

# ------------------------------------------------------------------------------------ JS serialisation

_MAX_SAFE_INTEGER = 2**53
_MISSING: Final = object()

def _json_number(value: int | float) -> str:
    if isinstance(value, int):
        if abs(value) <= _MAX_SAFE_INTEGER:
            return str(value)
        try:
            value = float(value)
        except OverflowError:
            return "null"
    return js_number(value) if math.isfinite(value) else "null"


def _utf16_sort_key(key: str) -> bytes:
    """JS ``Array.prototype.sort`` order of strings: by UTF-16 code units."""
    return key.encode("utf-16-be", "surrogatepass")


def stable_stringify(value: object) -> str:
    """The pool's ``stableStringify``: ``JSON.stringify`` with object keys sorted, recursively.

    Keys sort by UTF-16 code units (JS default sort); strings keep non-ASCII text and escape lone
    surrogates; numbers print as JS does (``1`` not ``1.0``, ``1e-7``, integers beyond 2**53
    rounded to a double, NaN/Infinity as ``null``). Tuples are arrays. Values JSON cannot hold
    raise ``TypeError`` (a parsed JSON request never has them).
    """
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return js_quote(value)
    if isinstance(value, int | float):
        return _json_number(value)
    if isinstance(value, list | tuple):
        return "[" + ",".join(stable_stringify(item) for item in value) + "]"
    if isinstance(value, Mapping):
        pairs = [(key if isinstance(key, str) else js_string(key), val) for key, val in value.items()]
        pairs.sort(key=lambda pair: _utf16_sort_key(pair[0]))
        return "{" + ",".join(js_quote(key) + ":" + stable_stringify(val) for key, val in pairs) + "}"
    raise TypeError(f"stable_stringify: {type(value).__name__} is not a JSON value")


def _js_utf8(text: str) -> bytes:
    """Node's UTF-8 encoding of a JS string: lone surrogates become U+FFFD."""
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace").encode("utf-8")


def sha256_hex(text: str) -> str:
    return hashlib.sha256(_js_utf8(text)).hexdigest()


def short_digest(value: object, length: int = 16) -> str:
    """``sha256(String(value ?? ''))`` cut to ``length`` hex digits."""
    text = "" if value is None else js_string(value)
    return sha256_hex(text)[:length]


def _js_parse(text: str) -> object:
    """``JSON.parse``: no NaN/Infinity literals (Python's json accepts them)."""

    def reject(constant: str) -> object:
        raise ValueError(f"JSON.parse rejects {constant}")

    return json.loads(text, parse_constant=reject)


# ------------------------------------------------------------------------------------ text helpers

# ECMAScript WhiteSpace and LineTerminator: what JS ``\s`` and ``trim()`` mean.
_JS_WS_CHARS = (
    "\t\n\v\f\r \u00a0\u1680" + "".join(map(chr, range(0x2000, 0x200B))) + "\u2028\u2029\u202f\u205f\u3000\ufeff"
)
_S = "[\t\n\v\f\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]"
_LT = "\n\r\u2028\u2029"
# ``^`` and ``$`` of a JS regex with the ``m`` flag (line terminators are \n, \r, U+2028, U+2029).
_BOL = rf"(?:(?<![\s\S])|(?<=[{_LT}]))"
_EOL = rf"(?=[{_LT}]|(?![\s\S]))"


def js_trim(text: str) -> str:
    """``String.prototype.trim``."""
    return text.strip(_JS_WS_CHARS)


META_TAG_NAMES: Final = (
    "system-reminder",
    "command-message",
    "command-name",
    "command-args",
    "local-command-stdout",
    "local-command-stderr",
    "user-prompt-submit-hook",
    "analysis",
    "summary",
    "example",
)
_META_TAG_SET = frozenset(META_TAG_NAMES)
_META_TAG_RE = re.compile("<(" + "|".join(re.escape(name) for name in META_TAG_NAMES) + r")[^>]*>[\s\S]*?</\1>")
_TRAILING_BLANKS_RE = re.compile(r"[ \t]+\n")
_BLANK_RUN_RE = re.compile(r"\n{3,}")
_ANY_TAG_RE = re.compile(r"<([a-z][-a-z_]*)[^>]*>[\s\S]*?</\1>")


def strip_meta_tags(text: str) -> str:
    """Remove client-injected meta tags whose bodies drift every turn, then tidy blank runs.

    The tags of :data:`META_TAG_NAMES` are removed with their bodies; spaces before a newline are
    dropped, three or more newlines become two, and the result is JS-trimmed. Other tags that
    remain are caller content: they stay, and their names are logged once per call as
    ``[META_TAG_AUDIT] Unknown XML tags in user message: a, b``. Texts longer than
    :data:`META_STRIP_MAX_CHARS` UTF-16 units are returned unchanged (the regex work is capped).
    """
    if not text or utf16_len(text) > META_STRIP_MAX_CHARS:
        return text
    stripped = _META_TAG_RE.sub("", text)
    stripped = _TRAILING_BLANKS_RE.sub("\n", stripped)
    stripped = js_trim(_BLANK_RUN_RE.sub("\n\n", stripped))
    unknown = [m.group(1) for m in _ANY_TAG_RE.finditer(stripped) if m.group(1) not in _META_TAG_SET]
    if unknown:
        log.error("[META_TAG_AUDIT] Unknown XML tags in user message: %s", ", ".join(dict.fromkeys(unknown)))
    return stripped


_NEXT_HEADING = rf"(?:Status|Recent commits|Recent files|gitStatus|Current branch|Main branch|Git user){_S}*:"
_BLOCK_END = rf"(?={_BOL}[ \t]*{_NEXT_HEADING}|{_BOL}{_S}*{_EOL}|(?![\s\S]))"
_A, _I = re.ASCII, re.ASCII | re.IGNORECASE
_LABEL_LEAD = rf"{_BOL}[ \t]*[-\u2022]?{_S}*"  # start of line, optional bullet
_LABEL_COLON = "[:\uff1a]"  # ASCII or fullwidth colon

_SYSTEM_RULES: Final[tuple[tuple[re.Pattern[str], str], ...]] = (
    (re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:?\d{2})?", _A), "<ts>"),
    (
        re.compile(rf"\b(Today(?:'s)?{_S}+(?:date|is)(?:{_S}+is)?{_S}*[:\-]?{_S}*)\d{{4}}-\d{{2}}-\d{{2}}", _I),
        r"\1<date>",
    ),
    (re.compile(r"(?<!\d)\d{4}-\d{2}-\d{2}(?!\d|T)", _A), "<date>"),
    (re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", _I), "<uuid>"),
    (
        re.compile(
            rf"({_LABEL_LEAD}(?:Working{_S}+directory|Current{_S}+working{_S}+directory|cwd|CWD){_S}*{_LABEL_COLON})"
            r"[^\n]*",
            _I,
        ),
        r"\1 <cwd>",
    ),
    (
        re.compile(rf"({_LABEL_LEAD}(?:Current{_S}+(?:date|time)|Time){_S}*{_LABEL_COLON})[^\n]*", _I),
        r"\1 <time>",
    ),
    (
        re.compile(rf"({_LABEL_LEAD}(?:Session{_S}*ID|sessionId|session_id){_S}*{_LABEL_COLON})[^\n]*", _I),
        r"\1 <sessionid>",
    ),
    (re.compile(r"(?<![\d.])(?:1[7-9]|20)\d{8}(?:\d{3})?(?![\d.])", _A), "<epoch>"),
    (re.compile(rf"{_BOL}([ \t]*Status{_S}*:)[ \t]*\n[\s\S]*?{_BLOCK_END}", _I), "\\1\n<git-status>\n"),
    (re.compile(rf"{_BOL}([ \t]*Recent commits{_S}*:)[ \t]*\n[\s\S]*?{_BLOCK_END}", _I), "\\1\n<recent-commits>\n"),
    (re.compile(rf"{_BOL}([ \t]*Recent files{_S}*:)[ \t]*\n[\s\S]*?{_BLOCK_END}", _I), "\\1\n<recent-files>\n"),
    (re.compile(r"(?<![`'\"\w])(?=[a-f0-9]*\d)(?=[a-f0-9]*[a-f])[a-f0-9]{7,12}(?![`'\"\w])", _I), "<gitsha>"),
)


def normalize_system_prompt_for_hash(text: object) -> str:
    """Replace the drifting tokens of a system prompt by placeholders, in this order.

    ISO timestamps ``<ts>``; ``Today's date is YYYY-MM-DD`` and bare dates ``<date>``; UUIDs
    ``<uuid>``; the values of working-directory, current date/time and session-id lines
    (``<cwd>``, ``<time>``, ``<sessionid>``, label kept); 10/13-digit epochs ``<epoch>``; the
    bodies of git ``Status:``, ``Recent commits:`` and ``Recent files:`` blocks; short SHAs
    ``<gitsha>`` (7-12 hex with a digit and a letter, not quoted). Regex semantics are JS's:
    ASCII ``\\d``/``\\w``/``\\b``, Unicode ``\\s``, and ``^``/``$`` at any line terminator.
    """
    out = js_string(text) if js_truthy(text) else ""
    for pattern, replacement in _SYSTEM_RULES:
        out = pattern.sub(replacement, out)
    return out


# ------------------------------------------------------------------------------------ projection

Block = dict[str, object]
Message = Mapping[str, object]

_IMAGE_TYPES = frozenset({"image_url", "image", "input_image"})
_FILE_TYPES = frozenset({"document", "file", "input_file"})


def _get(value: object, key: str) -> object:
    """``value?.[key]`` for parsed JSON: a missing key, or a non-object, gives ``None``."""
    return value.get(key) if isinstance(value, Mapping) else None


def _or(value: object, default: object) -> object:
    """``value || default``."""
    return value if js_truthy(value) else default


def _media_digest(data: str) -> str:
    return short_digest(data, 16)


def canonical_content_block(part: object) -> Block:
    """One content block as a typed canonical record, with stable digests for media.

    Text (a ``text`` string, or a bare string) is meta-stripped. Images give
    ``{type: image, meta, hash}`` for inline data (a ``data:`` URL or a base64 source; ``hash`` is
    the first 16 hex digits of the SHA-256 of the base64 text), ``{type: image, url}`` or
    ``{type: image, file_id}``; files likewise with ``type: file``. Media without a stable digest
    are ``{type, unhashable: true}``. Any other block keeps its stable JSON.
    """
    text = _get(part, "text")
    if isinstance(text, str):
        return {"type": "text", "text": strip_meta_tags(text)}
    if isinstance(part, str):
        return {"type": "text", "text": strip_meta_tags(part)}
    raw_type = _or(_get(part, "type"), "")
    block_type = js_string(raw_type).lower()
    if block_type in _IMAGE_TYPES:
        url = _or(_or(_get(_get(part, "image_url"), "url"), _get(part, "url")), "")
        if isinstance(url, str) and url.startswith("data:"):
            comma = url.find(",")
            meta = url[5:comma] if comma > 0 else ""
            data = url[comma + 1 :] if comma > 0 else url
            return {"type": "image", "meta": meta, "hash": _media_digest(data)}
        if isinstance(url, str) and url:
            return {"type": "image", "url": url}
        source = _get(part, "source")
        # JS tests ``typeof source === 'object'``; a null source would throw there, it is skipped here.
        if isinstance(source, Mapping | list):
            src_type, src_data = _get(source, "type"), _get(source, "data")
            if src_type == "base64" and isinstance(src_data, str):
                return {"type": "image", "meta": _or(_get(source, "media_type"), ""), "hash": _media_digest(src_data)}
            src_url = _get(source, "url")
            if src_type == "url" and isinstance(src_url, str):
                return {"type": "image", "url": src_url}
            file_id = _get(source, "file_id")
            if isinstance(file_id, str):
                return {"type": "image", "file_id": file_id}
        return {"type": "image", "unhashable": True}
    if block_type in _FILE_TYPES:
        source = _get(part, "source")
        file_id = _or(_get(part, "file_id"), _get(source, "file_id"))
        if isinstance(file_id, str):
            return {"type": "file", "file_id": file_id}
        src_data = _get(source, "data")
        if _get(source, "type") == "base64" and isinstance(src_data, str):
            return {"type": "file", "meta": _or(_get(source, "media_type"), ""), "hash": _media_digest(src_data)}
        src_url = _get(source, "url")
        if isinstance(src_url, str):
            return {"type": "file", "url": src_url}
        return {"type": "file", "unhashable": True}
    return {"type": block_type or "unknown", "json": stable_stringify("" if part is None else part)}


def canonicalise_content(content: object) -> list[Block]:
    """A message's content as canonical blocks (a string is one text block)."""
    if isinstance(content, str):
        return [{"type": "text", "text": strip_meta_tags(content)}]
    if not isinstance(content, list | tuple):
        return [{"type": "json", "json": stable_stringify("" if content is None else content)}]
    return [canonical_content_block(part) for part in content]


def _has_unhashable_media(blocks: object) -> bool:
    return isinstance(blocks, list) and any(_get(block, "unhashable") is True for block in blocks)


def _canonical_args(arguments: object) -> str:
    """Tool-call arguments as stable JSON; a string that does not parse is kept as is."""
    if isinstance(arguments, str):
        try:
            return stable_stringify(_js_parse(arguments))
        except (ValueError, RecursionError):
            return arguments
    return stable_stringify(arguments)


def project_tool_calls(message: Message) -> list[dict[str, str]]:
    """The ``{name, args}`` digest of an assistant's tool calls (OpenAI ``tool_calls`` and
    Anthropic ``tool_use`` blocks map to the same form)."""
    calls: list[dict[str, str]] = []
    tool_calls = message.get("tool_calls")
    if isinstance(tool_calls, list):
        for call in tool_calls:
            function = _get(call, "function")
            name = _or(_or(_get(function, "name"), _get(call, "name")), "")
            arguments = function.get("arguments", _MISSING) if isinstance(function, Mapping) else _MISSING
            tool_input = call.get("input", _MISSING) if isinstance(call, Mapping) else _MISSING
            if arguments is not _MISSING:
                args = _canonical_args(arguments)
            elif tool_input is not _MISSING:
                args = stable_stringify(tool_input)
            else:
                args = ""
            calls.append({"name": js_string(name), "args": args})
    content = message.get("content")
    if isinstance(content, list):
        for part in content:
            if _get(part, "type") == "tool_use":
                calls.append(
                    {"name": js_string(_or(_get(part, "name"), "")), "args": stable_stringify(_get(part, "input"))}
                )
    return calls


_JS_WS_RUN_RE = re.compile(f"{_S}+")


def project_message(message: Message) -> dict[str, object]:
    """One message as the fingerprint sees it (drifting fields dropped)."""
    role = message.get("role")
    content = message.get("content")
    if role in ("system", "user"):
        return {"role": role, "content": canonicalise_content(content)}
    if role == "tool":
        call_id = message.get("tool_call_id")
        return {
            "role": "tool_result",
            "tool_call_id": call_id if isinstance(call_id, str) else "",
            "content": canonicalise_content(content),
        }
    if role == "assistant":
        texts = [
            js_trim(_JS_WS_RUN_RE.sub(" ", js_string(_or(block.get("text"), ""))))
            for block in canonicalise_content(content)
            if block.get("type") == "text"
        ]
        return {"role": "assistant", "text": js_trim("\n".join(texts)), "tool_calls": project_tool_calls(message)}
    return {"role": js_string(_or(role, "unknown")), "content": canonicalise_content(content)}


# ------------------------------------------------------------------------------------ fingerprints


@dataclass(frozen=True)
class FingerprintOptions:
    """The request context a fingerprint covers besides the messages.

    ``hash_system=False`` is ``CASCADE_REUSE_HASH_SYSTEM=0``. The tool fields count only when
    ``emulate_tools`` is set (tools described to the planner by a text preamble).
    """

    route: str = "chat"
    hash_system: bool = True
    emulate_tools: bool = False
    tools: Sequence[object] = ()
    tool_choice: object = None
    tool_preamble: str = ""
    preamble_tier: object = None


_DEFAULT_OPTIONS = FingerprintOptions()


def system_digest(messages: Sequence[Message], *, hash_system: bool = True) -> str:
    """32 hex digits over the normalised system messages; ``''`` when there are none or when off."""
    if not hash_system:
        return ""
    normalised: list[dict[str, object]] = []
    for message in messages:
        if message.get("role") != "system":
            continue
        projected = project_message(message)
        blocks = projected.get("content")
        if isinstance(blocks, list):
            projected["content"] = [
                {**block, "text": normalize_system_prompt_for_hash(block["text"])}
                if block.get("type") == "text" and isinstance(block.get("text"), str)
                else block
                for block in blocks
            ]
        normalised.append(projected)
    if not normalised:
        return ""
    return short_digest(stable_stringify(normalised), 32)


# ICU root collation of the ASCII punctuation and symbols, then digits, then letters (a < A < b).
_COLLATION_PUNCT = "\t\n\v\f\r _-,;:!?.'\"()[]{}@*/\\&#%`^+<=>|~$"


def _collation_key(name: str) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """An approximation of ``String.prototype.localeCompare`` (ICU root) for tool names.

    Primary level: punctuation and symbols, then digits, then letters ignoring case; tertiary
    level: lower case before upper case. Characters outside ASCII sort after, by code point.
    """
    primary: list[int] = []
    tertiary: list[int] = []
    for ch in name:
        if ch in _COLLATION_PUNCT:
            primary.append(_COLLATION_PUNCT.index(ch))
        elif ch.isascii() and ch.isdigit():
            primary.append(100 + int(ch))
        elif ch.isascii() and ch.isalpha():
            primary.append(200 + ord(ch.lower()) - ord("a"))
        else:
            primary.append(1000 + ord(ch))
        tertiary.append(1 if ch.isascii() and ch.isupper() else 0)
    return tuple(primary), tuple(tertiary)


def tool_context_digest(options: FingerprintOptions) -> str:
    """32 hex digits over the emulated tool context; ``''`` unless tools are emulated.

    Tools are sorted by name (client reshuffles do not drift the key) and reduced to
    ``{name, description, parameters}``; tool_choice, preamble tier and a 16-digit hash of the tool
    preamble join them.
    """
    if not options.emulate_tools:
        return ""
    tools: list[dict[str, object]] = []
    for tool in options.tools:
        fn = _or(_get(tool, "function"), tool)
        parameters = _get(fn, "parameters")
        if parameters is None:
            parameters = _get(fn, "input_schema")
        tools.append(
            {
                "name": _or(_get(fn, "name"), ""),
                "description": _or(_get(fn, "description"), ""),
                "parameters": parameters,
            }
        )
    tools.sort(key=lambda tool: _collation_key(js_string(_or(tool["name"], ""))))
    return short_digest(
        stable_stringify(
            {
                "tools": tools,
                "tool_choice": options.tool_choice,
                "preambleTier": options.preamble_tier,
                "toolPreambleHash": short_digest(options.tool_preamble, 16) if options.tool_preamble else "",
            }
        ),
        32,
    )


def _project_turns(turns: Iterable[Message]) -> list[dict[str, object]] | None:
    projected: list[dict[str, object]] = []
    for message in turns:
        if message.get("role") == "system":
            continue
        item = project_message(message)
        if _has_unhashable_media(item.get("content")):
            return None
        projected.append(item)
    return projected


def _digest(
    turns: Iterable[Message], all_messages: Sequence[Message], model_key: str, caller_key: str, opts: FingerprintOptions
) -> str | None:
    projected = _project_turns(turns)
    if projected is None:
        return None
    payload = {
        "v": KEY_VERSION,
        "caller": caller_key,
        "model": model_key,
        "route": opts.route or "chat",
        "sys": system_digest(all_messages, hash_system=opts.hash_system),
        "tools": tool_context_digest(opts),
        "turns": projected,
    }
    return sha256_hex(stable_stringify(payload))


def newest_stable_turn_index(messages: Sequence[Message]) -> int:
    """Index of the newest ``user`` or ``tool`` message, -1 when there is none."""
    for index in range(len(messages) - 1, -1, -1):
        if messages[index].get("role") in ("user", "tool"):
            return index
    return -1


def fingerprint_before(
    messages: Sequence[Message], model_key: str = "", caller_key: str = "", options: FingerprintOptions | None = None
) -> str | None:
    """The key a turn looks up: the conversation before its newest user/tool turn.

    ``None`` (no reuse) when there is no user/tool turn, when it is the first message, or when a
    prior turn holds media without a stable digest.
    """
    newest = newest_stable_turn_index(messages)
    if newest <= 0:
        return None
    return _digest(messages[:newest], messages, model_key, caller_key, options or _DEFAULT_OPTIONS)


def fingerprint_after(
    messages: Sequence[Message], model_key: str = "", caller_key: str = "", options: FingerprintOptions | None = None
) -> str | None:
    """The key a turn checks its cascade in under: the whole conversation.

    The caller appends the assistant turn it produced to ``messages`` first, so the next request
    (which carries that turn plus a new user/tool turn) finds the entry with
    :func:`fingerprint_before`.
    """
    if not messages:
        return None
    return _digest(messages, messages, model_key, caller_key, options or _DEFAULT_OPTIONS)


# ------------------------------------------------------------------------------------ the pool


class _Inherit(Enum):
    TOKEN = "inherit"


#: ``ttl_hint_s`` default of :meth:`ConversationPool.checkin`: keep the entry's own hint.
INHERIT: Final = _Inherit.TOKEN


@dataclass(frozen=True)
class Expected:
    """Owner checks at checkout: an empty/``None`` field on either side is not compared."""

    api_key: str = ""
    ls_address: str = ""
    ls_generation: int | None = None


@dataclass(frozen=True)
class PoolEntry:
    """A cascade the pool can resume.

    ``ls_address`` identifies the language server (the baseline's ``lsPort``). ``generator_offset``
    is ``None`` when unknown. ``created_at``/``last_access`` are clock seconds; ``ttl_hint_s``
    lengthens (or shortens) the pool TTL for this entry. ``history_coverage`` is opaque here.
    """

    cascade_id: str
    session_id: str = ""
    api_key: str = ""
    ls_address: str = ""
    ls_generation: int | None = None
    step_offset: int | float = 0
    generator_offset: int | float | None = None
    history_coverage: object = None
    caller_key: str = ""
    created_at: float | None = None
    last_access: float = 0.0
    ttl_hint_s: float | None = None


@dataclass(frozen=True)
class PoolStats:
    size: int
    max_size: int
    ttl_s: float
    hits: int
    misses: int
    stores: int
    evictions: int
    expired: int
    alias_writes: int
    hit_rate: str


def _finite(value: object) -> bool:
    return not isinstance(value, bool) and isinstance(value, int | float) and math.isfinite(value)


def _positive_finite(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value) and value > 0


def js_to_fixed_1(value: float) -> str:
    """``Number.prototype.toFixed(1)`` for a finite non-negative number (ties round up)."""
    return str(Decimal(value).quantize(Decimal("0.1"), rounding=ROUND_HALF_UP))


_P = ParamSpec("_P")
_R = TypeVar("_R")


def _locked(method: Callable[Concatenate[ConversationPool, _P], _R]) -> Callable[Concatenate[ConversationPool, _P], _R]:
    """Run a pool method under the pool's lock (the handlers may call it from several threads)."""

    @functools.wraps(method)
    def run(pool: ConversationPool, /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        with pool._lock:
            return method(pool, *args, **kwargs)

    return run


@dataclass
class _Slot:
    entry: PoolEntry
    seq: int
    expires_key: float = field(default=0.0)


class ConversationPool:
    """Fingerprint → :class:`PoolEntry`, LRU by last access, TTL per entry.

    ``clock`` returns seconds (any monotonic scale). ``checkout`` removes what it returns: a
    concurrent second request with the same fingerprint misses and starts a fresh cascade.
    """

    def __init__(
        self,
        ttl_s: float = DEFAULT_TTL_S,
        max_entries: int = DEFAULT_MAX_ENTRIES,
        clock: Callable[[], float] | None = None,
    ) -> None:
        if not ttl_s > 0:
            raise ValueError(f"ttl_s must be positive, got {ttl_s!r}")
        if max_entries < 0:
            raise ValueError(f"max_entries must be non-negative, got {max_entries!r}")
        if clock is None:
            clock = time.monotonic
        self.ttl_s = float(ttl_s)
        self.max_entries = max_entries
        self._clock = clock
        self._slots: OrderedDict[str, _Slot] = OrderedDict()  # oldest check-in first
        self._expiry: list[tuple[float, int, str]] = []  # (last_access + ttl, seq, fp); lazily pruned
        self._seq = itertools.count()
        self._lock = threading.RLock()
        self.hits = self.misses = self.stores = self.evictions = self.expired = self.alias_writes = 0

    # -- helpers

    def _ttl(self, entry: PoolEntry) -> float:
        hint = entry.ttl_hint_s
        return float(hint) if hint is not None and _positive_finite(hint) else self.ttl_s

    def _is_expired(self, entry: PoolEntry, now: float) -> bool:
        return now - entry.last_access > self._ttl(entry)

    def _drop(self, fp: str) -> None:
        del self._slots[fp]

    # -- API

    def __len__(self) -> int:
        return len(self._slots)

    def __contains__(self, fp: object) -> bool:
        return fp in self._slots

    @_locked
    def peek(self, fp: str) -> PoolEntry | None:
        """The entry stored under ``fp`` without checking it out (no stats, no expiry)."""
        slot = self._slots.get(fp)
        return slot.entry if slot is not None else None

    @_locked
    def checkout(self, fp: str | None, caller_key: str = "", expected: Expected | None = None) -> PoolEntry | None:
        """Take the entry stored under ``fp``, or ``None`` (a miss).

        In order: no fingerprint or no entry → miss; the entry belongs to another caller (both
        keys set and different) → miss, the entry stays for its owner; expired → dropped, miss;
        ``expected`` api key / LS / LS generation differs (both sides set) → miss, entry stays.
        Otherwise the entry is removed and returned.
        """
        if not fp:
            self.misses += 1
            return None
        slot = self._slots.get(fp)
        if slot is None:
            self.misses += 1
            return None
        entry = slot.entry
        if entry.caller_key and caller_key and entry.caller_key != caller_key:
            self.misses += 1
            return None
        if self._is_expired(entry, self._clock()):
            self._drop(fp)
            self.expired += 1
            self.misses += 1
            return None
        if expected is not None and _owner_mismatch(entry, expected):
            self.misses += 1
            return None
        self._drop(fp)
        self.hits += 1
        return entry

    @_locked
    def checkin(
        self,
        fps: str | Sequence[str] | None,
        entry: PoolEntry | None,
        caller_key: str = "",
        ttl_hint_s: float | _Inherit | None = INHERIT,
    ) -> None:
        """Store ``entry`` under each fingerprint (aliases share one logical check-in).

        The stored copy: ``caller_key`` (argument, else the entry's), a finite step offset or 0,
        a finite generator offset or ``None`` (unknown stays unknown), ``created_at`` kept (or
        now), ``last_access`` now. ``ttl_hint_s``: :data:`INHERIT` keeps the entry's hint;
        ``None``, non-finite or ≤ 0 clears it; otherwise it is set. Counts one store, then prunes.
        """
        if entry is None:
            return
        if isinstance(fps, str) or fps is None:
            keys = [fps] if fps else []
        else:
            keys = [fp for fp in fps if isinstance(fp, str) and fp]
        if not keys:
            return
        now = self._clock()
        if ttl_hint_s is INHERIT:
            hint = entry.ttl_hint_s if entry.ttl_hint_s is not None and _positive_finite(entry.ttl_hint_s) else None
        elif ttl_hint_s is None or not _positive_finite(ttl_hint_s):
            hint = None
        else:
            hint = float(ttl_hint_s)
        stored = replace(
            entry,
            caller_key=caller_key or entry.caller_key or "",
            step_offset=entry.step_offset if _finite(entry.step_offset) else 0,
            generator_offset=entry.generator_offset if _finite(entry.generator_offset) else None,
            created_at=entry.created_at if entry.created_at else now,
            last_access=now,
            ttl_hint_s=hint,
        )
        expires = now + self._ttl(stored)
        for fp in keys:
            seq = next(self._seq)
            self._slots[fp] = _Slot(stored, seq, expires)
            self._slots.move_to_end(fp)
            heapq.heappush(self._expiry, (expires, seq, fp))
        self.stores += 1
        if len(keys) > 1:
            self.alias_writes += len(keys) - 1
        self._prune(now)

    @_locked
    def sweep(self) -> int:
        """Drop expired entries now (the baseline runs this every 5 minutes); returns how many."""
        before = self.expired
        self._prune(self._clock())
        return self.expired - before

    def _prune(self, now: float) -> None:
        expiry = self._expiry
        while expiry and expiry[0][0] < now:
            _, seq, fp = heapq.heappop(expiry)
            slot = self._slots.get(fp)
            if slot is None or slot.seq != seq:
                continue  # checked out, replaced or invalidated since
            if self._is_expired(slot.entry, now):
                self._drop(fp)
                self.expired += 1
            else:  # rounding at the boundary: look again later
                heapq.heappush(expiry, (math.nextafter(now, math.inf), seq, fp))
                break
        while len(self._slots) > self.max_entries:
            self._slots.popitem(last=False)
            self.evictions += 1
        if len(expiry) > 2 * len(self._slots) + 64:
            self._expiry = [(slot.expires_key, slot.seq, fp) for fp, slot in self._slots.items()]
            heapq.heapify(self._expiry)

    @_locked
    def invalidate_for(self, api_key: str = "", ls_address: str = "", ls_generation: int | None = None) -> int:
        """Drop the entries of an account or LS that went away; returns how many slots were dropped.

        An entry matches on its api key, or on its LS address when either generation is unknown or
        both are equal. Every slot pointing at a matching cascade id goes too (aliases written by a
        multi-fingerprint check-in may carry other owner fields).
        """

        def matches(entry: PoolEntry) -> bool:
            if api_key and entry.api_key == api_key:
                return True
            return bool(
                ls_address
                and entry.ls_address == ls_address
                and (ls_generation is None or entry.ls_generation is None or entry.ls_generation == ls_generation)
            )

        targets = {
            slot.entry.cascade_id for slot in self._slots.values() if matches(slot.entry) and slot.entry.cascade_id
        }
        doomed = [
            fp
            for fp, slot in self._slots.items()
            if matches(slot.entry) or (slot.entry.cascade_id and slot.entry.cascade_id in targets)
        ]
        for fp in doomed:
            self._drop(fp)
        return len(doomed)

    @_locked
    def clear(self) -> int:
        count = len(self._slots)
        self._slots.clear()
        self._expiry.clear()
        return count

    @_locked
    def stats(self) -> PoolStats:
        lookups = self.hits + self.misses
        return PoolStats(
            size=len(self._slots),
            max_size=self.max_entries,
            ttl_s=self.ttl_s,
            hits=self.hits,
            misses=self.misses,
            stores=self.stores,
            evictions=self.evictions,
            expired=self.expired,
            alias_writes=self.alias_writes,
            hit_rate=js_to_fixed_1(self.hits / lookups * 100) if lookups else "0.0",
        )


def _owner_mismatch(entry: PoolEntry, expected: Expected) -> bool:
    if expected.api_key and entry.api_key and expected.api_key != entry.api_key:
        return True
    if expected.ls_address and entry.ls_address and expected.ls_address != entry.ls_address:
        return True
    return (
        expected.ls_generation is not None
        and entry.ls_generation is not None
        and expected.ls_generation != entry.ls_generation
    )
