"""The response store (engine.md section 3): limits, ownership, expiry, caps and fair-share eviction, in memory."""

from __future__ import annotations

import copy
import logging
import math
import threading
from typing import Any

import pytest

import engine.store.memory as response_store
from engine.store import (
    MISSING,
    ResponseStore,
    StoredEntry,
    StoreLimits,
    open_store,
    parse_byte_size,
    tenant_of,
    wants_persistence,
)
from engine.store.trim import StoreWriteRejected, approx_bytes

ALICE = "api:k1:user:alice"
BOB = "api:k1:user:bob"
CAROL = "api:k2:user:carol"
LONG_ID = "resp_" + "0123456789abcdef" * 3


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _msgs(text: str = "hello", *, turns: int = 1) -> list[dict[str, Any]]:
    return [{"role": "user" if i % 2 == 0 else "assistant", "content": f"{text}"} for i in range(turns)]


SIZE = approx_bytes(_msgs("x" * 100))  # one entry of the cap tests


def _store(clock: Clock | None = None, **limits: Any) -> ResponseStore:
    return ResponseStore(StoreLimits(**limits), clock=clock or Clock())


def _live(store: ResponseStore) -> dict[str, str]:
    """id -> owner of what the store holds, without touching anything (test-only peek)."""
    return {key: entry.owner for key, entry in store._entries.items()}


# ------------------------------------------------------------------------------------ configuration


BYTE_SIZES = {"0": 0, "128": 128, "10b": 10, "64k": 64 * 1024, "64KB": 64 * 1024, "1 m": 1024**2, "3Mb": 3 * 1024**2}
BYTE_SIZES |= {"2G": 2 * 1024**3, "5gb": 5 * 1024**3, " 400k\n": 400 * 1024}
PERSIST = [MISSING, True, 1, -2.5, math.nan, "true", "yes", "00", " on", [], {}]
OPT_OUT = [None, False, 0, 0.0, "", "  ", "false", " OFF ", "No", "0", "\u00a0off\n"]
TENANTS = {"api:k1:user:alice": "api:k1", "api:k1:client:x:y": "api:k1", "session:abc": "session:abc"}
TENANTS |= {"plain": "plain", "a:b:": "a:b", "::x": ":", "": ""}


@pytest.mark.parametrize(("text", "expected"), BYTE_SIZES.items())
def test_parse_byte_size_accepts_digits_and_a_1024_based_unit(text: str, expected: int) -> None:
    assert parse_byte_size(text) == expected


@pytest.mark.parametrize("text", ["", "k", "1.5m", "-1", "1kib", "1 tb", "12 k b", "\u0661\u0662", "0x10", "1e3"])
def test_parse_byte_size_rejects_anything_else_naming_the_text(text: str) -> None:
    with pytest.raises(ValueError, match="invalid byte size"):
        parse_byte_size(text)


@pytest.mark.parametrize(("value", "expected"), [*((v, True) for v in PERSIST), *((v, False) for v in OPT_OUT)])
def test_wants_persistence_follows_the_reference_table(value: object, expected: bool) -> None:
    assert wants_persistence(value) is expected


def test_wants_persistence_without_a_value_is_a_missing_field() -> None:
    assert wants_persistence() is True


@pytest.mark.parametrize(("owner", "tenant"), TENANTS.items())
def test_tenant_of_is_the_owner_up_to_its_second_colon(owner: str, tenant: str) -> None:
    assert tenant_of(owner) == tenant


def test_limits_default_to_the_reference() -> None:
    limits = StoreLimits()
    limits.validate()
    assert (limits.ttl_s, limits.max_age_s, limits.max_entries, limits.max_messages) == (3600, 86400, 2000, 400)
    assert limits.max_bytes == 128 * 1024**2
    assert limits.max_entry_bytes == 32 * 1024**2
    assert limits.min_tenant_bytes == 2 * 1024**2


def test_derived_limits_have_floors_and_overrides() -> None:
    assert StoreLimits(max_bytes=400 * 1024).max_entry_bytes == 102_400  # engine.md's 400k example
    small = StoreLimits(max_bytes=1000)
    assert (small.max_entry_bytes, small.min_tenant_bytes) == (64 * 1024, 256 * 1024)
    overridden = StoreLimits(max_bytes=1000, entry_bytes=10, tenant_bytes=20)
    assert (overridden.max_entry_bytes, overridden.min_tenant_bytes) == (10, 20)


