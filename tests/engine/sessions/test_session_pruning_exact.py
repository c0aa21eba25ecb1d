"""Prune candidates when a call id is reused: each id is named once, in the order it first appears."""

from __future__ import annotations

from engine.sessions.items import History, Item, ToolCall
from engine.sessions.pruning import PruneConfig, decide_prune, prune_candidates
from tests.engine.session_support import detailed, tail


def test_a_reused_call_id_is_a_single_candidate() -> None:
    items: list[Item] = [
        ToolCall("c1", "Read", "{}"),
        detailed("c1", 10),
        ToolCall("c2", "Read", "{}"),
        detailed("c2", 10),
        ToolCall("c1", "Read", "{}"),
        detailed("c1", 10),
        tail(100),
    ]
    config = PruneConfig(protected_tokens=100, min_savings=0)
    assert prune_candidates(items, frozenset(), config) == ["c1", "c2"]
    history = History(items)
    history.record_prune(decide_prune(history, config))
    assert history.pruned == {"c1", "c2"}
