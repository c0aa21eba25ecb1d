"""Figures for the response store: write and read throughput, in memory against SQLite.

    python benchmarks/bench_store_sqlite.py [--quick] [--dir DIR] [--small N] [--large N]

For small (1 KiB) and large (1 MiB) entries, each one user message with a distinct ASCII payload, it puts N
entries into a fresh store, then reads each back (a hit: a deep copy out and, for SQLite, a persisted touch).
For SQLite it also times a reopen of the file (loading and re-checking every entry). MB/s counts the
payload (10^6 bytes of message text), not the store's own accounting (UTF-16, so about twice that).

SQLite runs with WAL and ``synchronous=FULL``: every put and every touch is its own fsynced transaction, so
its figures depend on the disk under ``--dir`` (default: a temporary directory).
"""

from __future__ import annotations

import argparse
import logging
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.store import ResponseStore, StoreLimits, open_store

OWNER = "api:bench:user:u1"
SIZES = {"1 KiB": 1024, "1 MiB": 1024 * 1024}


@dataclass(frozen=True)
class Row:
    store: str
    entry: str
    count: int
    write_s: float
    read_s: float
    payload: int
    reopen_s: float | None = None


def _messages(index: int, size: int, filler: str) -> list[dict[str, Any]]:
    head = f"entry {index:08d} "
    return [{"role": "user", "content": head + filler[: size - len(head)]}]


def _limits(count: int, size: int) -> StoreLimits:
    # Room for everything: the figures are of writing and reading, not of evicting or trimming.
    return StoreLimits(max_entries=count + 1, max_bytes=4 * size * (count + 1) + 1024**2, entry_bytes=4 * size)


def _timed(action: Callable[[], object]) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def bench(kind: str, label: str, count: int, directory: Path) -> Row:
    size = SIZES[label]
    filler = "abcdefghij" * (size // 10 + 1)
    entries = [_messages(i, size, filler) for i in range(count)]
    limits = _limits(count, size)
    path = directory / f"bench-{label.replace(' ', '')}.sqlite"
    path.unlink(missing_ok=True)
    spec = "memory" if kind == "memory" else f"sqlite:{path}"
    store = open_store(spec, limits)

    def write() -> None:
        for i, messages in enumerate(entries):
            if not store.put(f"resp_{i:08d}", messages, OWNER, model="bench").stored:
                raise SystemExit(f"{kind}: put {i} was refused")

    def read(target: ResponseStore) -> None:
        for i in range(count):
            if not target.get(f"resp_{i:08d}", OWNER).ok:
                raise SystemExit(f"{kind}: get {i} missed")

    write_s = _timed(write)
    read_s = _timed(lambda: read(store))
    store.close()
    reopen_s = None
    if kind == "sqlite":
        reopened: list[ResponseStore] = []
        reopen_s = _timed(lambda: reopened.append(open_store(spec, limits)))
        read(reopened[0])  # everything came back
        reopened[0].close()
        for leftover in directory.glob(path.name + "*"):
            leftover.unlink()
    return Row(kind, label, count, write_s, read_s, size * count, reopen_s)


def _print(rows: list[Row]) -> None:
    header = f"{'store':8} {'entry':6} {'count':>6} {'write/s':>10} {'write MB/s':>11} {'read/s':>10} {'read MB/s':>10}"
    print(header + f" {'reopen':>9}")
    for row in rows:
        reopen = f"{row.reopen_s:8.2f}s" if row.reopen_s is not None else f"{'-':>9}"
        print(
            f"{row.store:8} {row.entry:6} {row.count:>6} {row.count / row.write_s:>10.0f} "
            f"{row.payload / row.write_s / 1e6:>11.1f} {row.count / row.read_s:>10.0f} "
            f"{row.payload / row.read_s / 1e6:>10.1f} {reopen}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer entries (300 small, 8 large): a smoke run")
    parser.add_argument("--small", type=int, help="how many 1 KiB entries (default 3000)")
    parser.add_argument("--large", type=int, help="how many 1 MiB entries (default 40)")
    parser.add_argument("--dir", type=Path, help="where the SQLite files go (default: a temporary directory)")
    args = parser.parse_args()
    counts = {"1 KiB": args.small or (300 if args.quick else 3000), "1 MiB": args.large or (8 if args.quick else 40)}
    if min(counts.values()) < 1:
        parser.error("--small and --large must be at least 1")
    if args.dir is not None and not args.dir.is_dir():
        parser.error(f"--dir {args.dir}: not a directory")
    logging.getLogger("engine").setLevel(logging.ERROR)
    with tempfile.TemporaryDirectory(dir=args.dir) as scratch:
        rows = [bench(kind, label, counts[label], Path(scratch)) for label in SIZES for kind in ("memory", "sqlite")]
    print("response store throughput (WAL, synchronous=FULL; MB = 10^6 bytes of message text):")
    _print(rows)


if __name__ == "__main__":
    main()
