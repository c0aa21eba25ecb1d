"""The response cache: finished answers replayed for an identical request of the same caller (engine.md section 4.A).

* Key: ``sha256(caller + "\\0" + JSON.stringify(normalize_request(body)))``, hex. The normalised body
  lists the knobs in the mirror's order; ``stream`` is not among them, so streamed and non-streamed
  requests share entries.
* Store: LRU with a TTL (an entry older than ``ttl_s`` is a miss and is dropped; a read refreshes the LRU
  position, not the age), an entry cap and a byte cap. An answer's size is the UTF-8 length of the
  ``JSON.stringify`` of its :class:`CachedAnswer` fields.

Who may read and write it (only per-user scopes, never a turn with tool calls or a violating one) and
how a hit is accounted (:mod:`engine.chat.ledger`) is the HTTP layer's business.
"""

from __future__ import annotations

import base64
import hashlib
import math
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from engine.js import js_get, js_stringify, js_utf8, utf16_sort_key

DEFAULT_TTL_S: Final = 300.0
DEFAULT_MAX_ENTRIES: Final = 500
DEFAULT_MAX_BYTES: Final = 16 * 1024 * 1024

_OFF_VALUES: Final = frozenset({"0", "false", "off", "no"})
# k, kb and kib are all 1024: engine.md lists the units without telling them apart, and the default is 16 MiB.
_UNIT_BYTES: Final = {
    "": 1,
    "b": 1,
    **dict.fromkeys(("k", "kb", "kib"), 1024),
    **dict.fromkeys(("m", "mb", "mib"), 1024**2),
    **dict.fromkeys(("g", "gb", "gib"), 1024**3),
}
_SIZE: Final = re.compile(r"\s*(\d+(?:\.\d*)?|\.\d+)\s*([a-z]*)\s*", re.IGNORECASE)
_BASE64_ALPHABET: Final = re.compile(r"[^A-Za-z0-9+/]")
_DATA_URL: Final = re.compile(r"data:([^,;]*)((?:;[^,;]*)*?);base64,", re.IGNORECASE)


# ------------------------------------------------------------------------------------ key


def normalize_request(body: Mapping[str, Any]) -> dict[str, Any]:
    """What of a chat request decides its answer, in the mirror's key order; a missing knob is ``None``.

    ``reasoning_effort`` falls back to ``reasoning.effort``; ``max_tokens`` is ``max_completion_tokens``
    when that is a finite number. Knobs are copied with object keys sorted (recursively); messages keep
    their key order (two clients serialising the same message differently get different keys, as in the
    mirror) but every base64 payload in them is replaced by :func:`binary_placeholder`.
    """
    effort = body.get("reasoning_effort")
    if effort is None:
        effort = js_get(body.get("reasoning"), "effort")
    completion_cap = body.get("max_completion_tokens")
    knobs = {
        "tools": body.get("tools"),
        "tool_choice": body.get("tool_choice"),
        "response_format": body.get("response_format"),
        "reasoning_effort": effort,
        "thinking": body.get("thinking"),
        "stream_options": body.get("stream_options"),
        "temperature": body.get("temperature"),
        "top_p": body.get("top_p"),
        "top_k": body.get("top_k"),
        "max_tokens": completion_cap if _is_finite_number(completion_cap) else body.get("max_tokens"),
        "stop": body.get("stop"),
        "seed": body.get("seed"),
        "frequency_penalty": body.get("frequency_penalty"),
        "presence_penalty": body.get("presence_penalty"),
        "logit_bias": body.get("logit_bias"),
        "n": body.get("n"),
    }
    return {
        "model": _sorted_clone(body.get("model")),
        "messages": _replace_binary(body.get("messages")),
        **{name: _sorted_clone(value) for name, value in knobs.items()},
    }


def cache_key(caller: str, body: Mapping[str, Any]) -> str:
    """The cache key of ``body`` for ``caller`` (its per-user scope): a sha256 hex digest."""
    serialized = js_stringify(normalize_request(body))
    assert serialized is not None  # a dict always serialises
    return hashlib.sha256(js_utf8(caller + "\0" + serialized)).hexdigest()


def binary_placeholder(mime: str, data: str) -> str:
    """``[base64:<mime>:sha256=<first 32 hex>:bytes=<n>]`` for base64 ``data``.

    The digest and the count are of the decoded bytes. Decoding is lenient, like Node's ``Buffer.from(data,
    'base64')``: URL-safe letters accepted, whitespace and other characters skipped, padding optional.
    """
    raw = _decode_base64(data)
    return f"[base64:{mime}:sha256={hashlib.sha256(raw).hexdigest()[:32]}:bytes={len(raw)}]"


