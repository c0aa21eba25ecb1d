"""The session log (seed 002): each change durable in one transaction, restore identical, corruption loud."""

from __future__ import annotations

import base64
import json
import sqlite3
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.sessions.items import History, Item, Message, ToolResult
from engine.sessions.log import SCHEMA_VERSION, SessionLog, SessionLogError, default_log_path
from tests.engine.session_support import items_strategy, png, run_sql, sample_items


def _records(db: Path, session_id: str = "s1") -> list[tuple[int, str, str]]:
    conn = sqlite3.connect(db)
    try:
        return list(
            conn.execute("SELECT seq, kind, body FROM records WHERE session_id = ? ORDER BY seq", (session_id,))
        )
    finally:
        conn.close()


def _restore_elsewhere(db: Path, session_id: str = "s1") -> History:
    """What a fresh process reading the file would rebuild."""
    with SessionLog(db) as other:
        return other.restore(session_id)


@pytest.mark.invariant("ATT-1")
def test_a_committed_image_is_on_disk_byte_for_byte_before_anything_else_happens(db: Path, log: SessionLog) -> None:
    history = History()
    log.attach("s1", history)
    result = ToolResult("call_a", "Attached image a.png", attachments=(png(7, 2048),))
    history.commit(result)
    (seq, kind, body), *_ = _records(db)
    assert (seq, kind) == (1, "item")
    data = json.loads(body)["attachments"][0]["payload"]["data"]
    assert base64.b64decode(data, validate=True) == result.attachments[0].data
    assert _restore_elsewhere(db) == history
    restored = _restore_elsewhere(db).items[0]
    assert isinstance(restored, ToolResult)
    assert restored.attachments == result.attachments


def test_the_file_is_wal_with_full_sync(db: Path, log: SessionLog) -> None:
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("SELECT version FROM schema_version").fetchall() == [(SCHEMA_VERSION,)]
    finally:
        conn.close()
    assert log._db().execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL


@pytest.mark.invariant("ATT-1")
def test_each_operation_writes_one_record_per_change(db: Path, log: SessionLog) -> None:
    history = History()
    log.attach("s1", history)
    history.commit(*sample_items()[:8])
    history.record_prune(["call_a"])
    history.compact("summary so far", 6)
    history.commit(sample_items()[8])
    kinds = [(seq, kind) for seq, kind, _ in _records(db)]
    assert kinds == [(n, "item") for n in range(1, 9)] + [(9, "prune"), (10, "compact"), (11, "item")]
    assert json.loads(_records(db)[8][2]) == {"call_ids": ["call_a"]}
    assert json.loads(_records(db)[9][2]) == {"summary": "summary so far", "retain_from": 2}  # pulled back
    assert _restore_elsewhere(db) == history


@pytest.mark.invariant("ATT-1")
def test_a_batch_is_one_transaction_and_a_failed_write_changes_nothing(db: Path, log: SessionLog) -> None:
    history = History()
    log.attach("s1", history)
    history.commit(*sample_items()[:5])
    run_sql(db, "INSERT INTO records VALUES ('s1', 7, 'item', '{}')")  # another writer took seq 7
    with pytest.raises(RuntimeError, match="another writer"):
        history.commit(*sample_items()[5:8])
    assert [seq for seq, _, _ in _records(db)] == [1, 2, 3, 4, 5, 7]  # seq 6 of the batch rolled back with it
    assert history == History(sample_items()[:5])


def test_a_closed_log_refuses_the_change_instead_of_losing_it(db: Path) -> None:
    log = SessionLog(db)
    history = History(sample_items()[:2])
    log.attach("s1", history)
    log.close()
    with pytest.raises(sqlite3.ProgrammingError, match="closed"):
        history.commit(sample_items()[2])
    assert history == History(sample_items()[:2])


@pytest.mark.invariant("ATT-1")
def test_restore_rebuilds_items_and_prune_decisions(log: SessionLog) -> None:
    history = History(sample_items(), pruned=["call_b"])
    log.attach("s1", history)
    history.record_prune(["call_n"])
    restored = log.restore("s1")
    assert restored == history
    assert restored.pruned == {"call_b", "call_n"}
    assert restored.items == tuple(sample_items())


@pytest.mark.invariant("ATT-1")
@given(st.lists(items_strategy, max_size=8))
def test_any_history_restores_identically(items: list[Item]) -> None:
    with SessionLog(":memory:") as log:
        history = History()
        log.attach("s", history)
        for item in items:
            history.commit(item)
        assert log.restore("s") == history


def test_attaching_a_history_with_items_writes_its_state_first(db: Path, log: SessionLog) -> None:
    history = History(sample_items(), pruned=["call_a"])
    log.attach("s1", history)
    assert [kind for _, kind, _ in _records(db)] == ["item"] * len(sample_items()) + ["prune"]
    assert _restore_elsewhere(db) == history


def test_a_restored_history_attaches_and_keeps_appending(db: Path, log: SessionLog) -> None:
    log.attach("s1", History(sample_items()[:4]))
    with SessionLog(db) as later:
        restored = later.restore("s1")
        later.attach("s1", restored)
        restored.commit(*sample_items()[4:])
    assert _restore_elsewhere(db) == History(sample_items())
    assert [seq for seq, _, _ in _records(db)] == list(range(1, len(sample_items()) + 1))


def test_attach_refuses_a_history_the_log_does_not_hold(log: SessionLog) -> None:
    log.attach("s1", History(sample_items()[:4]))
    with pytest.raises(ValueError, match="already attached"):
        log.attach("s1", History(sample_items()[:4]))
    with SessionLog(log.path) as other:
        with pytest.raises(ValueError, match="different history"):
            other.attach("s1", History(sample_items()[:3]))
        other.attach("s1", History(sample_items()[:4]))  # re-read and found equal


