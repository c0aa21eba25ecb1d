"""Shared helpers of the exact response-store tests (in memory and SQLite): a settable clock, owners, messages,
and direct SQL on a store file (opened and closed per call, so the store can take its exclusive lock)."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from engine.store import ResponseStore, StoreLimits, open_store

ALICE = "api:k1:user:alice"
BOB = "api:k1:user:bob"
CAROL = "api:k2:user:carol"
DAVE = "session:dave"
T0 = 1_700_000_000.0


class Clock:
    """A clock the test moves by hand."""

    def __init__(self, now: float = T0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def msgs(text: str = "hello", *, turns: int = 1) -> list[dict[str, Any]]:
    return [{"role": "user" if i % 2 == 0 else "assistant", "content": text} for i in range(turns)]


def memory_store(clock: Clock | None = None, **limits: Any) -> ResponseStore:
    return ResponseStore(StoreLimits(**limits), clock=clock or Clock())


def sqlite_store(path: Path, clock: Clock, **limits: Any) -> ResponseStore:
    return open_store(f"sqlite:{path}", StoreLimits(**limits), clock=clock)


def live(store: ResponseStore) -> list[str]:
    """The ids the store holds, least recently used first, without touching anything."""
    return list(store._entries)


def sql(path: Path, statement: str, *params: Any) -> list[tuple[Any, ...]]:
    """Run one statement on the file in its own connection and transaction; the rows it returned."""
    conn = sqlite3.connect(path)
    try:
        with conn:
            return conn.execute(statement, params).fetchall()
    finally:
        conn.close()


def rows(path: Path) -> dict[str, tuple[Any, ...]]:
    """id -> (owner, tenant, model, status, incomplete_reason, created_at, last_access, bytes, messages) by seq."""
    found = sql(
        path,
        "SELECT id, owner, tenant, model, status, incomplete_reason, created_at, last_access, bytes, messages"
        " FROM entries ORDER BY seq",
    )
    return {row[0]: row[1:] for row in found}
