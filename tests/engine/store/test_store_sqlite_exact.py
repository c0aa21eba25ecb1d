"""The SQLite response store to the exact row and message: what a write leaves in the file, what a reopen loads,
re-trims, repairs, expires and evicts, and the one-line error for every file it refuses (in-process, tmp_path)."""

from __future__ import annotations

import logging
import re
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from engine.store import StoreLimits, StoreOpenError, open_store
from engine.store.sqlite import LOCK_TIMEOUT_S, CorruptEntryError, SqliteBackend
from engine.store.trim import TRUNCATION_MARKER, approx_bytes, dropped_turns_notice
from tests.engine.store.store_exact_support import ALICE, BOB, CAROL, T0, Clock, live, msgs, rows, sql, sqlite_store

SIZE = approx_bytes(msgs("x" * 100))
NOT_JSON = "messages are not JSON (Expecting value: line 1 column 1 (char 0))"
NOT_A_LIST = "messages are not a non-empty list of JSON objects"


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "store.sqlite"


@pytest.fixture
def clock() -> Clock:
    return Clock()


def _exactly(message: str) -> str:
    return f"^{re.escape(message)}$"


# ------------------------------------------------------------------------------------ what a write leaves


def test_a_put_writes_one_row_with_compact_ascii_json(path: Path, clock: Clock) -> None:
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "caf\u00e9 \ud800"},
        {"role": "assistant", "content": ["a", 1]},
    ]
    with sqlite_store(path, clock) as store:
        store.put("r1", messages, ALICE, model="m1", status="incomplete", incomplete_reason="max_output_tokens")
        clock.now += 1
        store.put("r2", msgs(), CAROL)
    text = '[{"role":"user","content":"caf\\u00e9 \\ud800"},{"role":"assistant","content":["a",1]}]'
    size = approx_bytes(messages)
    assert rows(path) == {
        "r1": (ALICE, "api:k1", "m1", "incomplete", "max_output_tokens", T0, T0, size, text),
        "r2": (
            CAROL,
            "api:k2",
            "",
            "completed",
            None,
            T0 + 1,
            T0 + 1,
            approx_bytes(msgs()),
            '[{"role":"user","content":"hello"}]',
        ),
    }


def test_a_hit_records_its_time_and_makes_the_row_the_newest(path: Path, clock: Clock) -> None:
    with sqlite_store(path, clock) as store:
        for key in ("r1", "r2", "r3"):
            store.put(key, msgs(), ALICE)
        clock.now += 5
        assert store.get("r1", ALICE).ok
        assert store.get("r1", BOB).reason == "not_found"  # a foreign lookup records nothing
    stored = rows(path)
    assert list(stored) == ["r2", "r3", "r1"]
    assert [row[6] for row in stored.values()] == [T0, T0, T0 + 5]


def test_a_delete_and_an_eviction_remove_their_rows(path: Path, clock: Clock) -> None:
    with sqlite_store(path, clock, max_entries=2) as store:
        for key in ("r1", "r2", "r3"):
            store.put(key, msgs(), ALICE)
        assert store.delete("r3", ALICE)
    assert list(rows(path)) == ["r2"]


def test_the_limits_of_the_last_open_are_recorded(path: Path, clock: Clock) -> None:
    backend = SqliteBackend(path)
    assert backend.load_limits() is None
    backend.close()
    limits = StoreLimits(ttl_s=5, max_age_s=50, max_entries=7, max_messages=9, max_bytes=1234, tenant_bytes=3)
    open_store(f"sqlite:{path}", limits, clock=clock).close()
    backend = SqliteBackend(path)
    assert backend.load_limits() == limits
    backend.close()


def test_corrupt_recorded_limits_are_reported_with_the_file(path: Path) -> None:
    SqliteBackend(path).close()
    sql(path, "INSERT INTO meta (key, value) VALUES ('limits', ?)", '{"ttl": 5}')
    backend = SqliteBackend(path)
    message = f"response store {path}: the recorded limits are corrupt (unknown response store limit(s): ttl)"
    with pytest.raises(StoreOpenError, match=_exactly(message)):
        backend.load_limits()
    backend.close()