def test_sessions_are_kept_apart(log: SessionLog) -> None:
    one, two = History(), History()
    log.attach("one", one)
    log.attach("two", two)
    one.commit(*sample_items()[:2])
    two.commit(Message("user", "other"))
    assert log.sessions() == ["one", "two"]
    assert log.restore("two") == History([Message("user", "other")])
    assert log.restore("unknown") == History()
    log.detach("two")
    two.commit(Message("user", "not logged"))
    assert log.restore("two") == History([Message("user", "other")])


def _five_records(db: Path) -> None:
    with SessionLog(db) as log:
        history = History()
        log.attach("s1", history)
        history.commit(*sample_items()[:5])  # seq 1..5


@pytest.mark.invariant("ATT-1")
@pytest.mark.parametrize(
    ("statement", "problem"),
    [
        ("UPDATE records SET body = substr(body, 1, 20) WHERE seq = 3", "is corrupt: body: not JSON"),
        ("UPDATE records SET body = '[1]' WHERE seq = 3", "is corrupt: body: expected a JSON object"),
        ("UPDATE records SET body = X'00ff' WHERE seq = 3", "is corrupt: body: expected JSON text"),
        ("UPDATE records SET kind = 'rewrite' WHERE seq = 3", "is corrupt: kind: "),
        ('UPDATE records SET body = \'{"type":"tool_call"}\' WHERE seq = 3', "is corrupt: tool_call.arguments: "),
        ("UPDATE records SET kind = 'prune', body = '{\"call_ids\":[\"call_x\"]}' WHERE seq = 3", "prune.call_ids"),
        ("DELETE FROM records WHERE seq = 3", "is missing"),
    ],
    ids=["torn-json", "not-an-object", "blob", "unknown-kind", "missing-field", "prune-of-nothing", "gap"],
)
def test_a_corrupt_record_is_reported_at_its_position_with_the_records_before_it(
    db: Path, statement: str, problem: str
) -> None:
    _five_records(db)
    run_sql(db, statement)
    with pytest.raises(SessionLogError) as caught:
        _restore_elsewhere(db)
    error = caught.value
    assert (error.session_id, error.position) == ("s1", 3)
    assert problem in str(error)
    assert "record 3" in str(error)
    assert "2 earlier record(s) recovered" in str(error)
    assert error.recovered == History(sample_items()[:2])


@pytest.mark.invariant("ATT-1")
def test_bad_base64_in_an_image_record_is_corruption_not_a_lost_image(db: Path) -> None:
    with SessionLog(db) as log:
        history = History()
        log.attach("s1", history)
        history.commit(*sample_items()[:6])  # seq 6 is the image-only result
    body = json.loads(_records(db)[5][2])
    body["attachments"][0]["payload"]["data"] = body["attachments"][0]["payload"]["data"][:-3]
    run_sql(db, "UPDATE records SET body = ? WHERE seq = 6", json.dumps(body))
    with pytest.raises(SessionLogError, match=r"payload\.data: not standard padded base64") as caught:
        _restore_elsewhere(db)
    assert caught.value.position == 6
    assert caught.value.recovered == History(sample_items()[:5])


def test_nothing_is_appended_behind_a_corrupt_record(db: Path) -> None:
    _five_records(db)
    run_sql(db, "DELETE FROM records WHERE seq = 4")
    with SessionLog(db) as log, pytest.raises(SessionLogError):
        log.attach("s1", History(sample_items()[:3]))
    assert [seq for seq, _, _ in _records(db)] == [1, 2, 3, 5]


def test_another_applications_database_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    run_sql(path, "CREATE TABLE entries (id TEXT)")
    with pytest.raises(ValueError, match="not a session log"):
        SessionLog(path)


def test_the_default_file_lives_in_the_state_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    assert default_log_path() == tmp_path / "state" / "cascade-engine" / "sessions.db"
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    for unusable in ("", "relative/state"):
        monkeypatch.setenv("XDG_STATE_HOME", unusable)
        assert default_log_path() == tmp_path / "home" / ".local" / "state" / "cascade-engine" / "sessions.db"
    monkeypatch.delenv("XDG_STATE_HOME")
    assert default_log_path() == tmp_path / "home" / ".local" / "state" / "cascade-engine" / "sessions.db"


def test_a_missing_directory_is_created(tmp_path: Path) -> None:
    with SessionLog(tmp_path / "deep" / "er" / "sessions.db") as log:
        assert log.sessions() == []
    assert (tmp_path / "deep" / "er" / "sessions.db").is_file()


def test_a_write_that_sqlite_rolled_back_itself_raises_its_own_error_and_the_log_stays_usable(tmp_path: Path) -> None:
    # An interrupted INSERT inside an explicit transaction makes SQLite roll the whole transaction back on
    # its own; a second ROLLBACK would fail and hide the interrupt ("cannot rollback - no transaction").
    log = SessionLog(tmp_path / "sessions.db")
    history = History()
    log.attach("s1", history)
    opcodes = 0

    def interrupt_mid_insert() -> int:
        nonlocal opcodes
        opcodes += 1
        return 1 if opcodes == 200 else 0

    conn = log._db()
    conn.set_progress_handler(interrupt_mid_insert, 1)
    with pytest.raises(sqlite3.OperationalError, match="interrupted"):
        history.commit(*sample_items() * 20)
    conn.set_progress_handler(None, 1)
    assert not conn.in_transaction
    assert history.snapshot()[0] == ()  # the refused change never reached the history
    history.commit(*sample_items())
    log.close()
    with SessionLog(tmp_path / "sessions.db") as reopened:
        assert reopened.restore("s1").snapshot() == history.snapshot()
