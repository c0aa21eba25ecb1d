"""The SQLite response store: what survives a close, a reopen under new limits, and a SIGKILL mid-burst."""

from __future__ import annotations

import os
import re
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from engine.store import ResponseStore, StoreLimits, StoreOpenError, open_store
from engine.store.sqlite import SCHEMA_VERSION, CorruptEntryError, SqliteBackend
from engine.store.trim import approx_bytes
from tests.engine.store import store_writer

ALICE = "api:k1:user:alice"
BOB = "api:k1:user:bob"
CAROL = "api:k2:user:carol"
REPO = Path(__file__).resolve().parents[3]


class Clock:
    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        return self.now


def _msgs(text: str = "hello", *, turns: int = 1) -> list[dict[str, Any]]:
    return [{"role": "user", "content": f"{text} {i}"} for i in range(turns)]


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "store.sqlite"


@pytest.fixture
def clock() -> Clock:
    return Clock()


def _open(path: Path, clock: Clock, **limits: Any) -> ResponseStore:
    return open_store(f"sqlite:{path}", StoreLimits(**limits), clock=clock)


def _ids(path: Path) -> list[str]:
    conn = sqlite3.connect(path)
    try:
        return [row[0] for row in conn.execute("SELECT id FROM entries ORDER BY id")]
    finally:
        conn.close()  # an open connection would keep the store from taking its exclusive lock


def _sql(path: Path, statement: str, *params: Any) -> None:
    conn = sqlite3.connect(path)
    with conn:
        conn.execute(statement, params)
    conn.close()


# ------------------------------------------------------------------------------------ close and reopen


def test_entries_owners_ages_and_limits_survive_a_clean_reopen(path: Path, clock: Clock) -> None:
    limits: dict[str, Any] = {"ttl_s": 600.0, "max_entries": 50, "max_bytes": 1_000_000}
    with _open(path, clock, **limits) as store:
        store.put("r1", _msgs("alice"), ALICE, model="m1", status="incomplete", incomplete_reason="max_output_tokens")
        clock.now += 10
        store.put("r2", [{"role": "user", "content": "caf\u00e9 \u4e2d \U0001f600 \ud800"}], CAROL, model="m2")
        clock.now += 10
        store.get("r1", ALICE)
        store.put("r3", _msgs("gone"), BOB)
        assert store.delete("r3", BOB)
    clock.now += 100
    with _open(path, clock, **limits) as store:
        first = store.get("r1", ALICE).entry
        assert first is not None
        assert (first.owner, first.model, first.status, first.incomplete_reason) == (
            ALICE,
            "m1",
            "incomplete",
            "max_output_tokens",
        )
        assert (first.messages, first.created_at, first.bytes) == (_msgs("alice"), 1_700_000_000.0, first.bytes)
        second = store.get("r2", CAROL).entry
        assert second is not None
        assert second.messages == [{"role": "user", "content": "caf\u00e9 \u4e2d \U0001f600 \ud800"}]
        assert second.created_at == 1_700_000_010.0
        assert store.get("r3", BOB).reason == "not_found"
        assert store.stats()["size"] == 2
    backend = SqliteBackend(path)
    assert backend.load_limits() == StoreLimits(**limits)
    backend.close()


@pytest.mark.invariant("STORE-8")
def test_ownership_is_still_enforced_after_a_reopen(path: Path, clock: Clock) -> None:
    with _open(path, clock) as store:
        store.put("r1", _msgs(), ALICE)
    with _open(path, clock) as store:
        assert store.get("r1", BOB).reason == "not_found"
        assert not store.delete("r1", BOB)
        assert store.put("r1", _msgs("bob's"), BOB).reason == "foreign_owner"
    with _open(path, clock) as store:
        entry = store.get("r1", ALICE).entry
        assert entry is not None
        assert (entry.owner, entry.messages) == (ALICE, _msgs())


def test_a_touch_and_a_refresh_are_persisted(path: Path, clock: Clock) -> None:
    with _open(path, clock, ttl_s=100) as store:
        store.put("r2", _msgs(), ALICE)
        clock.now += 60
        store.put("r1", _msgs(), ALICE)
        clock.now += 30
        store.get("r1", ALICE)  # idle restarts for r1 only
        store.put("r2", _msgs("refreshed"), ALICE)  # r2 refreshed: its age is kept
    clock.now += 90
    with _open(path, clock, ttl_s=100, max_age_s=150) as store:
        one = store.get("r1", ALICE).entry
        assert one is not None
        assert one.last_access == 1_700_000_180.0
        assert one.created_at == 1_700_000_060.0
        # r2 was created 180 s ago, over max_age_s=150 though idle only 90 s: dropped on open.
        assert store.stats()["expires"] == 1
        assert store.get("r2", ALICE).reason == "not_found"
    assert _ids(path) == ["r1"]


