"""The response store: conversations kept for ``previous_response_id`` chaining (engine.md section 3).

* An entry is a trimmed, deep-copied conversation (:func:`engine.store.trim.trim_for_store`) owned by one
  caller key. Only the owner reads or deletes it; anyone else is told "not found" (a warning is logged) and
  nothing is dropped. A same-id re-put by the owner refreshes the entry but keeps its ``created_at``; a
  same-id put by anyone else is refused.
* Expiry, as the reference's ``now - t > limit``: an entry idle for exactly ``ttl_s`` or aged exactly
  ``max_age_s`` is still alive. Expired entries are dropped when their owner looks them up, before any
  eviction, and by :meth:`ResponseStore.sweep` / :meth:`ResponseStore.stats`.
* Caps, after each write (the entry just written is never the victim): while there are more than
  ``max_entries`` entries or more than ``max_bytes`` bytes, evict the writer's tenant's least recently used
  entry when that tenant holds more than its share ``max(min_tenant_bytes, max_bytes / tenants)``, else the
  global least recently used entry. So after a put, ``bytes <= max_bytes`` unless the newest entry is alone.
* Entry size is :func:`engine.store.trim.approx_bytes` of the kept messages. Messages must be JSON values.
* Durability is a :class:`StoreBackend`'s business (``open_store("sqlite:PATH")``): every write is passed to
  it before memory changes, and on open its entries are loaded and the current limits enforced.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from engine.store.model import (
    DEFAULT_LIMITS,
    Lookup,
    PutResult,
    StoreBackend,
    StoredEntry,
    StoreLimits,
    clone_json,
)
from engine.store.trim import StoreWriteRejected, TrimOutcome, approx_bytes, trim_for_store

log = logging.getLogger("engine.response_store")


# ------------------------------------------------------------------------------------ the store


@dataclass
class _Counters:
    stored: int = 0
    hits: int = 0
    misses: int = 0
    expires: int = 0
    evictions: int = 0
    rejected: int = 0


@dataclass
class _Tenant:
    bytes: int = 0
    ids: OrderedDict[str, None] = field(default_factory=OrderedDict)  # least recently used first


class ResponseStore:
    """A thread-safe store of :class:`StoredEntry` by response id (one lock; values handed out are copies).

    Counters in :meth:`stats`: ``stored`` (successful puts), ``hits``, ``misses`` (every lookup that did not
    hit: unknown, foreign or expired), ``expires`` (entries dropped as expired), ``evictions`` and
    ``rejected`` (puts refused for no owner, a foreign id, or a write the trimmer rejected).
    """

    def __init__(
        self,
        limits: StoreLimits = DEFAULT_LIMITS,
        *,
        backend: StoreBackend | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        limits.validate()
        self.limits = limits
        self._backend = backend
        self._clock = clock
        self._entries: OrderedDict[str, StoredEntry] = OrderedDict()  # least recently used first
        self._tenants: dict[str, _Tenant] = {}
        self._bytes = 0
        self._counts = _Counters()
        self._lock = threading.Lock()
        if backend is not None:
            self._restore(backend)

    def __enter__(self) -> ResponseStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def now(self) -> float:
        """The store's clock: what ``created_at`` given to :meth:`put` is measured on."""
        return self._clock()

    def put(
        self,
        response_id: str,
        messages: Sequence[Mapping[str, Any]],
        owner: str,
        *,
        model: str = "",
        status: str = "completed",
        incomplete_reason: str | None = None,
        created_at: float | None = None,
    ) -> PutResult:
        """Store a trimmed copy of ``messages`` under ``response_id`` for ``owner``, then enforce the caps.

        ``created_at`` (read from :meth:`now` when the answer began) is the time a new entry keeps, so a
        retrieve shows the time the answer was announced with, not the second the write happened in."""
        if not messages:
            return PutResult(False, "empty", None)
        if not owner:
            return self._refuse(response_id, "no_owner", None)
        try:
            outcome = trim_for_store(
                messages, max_messages=self.limits.max_messages, max_entry_bytes=self.limits.max_entry_bytes
            )
        except StoreWriteRejected as exc:
            return self._refuse(response_id, exc.reason, None)
        kept: list[dict[str, Any]] = clone_json(outcome.messages)
        size = approx_bytes(kept)
        with self._lock:
            now = self._clock()
            previous = self._entries.get(response_id)
            if previous is not None and not _owned_by(previous, owner):
                self._counts.rejected += 1
                log.warning("[response-store] refused to overwrite %s: another caller owns it", response_id[:24])
                return PutResult(False, "foreign_owner", outcome)
            # A refresh keeps its age; an id whose entry already expired starts a new one.
            alive = previous is not None and not self._expired(previous, now)
            if previous is not None and alive:
                created_at = previous.created_at
            else:
                created_at = now if created_at is None else min(created_at, now)
            entry = StoredEntry(response_id, owner, kept, model, created_at, now, status, incomplete_reason, size)
            if self._backend is not None:
                self._backend.save(entry)
            if previous is not None:
                self._forget(response_id)
            self._remember(entry)
            self._counts.stored += 1
            self._enforce_caps(now, keep=response_id)
        return PutResult(True, None, outcome)

    def get(self, response_id: str, owner: str) -> Lookup:
        """The owner's entry (a copy), refreshing its idle time; ``not_found`` for anyone else, ``expired``."""
        with self._lock:
            entry = self._entries.get(response_id)
            if entry is None or not _owned_by(entry, owner):
                self._counts.misses += 1
                if entry is not None:
                    log.warning("[response-store] rejected cross-caller lookup of %s", response_id[:24])
                return Lookup(False, "not_found", None)
            now = self._clock()
            if self._expired(entry, now):
                self._drop(response_id)
                self._counts.expires += 1
                self._counts.misses += 1
                return Lookup(False, "expired", None)
            if self._backend is not None:
                self._backend.touch(response_id, now)
            entry = replace(entry, last_access=now)
            self._entries[response_id] = entry
            self._move_to_end(entry)
            self._counts.hits += 1
        # Stored messages are never mutated in place, so the copy can be made outside the lock.
        return Lookup(True, None, replace(entry, messages=clone_json(entry.messages)))

    def delete(self, response_id: str, owner: str) -> bool:
        """Drop the owner's entry; ``False`` (and nothing dropped) when it is unknown or someone else's."""
        with self._lock:
            entry = self._entries.get(response_id)
            if entry is None or not _owned_by(entry, owner):
                return False
            self._drop(response_id)
            return True

    def sweep(self) -> int:
        """Drop every expired entry; how many were dropped."""
        with self._lock:
            return self._drop_expired(self._clock())

    def stats(self) -> dict[str, Any]:
        """The reference's stats object (expired entries swept first, so ``size`` and ``bytes`` are live)."""
        with self._lock:
            self._drop_expired(self._clock())
            return {
                **asdict(self._counts),
                "size": len(self._entries),
                "bytes": self._bytes,
                "maxBytes": self.limits.max_bytes,
                "ttlMs": round(self.limits.ttl_s * 1000),
                "maxAgeMs": round(self.limits.max_age_s * 1000),
                "enabled": True,
                "tenants": len(self._tenants),
            }

    def close(self) -> None:
        with self._lock:
            if self._backend is not None:
                self._backend.close()

    # -------------------------------------------------------------------------------- internals (lock held)

    def _refuse(self, response_id: str, reason: str, outcome: TrimOutcome | None) -> PutResult:
        with self._lock:
            self._counts.rejected += 1
        log.warning("[response-store] refused to store %s: %s", response_id[:24], reason)
        return PutResult(False, reason, outcome)

    def _restore(self, backend: StoreBackend) -> None:
        """Load ``backend``'s entries and hold them to the current limits (re-trimmed, expired, evicted)."""
        for loaded in backend.load():
            entry = self._retrim(loaded)
            if entry is None:
                backend.delete(loaded.id)
            else:
                if entry is not loaded:
                    backend.rewrite(entry)
                self._remember(entry)
        now = self._clock()
        self._drop_expired(now)
        self._enforce_caps(now, keep=None)
        backend.save_limits(self.limits)

    def _retrim(self, entry: StoredEntry) -> StoredEntry | None:
        """``entry`` held to the current per-entry limits (itself when already within them); None: rejected."""
        try:
            outcome = trim_for_store(
                entry.messages, max_messages=self.limits.max_messages, max_entry_bytes=self.limits.max_entry_bytes
            )
        except StoreWriteRejected as exc:
            log.warning("[response-store] dropped stored %s on load: %s", entry.id[:24], exc.reason)
            return None
        if outcome.dropped_by_count or outcome.dropped_by_bytes or outcome.rewritten_slots:
            kept = clone_json(outcome.messages)
            return replace(entry, messages=kept, bytes=approx_bytes(kept))
        size = approx_bytes(entry.messages)
        return entry if size == entry.bytes else replace(entry, bytes=size)

    def _expired(self, entry: StoredEntry, now: float) -> bool:
        return now - entry.last_access > self.limits.ttl_s or now - entry.created_at > self.limits.max_age_s

    def _remember(self, entry: StoredEntry) -> None:
        self._entries[entry.id] = entry
        tenant = self._tenants.setdefault(entry.tenant, _Tenant())
        tenant.ids[entry.id] = None
        tenant.bytes += entry.bytes
        self._bytes += entry.bytes

    def _forget(self, response_id: str) -> None:
        entry = self._entries.pop(response_id)
        tenant = self._tenants[entry.tenant]
        del tenant.ids[response_id]
        tenant.bytes -= entry.bytes
        if not tenant.ids:
            del self._tenants[entry.tenant]
        self._bytes -= entry.bytes

    def _move_to_end(self, entry: StoredEntry) -> None:
        self._entries.move_to_end(entry.id)
        self._tenants[entry.tenant].ids.move_to_end(entry.id)

    def _drop(self, response_id: str) -> None:
        if self._backend is not None:
            self._backend.delete(response_id)
        self._forget(response_id)

    def _drop_expired(self, now: float) -> int:
        expired = [key for key, entry in self._entries.items() if self._expired(entry, now)]
        for key in expired:
            self._drop(key)
        self._counts.expires += len(expired)
        return len(expired)

    def _over_caps(self) -> bool:
        return len(self._entries) > self.limits.max_entries or self._bytes > self.limits.max_bytes

    def _enforce_caps(self, now: float, *, keep: str | None) -> None:
        if not self._over_caps():
            return
        self._drop_expired(now)  # dead entries go before live ones, and are not counted as evictions
        while self._over_caps():
            victim = self._victim(keep)
            if victim is None:  # only the entry just written is left
                return
            self._drop(victim)
            self._counts.evictions += 1

    def _victim(self, keep: str | None) -> str | None:
        """The writer's tenant's oldest entry when that tenant is over its byte share, else the global oldest."""
        writer = self._entries.get(keep) if keep is not None else None
        if writer is not None:
            tenant = self._tenants[writer.tenant]
            share = max(self.limits.min_tenant_bytes, self.limits.max_bytes / len(self._tenants))
            own = next(iter(tenant.ids))
            if tenant.bytes > share and own != keep:
                return own
        oldest = next(iter(self._entries), None)
        return None if oldest == keep else oldest


def _owned_by(entry: StoredEntry, caller: str) -> bool:
    """Only the caller who stored an entry may read, chain, overwrite or delete it."""
    return entry.owner == caller