def test_a_store_is_usable_from_another_thread(path: Path, clock: Clock) -> None:
    with sqlite_store(path, clock) as store:
        errors: list[BaseException] = []

        def work() -> None:
            try:
                store.put("r1", msgs(), ALICE)
                store.get("r1", ALICE)
            except BaseException as exc:  # reported to the test thread
                errors.append(exc)

        worker = threading.Thread(target=work)
        worker.start()
        worker.join()
        assert errors == []
    assert list(rows(path)) == ["r1"]


def test_a_closed_store_refuses_writes_and_frees_the_file(path: Path, clock: Clock) -> None:
    store = sqlite_store(path, clock)
    store.put("r1", msgs(), ALICE)
    store.close()
    store.close()
    with pytest.raises(sqlite3.ProgrammingError, match=_exactly(f"response store {path} is closed")):
        store.put("r2", msgs(), ALICE)
    with sqlite_store(path, clock) as again:  # the first store's lock is gone
        assert again.get("r1", ALICE).ok


# ------------------------------------------------------------------------------------ what a reopen loads


def test_a_reopen_returns_every_field_as_written(path: Path, clock: Clock) -> None:
    with sqlite_store(path, clock) as store:
        store.put("r1", msgs("q", turns=2), ALICE, model="m1", status="incomplete", incomplete_reason="length")
        clock.now += 10
        store.get("r1", ALICE)
    clock.now += 10
    with sqlite_store(path, clock) as store:
        entry = store._entries["r1"]
        assert (entry.owner, entry.model, entry.status, entry.incomplete_reason) == (
            ALICE,
            "m1",
            "incomplete",
            "length",
        )
        assert (entry.messages, entry.created_at, entry.last_access) == (msgs("q", turns=2), T0, T0 + 10)
        assert entry.bytes == approx_bytes(msgs("q", turns=2))
        assert store.stats()["bytes"] == entry.bytes


def test_a_reopen_drops_what_expired_and_evicts_the_oldest_over_the_new_caps(path: Path, clock: Clock) -> None:
    with sqlite_store(path, clock) as store:
        store.put("old", msgs(), ALICE)
        clock.now += 50
        for key in ("r1", "r2", "r3", "r4"):
            store.put(key, msgs("x" * 100), ALICE if key != "r2" else CAROL)
        store.get("r1", ALICE)
    clock.now += 20
    with sqlite_store(path, clock, ttl_s=60, max_bytes=2 * SIZE, tenant_bytes=10 * SIZE) as store:
        assert live(store) == ["r4", "r1"]
        stats = store.stats()
        assert (stats["expires"], stats["evictions"], stats["size"], stats["bytes"]) == (1, 2, 2, 2 * SIZE)
    assert list(rows(path)) == ["r4", "r1"]


def test_a_reopen_under_a_lower_message_cap_re_trims_and_rewrites_the_entry(path: Path, clock: Clock) -> None:
    with sqlite_store(path, clock) as store:
        store.put("r1", msgs("turn", turns=6), ALICE)
    with sqlite_store(path, clock, max_messages=4) as store:
        kept = store._entries["r1"]
        assert len(kept.messages) == 4
        assert kept.messages[1:] == msgs("turn", turns=6)[3:]
        assert kept.bytes == approx_bytes(kept.messages) == store.stats()["bytes"]
    assert rows(path)["r1"][7] == kept.bytes


def test_a_reopen_under_a_lower_entry_cap_drops_turns_to_fit(path: Path, clock: Clock) -> None:
    turns = [{"role": "user", "content": f"{i}" * 300} for i in range(3)]
    with sqlite_store(path, clock) as store:
        store.put("r1", turns, ALICE)
    with sqlite_store(path, clock, entry_bytes=approx_bytes(turns[1:]) + 250) as store:
        kept = store._entries["r1"].messages
        assert kept == [{"role": "user", "content": dropped_turns_notice(1, "bytes") + "1" * 300}, turns[2]]
        assert store.stats()["bytes"] == approx_bytes(kept)
    assert rows(path)["r1"][7] == approx_bytes(kept)


def test_a_reopen_under_a_lower_entry_cap_cuts_an_oversized_turn(path: Path, clock: Clock) -> None:
    with sqlite_store(path, clock) as store:
        store.put("r1", msgs("abcdefghij" * 100), ALICE)
    with sqlite_store(path, clock, entry_bytes=approx_bytes(msgs("abcdefghij" * 100)) - 1) as store:
        kept = store._entries["r1"].messages
        assert kept == msgs("abcdefghij" * 50 + TRUNCATION_MARKER)
        assert store.stats()["bytes"] == approx_bytes(kept)
    assert rows(path)["r1"][7] == approx_bytes(kept)


