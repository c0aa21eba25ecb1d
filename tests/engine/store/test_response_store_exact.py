"""The in-memory response store to the exact value: error texts, derived limits, defaults, counters, the age of a
re-put id, and the tenant byte accounting behind fair-share eviction (engine.md section 3)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from engine.store import (
    DEFAULT_LIMITS,
    PutResult,
    ResponseStore,
    StoredEntry,
    StoreLimits,
    open_store,
    parse_byte_size,
)
from engine.store.trim import approx_bytes
from tests.engine.store.store_exact_support import ALICE, BOB, CAROL, T0, Clock, live, memory_store, msgs

SIZE = approx_bytes(msgs("x" * 100))  # one entry of the eviction tests
DOUBLE = msgs("x" * 236)  # an entry of exactly 2 * SIZE


# ------------------------------------------------------------------------------------ configuration


@pytest.mark.parametrize("text", ["1.5m", "", " 12 tb "])
def test_an_invalid_byte_size_names_the_text_and_the_accepted_units(text: str) -> None:
    expected = f"invalid byte size {text!r}: expected digits and an optional unit b, k, kb, m, mb, g, gb"
    with pytest.raises(ValueError, match=f"^{re.escape(expected)}$"):
        parse_byte_size(text)


@pytest.mark.parametrize(
    ("max_bytes", "entry_bytes", "tenant_bytes"),
    [
        (1_000_003, 250_000, 256 * 1024),  # max_bytes / 4 rounds down; the tenant floor still binds
        (64 * 300 * 1024 + 63, 4_915_215, 300 * 1024),  # max_bytes / 64 rounds down above the tenant floor
        (256 * 1024 + 3, 64 * 1024, 256 * 1024),  # max_bytes / 4 is exactly the entry floor (plus 3 / 4)
    ],
)
def test_derived_limits_are_whole_bytes_rounded_down(max_bytes: int, entry_bytes: int, tenant_bytes: int) -> None:
    limits = StoreLimits(max_bytes=max_bytes)
    assert (limits.max_entry_bytes, limits.min_tenant_bytes) == (entry_bytes, tenant_bytes)
    assert type(limits.max_entry_bytes) is int
    assert type(limits.min_tenant_bytes) is int


@pytest.mark.parametrize(
    ("limits", "message"),
    [
        (StoreLimits(ttl_s=0), "response store limit ttl_s must be a positive finite number (got 0)"),
        (
            StoreLimits(max_age_s=float("inf")),
            "response store limit max_age_s must be a positive finite number (got inf)",
        ),
        (StoreLimits(max_entries=True), "response store limit max_entries must be a positive integer (got True)"),
        (
            StoreLimits(entry_bytes=10, tenant_bytes=0),
            "response store limit tenant_bytes must be a positive integer (got 0)",
        ),
    ],
)
def test_an_invalid_limit_is_refused_with_its_name_and_value(limits: StoreLimits, message: str) -> None:
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        limits.validate()


@pytest.mark.parametrize(
    "limits",
    [StoreLimits(ttl_s=1, max_age_s=0.5), StoreLimits(ttl_s=0.001, max_entries=1, max_messages=1, max_bytes=1)],
)
def test_any_positive_finite_limit_is_valid(limits: StoreLimits) -> None:
    limits.validate()
    assert ResponseStore(limits).limits is limits


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ([1], "response store limits must be a JSON object (got list)"),
        ("ttl_s=5", "response store limits must be a JSON object (got str)"),
        ({"ttl": 5, "max_entries": 3, "entry": 1}, "unknown response store limit(s): entry, ttl"),
    ],
)
def test_limits_from_json_that_are_not_limits_are_refused_exactly(data: object, message: str) -> None:
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        StoreLimits.from_json(data)


def test_open_store_defaults_to_memory_and_keeps_the_given_limits_and_clock() -> None:
    assert open_store().limits == DEFAULT_LIMITS
    clock = Clock(T0 + 7)
    limits = StoreLimits(ttl_s=9, max_entries=3)
    store = open_store("memory", limits, clock=clock)
    assert store.limits is limits
    store.put("r1", msgs(), ALICE)
    entry = store.get("r1", ALICE).entry
    assert entry is not None
    assert (entry.created_at, entry.last_access) == (T0 + 7, T0 + 7)


# ------------------------------------------------------------------------------------ put


def test_a_put_without_metadata_stores_an_empty_model_and_a_completed_status() -> None:
    store = memory_store()
    store.put("r1", msgs(), ALICE)
    entry = store.get("r1", ALICE).entry
    size = approx_bytes(msgs())
    assert entry == StoredEntry("r1", ALICE, msgs(), "", T0, T0, "completed", None, size)


def test_an_empty_conversation_is_refused_as_not_stored() -> None:
    store = memory_store()
    assert store.put("r1", [], ALICE) == PutResult(False, "empty", None)
    assert live(store) == []


def test_every_refused_put_is_counted() -> None:
    store = memory_store()
    store.put("r1", msgs("alice's"), ALICE)
    refusals = [
        store.put("r2", msgs(), ""),
        store.put("r3", msgs(), ""),
        store.put("r1", msgs("bob's"), BOB),
        store.put("r1", msgs("carol's"), CAROL),
    ]
    assert [(result.stored, result.reason) for result in refusals] == [
        (False, "no_owner"),
        (False, "no_owner"),
        (False, "foreign_owner"),
        (False, "foreign_owner"),
    ]
    assert store.stats()["rejected"] == 4


def test_a_foreign_overwrite_reports_the_trim_it_would_have_stored() -> None:
    store = memory_store(max_messages=2)
    store.put("r1", msgs(), ALICE)
    result = store.put("r1", msgs("bob's", turns=3), BOB)
    assert (result.stored, result.reason) == (False, "foreign_owner")
    assert result.trim is not None
    assert result.trim.dropped_by_count == 1
    assert [message["role"] for message in result.trim.messages] == ["assistant", "user"]


@pytest.mark.parametrize(
    ("idle", "created_at"),
    [(10.0, T0), (10.5, T0 + 10.5)],  # alive at exactly ttl_s: the refresh keeps its age; past it, a new entry
)
def test_a_re_put_keeps_the_age_of_a_live_entry_and_restarts_an_expired_one(idle: float, created_at: float) -> None:
    clock = Clock()
    store = memory_store(clock, ttl_s=10)
    store.put("r1", msgs("first"), ALICE)
    clock.now += idle
    assert store.put("r1", msgs("second"), ALICE).stored
    entry = store.get("r1", ALICE).entry
    assert entry is not None
    assert (entry.messages, entry.created_at, entry.last_access) == (msgs("second"), created_at, T0 + idle)


@pytest.mark.parametrize(
    ("given", "kept"),
    [(T0 - 3, T0 - 3), (T0, T0), (T0 + 1, T0), (None, T0)],  # a time ahead of the clock is the clock's
)
def test_a_new_entry_keeps_the_given_creation_time_never_a_future_one(given: float | None, kept: float) -> None:
    store = memory_store(Clock(), ttl_s=10)
    assert store.now() == T0
    assert store.put("r1", msgs("first"), ALICE, created_at=given).stored
    entry = store.get("r1", ALICE).entry
    assert entry is not None
    assert (entry.created_at, entry.last_access) == (kept, T0)


def test_a_refresh_keeps_its_age_whatever_creation_time_it_is_given() -> None:
    clock = Clock()
    store = memory_store(clock, ttl_s=10)
    store.put("r1", msgs("first"), ALICE)
    clock.now += 4
    assert store.put("r1", msgs("second"), ALICE, created_at=T0 + 2).stored
    entry = store.get("r1", ALICE).entry
    assert entry is not None
    assert entry.created_at == T0


def test_tuples_in_a_stored_message_come_back_as_lists() -> None:
    store = memory_store()
    store.put("r1", [{"role": "user", "content": ("a", ("b", 1))}], ALICE)
    entry = store.get("r1", ALICE).entry
    assert entry is not None
    assert entry.messages == [{"role": "user", "content": ["a", ["b", 1]]}]


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        ({1: "a"}, "{1: 'a'}"),
        (b"x" * 100, repr(b"x" * 100)[:60]),
        ({"ok": [1, {"deep": {2.5}}]}, "{2.5}"),
    ],
)
def test_a_value_that_is_not_json_is_refused_naming_it(value: object, shown: str) -> None:
    store = memory_store()
    message = f"a stored message holds {shown}, which is not a JSON value"
    with pytest.raises(TypeError, match=f"^{re.escape(message)}$"):
        store.put("r1", [{"role": "user", "content": "x", "meta": value}], ALICE)
    assert live(store) == []


# ------------------------------------------------------------------------------------ counters


def test_the_counters_add_up_over_a_sequence() -> None:
    clock = Clock()
    store = memory_store(clock, ttl_s=10, max_entries=2)
    for key in ("r1", "r2", "r3", "r4"):  # two evictions
        store.put(key, msgs(), ALICE)
    assert live(store) == ["r3", "r4"]
    assert store.get("r3", ALICE).ok
    assert store.get("r4", ALICE).ok
    assert store.get("r3", ALICE).ok
    assert store.get("r1", ALICE).reason == "not_found"
    assert store.get("r3", BOB).reason == "not_found"
    clock.now += 11
    assert store.get("r3", ALICE).reason == "expired"
    assert store.get("r4", ALICE).reason == "expired"
    stats = store.stats()
    counters = {key: stats[key] for key in ("stored", "hits", "misses", "expires", "evictions", "rejected")}
    assert counters == {"stored": 4, "hits": 3, "misses": 4, "expires": 2, "evictions": 2, "rejected": 0}


def test_sweeps_and_stats_add_to_the_expired_count() -> None:
    clock = Clock()
    store = memory_store(clock, ttl_s=10)
    store.put("r1", msgs(), ALICE)
    store.put("r2", msgs(), CAROL)
    clock.now += 11
    assert store.sweep() == 2
    store.put("r3", msgs(), ALICE)
    clock.now += 11
    assert store.stats()["expires"] == 3


# ------------------------------------------------------------------------------------ tenant byte accounting


def _over_share_victim(store: ResponseStore, first: list[dict[str, Any]]) -> list[str]:
    """CAROL writes first (the global LRU); api:k1 writes ``a1`` (``first``) and ``a2`` (SIZE), deletes ``a2``
    and writes ``a3`` (2 * SIZE), which takes the store over its byte cap. What is left shows the victim."""
    store.put("c1", msgs("x" * 100), CAROL)
    store.put("a1", first, ALICE)
    store.put("a2", msgs("x" * 100), BOB)
    assert store.delete("a2", BOB)
    assert store.stats()["evictions"] == 0
    store.put("a3", DOUBLE, ALICE)
    assert store.stats()["evictions"] == 1
    return live(store)


def test_a_tenant_is_charged_only_for_what_it_still_holds_after_a_delete() -> None:
    # api:k1 holds a1 (2 * SIZE) + a3 (2 * SIZE) after the delete, over its share of 3 * SIZE: a1 goes.
    store = memory_store(max_bytes=4 * SIZE, tenant_bytes=3 * SIZE)
    assert _over_share_victim(store, DOUBLE) == ["c1", "a3"]


def test_a_tenant_within_its_share_after_a_delete_leaves_the_eviction_to_the_global_lru() -> None:
    # api:k1 holds a1 (SIZE) + a3 (2 * SIZE) after the delete: not over its share of 3 * SIZE, so c1 goes.
    store = memory_store(max_bytes=4 * SIZE - 1, tenant_bytes=3 * SIZE)
    assert _over_share_victim(store, msgs("x" * 100)) == ["a1", "a3"]


def test_a_refresh_charges_the_tenant_the_new_size_only() -> None:
    # api:k1 refreshes a1 from 2 * SIZE down to SIZE, then writes a2 (2 * SIZE): it holds 4 * SIZE, its share.
    store = memory_store(max_bytes=4 * SIZE, tenant_bytes=4 * SIZE)
    store.put("c1", msgs("x" * 100), CAROL)
    store.put("a0", msgs("x" * 100), ALICE)
    store.put("a1", DOUBLE, ALICE)
    store.put("a1", msgs("x" * 100), ALICE)
    store.put("a2", DOUBLE, ALICE)
    assert live(store) == ["a0", "a1", "a2"]
    assert store.stats()["bytes"] == 4 * SIZE


def test_the_share_is_the_cap_split_between_the_tenants_when_that_is_above_the_floor() -> None:
    # Two tenants, share max(1, 4 * SIZE / 2) = 2 * SIZE: api:k1 at 4 * SIZE is over it and evicts its own.
    store = memory_store(max_bytes=4 * SIZE, tenant_bytes=1)
    for key in ("c1", "a1", "a2", "a3", "a4"):
        store.put(key, msgs("x" * 100), CAROL if key == "c1" else ALICE)
    assert live(store) == ["c1", "a2", "a3", "a4"]


def test_lookups_report_the_stored_metadata_to_the_owner_only() -> None:
    store = memory_store()
    messages: list[dict[str, Any]] = msgs("q", turns=2)
    store.put("r1", messages, ALICE, model="m", status="incomplete", incomplete_reason="max_output_tokens")
    found = store.get("r1", ALICE)
    assert (found.ok, found.reason) == (True, None)
    assert found.entry is not None
    assert (found.entry.model, found.entry.status, found.entry.incomplete_reason) == (
        "m",
        "incomplete",
        "max_output_tokens",
    )
    assert found.entry.tenant == "api:k1"