OUT_OF_RANGE: dict[str, list[object]] = {
    "ttl_s": [0, -1.0, math.nan, math.inf],
    "max_age_s": [0.0, "60"],
    "max_entries": [0, 1.5, True],
}
OUT_OF_RANGE |= {"max_messages": [-3], "max_bytes": [0], "entry_bytes": [0], "tenant_bytes": [-1]}


@pytest.mark.parametrize(("name", "value"), [(name, v) for name, values in OUT_OF_RANGE.items() for v in values])
def test_validate_names_the_limit_out_of_range(name: str, value: object) -> None:
    limits = StoreLimits(**{name: value})  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=rf"limit {name} must be a positive"):
        limits.validate()
    with pytest.raises(ValueError, match=name):
        ResponseStore(limits)


def test_limits_round_trip_through_json() -> None:
    limits = StoreLimits(ttl_s=5, max_age_s=50.5, max_entries=7, max_messages=9, max_bytes=1234, entry_bytes=99)
    assert StoreLimits.from_json(limits.to_json()) == limits
    assert StoreLimits.from_json({}) == StoreLimits()


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ([], "must be a JSON object"),
        ({"ttl": 5}, "unknown response store limit"),
        ({"max_entries": "9"}, "max_entries"),
    ],
)
def test_limits_from_bad_json_are_refused(data: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        StoreLimits.from_json(data)


def test_open_store_memory_and_bad_specs() -> None:
    assert open_store("memory", StoreLimits()).stats()["size"] == 0
    for spec in ("", "redis:x", "sqlite:", "sqlite", "Memory", "file:/tmp/x"):
        with pytest.raises(ValueError, match=r"expected 'memory' or 'sqlite:PATH'"):
            open_store(spec, StoreLimits())
    with pytest.raises(ValueError, match="max_entries"):
        open_store("memory", StoreLimits(max_entries=0))


# ------------------------------------------------------------------------------------ put and get


def test_a_put_is_returned_to_its_owner_with_its_metadata() -> None:
    clock = Clock()
    store = _store(clock)
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": [{"type": "text", "text": "q"}]},
    ]
    result = store.put("r1", messages, ALICE, model="m1", status="incomplete", incomplete_reason="max_output_tokens")
    assert result.stored
    assert result.reason is None
    assert result.trim is not None
    clock.now += 5
    found = store.get("r1", ALICE)
    assert found.ok
    assert found.reason is None
    assert found.entry is not None
    reason = "max_output_tokens"
    size = approx_bytes(messages)
    assert found.entry == StoredEntry("r1", ALICE, messages, "m1", 1000.0, 1005.0, "incomplete", reason, size)


def test_empty_messages_and_empty_owner_are_refused() -> None:
    store = _store()
    assert store.put("r1", [], ALICE).reason == "empty"
    assert store.stats()["rejected"] == 0  # the reference refuses an empty list without counting it
    refused = store.put("r1", _msgs(), "")
    assert (refused.stored, refused.reason) == (False, "no_owner")
    assert store.stats()["rejected"] == 1
    assert store.stats()["size"] == 0


def test_a_write_the_trimmer_rejects_is_refused_and_counted(monkeypatch: pytest.MonkeyPatch) -> None:
    def reject(*_args: object, **_kwargs: object) -> Any:
        raise StoreWriteRejected("no progress")

    monkeypatch.setattr(response_store, "trim_for_store", reject)
    store = _store()
    result = store.put("r1", _msgs(), ALICE)
    assert not result.stored
    assert result.reason is not None
    assert "no progress" in result.reason
    assert store.stats()["rejected"] == 1
    assert store.get("r1", ALICE).reason == "not_found"


def test_a_conversation_over_max_messages_is_trimmed_before_it_is_stored() -> None:
    store = _store(max_messages=4)
    result = store.put("r1", _msgs("turn", turns=9), ALICE)
    assert result.stored
    assert result.trim is not None
    assert result.trim.dropped_by_count == 5
    entry = store.get("r1", ALICE).entry
    assert entry is not None
    assert len(entry.messages) == 4
    assert entry.bytes == approx_bytes(entry.messages)


def test_stored_state_is_independent_of_the_callers_objects_and_of_handed_out_copies() -> None:
    store = _store()
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": [{"type": "text", "text": "original"}], "meta": {"tags": ["a"]}}
    ]
    kept = copy.deepcopy(messages)
    store.put("r1", messages, ALICE)
    messages[0]["content"][0]["text"] = "changed by the caller"
    messages[0]["meta"]["tags"].append("b")
    messages.append({"role": "user", "content": "appended"})
    first = store.get("r1", ALICE).entry
    assert first is not None
    assert first.messages == kept
    first.messages[0]["content"][0]["text"] = "changed by a reader"
    first.messages.clear()
    second = store.get("r1", ALICE).entry
    assert second is not None
    assert second.messages == kept


