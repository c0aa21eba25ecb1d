"""The conversation pool: check-out/check-in rules, TTL and LRU."""

from __future__ import annotations

import math

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule, run_state_machine_as_test

from engine.js import js_to_fixed
from engine.reuse.pool import INHERIT, ConversationPool, Expected, PoolEntry
from fakels.clock import ManualClock


def entry(cascade_id: str = "c1", **fields: object) -> PoolEntry:
    return PoolEntry(cascade_id, session_id="s", api_key="k1", ls_address="127.0.0.1:1", **fields)  # type: ignore[arg-type]


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(10_000.0)


@pytest.fixture
def pool(clock: ManualClock) -> ConversationPool:
    return ConversationPool(ttl_s=1800, max_entries=500, clock=clock.now)


def test_a_hit_removes_the_entry(pool: ConversationPool) -> None:
    pool.checkin("fp", entry(step_offset=3, generator_offset=2))
    got = pool.checkout("fp")
    assert got is not None
    assert (got.cascade_id, got.step_offset, got.generator_offset) == ("c1", 3, 2)
    assert pool.checkout("fp") is None
    assert pool.checkout(None) is None
    assert pool.checkout("") is None
    stats = pool.stats()
    assert (stats.hits, stats.misses, stats.stores, stats.size) == (1, 3, 1, 0)
    assert stats.hit_rate == "25.0"


def test_a_caller_mismatch_misses_without_deleting(pool: ConversationPool) -> None:
    pool.checkin("fp", entry(), caller_key="alice")
    assert pool.checkout("fp", caller_key="bob") is None
    assert "fp" in pool
    assert pool.checkout("fp", caller_key="alice") is not None


def test_an_empty_caller_key_on_either_side_is_not_compared(pool: ConversationPool) -> None:
    pool.checkin("fp", entry(), caller_key="alice")
    assert pool.checkout("fp") is not None
    pool.checkin("fp", entry())
    assert pool.checkout("fp", caller_key="bob") is not None


def test_expiry_is_strictly_after_the_ttl(pool: ConversationPool, clock: ManualClock) -> None:
    pool.checkin("fp", entry())
    clock.advance(1800)
    assert pool.checkout("fp") is not None
    pool.checkin("fp", entry())
    clock.advance(1800.5)
    assert pool.checkout("fp") is None
    assert "fp" not in pool
    assert pool.stats().expired == 1


def test_an_expired_entry_of_another_caller_is_left_alone(pool: ConversationPool, clock: ManualClock) -> None:
    pool.checkin("fp", entry(), caller_key="alice")
    clock.advance(4000)
    assert pool.checkout("fp", caller_key="bob") is None
    assert "fp" in pool  # the caller check comes first
    assert pool.checkout("fp", caller_key="alice") is None
    assert "fp" not in pool


@pytest.mark.parametrize(
    ("expected", "hit"),
    [
        (Expected(api_key="k1", ls_address="127.0.0.1:1", ls_generation=4), True),
        (Expected(api_key="k2"), False),
        (Expected(ls_address="127.0.0.1:2"), False),
        (Expected(ls_generation=5), False),
        (Expected(), True),
        (Expected(api_key="", ls_address="", ls_generation=None), True),
    ],
)
def test_an_owner_mismatch_misses_and_keeps_the_entry(pool: ConversationPool, expected: Expected, hit: bool) -> None:
    pool.checkin("fp", entry(ls_generation=4))
    assert (pool.checkout("fp", expected=expected) is not None) is hit
    assert ("fp" in pool) is not hit


def test_a_stored_entry_without_a_generation_matches_any(pool: ConversationPool) -> None:
    pool.checkin("fp", entry(ls_generation=None))
    assert pool.checkout("fp", expected=Expected(ls_generation=9)) is not None


