"""One session (seed 002): tool results committed and logged before any build; building never writes back;
prune decisions sticky and durable; a restored session lowers byte for byte as the original did."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any, get_args

import pytest

from engine.sessions import session as session_engine
from engine.sessions.items import History, Item, Message, ToolCall, ToolResult, image_data_url
from engine.sessions.log import SessionLog, SessionLogError
from engine.sessions.lowering import Capabilities
from engine.sessions.pruning import PruneConfig
from engine.sessions.session import Session, Upstream
from tests.engine.session_support import attachments_of, png, sample_items

UPSTREAMS: tuple[Upstream, ...] = get_args(Upstream)
VISION = Capabilities(vision=True)
PRUNE_ALL = PruneConfig(protected_tokens=0, min_savings=0)
NEVER_PRUNE = PruneConfig(protected_tokens=0, min_savings=10**9)


def _bytes(body: list[dict[str, Any]]) -> str:
    return json.dumps(body, ensure_ascii=False, separators=(",", ":"))


def _started(log: SessionLog | None = None, vision: bool = True) -> Session:
    """A session whose assistant just asked for a.png, b.png and notes.txt (results not in yet)."""
    return Session("s1", History(sample_items()[:5]), log=log, capabilities=Capabilities(vision))


def _results() -> list[ToolResult]:
    results = sample_items()[5:8]
    assert all(isinstance(result, ToolResult) for result in results)
    return results  # type: ignore[return-value]


def _record_count(db: Path) -> int:
    conn = sqlite3.connect(db)
    try:
        return int(conn.execute("SELECT count(*) FROM records").fetchone()[0])
    finally:
        conn.close()


def _restored(db: Path, vision: bool = True) -> Session:
    """The session as a fresh process would restore it from the file."""
    return Session.restore("s1", SessionLog(db), Capabilities(vision))


# ------------------------------------------------------------------------------------ ATT-1


@pytest.mark.invariant("ATT-1")
def test_tool_results_are_on_disk_byte_for_byte_before_the_next_build(db: Path, log: SessionLog) -> None:
    session = _started(log)
    session.add_tool_results(_results())
    assert session.history.items[5:8] == tuple(_results())
    restored = _restored(db)
    assert restored.history == session.history
    assert attachments_of(restored.history.items) == attachments_of(sample_items())


@pytest.mark.invariant("ATT-1")
def test_the_lowering_only_ever_sees_committed_items(
    db: Path, log: SessionLog, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[tuple[Item, ...]] = []

    def spy(items: tuple[Item, ...], *, vision: bool, pruned: frozenset[str]) -> list[dict[str, Any]]:
        seen.append(items)
        assert SessionLog(db).restore("s1").items == items  # already durable when the request is built
        return []

    monkeypatch.setitem(session_engine._LOWERINGS, "responses", spy)
    session = _started(log)
    session.add_tool_results(_results())
    session.build("responses")
    assert seen == [tuple(sample_items()[:8])]


@pytest.mark.invariant("ATT-1")
@pytest.mark.parametrize("vision", [True, False])
def test_a_restored_session_lowers_byte_identically(db: Path, log: SessionLog, vision: bool) -> None:
    session = _started(log, vision)
    session.add_tool_results(_results())
    session.history.commit(sample_items()[8], ToolCall("call_c", "view_image", '{"path":"c.png"}'))
    session.add_tool_results([ToolResult("call_c", "Attached image c.png", attachments=(png(4),))])
    session.build("chat", PRUNE_ALL if not vision else None)
    originals = {upstream: _bytes(session.build(upstream)) for upstream in UPSTREAMS}
    restored = _restored(db, vision)
    assert restored.history == session.history
    assert {upstream: _bytes(restored.build(upstream)) for upstream in UPSTREAMS} == originals
    if vision:
        assert image_data_url(png(4)) in originals["chat"]


@pytest.mark.invariant("ATT-1")
def test_a_corrupt_session_log_refuses_to_restore(db: Path, log: SessionLog) -> None:
    _started(log).add_tool_results(_results())
    conn = sqlite3.connect(db)
    with conn:
        conn.execute("UPDATE records SET body = substr(body, 1, 30) WHERE seq = 3")
    conn.close()
    with pytest.raises(SessionLogError) as caught:
        _restored(db)
    assert caught.value.position == 3
    assert caught.value.recovered == History(sample_items()[:2])


def test_only_tool_results_are_added_and_a_bad_batch_adds_nothing(db: Path, log: SessionLog) -> None:
    session = _started(log)
    with pytest.raises(TypeError, match=r"results\[1\]: expected ToolResult"):
        session.add_tool_results([_results()[0], Message("user", "sneaked in")])  # type: ignore[list-item]
    assert session.history.items == tuple(sample_items()[:5])
    assert _record_count(db) == 5


# ------------------------------------------------------------------------------------ ATT-2


@pytest.mark.invariant("ATT-2")
@pytest.mark.parametrize("vision", [True, False])
@pytest.mark.parametrize("upstream", UPSTREAMS)
def test_building_twice_gives_the_same_bytes_and_leaves_the_history_alone(upstream: Upstream, vision: bool) -> None:
    session = _started(vision=vision)
    session.add_tool_results(_results())
    before = (session.history.snapshot(), session.history.version)
    first = _bytes(session.build(upstream))
    second = _bytes(session.build(upstream))
    assert first == second
    assert (session.history.snapshot(), session.history.version) == before
    assert attachments_of(session.history.items) == attachments_of(sample_items())
    fresh = Session("other", History(sample_items()[:8]), log=None, capabilities=Capabilities(vision))
    assert _bytes(fresh.build(upstream)) == second


@pytest.mark.invariant("ATT-2")
@pytest.mark.parametrize("upstream", ["responses", "chat"])
def test_every_later_request_still_carries_the_images(upstream: Upstream) -> None:
    session = _started()
    session.add_tool_results(_results())
    for turn in range(3):
        body = _bytes(session.build(upstream))
        for attachment in (png(1), png(2), png(3, 500)):
            assert image_data_url(attachment) in body, f"turn {turn}"
        session.history.commit(Message("user", f"follow-up {turn}"))


@pytest.mark.invariant("ATT-2")
def test_building_writes_nothing_to_the_log(db: Path, log: SessionLog) -> None:
    session = _started(log)
    session.add_tool_results(_results())
    for upstream in UPSTREAMS:
        session.build(upstream)
        session.build(upstream, NEVER_PRUNE)
    assert _record_count(db) == 8
    assert _restored(db).history == History(sample_items()[:8])


def test_an_unknown_upstream_is_refused_before_any_decision() -> None:
    session = _started()
    session.add_tool_results(_results())
    with pytest.raises(ValueError, match=r"^upstream: 'anthropic' is not one of responses, chat, cascade"):
        session.build("anthropic", PRUNE_ALL)  # type: ignore[arg-type]
    assert session.history.pruned == frozenset()


# ------------------------------------------------------------------------------------ ATT-5 (history side)


@pytest.mark.invariant("ATT-5")
def test_a_prune_decision_is_recorded_before_lowering_and_stays(db: Path, log: SessionLog) -> None:
    session = _started(log)
    session.add_tool_results(_results())
    pruned_body = _bytes(session.build("chat", PRUNE_ALL))
    assert session.history.pruned == {"call_a", "call_b", "call_n"}
    assert "data:image" not in pruned_body
    assert session.history.items == tuple(sample_items()[:8])  # the stored results keep their detail
    assert attachments_of(session.history.items) == attachments_of(sample_items())
    session.history.commit(sample_items()[8])
    later = _bytes(session.build("chat"))
    assert later.startswith(pruned_body[:-1])  # sticky without a config: same projection, new suffix
    assert _bytes(session.build("chat", NEVER_PRUNE)) == later
    restored = _restored(db)
    assert restored.history.pruned == session.history.pruned
    assert _bytes(restored.build("chat")) == later


@pytest.mark.invariant("ATT-5")
def test_a_decision_that_does_not_fire_records_nothing(db: Path, log: SessionLog) -> None:
    session = _started(log)
    session.add_tool_results(_results())
    version = session.history.version
    session.build("responses", NEVER_PRUNE)
    session.build("responses", PruneConfig())  # the default suffix protects this whole short history
    assert session.history.version == version
    assert session.history.pruned == frozenset()
    assert _record_count(db) == 8


@pytest.mark.invariant("ATT-5")
def test_compaction_ends_the_prune_decision_and_the_retained_images_return(db: Path, log: SessionLog) -> None:
    session = _started(log)
    session.add_tool_results(_results())
    session.build("chat", PRUNE_ALL)
    session.history.compact("The user wants two images compared.", 5)
    assert session.history.pruned == frozenset()
    body = _bytes(session.build("chat"))
    assert image_data_url(png(1)) in body
    assert image_data_url(png(3, 500)) in body
    assert _restored(db).history == session.history