def test_a_stored_entry_the_trimmer_now_rejects_is_dropped_on_open(
    path: Path, clock: Clock, caplog: pytest.LogCaptureFixture
) -> None:
    with sqlite_store(path, clock) as store:
        store.put("resp_" + "r" * 30, msgs("x" * 120), ALICE)  # 120 units: halving cannot shrink it below 64 bytes
        store.put("keep", msgs("x"), ALICE)
    with (
        caplog.at_level(logging.WARNING, logger="engine.response_store"),
        sqlite_store(path, clock, entry_bytes=64) as store,
    ):
        assert live(store) == ["keep"]
    assert list(rows(path)) == ["keep"]
    assert any(
        line.startswith(f"[response-store] dropped stored {'resp_' + 'r' * 19} on load: ") for line in caplog.messages
    )


def test_a_reopen_within_the_limits_rewrites_nothing(path: Path, clock: Clock) -> None:
    with sqlite_store(path, clock) as store:
        for key in ("r1", "r2", "r3"):
            store.put(key, msgs(key, turns=2), ALICE)
        store.get("r1", ALICE)
    before = sql(path, "SELECT * FROM entries ORDER BY seq")
    with sqlite_store(path, clock) as store:
        assert live(store) == ["r2", "r3", "r1"]
    assert sql(path, "SELECT * FROM entries ORDER BY seq") == before


@pytest.mark.parametrize("recorded", [0, 1, SIZE + 5])
def test_a_wrong_recorded_size_is_recomputed_on_open(path: Path, clock: Clock, recorded: int) -> None:
    with sqlite_store(path, clock) as store:
        store.put("r1", msgs("x" * 100), ALICE)
    sql(path, "UPDATE entries SET bytes = ? WHERE id = 'r1'", recorded)
    with sqlite_store(path, clock) as store:
        assert store._entries["r1"].bytes == SIZE
        assert store.stats()["bytes"] == SIZE
    assert rows(path)["r1"][7] == SIZE


# ------------------------------------------------------------------------------------ refused rows and files


@pytest.mark.parametrize(
    ("statement", "problem"),
    [
        ("UPDATE entries SET id = '' WHERE id = 'bad'", "id is ''"),
        ("UPDATE entries SET owner = X'41' WHERE id = 'bad'", "owner is b'A'"),
        ("UPDATE entries SET tenant = 'api:k2' WHERE id = 'bad'", "tenant is 'api:k2'"),
        ("UPDATE entries SET model = X'00' WHERE id = 'bad'", "model is b'\\x00'"),
        ("UPDATE entries SET status = X'01' WHERE id = 'bad'", "status is b'\\x01'"),
        ("UPDATE entries SET incomplete_reason = X'02' WHERE id = 'bad'", "incomplete_reason is b'\\x02'"),
        ("UPDATE entries SET created_at = 9e999 WHERE id = 'bad'", "created_at is inf"),
        ("UPDATE entries SET created_at = 'later' WHERE id = 'bad'", "created_at is 'later'"),
        ("UPDATE entries SET last_access = -9e999 WHERE id = 'bad'", "last_access is -inf"),
        ("UPDATE entries SET last_access = 'now' WHERE id = 'bad'", "last_access is 'now'"),
        ("UPDATE entries SET bytes = 1.5 WHERE id = 'bad'", "bytes is 1.5"),
        ("UPDATE entries SET bytes = -1 WHERE id = 'bad'", "bytes is -1"),
        ("UPDATE entries SET messages = X'5B5D' WHERE id = 'bad'", "messages is b'[]'"),
        (
            "UPDATE entries SET messages = 'nope' WHERE id = 'bad'",
            NOT_JSON,
        ),
        (
            "UPDATE entries SET messages = '[{}, 2]' WHERE id = 'bad'",
            NOT_A_LIST,
        ),
        ("UPDATE entries SET messages = '{}' WHERE id = 'bad'", NOT_A_LIST),
        ("UPDATE entries SET messages = '[]' WHERE id = 'bad'", NOT_A_LIST),
        ("UPDATE entries SET messages = '5' WHERE id = 'bad'", NOT_A_LIST),
    ],
)
def test_a_corrupt_row_refuses_the_open_naming_the_row_and_the_field(
    path: Path, clock: Clock, statement: str, problem: str
) -> None:
    with sqlite_store(path, clock) as store:
        store.put("bad", msgs(), ALICE)
    sql(path, statement)
    row_id = "" if "id = ''" in statement else "bad"
    with pytest.raises(
        CorruptEntryError, match=_exactly(f"response store row {row_id!r} is corrupt: {problem}")
    ) as caught:
        sqlite_store(path, clock)
    assert caught.value.row_id == row_id
    assert len(rows(path)) == 1  # nothing dropped, and the failed open left the file unlocked


