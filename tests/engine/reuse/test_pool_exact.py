"""The conversation pool's exact edges: constructor limits, the TTL hint table, the default clock, and
pruning at the floating-point boundary of an entry's lifetime.

Expiry is ``now - last_access > ttl`` (conversation-pool.js, integer milliseconds there). With float
seconds the pool's expiry heap keys (``last_access + ttl``) can round onto ``now`` or just below it, so
the prune must re-check every due key and drop exactly the entries a checkout would call expired.
"""

from __future__ import annotations

import math
import time

import pytest

from engine.reuse.pool import INHERIT, ConversationPool, PoolEntry


class SetClock:
    """A clock set to exact float values (``ManualClock.advance`` would accumulate rounding)."""

    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


# ------------------------------------------------------------------------------------------ construction


@pytest.mark.parametrize(("ttl_s", "shown"), [(0, "0"), (-1.5, "-1.5"), (math.nan, "nan")])
def test_a_ttl_that_is_not_positive_is_refused(ttl_s: float, shown: str) -> None:
    with pytest.raises(ValueError, match=r"^ttl_s must be positive") as info:
        ConversationPool(ttl_s=ttl_s)
    assert str(info.value) == f"ttl_s must be positive, got {shown}"


def test_a_ttl_under_a_second_is_accepted_and_applies() -> None:
    clock = SetClock(100.0)
    pool = ConversationPool(ttl_s=0.5, clock=clock)
    assert pool.ttl_s == 0.5
    pool.checkin("fp", PoolEntry("c"))
    clock.now = 100.5
    assert pool.peek("fp") is not None
    assert pool.sweep() == 0
    clock.now = 100.75
    assert pool.sweep() == 1


def test_a_negative_max_entries_is_refused() -> None:
    with pytest.raises(ValueError, match=r"^max_entries") as info:
        ConversationPool(max_entries=-1)
    assert str(info.value) == "max_entries must be non-negative, got -1"


def test_a_pool_of_zero_entries_evicts_every_checkin() -> None:
    pool = ConversationPool(max_entries=0, clock=SetClock(1.0))
    pool.checkin("fp", PoolEntry("c"))
    assert (len(pool), pool.stats().evictions, pool.stats().stores) == (0, 1, 1)


def test_without_a_clock_the_pool_uses_the_monotonic_clock() -> None:
    pool = ConversationPool()
    before = time.monotonic()
    pool.checkin("fp", PoolEntry("c"))
    after = time.monotonic()
    stored = pool.peek("fp")
    assert stored is not None
    assert before <= stored.last_access <= after
    assert stored.created_at == stored.last_access


# ------------------------------------------------------------------------------------------ TTL hints

# (hint given to checkin, hint stored): only a positive finite number is a hint; anything else clears it.
HINTS: list[tuple[object, float | None]] = [
    (0.5, 0.5),
    (5400, 5400.0),
    (0, None),
    (-1, None),
    (math.inf, None),
    (math.nan, None),
    (None, None),
    (True, None),
]


@pytest.mark.parametrize(("hint", "stored"), HINTS, ids=[repr(hint) for hint, _ in HINTS])
def test_a_ttl_hint_is_kept_only_when_positive_and_finite(hint: object, stored: float | None) -> None:
    pool = ConversationPool(clock=SetClock(1.0))
    pool.checkin("given", PoolEntry("c"), ttl_hint_s=hint)  # type: ignore[arg-type]
    pool.checkin("inherited", PoolEntry("c", ttl_hint_s=hint), ttl_hint_s=INHERIT)  # type: ignore[arg-type]
    for fp in ("given", "inherited"):
        entry = pool.peek(fp)
        assert entry is not None
        assert entry.ttl_hint_s == stored


@pytest.mark.parametrize("hint", [0, math.inf, math.nan, -5])
def test_a_cleared_hint_means_the_pool_ttl(hint: float) -> None:
    clock = SetClock(0.0)
    pool = ConversationPool(ttl_s=60, clock=clock)
    pool.checkin("fp", PoolEntry("c"), ttl_hint_s=hint)
    clock.now = 60.0
    assert pool.sweep() == 0  # alive for exactly the pool TTL ...
    clock.now = 60.5
    assert pool.sweep() == 1  # ... and not a moment longer


def test_a_hint_under_a_second_shortens_the_lifetime() -> None:
    clock = SetClock(0.0)
    pool = ConversationPool(ttl_s=60, clock=clock)
    pool.checkin("fp", PoolEntry("c"), ttl_hint_s=0.5)
    clock.now = 0.75
    assert pool.checkout("fp") is None
    assert pool.stats().expired == 1


# ------------------------------------------------------------------------------------------ float boundary


def test_an_entry_whose_expiry_key_rounds_onto_now_is_pruned_when_it_is_expired() -> None:
    clock = SetClock(0.1)
    pool = ConversationPool(ttl_s=0.2, clock=clock)
    pool.checkin("fp", PoolEntry("c"))
    clock.now = 0.30000000000000004  # == 0.1 + 0.2 in floats, and now - 0.1 > 0.2: expired
    assert clock.now - 0.1 > 0.2
    assert pool.sweep() == 1
    assert "fp" not in pool


def test_an_entry_not_yet_expired_by_rounding_does_not_shield_an_expired_one() -> None:
    clock = SetClock(0.2)
    pool = ConversationPool(ttl_s=0.7, clock=clock)
    pool.checkin("early", PoolEntry("a"))  # key 0.2 + 0.7 == 0.8999999999999999
    clock.now = 0.3
    pool.checkin("hinted", PoolEntry("b"), ttl_hint_s=0.6)  # key 0.3 + 0.6 == 0.8999999999999999 too
    clock.now = 0.9
    assert not clock.now - 0.2 > 0.7  # "early" is still alive at 0.9 ...
    assert clock.now - 0.3 > 0.6  # ... "hinted" is not
    assert pool.sweep() == 1
    assert ["early" in pool, "hinted" in pool] == [True, False]
    clock.now = 0.9000000000000001
    assert pool.sweep() == 1  # the re-checked key comes due at the next instant
    assert len(pool) == 0
    assert pool.stats().expired == 2


def test_eviction_still_runs_when_a_due_key_turns_out_alive() -> None:
    clock = SetClock(0.2)
    pool = ConversationPool(ttl_s=0.7, max_entries=1, clock=clock)
    pool.checkin("early", PoolEntry("a"))
    clock.now = 0.9  # "early" is due by its key but alive by its age
    pool.checkin("late", PoolEntry("b"))
    assert ["early" in pool, "late" in pool] == [False, True]
    assert (pool.stats().evictions, pool.stats().expired) == (1, 0)