def test_checkin_normalises_offsets_and_times(pool: ConversationPool, clock: ManualClock) -> None:
    pool.checkin("fp", entry(step_offset=math.nan, generator_offset=math.inf, created_at=None))
    stored = pool.peek("fp")
    assert stored is not None
    assert (stored.step_offset, stored.generator_offset) == (0, None)
    assert (stored.created_at, stored.last_access) == (10_000.0, 10_000.0)
    clock.advance(5)
    pool.checkin("fp", stored)
    again = pool.peek("fp")
    assert again is not None
    assert (again.created_at, again.last_access) == (10_000.0, 10_005.0)
    pool.checkin("fp", entry(generator_offset=0))
    kept = pool.peek("fp")
    assert kept is not None
    assert kept.generator_offset == 0  # a known 0 is a real start


def test_the_caller_key_argument_wins_over_the_entry(pool: ConversationPool) -> None:
    pool.checkin("a", entry(caller_key="old"), caller_key="new")
    pool.checkin("b", entry(caller_key="old"))
    assert [pool.peek(fp).caller_key for fp in ("a", "b")] == ["new", "old"]  # type: ignore[union-attr]


def test_one_checkin_under_several_fingerprints(pool: ConversationPool) -> None:
    pool.checkin(["fp-original", "", "fp-fallback"], entry())
    stats = pool.stats()
    assert (stats.size, stats.stores, stats.alias_writes) == (2, 1, 1)
    assert pool.checkout("fp-original") is not None
    assert pool.checkout("fp-fallback") is not None


def test_nothing_to_store_is_not_a_store(pool: ConversationPool) -> None:
    pool.checkin(None, entry())
    pool.checkin([], entry())
    pool.checkin("fp", None)
    assert pool.stats().stores == 0


def test_ttl_hints_set_inherit_and_clear(pool: ConversationPool, clock: ManualClock) -> None:
    pool.checkin("long", entry(), ttl_hint_s=5400)
    clock.advance(3000)
    long_entry = pool.checkout("long")
    assert long_entry is not None
    assert long_entry.ttl_hint_s == 5400
    pool.checkin("inherit", long_entry)  # INHERIT keeps the 90 min window
    pool.checkin("cleared", long_entry, ttl_hint_s=None)
    pool.checkin("zero", long_entry, ttl_hint_s=0)
    pool.checkin("nan", long_entry, ttl_hint_s=math.nan)
    clock.advance(3000)
    assert pool.checkout("inherit") is not None
    assert [pool.checkout(fp) for fp in ("cleared", "zero", "nan")] == [None, None, None]
    assert INHERIT is not None


def test_lru_eviction_drops_the_least_recently_checked_in(clock: ManualClock) -> None:
    pool = ConversationPool(max_entries=3, clock=clock.now)
    for fp in ("a", "b", "c"):
        pool.checkin(fp, entry(fp))
        clock.advance(1)
    pool.checkin("a", entry("a"))  # refreshed: b is now the oldest
    clock.advance(1)
    pool.checkin("d", entry("d"))
    assert [fp for fp in "abcd" if fp in pool] == ["a", "c", "d"]
    assert pool.stats().evictions == 1


def test_expired_entries_go_before_anything_is_evicted(clock: ManualClock) -> None:
    pool = ConversationPool(ttl_s=60, max_entries=2, clock=clock.now)
    pool.checkin("keep", entry(), ttl_hint_s=600)
    clock.advance(1)
    pool.checkin("stale", entry())
    clock.advance(100)
    pool.checkin("new", entry())
    assert [fp in pool for fp in ("keep", "stale", "new")] == [True, False, True]
    assert (pool.stats().expired, pool.stats().evictions) == (1, 0)


def test_sweep_drops_expired_entries(pool: ConversationPool, clock: ManualClock) -> None:
    pool.checkin("a", entry())
    pool.checkin("b", entry(), ttl_hint_s=7200)
    clock.advance(2000)
    assert pool.sweep() == 1
    assert [fp in pool for fp in "ab"] == [False, True]


