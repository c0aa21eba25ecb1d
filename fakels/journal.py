"""The decoded journal of every request the fake language server received.

Each entry keeps the raw bytes, the headers, the decoded message as a field-named dict, the
unknown fields found in it and the outcome (OK, or the status the fake answered with). Entries
are kept in memory for Python callers and, when a path is given, appended to a JSONL file as
they arrive so other processes can read them.

Memory is bounded: a long-running server keeps the newest ``max_entries`` entries, within
``max_bytes`` of raw request bytes, dropping the oldest first (the JSONL file, which the user asked
for, keeps everything). Sequence numbers stay absolute, so ``entries(since=N)`` keeps its meaning and
:meth:`Journal.dropped_since` says how many entries from N on are gone.
"""

from __future__ import annotations

import base64
import itertools
import json
import threading
from collections import deque
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from fakels.decoder import UnknownField


@dataclass(frozen=True)
class JournalEntry:
    seq: int
    time: float
    transport: str
    method: str
    path: str
    headers: Mapping[str, str]
    raw: bytes
    request: dict[str, Any] | None
    unknown_fields: tuple[UnknownField, ...] = ()
    status: str = "OK"
    error: str = ""
    response: dict[str, Any] | None = None
    notes: tuple[str, ...] = field(default=())

    @property
    def rejected(self) -> bool:
        return self.status != "OK"

    def to_json(self) -> dict[str, Any]:
        return {
            "seq": self.seq,
            "time": self.time,
            "transport": self.transport,
            "method": self.method,
            "path": self.path,
            "headers": dict(self.headers),
            "raw_b64": base64.b64encode(self.raw).decode("ascii"),
            "raw_len": len(self.raw),
            "request": self.request,
            "unknown_fields": [u.to_json() for u in self.unknown_fields],
            "status": self.status,
            "error": self.error,
            "response": self.response,
            "notes": list(self.notes),
        }


DEFAULT_MAX_ENTRIES = 10_000
DEFAULT_MAX_BYTES = 256 * 1024 * 1024


class Journal:
    """Thread-safe record of requests, the oldest dropped past the bounds. Queries return snapshots."""

    def __init__(
        self,
        jsonl_path: Path | None = None,
        *,
        max_entries: int = DEFAULT_MAX_ENTRIES,
        max_bytes: int = DEFAULT_MAX_BYTES,
    ) -> None:
        if max_entries < 1 or max_bytes < 1:
            raise ValueError(f"a journal keeps at least one entry and one byte, got {max_entries} and {max_bytes}")
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self._entries: deque[JournalEntry] = deque()
        self._next_seq = 0
        self._bytes = 0
        self._lock = threading.Lock()
        self._jsonl_path = jsonl_path
        if jsonl_path is not None:
            jsonl_path.parent.mkdir(parents=True, exist_ok=True)
            jsonl_path.write_text("", encoding="utf-8")

    def next_seq(self) -> int:
        with self._lock:
            return self._next_seq

    def append(self, entry: JournalEntry) -> JournalEntry:
        with self._lock:
            entry = _with_seq(entry, self._next_seq)
            self._next_seq += 1
            self._entries.append(entry)
            self._bytes += len(entry.raw)
            # The newest entry is always kept, however big: dropping it would lose what just happened.
            while len(self._entries) > 1 and (len(self._entries) > self.max_entries or self._bytes > self.max_bytes):
                self._bytes -= len(self._entries.popleft().raw)
            if self._jsonl_path is not None:
                with self._jsonl_path.open("a", encoding="utf-8") as sink:
                    sink.write(json.dumps(entry.to_json(), ensure_ascii=False) + "\n")
        return entry

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._next_seq = 0
            self._bytes = 0
            if self._jsonl_path is not None:
                self._jsonl_path.write_text("", encoding="utf-8")

    @property
    def first_seq(self) -> int:
        """The sequence number of the oldest entry kept (``next_seq()`` when none is)."""
        with self._lock:
            return self._next_seq - len(self._entries)

    @property
    def retained(self) -> int:
        """How many entries are kept in memory."""
        with self._lock:
            return len(self._entries)

    @property
    def retained_bytes(self) -> int:
        with self._lock:
            return self._bytes

    def dropped_since(self, since: int) -> int:
        """How many entries with a sequence number from ``since`` on the bounds have dropped."""
        return max(0, self.first_seq - max(since, 0))

    def entries(self, method: str | None = None, *, since: int = 0) -> list[JournalEntry]:
        """The kept entries with a sequence number from ``since`` on, oldest first."""
        with self._lock:
            skip = max(0, since - (self._next_seq - len(self._entries)))
            snapshot = list(itertools.islice(self._entries, skip, None))
        return [e for e in snapshot if method is None or e.method == method]

    def requests(self, method: str) -> list[dict[str, Any]]:
        """Decoded request dicts of the accepted calls to ``method``, oldest first."""
        return [e.request for e in self.entries(method) if e.request is not None and not e.rejected]

    def last(self, method: str) -> JournalEntry:
        found = self.entries(method)
        if not found:
            seen = sorted({e.method for e in self.entries()})
            raise LookupError(f"no {method} request in the journal (methods seen: {seen or 'none'})")
        return found[-1]

    def methods(self) -> list[str]:
        return [e.method for e in self.entries()]

    def rejected(self) -> list[JournalEntry]:
        return [e for e in self.entries() if e.rejected]

    def __len__(self) -> int:
        """The requests journaled since the last clear, dropped ones included: the next one's sequence
        number, so ``entries(since=len(journal))`` later gives exactly what came after."""
        return self.next_seq()

    def __iter__(self) -> Iterator[JournalEntry]:
        return iter(self.entries())


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """Entries written by a journal to ``path``, as dicts (``raw_b64`` holds the bytes)."""
    # "\n" only: JSON escapes it inside strings, but not U+2028, U+0085, ... (splitlines would split there).
    return [json.loads(line) for line in path.read_text(encoding="utf-8").split("\n") if line.strip()]


def _with_seq(entry: JournalEntry, seq: int) -> JournalEntry:
    return replace(entry, seq=seq)