def test_the_lru_order_survives_a_reopen(path: Path, clock: Clock) -> None:
    with _open(path, clock) as store:  # one timestamp for all: only the recorded order tells them apart
        for key in ("r1", "r2", "r3"):
            store.put(key, _msgs(), ALICE)
        store.get("r1", ALICE)
    with _open(path, clock, max_entries=2) as store:
        assert store.stats()["evictions"] == 1
    assert _ids(path) == ["r1", "r3"]


def test_a_reopen_enforces_the_current_limits(path: Path, clock: Clock) -> None:
    size = approx_bytes(_msgs("x" * 100))
    with _open(path, clock) as store:
        for i in range(6):
            store.put(f"r{i}", _msgs("x" * 100), ALICE)
            clock.now += 10
        store.put("long", _msgs("turn", turns=10), CAROL)
    with _open(path, clock, max_bytes=4 * size + 200, tenant_bytes=1, max_messages=4) as store:
        stats = store.stats()
        assert stats["bytes"] <= 4 * size + 200
        long = store.get("long", CAROL).entry
        assert long is not None
        assert len(long.messages) == 4  # re-trimmed to the current max_messages
        assert not store.get("r0", ALICE).ok
        assert store.get("r5", ALICE).ok
        kept = sorted(store._entries)
        assert stats["evictions"] == 7 - len(kept) >= 3
    assert _ids(path) == kept  # the trims and evictions were written back
    with _open(path, clock) as store:
        long = store.get("long", CAROL).entry
        assert long is not None
        assert len(long.messages) == 4
    backend = SqliteBackend(path)
    assert backend.load_limits() == StoreLimits()
    backend.close()


def test_entries_expired_while_closed_are_dropped_on_open(path: Path, clock: Clock) -> None:
    with _open(path, clock, ttl_s=60) as store:
        store.put("old", _msgs(), ALICE)
        clock.now += 30
        store.put("young", _msgs(), ALICE)
    clock.now += 45
    with _open(path, clock, ttl_s=60) as store:
        assert store.stats()["expires"] == 1
        assert store.get("young", ALICE).ok
    assert _ids(path) == ["young"]


def test_the_file_is_in_wal_mode_with_full_sync(path: Path) -> None:
    backend = SqliteBackend(path)
    conn = backend._db()
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
    assert conn.execute("SELECT version FROM schema_version").fetchall() == [(SCHEMA_VERSION,)]
    backend.close()
    backend.close()  # idempotent


def test_concurrent_callers_on_a_sqlite_store(path: Path, clock: Clock) -> None:
    store = _open(path, clock, max_entries=30)
    owners = [ALICE, BOB, CAROL, "session:s1"]

    def work(index: int) -> None:
        for i in range(60):
            store.put(f"{index}-{i % 20}", _msgs(f"{index}/{i}"), owners[index])
            store.get(f"{index}-{(i * 7) % 20}", owners[index])
            if i % 9 == 0:
                store.delete(f"{index}-{(i * 3) % 20}", owners[index])

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    live = {key: (entry.owner, entry.messages) for key, entry in store._entries.items()}
    store.close()
    with _open(path, clock, max_entries=30) as reopened:
        assert {key: (entry.owner, entry.messages) for key, entry in reopened._entries.items()} == live
        assert reopened.stats()["evictions"] == 0


# ------------------------------------------------------------------------------------ bad files


@pytest.mark.parametrize(
    ("statement", "problem"),
    [
        ("UPDATE entries SET messages = '{\"role\": ' WHERE id = 'bad'", "messages are not JSON"),
        ("UPDATE entries SET messages = '{\"role\": \"user\"}' WHERE id = 'bad'", "not a non-empty list"),
        ("UPDATE entries SET messages = '[1, 2]' WHERE id = 'bad'", "not a non-empty list"),
        ("UPDATE entries SET messages = '[]' WHERE id = 'bad'", "not a non-empty list"),
        ("UPDATE entries SET messages = X'5B5D' WHERE id = 'bad'", "messages is b'[]'"),
        ("UPDATE entries SET created_at = 'yesterday' WHERE id = 'bad'", "created_at is 'yesterday'"),
        ("UPDATE entries SET last_access = NULL WHERE id = 'bad'", None),  # NOT NULL: the update itself fails
        ("UPDATE entries SET owner = X'00' WHERE id = 'bad'", "owner is b'\\x00'"),
        ("UPDATE entries SET owner = '' WHERE id = 'bad'", "owner is ''"),
        ("UPDATE entries SET tenant = 'api:other' WHERE id = 'bad'", "tenant is 'api:other'"),
        ("UPDATE entries SET bytes = -1 WHERE id = 'bad'", "bytes is -1"),
        ("UPDATE entries SET incomplete_reason = 7 WHERE id = 'bad'", None),  # TEXT affinity: stored as '7', valid
    ],
)
def test_a_corrupt_row_is_reported_by_id_never_skipped(
    path: Path, clock: Clock, statement: str, problem: str | None
) -> None:
    with _open(path, clock) as store:
        store.put("good", _msgs(), ALICE)
        store.put("bad", _msgs(), ALICE)
    try:
        _sql(path, statement)
    except sqlite3.IntegrityError:
        assert problem is None
        return
    if problem is None:
        _open(path, clock).close()
        return
    with pytest.raises(CorruptEntryError, match=re.escape(problem)) as caught:
        _open(path, clock)
    assert caught.value.row_id == "bad"
    assert "'bad'" in str(caught.value)
    assert isinstance(caught.value, ValueError)
    assert _ids(path) == ["bad", "good"]  # nothing was dropped on the way


