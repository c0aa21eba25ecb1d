"""Pruning durable tool results (seed 002, yoi.md §4, §9 invariants 14-17, §10 pruning edge cases).

The estimate is text UTF-8 bytes / 4 (rounded up) plus a flat ``IMAGE_TOKENS`` per image, never the
base64 length; savings are what the projection removes, images included, so image-only results are
prunable (a deliberate departure from Yoi). Boundaries are pinned exactly: a protected suffix of
exactly / one under / one over ``protected_tokens``, savings of exactly / one under ``min_savings``.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.sessions.items import History, ImageAttachment, Item, Message, ToolCall, ToolResult
from engine.sessions.lowering import lower_chat, lower_responses
from engine.sessions.pruning import (
    IMAGE_TOKENS,
    PruneConfig,
    decide_prune,
    estimate_tokens,
    project,
    protected_start,
    prune_candidates,
    prune_savings,
)
from tests.engine.session_support import Session, detailed, sessions, tail, text_of

IMAGE = ImageAttachment("image/png", b"\x89PNG" * 250_000)  # 1 MB: still one image's worth of tokens


# --- the estimate ------------------------------------------------------------------------------


def test_estimate_counts_text_bytes_over_four_rounded_up_and_a_flat_cost_per_image() -> None:
    assert estimate_tokens(Message("user", "")) == 0
    assert estimate_tokens(Message("user", "abcd")) == 1
    assert estimate_tokens(Message("user", "abcde")) == 2
    assert estimate_tokens(Message("assistant", "\u00e9\u00e9")) == 1  # 4 UTF-8 bytes
    assert estimate_tokens(Message("system", "\U0001f600x")) == 2  # 5 bytes
    assert estimate_tokens(ToolCall("id-not-counted", "Read", '{"p":1}')) == 3  # "Read" + arguments: 11 bytes
    assert estimate_tokens(ToolResult("c", "abc", content="defg")) == 2  # "abc\ndefg": 8 bytes
    assert estimate_tokens(ToolResult("c", "abcd", attachments=(IMAGE, IMAGE))) == 1 + 2 * IMAGE_TOKENS
    assert len(IMAGE.data) // 4 > 100 * IMAGE_TOKENS  # never the byte (or base64) length


def test_prune_config_defaults_and_validation() -> None:
    assert PruneConfig() == PruneConfig(protected_tokens=8000, min_savings=4096)
    with pytest.raises(ValueError, match="non-negative"):
        PruneConfig(protected_tokens=-1)
    with pytest.raises(ValueError, match="non-negative"):
        PruneConfig(min_savings=-1)


# --- the protected suffix ----------------------------------------------------------------------


@pytest.mark.invariant("ATT-5")
@pytest.mark.parametrize(
    ("suffix_tokens", "expected"),
    [(100, ["c1"]), (99, []), (101, ["c1"])],
    ids=["exactly-protected", "one-under", "one-over"],
)
def test_the_protected_suffix_boundary_is_exact(suffix_tokens: int, expected: list[str]) -> None:
    items: list[Item] = [ToolCall("c1", "Read", "{}"), detailed("c1", 10), tail(suffix_tokens)]
    config = PruneConfig(protected_tokens=100, min_savings=0)
    assert prune_candidates(items, frozenset(), config) == expected
    assert protected_start(items, frozenset(), config) == (2 if expected else 1)  # one under: the result joins it
    assert decide_prune(History(items), config) == expected


@pytest.mark.invariant("ATT-5")
def test_the_suffix_sums_several_items_and_zero_protects_nothing() -> None:
    items: list[Item] = [
        ToolCall("c1", "Read", "{}"),
        detailed("c1", 10),
        ToolCall("c2", "Read", "{}"),
        ToolResult("c2", text_of(60)),  # summary only: no detail, never a candidate
        ToolCall("c3", "ViewImage", "{}"),
        ToolResult("c3", text_of(40), attachments=(IMAGE,)),  # worth 40 + IMAGE_TOKENS
    ]
    suffix = estimate_tokens(items[4]) + estimate_tokens(items[5])
    assert prune_candidates(items, frozenset(), PruneConfig(suffix, 0)) == ["c1"]
    assert prune_candidates(items, frozenset(), PruneConfig(suffix + 1, 0)) == ["c1"]  # c2 joins, has no detail
    everything = estimate_tokens(items[0]) + sum(estimate_tokens(item) for item in items[1:])
    assert prune_candidates(items, frozenset(), PruneConfig(everything, 0)) == []  # the whole history protected
    assert prune_candidates(items, frozenset(), PruneConfig(0, 0)) == ["c1", "c3"]  # even the newest result
    assert protected_start(items, frozenset(), PruneConfig(0, 0)) == len(items)
    assert protected_start([], frozenset(), PruneConfig()) == 0


# --- savings and the decision ------------------------------------------------------------------


@pytest.mark.invariant("ATT-5")
def test_savings_of_exactly_min_savings_fire_and_one_less_does_not() -> None:
    items: list[Item] = [ToolCall("c1", "Read", "{}"), detailed("c1", 300), ToolCall("c2", "Read", "{}")]
    items += [detailed("c2", 200), tail(50)]
    assert prune_savings(items, ["c1", "c2"]) == 500
    history = History(items)
    assert decide_prune(history, PruneConfig(protected_tokens=50, min_savings=500)) == ["c1", "c2"]
    assert decide_prune(history, PruneConfig(protected_tokens=50, min_savings=501)) == []
    assert decide_prune(History([tail(10)]), PruneConfig(protected_tokens=1, min_savings=0)) == []  # no candidates


@pytest.mark.invariant("ATT-5")
def test_image_only_results_are_candidates_and_their_images_count_as_savings() -> None:
    def batch(n: int) -> list[Item]:
        calls: list[Item] = [ToolCall(f"c{i}", "ViewImage", "{}") for i in range(n)]
        return [*calls, *(ToolResult(f"c{i}", "img", attachments=(IMAGE,)) for i in range(n)), tail(8000)]

    config = PruneConfig()  # 8000 protected, 4096 min savings: four images make exactly 4096
    assert prune_candidates(batch(4), frozenset(), config) == ["c0", "c1", "c2", "c3"]
    assert prune_savings(batch(4), ["c0"]) == IMAGE_TOKENS
    assert decide_prune(History(batch(4)), config) == ["c0", "c1", "c2", "c3"]
    assert decide_prune(History(batch(3)), config) == []  # 3072 < 4096
    assert prune_candidates([ToolResult("e", "empty"), tail(8000)], frozenset(), config) == []  # nothing to clear


@pytest.mark.invariant("ATT-5")
def test_already_pruned_results_are_not_candidates_and_the_decision_is_sticky() -> None:
    items: list[Item] = [ToolCall("c1", "Read", "{}"), detailed("c1", 50), ToolCall("c2", "ViewImage", "{}")]
    items += [ToolResult("c2", "img", attachments=(IMAGE,)), tail(10)]
    config = PruneConfig(protected_tokens=10, min_savings=0)
    history = History(items, pruned=["c1"])
    assert prune_candidates(history.items, history.pruned, config) == ["c2"]
    history.record_prune(decide_prune(history, config))
    assert history.pruned == frozenset({"c1", "c2"})
    assert decide_prune(history, config) == []  # nothing left: the decision stands until compaction
    assert history.items == tuple(items)  # the durable results keep their detail and images
    assert lower_responses(history.items, vision=True, pruned=history.pruned)[3]["output"] == "img"


@pytest.mark.invariant("ATT-5")
def test_deciding_and_projecting_never_touch_history() -> None:
    result = ToolResult("c1", "summary", content="detail", is_error=True, attachments=(IMAGE,))
    history = History([ToolCall("c1", "ViewImage", "{}"), result, tail(5)])
    version = history.version
    assert decide_prune(history, PruneConfig(protected_tokens=5, min_savings=0)) == ["c1"]
    assert project(result, frozenset({"c1"})) == ToolResult("c1", "summary", is_error=True)
    assert project(result, frozenset({"other"})) is result
    assert (history.version, history.items[1], history.pruned) == (version, result, frozenset())


@pytest.mark.invariant("ATT-5")
@pytest.mark.invariant("ATT-4")
def test_a_boundary_inside_a_parallel_batch_keeps_only_the_unpruned_images() -> None:
    a, b, c = (ImageAttachment("image/png", bytes([n]) * 8) for n in (1, 2, 3))
    calls: list[Item] = [ToolCall(f"c{i}", "ViewImage", "{}") for i in (1, 2, 3)]
    results: list[Item] = [
        ToolResult(f"c{i}", f"img {i}", attachments=(x,)) for i, x in zip((1, 2, 3), (a, b, c), strict=True)
    ]
    items = [*calls, *results]
    last = estimate_tokens(results[2])
    history = History(items)
    chosen = decide_prune(history, PruneConfig(protected_tokens=last, min_savings=0))
    assert chosen == ["c1", "c2"]  # the boundary falls between c2's and c3's results
    history.record_prune(chosen)
    chat = lower_chat(history.items, vision=True, pruned=history.pruned)
    assert [m["content"] for m in chat[1:4]] == ["img 1", "img 2", "img 3"]
    assert chat[4] == {"role": "user", "content": [{"type": "image_url", "image_url": {"url": lower_url(c)}}]}
    responses = lower_responses(history.items, vision=True, pruned=history.pruned)
    assert [w["output"] for w in responses[3:5]] == ["img 1", "img 2"]
    assert isinstance(responses[5]["output"], list)
    history.record_prune(decide_prune(history, PruneConfig(protected_tokens=0, min_savings=0)))
    assert history.pruned == frozenset({"c1", "c2", "c3"})
    assert [m["role"] for m in lower_chat(history.items, vision=True, pruned=history.pruned)] == [
        "assistant",
        *["tool"] * 3,
    ]


def lower_url(att: ImageAttachment) -> str:
    (part,) = lower_chat([ToolResult("x", "x", attachments=(att,))], vision=True)[1]["content"]
    return str(part["image_url"]["url"])


# --- generated histories -----------------------------------------------------------------------


@pytest.mark.invariant("ATT-5")
@settings(max_examples=50)
@given(
    session=sessions(),
    protected=st.integers(0, 40),
    min_savings=st.integers(0, 2 * IMAGE_TOKENS),
)
def test_generated_histories_prune_exactly_the_unprotected_detail(
    session: Session, protected: int, min_savings: int
) -> None:
    items, done = session.items, session.pruned
    config = PruneConfig(protected, min_savings)
    start = protected_start(items, done, config)
    suffix = [estimate_tokens(project(item, done)) for item in items[start:]]
    assert sum(suffix) >= protected or start == 0  # the suffix holds protected_tokens...
    assert sum(suffix[1:]) < protected or start == len(items)  # ...and is the shortest that does
    candidates = prune_candidates(items, done, config)
    expected = [
        item.call_id
        for item in items[:start]
        if isinstance(item, ToolResult) and item.call_id not in done and (item.content is not None or item.attachments)
    ]
    assert candidates == list(dict.fromkeys(expected))
    history = History(items, pruned=done)
    decision = decide_prune(history, config)
    fires = bool(candidates) and prune_savings(items, candidates) >= min_savings
    assert decision == (candidates if fires else [])
    history.record_prune(decision)
    wire = lower_chat(history.items, vision=True, pruned=history.pruned)
    assert history.items == tuple(items)  # the projection never reaches history
    for call_id in history.pruned:
        result = next(m for m in wire if m.get("tool_call_id") == call_id)
        summary = next(i.summary for i in items if isinstance(i, ToolResult) and i.call_id == call_id)
        assert result["content"] == summary
