"""The session operations on the reference target: :class:`engine.sessions.session.Session` over a real
SQLite session log in a temporary folder, so ``session.restore`` is a restart from the file.

``session.commit`` with ``fail_log_write`` makes that commit's durable write fail for real: for the one
commit, the log's own SQLite connection refuses every row write (an authorizer denying INSERT, UPDATE and
DELETE, as a read-only or failing database would), so the engine's log write begins its transaction, has
its INSERT refused, rolls back and raises, and the history's commit raises with it. Nothing else is
replaced; the file is untouched and the connection is as before once the commit returns. Any other commit
whose durable write fails (the log refuses it) answers ``failed`` too, as the HTTP front answers such a
commit with an error: the history is as before, and ATT-1 fails it, never a crash.
"""

from __future__ import annotations

import json
import sqlite3
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

from engine.sessions import (
    Capabilities,
    History,
    PruneConfig,
    Session,
    SessionLog,
    SessionLogWriteRefused,
    compaction_input,
    exploration_view,
    item_from_json,
)

_SESSION_ID = "conformance-session"


class SessionOperations:
    _session: Session | None = None
    _session_log: SessionLog | None = None
    _session_dir: tempfile.TemporaryDirectory[str] | None = None
    _capabilities: Capabilities | None = None

    def session_open(self, vision: bool) -> dict[str, Any]:
        self.session_close()
        self._session_dir = tempfile.TemporaryDirectory(prefix="cascade-session-")
        self._capabilities = Capabilities(vision=vision)
        self._session_log = SessionLog(self._log_path())
        self._session = Session(_SESSION_ID, History(), log=self._session_log, capabilities=self._capabilities)
        return {}

    def session_commit(self, items: list[dict[str, Any]], fail_log_write: bool = False) -> dict[str, Any]:
        history = self._open_session().history
        parsed = [item_from_json(item) for item in items]
        if not fail_log_write:
            try:
                history.commit(*parsed)
            except (SessionLogWriteRefused, sqlite3.Error) as exc:  # its durable write failed, and the commit with it
                return {"failed": f"{type(exc).__name__}: {exc}"}
            return {}
        assert self._session_log is not None
        try:
            with _writes_refused(self._session_log):
                history.commit(*parsed)
        except Exception as exc:  # the refused write, as the engine raised it
            return {"failed": f"{type(exc).__name__}: {exc}"}
        return {}

    def session_build(self, upstream: Literal["responses", "chat"], prune: dict[str, int] | None) -> dict[str, Any]:
        config = PruneConfig(**prune) if prune is not None else None
        return {"request": self._open_session().build(upstream, config)}

    def session_restore(self) -> dict[str, Any]:
        self._open_session()
        assert self._session_log is not None
        assert self._capabilities is not None
        self._session_log.close()
        self._session_log = SessionLog(self._log_path())
        self._session = Session.restore(_SESSION_ID, self._session_log, self._capabilities)
        return {}

    def session_compact(self, summary: str, retain_from: int) -> dict[str, Any]:
        self._open_session().history.compact(summary, retain_from)
        return {}

    def session_views(self) -> dict[str, Any]:
        history = self._open_session().history
        view = json.dumps(exploration_view(history), ensure_ascii=False, indent=1)
        return {"exploration": view, "compaction_input": compaction_input(history)}

    def session_close(self) -> None:
        if self._session_log is not None:
            self._session_log.close()
            self._session_log = None
        if self._session_dir is not None:
            self._session_dir.cleanup()
            self._session_dir = None
        self._session = None

    def _log_path(self) -> Path:
        assert self._session_dir is not None
        return Path(self._session_dir.name) / "sessions.db"

    def _open_session(self) -> Session:
        if self._session is None:
            raise RuntimeError("no session is open: call session.open first")
        return self._session


_WRITES = frozenset({sqlite3.SQLITE_INSERT, sqlite3.SQLITE_UPDATE, sqlite3.SQLITE_DELETE})


@contextmanager
def _writes_refused(log: SessionLog) -> Iterator[None]:
    """``log``'s SQLite connection refuses every row write while inside (reached as the engine's own tests
    reach it: ``SessionLog._db``; setting an authorizer also expires the connection's prepared statements, so
    a cached INSERT is refused too)."""

    def refuse_writes(action: int, *_: str | None) -> int:
        return sqlite3.SQLITE_DENY if action in _WRITES else sqlite3.SQLITE_OK

    conn = log._db()
    conn.set_authorizer(refuse_writes)
    try:
        yield
    finally:
        conn.set_authorizer(None)