def test_a_message_that_is_not_json_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="not a JSON value"):
        _store().put("r1", [{"role": "user", "content": object()}], ALICE)


def test_a_same_id_refresh_keeps_created_at_and_moves_the_entry_to_the_newest() -> None:
    clock = Clock()
    store = _store(clock, max_entries=2)
    store.put("r1", _msgs("one"), ALICE)
    store.put("r2", _msgs("two"), ALICE)
    clock.now += 100
    store.put("r1", _msgs("one, again"), ALICE)
    store.put("r3", _msgs("three"), ALICE)  # evicts r2: the refresh made r1 the newer of the two
    assert set(_live(store)) == {"r1", "r3"}
    entry = store.get("r1", ALICE).entry
    assert entry is not None
    assert entry.messages == _msgs("one, again")
    assert (entry.created_at, entry.last_access) == (1000.0, 1100.0)


@pytest.mark.invariant("STORE-8")
def test_a_same_id_put_by_another_caller_is_refused_and_changes_nothing(caplog: pytest.LogCaptureFixture) -> None:
    store = _store()
    store.put(LONG_ID, _msgs("alice's"), ALICE)
    with caplog.at_level(logging.WARNING, logger="engine.response_store"):
        result = store.put(LONG_ID, _msgs("bob's"), BOB)
    assert (result.stored, result.reason) == (False, "foreign_owner")
    assert store.stats()["rejected"] == 1
    entry = store.get(LONG_ID, ALICE).entry
    assert entry is not None
    assert (entry.owner, entry.messages) == (ALICE, _msgs("alice's"))
    assert LONG_ID[:24] in caplog.text
    assert LONG_ID not in caplog.text


@pytest.mark.invariant("STORE-8")
def test_a_foreign_lookup_is_not_found_logged_and_drops_nothing(caplog: pytest.LogCaptureFixture) -> None:
    store = _store()
    store.put(LONG_ID, _msgs(), ALICE)
    with caplog.at_level(logging.WARNING, logger="engine.response_store"):
        found = store.get(LONG_ID, BOB)
    assert (found.ok, found.reason, found.entry) == (False, "not_found", None)
    assert f"[response-store] rejected cross-caller lookup of {LONG_ID[:24]}" in caplog.messages
    assert not store.delete(LONG_ID, BOB)
    assert not store.delete(LONG_ID, CAROL)
    assert _live(store) == {LONG_ID: ALICE}
    assert store.get(LONG_ID, ALICE).ok


@pytest.mark.invariant("STORE-8")
def test_ownership_is_checked_before_expiry() -> None:
    clock = Clock()
    store = _store(clock, ttl_s=10)
    store.put("r1", _msgs(), ALICE)
    clock.now += 11
    assert store.get("r1", BOB).reason == "not_found"
    assert "r1" in _live(store)  # a foreign caller never drops, even an expired entry (no stats(): it sweeps)
    assert store.get("r1", ALICE).reason == "expired"
    assert store.get("r1", ALICE).reason == "not_found"
    stats = store.stats()
    assert (stats["expires"], stats["misses"], stats["hits"]) == (1, 3, 0)


@pytest.mark.invariant("STORE-8")
def test_delete_is_for_the_owner_only() -> None:
    store = _store()
    store.put("r1", _msgs(), ALICE)
    assert not store.delete("r1", BOB)
    assert not store.delete("unknown", ALICE)
    assert store.delete("r1", ALICE)
    assert not store.delete("r1", ALICE)
    assert store.get("r1", ALICE).reason == "not_found"


def test_stats_report_the_reference_fields() -> None:
    clock = Clock()
    store = _store(clock, ttl_s=60, max_age_s=600.5, max_bytes=10_000)
    store.put("r1", _msgs(), ALICE)
    store.put("r2", _msgs(), CAROL)
    store.get("r1", ALICE)
    store.get("r1", BOB)
    assert store.stats() == {
        "stored": 2,
        "hits": 1,
        "misses": 1,
        "expires": 0,
        "evictions": 0,
        "rejected": 0,
        "size": 2,
        "bytes": 2 * approx_bytes(_msgs()),
        "maxBytes": 10_000,
        "ttlMs": 60_000,
        "maxAgeMs": 600_500,
        "enabled": True,
        "tenants": 2,
    }
    clock.now += 61
    assert store.sweep() == 2
    assert store.stats()["size"] == store.stats()["bytes"] == store.stats()["tenants"] == 0


