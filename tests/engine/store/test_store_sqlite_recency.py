"""The SQLite response store rebuilds, on reopen, the recency order the running store had: the entry
used last is evicted last, whatever the wall clock did meanwhile and however often the file was
reopened (a reopen that re-trims an entry must not make it the most recent)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from engine.store import ResponseStore, StoreLimits, open_store

ALICE = "api:k1:user:alice"
BOB = "api:k2:user:bob"
KEYS = ("r0", "r1", "r2", "r3", "r4")


class Clock:
    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        return self.now


def _open(path: Path, clock: Clock, **limits: Any) -> ResponseStore:
    return open_store(f"sqlite:{path}", StoreLimits(**limits), clock=clock)


def _msgs(text: str, turns: int = 1) -> list[dict[str, Any]]:
    return [{"role": "user", "content": f"{text} {i}"} for i in range(turns)]


def _order(store: ResponseStore) -> list[str]:
    """The store's ids, least recently used first (its eviction order), read without touching any."""
    return list(store._entries)


def _survivors(path: Path, clock: Clock, keep: int) -> list[str]:
    """The ids a reopen under ``max_entries=keep`` keeps, least recently used first."""
    with _open(path, clock, max_entries=keep) as store:
        return _order(store)


def test_a_read_under_a_clock_stepped_back_is_still_the_most_recent(tmp_path: Path) -> None:
    path, clock = tmp_path / "store.sqlite", Clock()
    with _open(path, clock) as store:
        for key in ("r1", "r2", "r3"):
            store.put(key, _msgs(key), ALICE)
            clock.now += 1
        clock.now -= 50  # the wall clock is set back (NTP step): r1 is read last, at the smallest time
        assert store.get("r1", ALICE).entry is not None
        assert _order(store) == ["r2", "r3", "r1"]
    assert _survivors(path, clock, keep=2) == ["r3", "r1"]


def test_an_entry_re_trimmed_on_reopen_keeps_its_place(tmp_path: Path) -> None:
    path, clock = tmp_path / "store.sqlite", Clock()
    with _open(path, clock) as store:
        store.put("long", _msgs("long", turns=6), ALICE)
        clock.now += 1
        store.put("short", _msgs("short"), ALICE)
    with _open(path, clock, max_messages=3) as store:  # re-trims "long" and writes it back
        assert [len(store._entries[key].messages) for key in ("long", "short")] == [3, 1]
        assert _order(store) == ["long", "short"]
    assert _survivors(path, clock, keep=1) == ["short"]


@dataclass(frozen=True)
class _Op:
    kind: str  # put | get | refresh
    key: str
    owner: str
    step_s: float  # the clock moves by this before the operation (negative: set back)


_ops = st.lists(
    st.builds(
        _Op,
        kind=st.sampled_from(["put", "get", "refresh"]),
        key=st.sampled_from(KEYS),
        owner=st.sampled_from([ALICE, BOB]),
        step_s=st.sampled_from([0.0, 0.0, 1.0, 7.5, -30.0, -0.5]),
    ),
    min_size=1,
    max_size=20,
)


@given(ops=_ops, retrim=st.booleans(), keep=st.integers(min_value=1, max_value=len(KEYS)))
def test_reopen_keeps_the_most_recently_used(tmp_path_factory: Any, ops: list[_Op], retrim: bool, keep: int) -> None:
    """Model: a list, least recently used first; a stored put or a served get moves its key to the end."""
    path, clock = tmp_path_factory.mktemp("recency") / "store.sqlite", Clock()
    order: list[str] = []
    with _open(path, clock) as store:
        for op in ops:
            clock.now += op.step_s
            if op.kind == "get":
                served = store.get(op.key, op.owner).entry is not None
            else:
                turns = 4 if op.kind == "refresh" else 1
                served = store.put(op.key, _msgs(op.key, turns), op.owner).stored
            if served:
                order = [key for key in order if key != op.key] + [op.key]
        assert _order(store) == order
    if retrim:
        with _open(path, clock, max_messages=2) as store:
            assert _order(store) == order
    assert _survivors(path, clock, keep) == order[-keep:]