def _decode_base64(data: str) -> bytes:
    letters = _BASE64_ALPHABET.sub("", data.replace("-", "+").replace("_", "/"))
    if len(letters) % 4 == 1:  # a lone trailing letter holds no whole byte
        letters = letters[:-1]
    return base64.b64decode(letters + "=" * (-len(letters) % 4))


def _replace_data_url(url: str) -> str:
    match = _DATA_URL.match(url)
    if match is None:
        return url
    return binary_placeholder(match.group(1), url[match.end() :])


def _replace_binary(value: Any) -> Any:
    """A copy of ``value`` with every base64 payload replaced; key order kept."""
    if isinstance(value, list | tuple):
        return [_replace_binary(item) for item in value]
    if not isinstance(value, Mapping):
        return value
    out = {key: _replace_binary(item) for key, item in value.items()}
    image_url = value.get("image_url")
    if isinstance(image_url, str):
        out["image_url"] = _replace_data_url(image_url)
    elif isinstance(image_url, Mapping) and isinstance(image_url.get("url"), str):
        out["image_url"] = {**out["image_url"], "url": _replace_data_url(image_url["url"])}
    source = value.get("source")
    if (
        value.get("type") == "image"
        and isinstance(source, Mapping)
        and source.get("type") == "base64"
        and isinstance(source.get("data"), str)
    ):
        media_type = source.get("media_type")
        mime = media_type if isinstance(media_type, str) else ""
        out["source"] = {**out["source"], "data": binary_placeholder(mime, source["data"])}
    file = value.get("file")
    if isinstance(file, Mapping) and isinstance(file.get("file_data"), str):
        out["file"] = {**out["file"], "file_data": _replace_data_url(file["file_data"])}
    return out


def _sorted_clone(value: Any) -> Any:
    """``stableClone``: object keys sorted (UTF-16 order) at every depth, arrays kept in order."""
    if isinstance(value, list | tuple):
        return [_sorted_clone(item) for item in value]
    if isinstance(value, Mapping):
        return {key: _sorted_clone(value[key]) for key in sorted(value, key=utf16_sort_key)}
    return value


def _is_finite_number(value: object) -> bool:
    """``Number.isFinite``: a number (not a bool, not a numeric string) that is finite."""
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


# ------------------------------------------------------------------------------------ store


@dataclass(frozen=True)
class CachedAnswer:
    """A finished answer as replayed: its text, its reasoning, and the OpenAI usage it carried."""

    text: str
    thinking: str
    usage: Mapping[str, Any]
    finish_reason: str
    model: str

    def size(self) -> int:
        """UTF-8 bytes of the answer's ``JSON.stringify`` (fields in declaration order)."""
        serialized = js_stringify(
            {
                "text": self.text,
                "thinking": self.thinking,
                "usage": self.usage,
                "finish_reason": self.finish_reason,
                "model": self.model,
            }
        )
        assert serialized is not None  # a dict always serialises
        return len(js_utf8(serialized))


@dataclass
class _Entry:
    answer: CachedAnswer
    size: int
    stored_at: float


@dataclass
class _Counters:
    hits: int = 0
    misses: int = 0
    sets: int = 0
    skips: int = 0
    evictions: int = 0


