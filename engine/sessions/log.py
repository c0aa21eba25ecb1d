"""The session log: every change of an attached :class:`~engine.sessions.items.History` in SQLite (stdlib).

* Records: ``(session_id, seq, kind, body)``, ``seq`` counting from 1 per session, ``kind`` one of ``item``,
  ``prune``, ``compact`` and ``body`` the change's JSON (images in base64, ASCII-escaped so lone surrogates
  survive). The records of one history operation are one transaction, written before the history shows them.
* Durability: WAL journal, ``synchronous=FULL``; a committed record is on disk when the history changes.
* :meth:`SessionLog.restore` replays a session's records in order. A record that does not decode or apply, or a
  missing seq, raises :class:`SessionLogError` with its position and the history of every record before it:
  never skipped, never losing what came before.
* The engine's file is :func:`default_log_path` (``$XDG_STATE_HOME/cascade-engine/sessions.db``).
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import weakref
from collections.abc import Sequence
from pathlib import Path
from typing import Final, cast

from engine.sessions.items import CHANGE_KINDS, Change, ChangeKind, History, HistoryObserver

SCHEMA_VERSION: Final = 1
_SCHEMA: Final = (
    """CREATE TABLE records (
        session_id TEXT NOT NULL, seq INTEGER NOT NULL, kind TEXT NOT NULL, body TEXT NOT NULL,
        PRIMARY KEY (session_id, seq))""",
    "CREATE TABLE schema_version (version INTEGER NOT NULL)",
)


class SessionLogError(Exception):
    """A session's record ``position`` (its seq) is missing or corrupt; ``recovered`` holds the records before it."""

    def __init__(self, session_id: str, position: int, problem: str, recovered: History) -> None:
        super().__init__(
            f"session {session_id!r}: record {position} {problem}; "
            f"{position - 1} earlier record(s) recovered ({len(recovered.items)} items)"
        )
        self.session_id = session_id
        self.position = position
        self.recovered = recovered


class SessionLogWriteRefused(RuntimeError):
    """A record a write needs is taken already (another writer's, or one this log counted wrong): the write is
    refused whole, nothing of it is on disk, and the history operation it logs does not happen."""


def default_log_path() -> Path:
    """``$XDG_STATE_HOME/cascade-engine/sessions.db``, or under ``~/.local/state`` (a relative XDG path is ignored)."""
    state = os.environ.get("XDG_STATE_HOME", "")
    base = Path(state) if os.path.isabs(state) else Path.home() / ".local" / "state"
    return base / "cascade-engine" / "sessions.db"


