"""A SQLite backend for the response store: ``open_store("sqlite:PATH")`` (stdlib :mod:`sqlite3`).

* Durability: WAL journal, ``synchronous=FULL``, autocommit, and every write is a single statement, so each
  put, touch, delete or eviction is its own transaction, committed (and fsynced) before the store's memory
  changes. A process killed mid-write loses at most the write in flight.
* Threads: one connection (``check_same_thread=False``) guarded by a lock; the store calls in under its own lock
  anyway, so the backend's lock only keeps it safe on its own.
* One process: the file is opened with ``locking_mode=EXCLUSIVE``, so a second gateway on the same file fails to
  open (each would otherwise evict and expire behind the other's back) instead of silently diverging.
* Schema (``schema_version`` table, :data:`SCHEMA_VERSION`): ``entries`` (one row per response, messages as JSON
  text, ``seq`` the LRU order) and ``meta`` (``limits``: the limits the file was last opened with).
* A row that does not decode raises :class:`CorruptEntryError` naming its id.
"""

from __future__ import annotations

import json
import math
import os
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

from engine.store.model import StoredEntry, StoreLimits, StoreOpenError, tenant_of

SCHEMA_VERSION: Final = 1
#: How long a second opener waits for the file's lock before giving up.
LOCK_TIMEOUT_S: Final = 0.5

_SCHEMA: Final = (
    """CREATE TABLE entries (
        id TEXT PRIMARY KEY, owner TEXT NOT NULL, tenant TEXT NOT NULL, model TEXT NOT NULL,
        status TEXT NOT NULL, incomplete_reason TEXT, created_at REAL NOT NULL, last_access REAL NOT NULL,
        bytes INTEGER NOT NULL, messages TEXT NOT NULL, seq INTEGER NOT NULL)""",
    "CREATE INDEX entries_by_seq ON entries (seq)",
    "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
)
_COLUMNS: Final = "id, owner, tenant, model, status, incomplete_reason, created_at, last_access, bytes, messages"
_NEXT_SEQ: Final = "(SELECT coalesce(max(seq), 0) + 1 FROM entries)"


class CorruptEntryError(StoreOpenError):
    """A stored row that does not decode; never skipped, since dropping it would lose a conversation silently."""

    def __init__(self, row_id: object, problem: str) -> None:
        super().__init__(f"response store row {row_id!r} is corrupt: {problem}")
        self.row_id = row_id