class ResponseCache:
    """A thread-safe LRU of :class:`CachedAnswer` by :func:`cache_key`.

    * ``get``: a hit refreshes the entry's LRU position (not its age). An entry is alive while its age is
      at most ``ttl_s``; an older one is a miss and is dropped.
    * ``put``: refused (``skips``) for an answer with no text and no thinking, or larger than
      ``max_bytes`` (an answer of exactly ``max_bytes`` is kept). Otherwise stored, then the least
      recently used entries are evicted until at most ``max_entries`` entries and ``max_bytes`` bytes
      remain. Expired entries are dropped first and are not counted as evictions.
    * A disabled cache misses nothing and stores nothing: ``get`` is ``None`` and ``put`` is ``False``,
      and neither is counted.
    """

    def __init__(
        self,
        *,
        ttl_s: float = DEFAULT_TTL_S,
        max_entries: int = DEFAULT_MAX_ENTRIES,
        max_bytes: int = DEFAULT_MAX_BYTES,
        clock: Callable[[], float] = time.monotonic,
        enabled: bool = True,
    ) -> None:
        if not ttl_s > 0:
            raise ValueError(f"ttl_s must be positive (got {ttl_s})")
        if max_entries < 1:
            raise ValueError(f"max_entries must be at least 1 (got {max_entries})")
        if max_bytes < 1:
            raise ValueError(f"max_bytes must be at least 1 (got {max_bytes})")
        self.ttl_s = ttl_s
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self.enabled = enabled
        self._clock = clock
        self._entries: OrderedDict[str, _Entry] = OrderedDict()
        self._bytes = 0
        self._counters = _Counters()
        self._lock = threading.Lock()

    @classmethod
    def from_env(cls, env: Mapping[str, str], **overrides: Any) -> ResponseCache:
        """A cache configured like the mirror's: the enable switch and the byte cap from ``env``.

        ``RESPONSE_CACHE_ENABLED ?? WINDSURFAPI_RESPONSE_CACHE`` (``0``/``false``/``off``/``no`` disable,
        any case); ``RESPONSE_CACHE_MAX_BYTES ?? WINDSURFAPI_RESPONSE_CACHE_MAX_BYTES`` via
        :func:`parse_byte_size`, the default when invalid. ``overrides`` go to the constructor (clock, ttl_s...).
        """
        switch = _first_set(env, "RESPONSE_CACHE_ENABLED", "WINDSURFAPI_RESPONSE_CACHE")
        enabled = switch is None or switch.strip().lower() not in _OFF_VALUES
        size = _first_set(env, "RESPONSE_CACHE_MAX_BYTES", "WINDSURFAPI_RESPONSE_CACHE_MAX_BYTES")
        max_bytes = parse_byte_size(size) if size is not None else None
        return cls(enabled=enabled, max_bytes=max_bytes or DEFAULT_MAX_BYTES, **overrides)

    def get(self, key: str) -> CachedAnswer | None:
        if not self.enabled:
            return None
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None and self._expired(entry, self._clock()):
                self._drop(key)
                entry = None
            if entry is None:
                self._counters.misses += 1
                return None
            self._entries.move_to_end(key)
            self._counters.hits += 1
            return entry.answer

    def put(self, key: str, answer: CachedAnswer) -> bool:
        """Store ``answer`` under ``key``; ``False`` when it was refused (or the cache is disabled)."""
        if not self.enabled:
            return False
        if not answer.text and not answer.thinking:
            with self._lock:
                self._counters.skips += 1
            return False
        size = answer.size()
        with self._lock:
            if size > self.max_bytes:
                self._counters.skips += 1
                return False
            now = self._clock()
            self._drop_expired(now)
            if key in self._entries:
                self._drop(key)
            self._entries[key] = _Entry(answer, size, now)
            self._bytes += size
            self._counters.sets += 1
            while len(self._entries) > self.max_entries or self._bytes > self.max_bytes:
                self._drop(next(iter(self._entries)))
                self._counters.evictions += 1
            return True

    def stats(self) -> dict[str, int]:
        """Live ``entries`` and ``bytes``, and the counters ``hits``, ``misses``, ``sets``, ``skips``, ``evictions``."""
        with self._lock:
            self._drop_expired(self._clock())
            counters = self._counters
            return {
                "entries": len(self._entries),
                "bytes": self._bytes,
                "hits": counters.hits,
                "misses": counters.misses,
                "sets": counters.sets,
                "skips": counters.skips,
                "evictions": counters.evictions,
            }

    def clear(self) -> None:
        """Drop every entry; the counters are kept."""
        with self._lock:
            self._entries.clear()
            self._bytes = 0

    def _expired(self, entry: _Entry, now: float) -> bool:
        return now - entry.stored_at > self.ttl_s

    def _drop(self, key: str) -> None:
        self._bytes -= self._entries.pop(key).size

    def _drop_expired(self, now: float) -> None:
        for key in [k for k, entry in self._entries.items() if self._expired(entry, now)]:
            self._drop(key)


def parse_byte_size(text: str) -> int | None:
    """A byte count such as ``512``, ``1.5mb``, ``16 MiB`` or ``2g``; ``None`` when invalid or not positive.

    Units (any case): none or ``b``; ``k``/``kb``/``kib`` = 1024; ``m``/``mb``/``mib`` = 1024**2;
    ``g``/``gb``/``gib`` = 1024**3. Fractions are rounded down to whole bytes.
    """
    match = _SIZE.fullmatch(text)
    if match is None:
        return None
    unit = _UNIT_BYTES.get(match.group(2).lower())
    if unit is None:
        return None
    count = math.floor(float(match.group(1)) * unit)
    return count if count > 0 else None


def _first_set(env: Mapping[str, str], *names: str) -> str | None:
    """``env[a] ?? env[b]``: the first variable that is set, even to an empty string."""
    for name in names:
        value = env.get(name)
        if value is not None:
            return value
    return None