class SessionLog:
    """One SQLite file (``":memory:"`` for tests) holding the records of any number of sessions; thread-safe."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = str(path)
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        self._lock = threading.RLock()
        self._conn: sqlite3.Connection | None = _connect(self.path)
        self._attached: dict[str, tuple[History, HistoryObserver]] = {}
        self._next_seq: dict[str, int] = {}
        # Histories this log just restored, by session, with their version: attaching one skips re-reading.
        self._restored: dict[str, tuple[weakref.ref[History], int]] = {}

    def __enter__(self) -> SessionLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def attach(self, session_id: str, history: History) -> None:
        """Append every later change of ``history`` to ``session_id``'s records (one transaction per operation).

        A session with no records first gets ``history``'s current state written. A session with records must
        already hold exactly ``history`` (it was restored from them); anything else is a ValueError, as is a
        session attached to another history.
        """
        with self._lock:
            current = self._attached.get(session_id)
            if current is not None:
                if current[0] is history:
                    return
                raise ValueError(f"session {session_id!r} is already attached to another history")
            count = self._count(session_id)
            if count == 0:
                self._write(session_id, 1, _baseline(history))
            elif not self._is_restored(session_id, history) and self.restore(session_id) != history:
                raise ValueError(f"session {session_id!r}: the log holds a different history")
            self._next_seq[session_id] = self._count(session_id) + 1

            def observer(changes: Sequence[Change]) -> None:
                with self._lock:
                    seq = self._next_seq[session_id]
                    self._write(session_id, seq, changes)
                    self._next_seq[session_id] = seq + len(changes)

            history.add_observer(observer)
            self._attached[session_id] = (history, observer)

    def detach(self, session_id: str) -> None:
        """Stop recording ``session_id``'s history (its records stay)."""
        with self._lock:
            attached = self._attached.pop(session_id, None)
            if attached is not None:
                attached[0].remove_observer(attached[1])
                self._next_seq.pop(session_id, None)

    def restore(self, session_id: str) -> History:
        """The history ``session_id``'s records describe (empty when it has none); SessionLogError for a bad one."""
        with self._lock:
            rows = self._db().execute(
                "SELECT seq, kind, body FROM records WHERE session_id = ? ORDER BY seq", (session_id,)
            )
            history = History()
            expected = 1
            for seq, kind, body in rows:
                if seq != expected:
                    raise SessionLogError(session_id, expected, "is missing", _copy(history))
                try:
                    history.apply(_decode(kind, body))
                except ValueError as exc:
                    raise SessionLogError(session_id, seq, f"is corrupt: {exc}", _copy(history)) from exc
                expected += 1
            self._restored[session_id] = (weakref.ref(history), history.version)
            return history

    def has_records(self, session_id: str) -> bool:
        """Whether ``session_id`` has at least one record (without restoring it)."""
        with self._lock:
            return self._count(session_id) > 0

    def sessions(self) -> list[str]:
        """Every session with at least one record, sorted."""
        with self._lock:
            return [row[0] for row in self._db().execute("SELECT DISTINCT session_id FROM records ORDER BY 1")]

    def close(self) -> None:
        """Close the file. Attached histories stay attached: a later change of one is refused, never unlogged."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def _is_restored(self, session_id: str, history: History) -> bool:
        ref, version = self._restored.pop(session_id, (None, -1))
        return ref is not None and ref() is history and history.version == version

    def _count(self, session_id: str) -> int:
        row = self._db().execute("SELECT max(seq) FROM records WHERE session_id = ?", (session_id,)).fetchone()
        return int(row[0] or 0)

    def _write(self, session_id: str, first_seq: int, changes: Sequence[Change]) -> None:
        if not changes:
            return
        rows = [
            (session_id, first_seq + offset, change.kind, json.dumps(change.body, separators=(",", ":")))
            for offset, change in enumerate(changes)
        ]
        conn = self._db()
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.executemany("INSERT INTO records (session_id, seq, kind, body) VALUES (?, ?, ?, ?)", rows)
            conn.execute("COMMIT")
        except sqlite3.IntegrityError as exc:
            _rollback(conn)
            raise SessionLogWriteRefused(
                f"session {session_id!r}: record {first_seq} was written by another writer"
            ) from exc
        except BaseException:
            _rollback(conn)
            raise

    def _db(self) -> sqlite3.Connection:
        if self._conn is None:
            raise sqlite3.ProgrammingError(f"session log {self.path} is closed")
        return self._conn


def _baseline(history: History) -> list[Change]:
    """Records that rebuild ``history``'s current state in a new log."""
    replay = History()
    records: list[Change] = []
    replay.add_observer(records.extend)
    items, pruned = history.snapshot()
    replay.commit(*items)
    replay.record_prune(pruned)
    return records


def _copy(history: History) -> History:
    items, pruned = history.snapshot()
    return History(items, pruned)


def _decode(kind: object, body: object) -> Change:
    if not isinstance(kind, str) or kind not in CHANGE_KINDS:
        raise ValueError(f"kind: {kind!r:.40} is not one of {', '.join(sorted(CHANGE_KINDS))}")
    if not isinstance(body, str):
        raise ValueError(f"body: expected JSON text, got {type(body).__name__}")
    try:
        doc = json.loads(body)
    except ValueError as exc:
        raise ValueError(f"body: not JSON ({exc})") from exc
    if not isinstance(doc, dict):
        raise ValueError(f"body: expected a JSON object, got {type(doc).__name__}")
    return Change(cast(ChangeKind, kind), doc)


def _connect(path: str) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    try:
        mode = str(conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]).lower()
        if mode != "wal" and path != ":memory:":
            raise ValueError(f"session log {path}: cannot use write-ahead logging (journal mode {mode})")
        conn.execute("PRAGMA synchronous = FULL")
        conn.execute("BEGIN IMMEDIATE")
        try:
            tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            if not tables:
                for statement in _SCHEMA:
                    conn.execute(statement)
                conn.execute("INSERT INTO schema_version (version) VALUES (?)", (SCHEMA_VERSION,))
            elif "schema_version" not in tables or _versions(conn) != [SCHEMA_VERSION]:
                raise ValueError(f"session log {path}: not a session log of schema version {SCHEMA_VERSION}")
            conn.execute("COMMIT")
        except BaseException:
            _rollback(conn)
            raise
    except BaseException:
        conn.close()
        raise
    return conn


def _versions(conn: sqlite3.Connection) -> list[object]:
    return [row[0] for row in conn.execute("SELECT version FROM schema_version")]


def _rollback(conn: sqlite3.Connection) -> None:
    """Roll back the open transaction, if SQLite has not already (an interrupt, a full disk or an I/O error
    ends it on its own): a ROLLBACK then would raise and hide the error that is being handled."""
    if conn.in_transaction:
        conn.execute("ROLLBACK")
