"""The response store's model: limits, entries, lookups and the backend protocol (engine.md section 3).

Everything here is a value or a rule that the in-memory store (:mod:`engine.store.memory`) and its durable
backend (:mod:`engine.store.sqlite`) share; neither imports the other.
"""

from __future__ import annotations

import enum
import math
import re
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any, Final, Literal, Protocol

from engine.js import js_trim
from engine.store.trim import TrimOutcome

DEFAULT_TTL_S: Final = 3600.0
DEFAULT_MAX_AGE_S: Final = 86400.0
DEFAULT_MAX_ENTRIES: Final = 2000
DEFAULT_MAX_MESSAGES: Final = 400
DEFAULT_MAX_BYTES: Final = 128 * 1024**2
ENTRY_BYTES_FLOOR: Final = 64 * 1024
TENANT_BYTES_FLOOR: Final = 256 * 1024

_UNITS: Final = {"": 1, "b": 1, "k": 1024, "kb": 1024, "m": 1024**2, "mb": 1024**2, "g": 1024**3, "gb": 1024**3}
_BYTE_SIZE: Final = re.compile(r"([0-9]+)\s*(b|k|kb|m|mb|g|gb)?", re.IGNORECASE | re.ASCII)
_OPT_OUT: Final = frozenset({"false", "0", "no", "off", ""})


class StoreOpenError(ValueError):
    """A store that cannot be opened (bad spec, unusable file, corrupt row): the one-line message says why."""


# ------------------------------------------------------------------------------------ configuration


def parse_byte_size(text: str) -> int:
    """``128``, ``64k``, ``1 MB``, ``2g``: units 1024-based, any case; surrounding whitespace is ignored."""
    match = _BYTE_SIZE.fullmatch(text.strip())
    if match is None:
        raise ValueError(f"invalid byte size {text!r}: expected digits and an optional unit b, k, kb, m, mb, g, gb")
    return int(match.group(1)) * _UNITS[(match.group(2) or "").lower()]


class _Missing(enum.Enum):
    MISSING = enum.auto()


#: A request without a ``store`` field (JS ``undefined``), as opposed to ``"store": null``.
MISSING: Final = _Missing.MISSING


def wants_persistence(store_value: object = MISSING) -> bool:
    """The reference's ``wantsPersistence``: does a request's ``store`` value ask for its response to be kept?

    Absent (:data:`MISSING`) -> yes; ``None`` (JSON null) -> no; a bool is itself; a number is ``!= 0``; a string
    is not one of ``false``, ``0``, ``no``, ``off`` or empty (trimmed, any case); anything else -> yes.
    """
    if store_value is MISSING:
        return True
    if store_value is None:
        return False
    if isinstance(store_value, bool):
        return store_value
    if isinstance(store_value, int | float):
        return store_value != 0  # NaN != 0, as in JS
    if isinstance(store_value, str):
        return js_trim(store_value).lower() not in _OPT_OUT
    return True


def tenant_of(owner: str) -> str:
    """The owner key up to (not including) its second ``:``; the whole key when it has fewer than two."""
    first = owner.find(":")
    second = owner.find(":", first + 1) if first >= 0 else -1
    return owner if second < 0 else owner[:second]


@dataclass(frozen=True)
class StoreLimits:
    """The store's limits; ``entry_bytes`` / ``tenant_bytes`` override the derived per-entry and tenant floors."""

    ttl_s: float = DEFAULT_TTL_S
    max_age_s: float = DEFAULT_MAX_AGE_S
    max_entries: int = DEFAULT_MAX_ENTRIES
    max_messages: int = DEFAULT_MAX_MESSAGES
    max_bytes: int = DEFAULT_MAX_BYTES
    entry_bytes: int | None = None
    tenant_bytes: int | None = None

    @property
    def max_entry_bytes(self) -> int:
        return self.entry_bytes if self.entry_bytes is not None else max(ENTRY_BYTES_FLOOR, self.max_bytes // 4)

    @property
    def min_tenant_bytes(self) -> int:
        return self.tenant_bytes if self.tenant_bytes is not None else max(TENANT_BYTES_FLOOR, self.max_bytes // 64)

    def validate(self) -> None:
        """Raise ValueError naming the first limit that is not a positive finite number (seconds) or integer."""
        for name in ("ttl_s", "max_age_s"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value <= 0:
                raise ValueError(f"response store limit {name} must be a positive finite number (got {value!r})")
        for name in ("max_entries", "max_messages", "max_bytes", "entry_bytes", "tenant_bytes"):
            value = getattr(self, name)
            if value is None and name in ("entry_bytes", "tenant_bytes"):
                continue
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ValueError(f"response store limit {name} must be a positive integer (got {value!r})")

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: object) -> StoreLimits:
        """The limits :meth:`to_json` wrote, validated; ValueError for anything else."""
        if not isinstance(data, Mapping):
            raise ValueError(f"response store limits must be a JSON object (got {type(data).__name__})")
        names = {item.name for item in fields(cls)}
        unknown = sorted(str(key) for key in data if key not in names)
        if unknown:
            raise ValueError(f"unknown response store limit(s): {', '.join(unknown)}")
        limits = cls(**{key: data[key] for key in names if key in data})
        limits.validate()
        return limits


DEFAULT_LIMITS: Final = StoreLimits()


# ------------------------------------------------------------------------------------ values


@dataclass(frozen=True)
class StoredEntry:
    id: str
    owner: str
    messages: list[dict[str, Any]]
    model: str
    created_at: float
    last_access: float
    status: str
    incomplete_reason: str | None
    bytes: int

    @property
    def tenant(self) -> str:
        return tenant_of(self.owner)


@dataclass(frozen=True)
class PutResult:
    """``reason`` when refused: ``empty``, ``no_owner``, ``foreign_owner`` or the trimmer's rejection."""

    stored: bool
    reason: str | None
    trim: TrimOutcome | None


@dataclass(frozen=True)
class Lookup:
    ok: bool
    reason: Literal["not_found", "expired", None]
    entry: StoredEntry | None


class StoreBackend(Protocol):
    """Where entries outlive the process; each write is durable when it returns (the store calls it first).

    ``load`` yields every entry, least recently used first; ``save`` inserts or replaces one and ``touch``
    records a hit, each making the entry the most recently used; ``rewrite`` replaces an entry's messages
    (re-trimmed on load) and keeps its place in that order.
    """

    def load(self) -> Iterator[StoredEntry]: ...
    def save(self, entry: StoredEntry) -> None: ...
    def rewrite(self, entry: StoredEntry) -> None: ...
    def touch(self, response_id: str, last_access: float) -> None: ...
    def delete(self, response_id: str) -> None: ...
    def save_limits(self, limits: StoreLimits) -> None: ...
    def close(self) -> None: ...


def clone_json(value: Any) -> Any:
    """A deep copy of a JSON value (tuples become lists); TypeError for anything that is not one."""
    if value is None or isinstance(value, str | int | float):
        return value
    if isinstance(value, Mapping) and all(isinstance(key, str) for key in value):
        return {key: clone_json(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [clone_json(item) for item in value]
    raise TypeError(f"a stored message holds {value!r:.60}, which is not a JSON value")
