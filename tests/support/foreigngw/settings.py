"""foreigngw's settings, read from environment variables only (no command-line flags).

A required or enumerated setting that is wrong is a :class:`SettingsError` (the server exits 2 with
one line); a bad number falls back to its default, as gateways parse their limits.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

DEFECTS = frozenset(
    {
        "history-image-placeholder",
        "no-schema-validation",
        "splice-arguments",
        "silent-count-drop",
        "cache-hit-without-usage",
        "schema-stream-merged",
        "stop-ignored",
        "usage-twice",
        "error-as-empty-200",
        "resume-from-zero",
        "failed-turn-kept",
        "last-user-only",
        "parts-as-objects",
        "wait-limit-as-stop",
        "read-says-completed",
        "cache-key-without-caller",
        "blank-user-scope",
        "image-placeholder-key",
        "user-only-fingerprint",
        "previous-response-id-ignored",
    }
)
PERSONALITIES = ("full", "lean", "scoped")
#: How a fresh prompt frames its turns: one block per turn, a blank line between (``lines``), or every
#: turn on one line, ``User: TEXT | Assistant: TEXT | ...`` (``one-line``).
FRAMINGS = ("lines", "one-line")
#: How ``GET /v1/responses/{id}/input_items``, which it does not serve, is declined: 404 (no such route),
#: 405 (method not allowed), 501 (not implemented), or ``page``: a catch-all route's 200 HTML page.
INPUT_ITEMS_ANSWERS = ("404", "405", "501", "page")


class SettingsError(ValueError):
    """A setting the gateway cannot start with; the message is one line."""


@dataclass(frozen=True)
class Settings:
    port: int
    host: str = "127.0.0.1"
    ls_address: str = "127.0.0.1:42100"
    csrf_token: str = "windsurf-api-csrf-fixed-token"
    # Accepted Bearer keys, each its own caller; empty: any key is accepted and is the caller.
    api_keys: tuple[str, ...] = ()
    poll_interval_s: float = 0.005
    # How long a turn may run before the gateway stops waiting (and reports it cut).
    max_wait_s: float = 600.0
    max_history_images: int = 4
    max_history_image_bytes: int = 1_600_000  # base64 characters
    max_history_bytes: int = 600_000  # UTF-16 units
    personality: str = "full"
    cooldown_s: float = 2.0
    store_max_messages: int = 400
    store_max_entry_bytes: int = 102_400  # 100 KB, the usual default
    defects: frozenset[str] = field(default_factory=frozenset)
    # Cool down after every this many turns (busy.py); 0: never.
    busy_every: int = 0
    # Stream what each window of polls found, reasoning included, interleaved by timing (polling.py).
    polling: bool = False
    # Where a bodyless request carries its per-user signal (scoped personality): header or query, and the name.
    read_scope: tuple[str, str] = ("header", "x-response-user")
    framing: str = "lines"
    input_items: str = "404"

    @property
    def full(self) -> bool:
        """A store, a cache and a pool (the scoped personality has them too, for callers it can tell apart)."""
        return self.personality in ("full", "scoped")

    @property
    def scoped(self) -> bool:
        return self.personality == "scoped"

    def defect(self, name: str) -> bool:
        assert name in DEFECTS, name
        return name in self.defects


def _count(env: Mapping[str, str], name: str, default: int, *, allow_zero: bool) -> int:
    """A non-negative decimal integer as given (no sign, no spaces); anything else, and 0 unless
    allowed, is the default."""
    raw = env.get(name, "")
    if not raw.isascii() or not raw.isdigit():
        return default
    value = int(raw)
    return value if value > 0 or (allow_zero and value == 0) else default


def _seconds(env: Mapping[str, str], name: str, default: float) -> float:
    try:
        value = float(env.get(name, "").strip())
    except ValueError:
        return default
    return value if math.isfinite(value) and value >= 0 else default


def _switch(env: Mapping[str, str], name: str) -> bool:
    raw = env.get(name, "").strip().lower()
    if raw in ("", "0", "false", "off", "no"):
        return False
    if raw in ("1", "true", "on", "yes"):
        return True
    raise SettingsError(f"{name} must be 1 or 0 (on or off), got {raw!r}")


def _port(env: Mapping[str, str]) -> int:
    raw = env.get("FGW_PORT", "").strip()
    if not raw:
        raise SettingsError("FGW_PORT is required (the TCP port to listen on)")
    if not raw.isascii() or not raw.isdigit() or int(raw) > 65535:
        raise SettingsError(f"FGW_PORT must be a port number 0-65535, got {raw!r}")
    return int(raw)


def _defects(env: Mapping[str, str]) -> frozenset[str]:
    names = [part.strip() for part in env.get("FGW_DEFECTS", "").split(",") if part.strip()]
    unknown = [name for name in names if name not in DEFECTS]
    if unknown:
        raise SettingsError(f"unknown defect {unknown[0]!r} in FGW_DEFECTS (known: {', '.join(sorted(DEFECTS))})")
    return frozenset(names)


def _read_scope(env: Mapping[str, str]) -> tuple[str, str]:
    raw = env.get("FGW_READ_SCOPE", "").strip() or "header:x-response-user"
    where, _, name = raw.partition(":")
    if where not in ("header", "query") or not name:
        raise SettingsError(f"FGW_READ_SCOPE must be header:NAME or query:NAME, got {raw!r}")
    return where, name.lower() if where == "header" else name


def _choice(env: Mapping[str, str], name: str, choices: tuple[str, ...]) -> str:
    """One of ``choices`` (the first when unset)."""
    raw = env.get(name, "").strip() or choices[0]
    if raw not in choices:
        raise SettingsError(f"{name} must be one of {', '.join(choices)}, got {raw!r}")
    return raw


def load_settings(env: Mapping[str, str]) -> Settings:
    """The settings ``env`` describes. ``FGW_DATA_DIR`` and ``FGW_SKIP_DOTENV`` are accepted and
    otherwise ignored (this gateway keeps nothing on disk and reads no dotenv file)."""
    personality = env.get("FGW_PERSONALITY", "").strip() or "full"
    if personality not in PERSONALITIES:
        raise SettingsError(f"FGW_PERSONALITY must be one of {', '.join(PERSONALITIES)}, got {personality!r}")
    keys = tuple(key.strip() for key in env.get("FGW_API_KEYS", "").split(",") if key.strip())
    return Settings(
        port=_port(env),
        host=env.get("FGW_HOST", "").strip() or "127.0.0.1",
        ls_address=env.get("FGW_LS_ADDRESS", "").strip() or "127.0.0.1:42100",
        csrf_token=env.get("FGW_CSRF_TOKEN", "windsurf-api-csrf-fixed-token"),
        api_keys=keys,
        poll_interval_s=_count(env, "CASCADE_POLL_INTERVAL_MS", 5, allow_zero=False) / 1000,
        max_wait_s=_count(env, "CASCADE_MAX_WAIT_MS", 600_000, allow_zero=False) / 1000,
        max_history_images=_count(env, "CASCADE_MAX_HISTORY_IMAGES", 4, allow_zero=True),
        max_history_image_bytes=_count(env, "CASCADE_MAX_HISTORY_IMAGE_BYTES", 1_600_000, allow_zero=True),
        max_history_bytes=_count(env, "CASCADE_MAX_HISTORY_BYTES", 600_000, allow_zero=False),
        personality=personality,
        cooldown_s=_seconds(env, "FGW_COOLDOWN_S", 2.0),
        store_max_messages=_count(env, "FGW_STORE_MAX_MESSAGES", 400, allow_zero=False),
        store_max_entry_bytes=_count(env, "FGW_STORE_MAX_ENTRY_BYTES", 102_400, allow_zero=False),
        defects=_defects(env),
        read_scope=_read_scope(env),
        busy_every=_count(env, "FGW_BUSY_EVERY", 0, allow_zero=True),
        polling=_switch(env, "FGW_POLLING"),
        framing=_choice(env, "FGW_FRAMING", FRAMINGS),
        input_items=_choice(env, "FGW_INPUT_ITEMS", INPUT_ITEMS_ANSWERS),
    )
