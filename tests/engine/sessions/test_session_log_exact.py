"""The session log at its exact edges: the stored record text, attach and detach rules, restore's reports for a
missing or undecodable record (message and recovered state), the directory it creates and use across threads."""

from __future__ import annotations

import sqlite3
import stat
import threading
from pathlib import Path

import pytest

from engine.sessions.items import History, Message, ToolResult
from engine.sessions.log import SessionLog, SessionLogError
from tests.engine.session_support import run_sql, sample_items


def _bodies(db: Path) -> list[str]:
    conn = sqlite3.connect(db)
    try:
        return [row[0] for row in conn.execute("SELECT body FROM records WHERE session_id = 's1' ORDER BY seq")]
    finally:
        conn.close()


def test_a_record_body_is_compact_json_with_non_ascii_escaped(db: Path, log: SessionLog) -> None:
    history = History()
    log.attach("s1", history)
    history.commit(Message("user", "snow ☃"), ToolResult("c", "s", "x"))
    history.record_prune(["c"])
    assert _bodies(db) == [
        '{"type":"message","role":"user","text":"snow \\u2603"}',
        '{"type":"tool_result","call_id":"c","summary":"s","content":"x"}',
        '{"call_ids":["c"]}',
    ]


def test_has_records_is_true_from_the_first_record_on(log: SessionLog) -> None:
    assert log.has_records("s1") is False
    log.attach("s1", History())  # an empty history writes no baseline record
    assert log.has_records("s1") is False
    history = History([Message("user", "a")])
    log.attach("s2", history)
    assert (log.has_records("s1"), log.has_records("s2")) == (False, True)


def test_attaching_the_same_history_twice_is_a_no_op(db: Path, log: SessionLog) -> None:
    history = History([Message("user", "a")])
    log.attach("s1", history)
    log.attach("s1", history)
    history.commit(Message("user", "b"))
    assert len(_bodies(db)) == 2  # one observer: each change written once


def test_detaching_stops_recording_and_an_unattached_session_detaches_quietly(db: Path, log: SessionLog) -> None:
    log.detach("never-attached")
    history = History([Message("user", "a")])
    log.attach("s1", history)
    log.detach("s1")
    log.detach("s1")
    history.commit(Message("user", "not logged"))
    assert log.restore("s1") == History([Message("user", "a")])


def test_attaching_the_just_restored_history_does_not_read_the_records_again(
    log: SessionLog, monkeypatch: pytest.MonkeyPatch
) -> None:
    log.attach("s1", History(sample_items()[:3]))
    log.detach("s1")
    restored = log.restore("s1")
    reads: list[str] = []
    real_restore = log.restore

    def counting_restore(session_id: str) -> History:
        reads.append(session_id)
        return real_restore(session_id)

    monkeypatch.setattr(log, "restore", counting_restore)
    log.attach("s1", restored)
    assert reads == []


def test_a_restored_history_changed_before_attaching_is_refused(log: SessionLog) -> None:
    log.attach("s1", History(sample_items()[:3]))
    log.detach("s1")
    restored = log.restore("s1")
    restored.commit(Message("user", "unlogged"))
    with pytest.raises(ValueError, match=r"^session 's1': the log holds a different history$"):
        log.attach("s1", restored)


def test_another_history_of_the_same_version_as_a_restored_one_is_refused(log: SessionLog) -> None:
    log.attach("s1", History(sample_items()[:3]))
    log.detach("s1")
    restored = log.restore("s1")
    other = History()
    other.commit(*sample_items()[3:6])
    assert other.version == restored.version
    with pytest.raises(ValueError, match=r"^session 's1': the log holds a different history$"):
        log.attach("s1", other)


def test_a_missing_record_is_reported_with_its_position_and_what_came_before(db: Path, log: SessionLog) -> None:
    history = History(sample_items()[:6], pruned=["call_a"])
    log.attach("s1", history)  # 6 item records, then the prune (seq 7)
    history.commit(Message("user", "seq 8"), Message("user", "seq 9"))
    run_sql(db, "DELETE FROM records WHERE seq = 8")
    with pytest.raises(SessionLogError) as caught:
        log.restore("s1")
    assert str(caught.value) == "session 's1': record 8 is missing; 7 earlier record(s) recovered (6 items)"
    assert caught.value.position == 8
    assert caught.value.recovered == History(sample_items()[:6], pruned=["call_a"])
    assert caught.value.recovered.pruned == {"call_a"}


@pytest.mark.parametrize(
    ("kind", "body", "problem"),
    [
        ("rewrite", "'{}'", "kind: 'rewrite' is not one of compact, item, prune"),
        ("item", "X'7B7D'", "body: expected JSON text, got bytes"),
        ("item", "'[1]'", "body: expected a JSON object, got list"),
    ],
    ids=["unknown-kind", "blob-body", "array-body"],
)
def test_an_undecodable_record_is_reported_with_the_reason(
    db: Path, log: SessionLog, kind: str, body: str, problem: str
) -> None:
    log.attach("s1", History([Message("user", "a")]))
    run_sql(db, f"INSERT INTO records VALUES ('s1', 2, ?, {body})", kind)
    with pytest.raises(SessionLogError) as caught:
        log.restore("s1")
    assert str(caught.value) == f"session 's1': record 2 is corrupt: {problem}; 1 earlier record(s) recovered (1 items)"


def test_a_new_log_directory_is_private_to_its_owner(tmp_path: Path) -> None:
    with SessionLog(tmp_path / "state" / "cascade-engine" / "sessions.db"):
        pass
    assert stat.S_IMODE((tmp_path / "state" / "cascade-engine").stat().st_mode) == 0o700


def test_a_log_opened_in_one_thread_records_a_history_changed_in_another(db: Path, log: SessionLog) -> None:
    history = History()
    log.attach("s1", history)
    errors: list[BaseException] = []

    def commit() -> None:
        try:
            history.commit(Message("user", "from a worker thread"))
        except BaseException as exc:  # reported below
            errors.append(exc)

    worker = threading.Thread(target=commit)
    worker.start()
    worker.join()
    assert errors == []
    assert log.restore("s1") == History([Message("user", "from a worker thread")])


def test_a_database_that_cannot_use_write_ahead_logging_is_refused() -> None:
    # "" is SQLite's private temporary database, which stays in rollback-journal mode.
    with pytest.raises(ValueError, match=r"^session log : cannot use write-ahead logging \(journal mode delete\)$"):
        SessionLog("")
