"""Request fingerprints: the keys under which the conversation pool stores a cascade.

A turn looks up the fingerprint of the conversation *before* its newest user/tool turn
(:func:`fingerprint_before`); a hit means the pool already drove that cascade to exactly that
state, so only the newest turn is sent. After the turn the entry is checked back in under the
fingerprint of the whole conversation (:func:`fingerprint_after`, over the messages plus the
assistant turn just produced), which is what the next request's ``fingerprint_before`` asks for.

Fingerprints (engine.md section 2.A) hash a JS ``stableStringify`` serialisation
(:func:`engine.js.stable_stringify`) of ``{v: 2, caller, model, route, sys, tools, turns}``:

* ``turns``: every non-system message through :func:`project_message` (user/system/unknown roles
  keep canonical content blocks, ``tool`` becomes ``tool_result``, assistant keeps its collapsed
  text and a ``{name, args}`` digest of its tool calls); meta tags are stripped from every text
  (:func:`strip_meta_tags`) and media are digested (:func:`canonical_content_block`). A block with
  no stable digest makes the fingerprint ``None`` (no reuse).
* ``sys``: :func:`system_digest`, the system messages with drifting tokens normalised
  (:func:`normalize_system_prompt_for_hash`); ``''`` when ``hash_system`` is off.
* ``tools``: :func:`tool_context_digest`, only when tools are emulated.
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from engine.js import (
    JS_LINE_TERMINATORS,
    JS_SPACE_CLASS,
    js_get,
    js_json_parse,
    js_or,
    js_string,
    js_trim,
    js_truthy,
    js_utf8,
    stable_stringify,
    utf16_len,
)

# The audit line keeps the logger it had when fingerprints lived in the pool module.
log = logging.getLogger("engine.pool")

#: The fingerprint payload version (``v``).
KEY_VERSION: Final = 2
#: Texts longer than this many UTF-16 units are hashed verbatim (not meta-stripped, not audited).
META_STRIP_MAX_CHARS: Final = 262_144

_MISSING: Final = object()


def sha256_hex(text: str) -> str:
    return hashlib.sha256(js_utf8(text)).hexdigest()


def short_digest(value: object, length: int = 16) -> str:
    """``sha256(String(value ?? ''))`` cut to ``length`` hex digits."""
    text = "" if value is None else js_string(value)
    return sha256_hex(text)[:length]


# ------------------------------------------------------------------------------------ text rules

_S = JS_SPACE_CLASS
# ``^`` and ``$`` of a JS regex with the ``m`` flag (line terminators are \n, \r, U+2028, U+2029).
_BOL = rf"(?:(?<![\s\S])|(?<=[{JS_LINE_TERMINATORS}]))"
_EOL = rf"(?=[{JS_LINE_TERMINATORS}]|(?![\s\S]))"


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
    text = js_get(part, "text")
    if isinstance(text, str):
        return {"type": "text", "text": strip_meta_tags(text)}
    if isinstance(part, str):
        return {"type": "text", "text": strip_meta_tags(part)}
    raw_type = js_or(js_get(part, "type"), "")
    block_type = js_string(raw_type).lower()
    if block_type in _IMAGE_TYPES:
        url = js_or(js_get(js_get(part, "image_url"), "url"), js_get(part, "url"), "")
        if isinstance(url, str) and url.startswith("data:"):
            comma = url.find(",")
            meta = url[5:comma] if comma > 0 else ""
            data = url[comma + 1 :] if comma > 0 else url
            return {"type": "image", "meta": meta, "hash": _media_digest(data)}
        if isinstance(url, str) and url:
            return {"type": "image", "url": url}
        source = js_get(part, "source")
        # JS tests ``typeof source === 'object'``; a null source would throw there, it is skipped here.
        if isinstance(source, Mapping | list):
            src_type, src_data = js_get(source, "type"), js_get(source, "data")
            if src_type == "base64" and isinstance(src_data, str):
                media_type = js_or(js_get(source, "media_type"), "")
                return {"type": "image", "meta": media_type, "hash": _media_digest(src_data)}
            src_url = js_get(source, "url")
            if src_type == "url" and isinstance(src_url, str):
                return {"type": "image", "url": src_url}
            file_id = js_get(source, "file_id")
            if isinstance(file_id, str):
                return {"type": "image", "file_id": file_id}
        return {"type": "image", "unhashable": True}
    if block_type in _FILE_TYPES:
        source = js_get(part, "source")
        file_id = js_or(js_get(part, "file_id"), js_get(source, "file_id"))
        if isinstance(file_id, str):
            return {"type": "file", "file_id": file_id}
        src_data = js_get(source, "data")
        if js_get(source, "type") == "base64" and isinstance(src_data, str):
            return {"type": "file", "meta": js_or(js_get(source, "media_type"), ""), "hash": _media_digest(src_data)}
        src_url = js_get(source, "url")
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
    return isinstance(blocks, list) and any(js_get(block, "unhashable") is True for block in blocks)


def _canonical_args(arguments: object) -> str:
    """Tool-call arguments as stable JSON; a string that does not parse is kept as is."""
    if isinstance(arguments, str):
        try:
            return stable_stringify(js_json_parse(arguments))
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
            function = js_get(call, "function")
            name = js_or(js_get(function, "name"), js_get(call, "name"), "")
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
            if js_get(part, "type") == "tool_use":
                name = js_string(js_or(js_get(part, "name"), ""))
                calls.append({"name": name, "args": stable_stringify(js_get(part, "input"))})
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
            js_trim(_JS_WS_RUN_RE.sub(" ", js_string(js_or(block.get("text"), ""))))
            for block in canonicalise_content(content)
            if block.get("type") == "text"
        ]
        return {"role": "assistant", "text": js_trim("\n".join(texts)), "tool_calls": project_tool_calls(message)}
    return {"role": js_string(js_or(role, "unknown")), "content": canonicalise_content(content)}


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
        fn = js_or(js_get(tool, "function"), tool)
        parameters = js_get(fn, "parameters")
        if parameters is None:
            parameters = js_get(fn, "input_schema")
        tools.append(
            {
                "name": js_or(js_get(fn, "name"), ""),
                "description": js_or(js_get(fn, "description"), ""),
                "parameters": parameters,
            }
        )
    tools.sort(key=lambda tool: _collation_key(js_string(js_or(tool["name"], ""))))
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