# ------------------------------------------------------------------------------------ exact limits


@pytest.mark.parametrize(("idle", "alive"), [(3599.999, True), (3600.0, True), (3600.001, False)])
def test_the_idle_ttl_expires_strictly_after_ttl_s(idle: float, alive: bool) -> None:
    clock = Clock()
    store = _store(clock)
    store.put("r1", _msgs(), ALICE)
    clock.now += idle
    assert store.get("r1", ALICE).ok is alive
    if not alive:
        assert "r1" not in _live(store)


def test_a_hit_restarts_the_idle_ttl() -> None:
    clock = Clock()
    store = _store(clock, ttl_s=10)
    store.put("r1", _msgs(), ALICE)
    for _ in range(5):
        clock.now += 10
        assert store.get("r1", ALICE).ok


@pytest.mark.parametrize(("age", "alive"), [(24.999, True), (25.0, True), (25.001, False)])
def test_max_age_counts_from_created_at_even_for_an_entry_in_use(age: float, alive: bool) -> None:
    clock = Clock()
    store = _store(clock, ttl_s=10, max_age_s=25)
    store.put("r1", _msgs(), ALICE)
    for _ in range(2):
        clock.now += 10
        assert store.get("r1", ALICE).ok
        store.put("r1", _msgs("refreshed"), ALICE)  # a refresh does not restart the age either
    clock.now = 1000.0 + age
    assert store.get("r1", ALICE).ok is alive


@pytest.mark.parametrize(("max_entries", "evicted"), [(4, 0), (3, 0), (2, 1)])
def test_the_entry_cap_at_one_under_and_one_over(max_entries: int, evicted: int) -> None:
    store = _store(max_entries=max_entries)
    for key in ("r1", "r2", "r3"):
        assert store.put(key, _msgs(), ALICE).stored
    stats = store.stats()
    assert (stats["size"], stats["evictions"]) == (3 - evicted, evicted)
    assert ("r1" in _live(store)) is (evicted == 0)
    assert store.put("r3", _msgs("refresh"), ALICE).stored  # a refresh at the cap evicts nothing
    assert store.stats()["evictions"] == evicted


@pytest.mark.parametrize(("max_bytes", "evicted"), [(3 * SIZE + 1, 0), (3 * SIZE, 0), (3 * SIZE - 1, 1)])
def test_the_byte_cap_at_one_under_and_one_over(max_bytes: int, evicted: int) -> None:
    store = _store(max_bytes=max_bytes)
    for key in ("r1", "r2", "r3"):
        assert store.put(key, _msgs("x" * 100), ALICE).stored
    stats = store.stats()
    assert (stats["size"], stats["evictions"]) == (3 - evicted, evicted)
    assert stats["bytes"] == (3 - evicted) * SIZE <= max_bytes


def test_a_hit_refreshes_the_lru_position() -> None:
    store = _store(max_entries=3)
    for key in ("r1", "r2", "r3"):
        store.put(key, _msgs(), ALICE)
    assert store.get("r1", ALICE).ok
    store.put("r4", _msgs(), ALICE)
    assert set(_live(store)) == {"r1", "r3", "r4"}


def test_expired_entries_go_before_live_ones_and_are_not_evictions() -> None:
    clock = Clock()
    store = _store(clock, ttl_s=10, max_entries=2)
    store.put("old", _msgs(), ALICE)
    clock.now += 5
    store.put("young", _msgs(), ALICE)
    store.get("old", ALICE)
    clock.now += 11  # both idle for 11 s
    store.put("fresh", _msgs(), ALICE)
    assert set(_live(store)) == {"fresh"}
    assert (store.stats()["expires"], store.stats()["evictions"]) == (2, 0)


def test_the_entry_just_written_is_never_evicted_even_alone_over_the_byte_cap() -> None:
    store = _store(max_bytes=SIZE, entry_bytes=10 * SIZE)
    store.put("small", _msgs("x" * 100), ALICE)
    big = _msgs("y" * 500)
    assert store.put("big", big, CAROL).stored
    assert _live(store) == {"big": CAROL}
    assert store.stats()["bytes"] == approx_bytes(big) > SIZE
    one = _store(max_entries=1)
    for key in ("a", "b", "c"):
        one.put(key, _msgs(), ALICE)
        assert set(_live(one)) == {key}