def test_valid_times_of_any_number_type_load(path: Path, clock: Clock) -> None:
    with sqlite_store(path, clock) as store:
        store.put("r1", msgs(), ALICE)
    sql(path, "UPDATE entries SET created_at = ?, last_access = ? WHERE id = 'r1'", int(T0), T0 + 0.5)
    with sqlite_store(path, clock) as store:
        entry = store._entries["r1"]
        assert (entry.created_at, entry.last_access) == (T0, T0 + 0.5)


def _in_use(path: Path) -> str:
    return f"response store {path}: in use by another process (database is locked)"


def test_a_file_that_is_not_sqlite_is_refused_and_left_unchanged(path: Path) -> None:
    path.write_bytes(b"not a database" * 100)
    message = f"response store {path}: not a usable SQLite database (file is not a database)"
    with pytest.raises(StoreOpenError, match=_exactly(message)):
        open_store(f"sqlite:{path}", StoreLimits())
    assert path.read_bytes() == b"not a database" * 100


@pytest.mark.parametrize(
    ("ours", "statements", "problem"),
    [
        (False, ["CREATE TABLE schema_version (v INTEGER)"], "not a usable SQLite database (no such column: version)"),
        (
            False,
            ["CREATE TABLE users (name TEXT)", "CREATE TABLE audit (at REAL)"],
            "not a response store (tables: audit, users)",
        ),
        (True, ["UPDATE schema_version SET version = 2"], "schema version [2] (this engine reads 1)"),
        (True, ["INSERT INTO schema_version (version) VALUES (1)"], "schema version [1, 1] (this engine reads 1)"),
    ],
)
def test_a_database_that_is_not_this_store_is_refused_and_left_unchanged(
    path: Path, ours: bool, statements: list[str], problem: str
) -> None:
    if ours:
        SqliteBackend(path).close()
    for statement in statements:
        sql(path, statement)
    before = sql(path, "SELECT * FROM sqlite_master")
    with pytest.raises(StoreOpenError, match=_exactly(f"response store {path}: {problem}")):
        open_store(f"sqlite:{path}", StoreLimits())
    assert sql(path, "SELECT * FROM sqlite_master") == before  # unchanged, and the failed open left it unlocked


def test_paths_that_cannot_be_a_store_are_refused_with_one_line(tmp_path: Path) -> None:
    missing = tmp_path / "missing" / "store.sqlite"
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    expected = {
        f"sqlite:{missing}": f"response store {missing}: directory {missing.parent} does not exist",
        f"sqlite:{tmp_path}": f"response store {tmp_path}: is a directory, expected a SQLite file",
        f"sqlite:{loop}": f"response store {loop}: cannot open (unable to open database file)",
        "sqlite::memory:": "response store :memory:: cannot use write-ahead logging (journal mode memory)",
    }
    for spec, message in expected.items():
        with pytest.raises(StoreOpenError, match=_exactly(message)):
            open_store(spec, StoreLimits())


def test_a_path_with_a_colon_is_one_path(tmp_path: Path, clock: Clock) -> None:
    path = tmp_path / "a:b.sqlite"
    with open_store(f"sqlite:{path}", StoreLimits(), clock=clock) as store:
        store.put("r1", msgs(), ALICE)
    assert list(rows(path)) == ["r1"]


def test_a_second_opener_gives_up_after_the_lock_timeout(path: Path, clock: Clock) -> None:
    with sqlite_store(path, clock) as store:
        store.put("r1", msgs(), ALICE)
        started = time.monotonic()
        with pytest.raises(StoreOpenError, match=_exactly(_in_use(path))):
            sqlite_store(path, clock)
        waited = time.monotonic() - started
    assert LOCK_TIMEOUT_S * 0.8 <= waited < LOCK_TIMEOUT_S + 2.0
