"""The conversation pool: reuse a Cascade ``cascade_id`` across the turns of one conversation.

Entries are stored under request fingerprints (:mod:`engine.reuse.fingerprint`): a turn checks out the
entry under ``fingerprint_before`` of its request and checks it back in under
``fingerprint_after``.

The pool (:class:`ConversationPool`) is an LRU by last access (check-in time) with a TTL per entry
(a hint may lengthen it). Lookups are O(1); expiry uses a lazily pruned heap and eviction pops
the LRU end, so a check-in never scans the pool.

Fixed behaviour (seed 001, D5): a check-in keeps an unknown generator offset unknown (``None``)
instead of coercing it to 0; a non-finite step offset still becomes 0 (baseline, out of scope).
"""

from __future__ import annotations

import functools
import heapq
import itertools
import math
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from enum import Enum
from typing import Concatenate, Final, ParamSpec, TypeVar

from engine.js import js_to_fixed

#: CASCADE_POOL_TTL_MS default (30 min), in seconds.
DEFAULT_TTL_S: Final = 1800.0
#: CASCADE_POOL_MAX default.
DEFAULT_MAX_ENTRIES: Final = 500
#: The background sweep interval of the baseline (call :meth:`ConversationPool.sweep` this often).
SWEEP_INTERVAL_S: Final = 300.0
#: The TTL hint chat.js passes when the request carries a 1h prompt-cache marker (90 min).
ONE_HOUR_CACHE_TTL_HINT_S: Final = 5400.0


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
        # A key can round onto ``now`` (or just below it): every due key is re-checked, so the prune drops
        # exactly the entries a checkout would call expired.
        while expiry and expiry[0][0] <= now:
            _, seq, fp = heapq.heappop(expiry)
            slot = self._slots.get(fp)
            if slot is None or slot.seq != seq:
                continue  # checked out, replaced or invalidated since
            if self._is_expired(slot.entry, now):
                self._drop(fp)
                self.expired += 1
            else:  # alive by its age: look again after now, and go on with the other due keys
                heapq.heappush(expiry, (math.nextafter(now, math.inf), seq, fp))
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
            hit_rate=js_to_fixed(self.hits / lookups * 100, 1) if lookups else "0.0",
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