class SqliteBackend:
    """A :class:`~engine.store.model.StoreBackend` in one SQLite file (created when missing)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = _connect(self.path)

    def load(self) -> Iterator[StoredEntry]:
        with self._lock:
            # seq alone is the recency order: last_access is wall-clock time, which can step back.
            rows = self._db().execute(f"SELECT {_COLUMNS} FROM entries ORDER BY seq").fetchall()
        for row in rows:
            yield _decode(row)

    def save(self, entry: StoredEntry) -> None:
        messages = _encoded(entry.messages)
        row = (entry.id, entry.owner, entry.tenant, entry.model, entry.status, entry.incomplete_reason)
        self._write(
            f"INSERT OR REPLACE INTO entries ({_COLUMNS}, seq) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, {_NEXT_SEQ})",
            (*row, entry.created_at, entry.last_access, entry.bytes, messages),
        )

    def rewrite(self, entry: StoredEntry) -> None:
        self._write(
            "UPDATE entries SET messages = ?, bytes = ? WHERE id = ?", (_encoded(entry.messages), entry.bytes, entry.id)
        )

    def touch(self, response_id: str, last_access: float) -> None:
        self._write(f"UPDATE entries SET last_access = ?, seq = {_NEXT_SEQ} WHERE id = ?", (last_access, response_id))

    def delete(self, response_id: str) -> None:
        self._write("DELETE FROM entries WHERE id = ?", (response_id,))

    def save_limits(self, limits: StoreLimits) -> None:
        self._write("INSERT OR REPLACE INTO meta (key, value) VALUES ('limits', ?)", (json.dumps(limits.to_json()),))

    def load_limits(self) -> StoreLimits | None:
        """The limits recorded by the last open (None for a new file)."""
        with self._lock:
            row = self._db().execute("SELECT value FROM meta WHERE key = 'limits'").fetchone()
        if row is None:
            return None
        try:
            return StoreLimits.from_json(json.loads(row[0]))
        except (TypeError, ValueError) as exc:
            raise StoreOpenError(f"response store {self.path}: the recorded limits are corrupt ({exc})") from exc

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def _db(self) -> sqlite3.Connection:
        if self._conn is None:
            raise sqlite3.ProgrammingError(f"response store {self.path} is closed")
        return self._conn

    def _write(self, sql: str, params: tuple[Any, ...]) -> None:
        with self._lock:
            self._db().execute(sql, params)


def _connect(path: Path) -> sqlite3.Connection:
    """An open, migrated connection to ``path``; StoreOpenError (one line, no traceback needed) otherwise."""
    where = f"response store {path}"
    if not path.parent.is_dir():
        raise StoreOpenError(f"{where}: directory {path.parent} does not exist")
    if path.is_dir():
        raise StoreOpenError(f"{where}: is a directory, expected a SQLite file")
    try:
        conn = sqlite3.connect(path, timeout=LOCK_TIMEOUT_S, isolation_level=None, check_same_thread=False)
    except sqlite3.Error as exc:
        raise StoreOpenError(f"{where}: cannot open ({exc})") from exc
    try:
        conn.execute("PRAGMA locking_mode = EXCLUSIVE")
        mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
        if str(mode).lower() != "wal":
            raise StoreOpenError(f"{where}: cannot use write-ahead logging (journal mode {mode})")
        conn.execute("PRAGMA synchronous = FULL")
        _migrate(conn, where)
    except sqlite3.OperationalError as exc:
        conn.close()
        if "locked" in str(exc):
            raise StoreOpenError(f"{where}: in use by another process ({exc})") from exc
        raise StoreOpenError(f"{where}: not a usable SQLite database ({exc})") from exc
    except sqlite3.Error as exc:
        conn.close()
        raise StoreOpenError(f"{where}: not a usable SQLite database ({exc})") from exc
    except BaseException:
        conn.close()
        raise
    return conn


def _migrate(conn: sqlite3.Connection, where: str) -> None:
    """Create the schema in a new file; refuse another application's database or another schema version."""
    conn.execute("BEGIN IMMEDIATE")  # outside the try: when it fails there is nothing to roll back
    try:
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if not tables:
            for statement in _SCHEMA:
                conn.execute(statement)
            conn.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
            conn.execute("INSERT INTO schema_version (version) VALUES (?)", (SCHEMA_VERSION,))
        elif "schema_version" not in tables:
            raise StoreOpenError(f"{where}: not a response store (tables: {', '.join(sorted(tables))})")
        else:
            versions = [row[0] for row in conn.execute("SELECT version FROM schema_version")]
            if versions != [SCHEMA_VERSION]:
                raise StoreOpenError(f"{where}: schema version {versions} (this engine reads {SCHEMA_VERSION})")
        conn.execute("COMMIT")
    except BaseException:
        _rollback(conn)
        raise


def _encoded(messages: list[dict[str, Any]]) -> str:
    """The ``messages`` column: compact JSON, ASCII, so lone surrogates survive."""
    return json.dumps(messages, separators=(",", ":"))


def _decode(row: tuple[Any, ...]) -> StoredEntry:
    """A row as an entry; CorruptEntryError naming the row for a wrong type or undecodable messages."""
    row_id, owner, tenant, model, status, reason, created_at, last_access, size, text = row
    problems = [
        ("id", row_id, isinstance(row_id, str) and bool(row_id)),
        ("owner", owner, isinstance(owner, str) and bool(owner)),
        ("tenant", tenant, isinstance(owner, str) and tenant == tenant_of(owner)),
        ("model", model, isinstance(model, str)),
        ("status", status, isinstance(status, str)),
        ("incomplete_reason", reason, reason is None or isinstance(reason, str)),
        ("created_at", created_at, _is_time(created_at)),
        ("last_access", last_access, _is_time(last_access)),
        ("bytes", size, isinstance(size, int) and size >= 0),
        ("messages", text, isinstance(text, str)),
    ]
    for name, value, ok in problems:
        if not ok:
            raise CorruptEntryError(row_id, f"{name} is {value!r:.80}")
    try:
        messages = json.loads(text)
    except ValueError as exc:
        raise CorruptEntryError(row_id, f"messages are not JSON ({exc})") from exc
    if not isinstance(messages, list) or not messages or not all(isinstance(m, dict) for m in messages):
        raise CorruptEntryError(row_id, "messages are not a non-empty list of JSON objects")
    return StoredEntry(row_id, owner, messages, model, created_at, last_access, status, reason, size)


def _is_time(value: object) -> bool:
    return isinstance(value, float | int) and not isinstance(value, bool) and math.isfinite(value)


def _rollback(conn: sqlite3.Connection) -> None:
    """Roll back the open transaction, if SQLite has not already (an interrupt, a full disk or an I/O error
    ends it on its own): a ROLLBACK then would raise and hide the error that is being handled."""
    if conn.in_transaction:
        conn.execute("ROLLBACK")