# ------------------------------------------------------------------------------------ fair share


def test_a_tenant_over_its_share_evicts_its_own_oldest_not_the_global_lru() -> None:
    store = _store(max_bytes=10 * SIZE, tenant_bytes=SIZE)
    store.put("carol-1", _msgs("x" * 100), CAROL)  # the global least recently used
    for i in range(10):
        store.put(f"alice-{i}", _msgs("x" * 100), ALICE if i % 2 else BOB)  # one tenant, two owners
    # Over the cap at the 10th write: tenant api:k1 holds 10 entries, over its share max(SIZE, 10 * SIZE / 2).
    assert "carol-1" in _live(store)
    assert "alice-0" not in _live(store)
    assert store.stats()["evictions"] == 1


def test_a_tenant_within_its_share_evicts_the_global_lru() -> None:
    store = _store(max_bytes=10 * SIZE, tenant_bytes=SIZE)
    for i in range(9):
        store.put(f"carol-{i}", _msgs("x" * 100), CAROL)
    store.put("alice-0", _msgs("x" * 100), ALICE)
    store.put("alice-1", _msgs("x" * 100), ALICE)  # 11 entries: api:k1 holds 2 <= its share of 5
    assert "carol-0" not in _live(store)
    assert {"alice-0", "alice-1", "carol-1"} <= set(_live(store))


def test_the_entry_cap_also_evicts_by_fair_share() -> None:
    store = _store(max_entries=4, max_bytes=10 * SIZE, tenant_bytes=SIZE)
    store.put("carol-1", _msgs("x" * 100), CAROL)
    for i in range(4):  # entries of 2 * SIZE: api:k1 reaches 8 * SIZE, over its share of 5 * SIZE
        store.put(f"alice-{i}", _msgs("x" * 100, turns=2), ALICE)
    assert set(_live(store)) == {"carol-1", "alice-1", "alice-2", "alice-3"}


@pytest.mark.parametrize(("share_delta", "own_evicted"), [(1, False), (0, False), (-1, True)])
def test_the_tenant_share_at_one_under_and_one_over(share_delta: int, own_evicted: bool) -> None:
    # At the 4th write api:k1 holds 3 * SIZE bytes; its share is the floor, 3 * SIZE + share_delta
    # (max_bytes / 2 tenants is below it). Only a tenant strictly over its share evicts its own.
    store = _store(max_bytes=3 * SIZE, tenant_bytes=3 * SIZE + share_delta)
    store.put("carol-1", _msgs("x" * 100), CAROL)  # the global least recently used
    for i in range(3):
        store.put(f"alice-{i}", _msgs("x" * 100), ALICE)
    assert store.stats()["evictions"] == 1
    assert ("alice-0" not in _live(store)) is own_evicted
    assert ("carol-1" in _live(store)) is own_evicted


def test_the_minimum_tenant_share_protects_a_small_tenant() -> None:
    # Three tenants: the share is max(tenant_bytes, max_bytes / 3); with a large floor nobody is "over".
    store = _store(max_bytes=6 * SIZE, tenant_bytes=100 * SIZE)
    store.put("carol-1", _msgs("x" * 100), CAROL)
    store.put("dave-1", _msgs("x" * 100), "session:dave")
    for i in range(5):
        store.put(f"alice-{i}", _msgs("x" * 100), ALICE)
    assert "carol-1" not in _live(store)  # within the share: plain LRU
    assert {"dave-1", "alice-0"} <= set(_live(store))


# ------------------------------------------------------------------------------------ concurrency


def test_concurrent_callers_keep_the_counters_and_caps_consistent() -> None:
    store = _store(max_entries=20, max_bytes=15 * SIZE, tenant_bytes=SIZE)
    owners = [ALICE, BOB, CAROL, "session:s1"]
    gets = [0] * len(owners)

    def work(index: int) -> None:
        owner = owners[index]
        for i in range(300):
            store.put(f"{index}-{i % 40}", _msgs("x" * (i % 150)), owner)
            found = store.get(f"{(index + i) % 4}-{i % 40}", owner)
            gets[index] += 1
            assert found.ok is False or (found.entry is not None and found.entry.owner == owner)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(owners))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    stats = store.stats()
    assert stats["hits"] + stats["misses"] == sum(gets)
    assert stats["stored"] == 1200
    assert stats["size"] <= 20
    assert stats["bytes"] <= 15 * SIZE
    assert stats["bytes"] == sum(entry.bytes for entry in store._entries.values())