def test_invalidate_for_drops_every_slot_of_the_cascades_that_went_away(pool: ConversationPool) -> None:
    pool.checkin(["a1", "a2"], PoolEntry("cA", api_key="k1", ls_address="ls:1", ls_generation=1))
    pool.checkin("alias", PoolEntry("cA", api_key="k9", ls_address="ls:9"))  # same cascade, other owner fields
    pool.checkin("b", PoolEntry("cB", api_key="k2", ls_address="ls:1", ls_generation=2))
    pool.checkin("c", PoolEntry("cC", api_key="k3", ls_address="ls:1", ls_generation=None))
    pool.checkin("d", PoolEntry("cD", api_key="k4", ls_address="ls:2"))
    assert pool.invalidate_for(ls_address="ls:1", ls_generation=1) == 4  # a1, a2, alias, c (generation unknown)
    assert sorted(fp for fp in ("a1", "a2", "alias", "b", "c", "d") if fp in pool) == ["b", "d"]
    assert pool.invalidate_for(api_key="k4") == 1
    assert pool.invalidate_for() == 0
    assert len(pool) == 1


def test_hit_rate_formats_like_to_fixed() -> None:
    assert js_to_fixed(0.25, 1) == "0.3"  # JS rounds the tie up; Python's format would give 0.2
    assert js_to_fixed(1 / 3 * 100, 1) == "33.3"
    assert js_to_fixed(100.0, 1) == "100.0"
    assert ConversationPool(clock=ManualClock().now).stats().hit_rate == "0.0"


def test_clear_empties_the_pool(pool: ConversationPool) -> None:
    pool.checkin(["a", "b"], entry())
    assert pool.clear() == 2
    assert len(pool) == 0


def test_ten_thousand_entries_keep_the_caps(clock: ManualClock) -> None:
    # The cost per check-in is a figure of benchmarks/bench_engine.py, not an assertion here.
    small = ConversationPool(max_entries=500, clock=clock.now)
    big = ConversationPool(max_entries=20_000, clock=clock.now)
    for index in range(10_000):
        clock.advance(0.01)
        for target in (small, big):
            target.checkin(f"fp{index}", entry(f"c{index}"))
    for index in range(0, 10_000, 3):
        big.checkout(f"fp{index}")
    assert len(small) == 500
    assert small.stats().evictions == 9_500
    assert len(big) == 10_000 - len(range(0, 10_000, 3))


def test_expired_entries_are_pruned_as_check_ins_go_on(clock: ManualClock) -> None:
    pool = ConversationPool(ttl_s=10, max_entries=100_000, clock=clock.now)
    for index in range(10_000):
        clock.advance(0.002)
        pool.checkin(f"fp{index}", entry(f"c{index}"))
    assert len(pool) == 5_000  # one entry per 2 ms, 10 s window


# ------------------------------------------------------------------------------------ state machine

_FPS = st.sampled_from([f"fp{i}" for i in range(6)])
_CALLERS = st.sampled_from(["", "alice", "bob"])
_HINTS = st.sampled_from([INHERIT, None, 0, 30.0, 400.0])
_MAX = 4
_TTL = 100.0


