"""The Responses store (engine.md section 3): conversations kept for ``previous_response_id`` chaining.

The face of the package:

* :func:`open_store` opens a store by spec (``memory`` or ``sqlite:PATH``).
* :class:`ResponseStore`, the thread-safe store itself (:mod:`engine.store.memory`).
* Its values and limits (:mod:`engine.store.model`): :class:`StoreLimits`, :data:`DEFAULT_LIMITS`,
  :class:`StoredEntry`, :class:`StoreBackend`, :class:`StoreOpenError`, :func:`parse_byte_size`,
  :func:`tenant_of`, :func:`wants_persistence`.
* What the store does to an entry before keeping it (:mod:`engine.store.trim`): :func:`trim_for_store`,
  :class:`TrimOutcome`, :func:`approx_bytes`.

:mod:`engine.store.sqlite` (the durable backend) is imported only when a ``sqlite:`` spec asks for it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Final

from engine.store.memory import ResponseStore
from engine.store.model import (
    DEFAULT_LIMITS,
    DEFAULT_MAX_AGE_S,
    DEFAULT_MAX_BYTES,
    DEFAULT_MAX_ENTRIES,
    DEFAULT_MAX_MESSAGES,
    DEFAULT_TTL_S,
    ENTRY_BYTES_FLOOR,
    MISSING,
    TENANT_BYTES_FLOOR,
    Lookup,
    PutResult,
    StoreBackend,
    StoredEntry,
    StoreLimits,
    StoreOpenError,
    parse_byte_size,
    tenant_of,
    wants_persistence,
)
from engine.store.trim import TrimOutcome, approx_bytes, trim_for_store

__all__ = [
    "ACCEPTED_SPECS",
    "DEFAULT_LIMITS",
    "DEFAULT_MAX_AGE_S",
    "DEFAULT_MAX_BYTES",
    "DEFAULT_MAX_ENTRIES",
    "DEFAULT_MAX_MESSAGES",
    "DEFAULT_TTL_S",
    "ENTRY_BYTES_FLOOR",
    "MISSING",
    "TENANT_BYTES_FLOOR",
    "Lookup",
    "PutResult",
    "ResponseStore",
    "StoreBackend",
    "StoreLimits",
    "StoreOpenError",
    "StoredEntry",
    "TrimOutcome",
    "approx_bytes",
    "open_store",
    "parse_byte_size",
    "tenant_of",
    "trim_for_store",
    "wants_persistence",
]

ACCEPTED_SPECS: Final = "'memory' or 'sqlite:PATH'"


def open_store(
    spec: str = "memory", limits: StoreLimits = DEFAULT_LIMITS, *, clock: Callable[[], float] = time.time
) -> ResponseStore:
    """A store by spec: ``memory`` or ``sqlite:PATH``; :class:`StoreOpenError` (a ValueError) for another spec
    or a file that cannot be used."""
    limits.validate()
    if spec == "memory":
        return ResponseStore(limits, clock=clock)
    kind, _, path = spec.partition(":")
    if kind != "sqlite" or not path:
        raise StoreOpenError(f"unknown response store {spec!r}: expected {ACCEPTED_SPECS}")
    from engine.store.sqlite import SqliteBackend  # sqlite3 is only imported when asked for

    backend = SqliteBackend(path)
    try:
        return ResponseStore(limits, backend=backend, clock=clock)
    except BaseException:
        backend.close()
        raise