def test_a_path_in_a_missing_directory_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(StoreOpenError, match=r"directory .*missing.* does not exist"):
        open_store(f"sqlite:{tmp_path / 'missing' / 'store.sqlite'}", StoreLimits())


def test_a_file_that_is_not_sqlite_is_a_clear_error(path: Path) -> None:
    path.write_text("this is a text file, not a database\n" * 100)
    with pytest.raises(StoreOpenError, match="not a usable SQLite database") as caught:
        open_store(f"sqlite:{path}", StoreLimits())
    assert "\n" not in str(caught.value)
    assert path.read_text().startswith("this is a text file")


def test_a_directory_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(StoreOpenError, match="is a directory"):
        open_store(f"sqlite:{tmp_path}", StoreLimits())


def test_another_applications_database_is_left_alone(path: Path) -> None:
    _sql(path, "CREATE TABLE users (name TEXT)")
    with pytest.raises(StoreOpenError, match=r"not a response store \(tables: users\)"):
        open_store(f"sqlite:{path}", StoreLimits())


def test_another_schema_version_is_refused(path: Path) -> None:
    SqliteBackend(path).close()
    _sql(path, "UPDATE schema_version SET version = ?", SCHEMA_VERSION + 1)
    with pytest.raises(StoreOpenError, match=f"schema version \\[{SCHEMA_VERSION + 1}\\]"):
        open_store(f"sqlite:{path}", StoreLimits())


def test_a_second_opener_of_the_same_file_is_refused(path: Path, clock: Clock) -> None:
    store = _open(path, clock)
    store.put("r1", _msgs(), ALICE)
    with pytest.raises(StoreOpenError, match="in use by another process"):
        _open(path, clock)
    store.close()
    with _open(path, clock) as again:
        assert again.get("r1", ALICE).ok


# ------------------------------------------------------------------------------------ SIGKILL


def _writer(path: Path, start: int) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.engine.store.store_writer", str(path), str(start)],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )


def _committed(lines: Iterator[str] | list[str]) -> list[int]:
    return [int(line.split()[1]) for line in lines if line.startswith("committed ")]


def _kill_after(path: Path, start: int, reports: int, delay_s: float) -> list[int]:
    """Run a writer from ``start``, SIGKILL it ``delay_s`` after it reported ``reports`` commits; every index it
    reported (a put takes milliseconds, so the kill lands inside one, at a point the delay varies)."""
    child = _writer(path, start)
    assert child.stdout is not None
    seen: list[str] = []
    try:
        while len(seen) < reports:
            line = child.stdout.readline()
            assert line, f"the writer exited early: {child.stderr.read() if child.stderr else ''}"
            seen.append(line)
        time.sleep(delay_s)
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
        seen += child.stdout.readlines()  # lines written before the kill, still in the pipe
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        child.stdout.close()
        if child.stderr is not None:
            child.stderr.close()
    assert child.returncode == -signal.SIGKILL
    return _committed(seen)


def test_every_reported_write_survives_a_sigkill_mid_burst(path: Path) -> None:
    reported: list[int] = []
    start = 0
    for reports, delay_s in ((1, 0.0), (7, 0.002), (25, 0.0005), (3, 0.005), (12, 0.001)):
        done = _kill_after(path, start, reports, delay_s)
        assert done == list(range(start, start + len(done)))
        assert len(done) >= reports
        reported += done
        in_flight = start + len(done)
        with open_store(f"sqlite:{path}", store_writer.LIMITS) as store:
            present = set(store._entries)
            expected = {store_writer.entry_id(i) for i in reported}
            assert expected <= present
            assert present - expected <= {store_writer.entry_id(in_flight)}  # at most the one in flight
            for index in [*reported, in_flight]:
                key = store_writer.entry_id(index)
                if key in present:
                    found = store.get(key, store_writer.owner_for(index))
                    assert found.entry is not None
                    assert found.entry.messages == store_writer.messages_for(index)
            if store_writer.entry_id(in_flight) in present:
                reported.append(in_flight)
        start = in_flight + 1