class PoolModel(RuleBasedStateMachine):
    """The pool against a plain reference: every operation as the documented rules state it.

    Reference semantics: a check-in prunes every expired entry, then evicts by last access (ties:
    the most recent check-in is the newest); checkout applies caller, expiry, owner checks in order.
    """

    def __init__(self) -> None:
        super().__init__()
        self.clock = ManualClock(0.0)
        self.pool = ConversationPool(ttl_s=_TTL, max_entries=_MAX, clock=self.clock.now)
        self.model: dict[str, tuple[PoolEntry, int]] = {}  # fp -> (stored entry, check-in sequence)
        self.seq = 0
        self.counts = {"hits": 0, "misses": 0, "stores": 0, "evictions": 0, "expired": 0}

    def _ttl(self, stored: PoolEntry) -> float:
        return stored.ttl_hint_s if stored.ttl_hint_s else _TTL

    def _expired(self, stored: PoolEntry) -> bool:
        return self.clock.now() - stored.last_access > self._ttl(stored)

    @rule(
        fps=st.lists(_FPS, min_size=1, max_size=2, unique=True),
        cascade=st.integers(0, 3),
        api_key=st.sampled_from(["k1", "k2"]),
        caller=_CALLERS,
        hint=_HINTS,
        generator=st.sampled_from([None, 0, 3, math.nan]),
    )
    def checkin(self, fps: list[str], cascade: int, api_key: str, caller: str, hint: object, generator: object) -> None:
        now = self.clock.now()
        incoming = PoolEntry(f"c{cascade}", api_key=api_key, generator_offset=generator, ttl_hint_s=120.0)  # type: ignore[arg-type]
        self.pool.checkin(fps, incoming, caller_key=caller, ttl_hint_s=hint)  # type: ignore[arg-type]
        if hint is INHERIT:
            resolved: float | None = 120.0
        elif isinstance(hint, float) and hint > 0:
            resolved = hint
        else:
            resolved = None
        stored = PoolEntry(
            f"c{cascade}",
            api_key=api_key,
            generator_offset=generator if generator is None or not math.isnan(generator) else None,  # type: ignore[arg-type]
            caller_key=caller,
            created_at=now,
            last_access=now,
            ttl_hint_s=resolved,
        )
        for fp in fps:
            self.seq += 1
            self.model[fp] = (stored, self.seq)
        self.counts["stores"] += 1
        for fp in [fp for fp, (e, _) in self.model.items() if self._expired(e)]:
            del self.model[fp]
            self.counts["expired"] += 1
        while len(self.model) > _MAX:
            oldest = min(self.model, key=lambda fp: (self.model[fp][0].last_access, self.model[fp][1]))
            del self.model[oldest]
            self.counts["evictions"] += 1

    @rule(fp=_FPS, caller=_CALLERS, api_key=st.sampled_from(["", "k1", "k2"]))
    def checkout(self, fp: str, caller: str, api_key: str) -> None:
        got = self.pool.checkout(fp, caller_key=caller, expected=Expected(api_key=api_key))
        held = self.model.get(fp)
        want: PoolEntry | None = None
        if held is not None:
            stored = held[0]
            if stored.caller_key and caller and stored.caller_key != caller:
                pass
            elif self._expired(stored):
                del self.model[fp]
                self.counts["expired"] += 1
            elif not (api_key and stored.api_key != api_key):
                del self.model[fp]
                want = stored
        self.counts["hits" if want is not None else "misses"] += 1
        if want is None:
            assert got is None
        else:
            assert got is not None
            assert (got.cascade_id, got.api_key, got.caller_key, got.last_access) == (
                want.cascade_id,
                want.api_key,
                want.caller_key,
                want.last_access,
            )
            assert got.generator_offset == want.generator_offset
            assert got.generator_offset is None or got.generator_offset in (0, 3)  # unknown never becomes 0

    @rule(seconds=st.sampled_from([0.5, 30.0, 101.0, 500.0]))
    def advance(self, seconds: float) -> None:
        self.clock.advance(seconds)

    @precondition(lambda self: bool(self.model))
    @rule(api_key=st.sampled_from(["k1", "k2"]))
    def invalidate(self, api_key: str) -> None:
        doomed_ids = {e.cascade_id for e, _ in self.model.values() if e.api_key == api_key}
        doomed = [fp for fp, (e, _) in self.model.items() if e.api_key == api_key or e.cascade_id in doomed_ids]
        assert self.pool.invalidate_for(api_key=api_key) == len(doomed)
        for fp in doomed:
            del self.model[fp]

    @invariant()
    def same_contents_and_counters(self) -> None:
        assert {fp for fp in (f"fp{i}" for i in range(6)) if fp in self.pool} == set(self.model)
        stats = self.pool.stats()
        assert stats.size == len(self.model) <= _MAX
        assert {k: getattr(stats, k) for k in self.counts} == self.counts


@pytest.mark.invariant("OFF-3")
def test_the_pool_follows_its_rules_over_random_operation_sequences() -> None:
    run_state_machine_as_test(PoolModel, settings=settings(max_examples=60, stateful_step_count=30, deadline=None))
