"""OFF: generator-metadata records, scripted turn sequences and tool conversations.

A resume needs the pool to recognise the conversation: each generated turn adds exactly one user
(or tool) message first, and only assistant messages after it, to the conversation so far plus the
engine's previous answer. Every scripted turn produces at least one generator record, as every
real turn does.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from hypothesis import strategies as st

from conformance.models.journal import META
from conformance.models.off import MAPPED_TOOLS, UNMAPPED_TOOLS, USAGE_FIGURES
from conformance.targets import Target

Case = dict[str, Any]
Usage = dict[str, int]

READ_ERRORS = ("UNAVAILABLE", "INTERNAL")


@st.composite
def records(draw: st.DrawFn) -> dict[str, Any]:
    """One CortexStepGeneratorMetadata as a plain description (the case) of its bytes."""
    shape = draw(st.sampled_from(["usage", "usage", "no_usage", "zero_usage", "empty"]))
    record: dict[str, Any] = {"shape": shape}
    if shape == "usage":
        figure = st.one_of(st.just(0), st.integers(1, 50_000), st.integers(1, 2**31 - 1))
        record["usage"] = {name: draw(figure) for name in USAGE_FIGURES}
        record["explicit_zeros"] = draw(st.booleans())
    if shape != "empty":
        record["model_uid"] = draw(st.sampled_from(["claude-sonnet-4-6", "MODEL_PRIVATE_2", ""]))
    return record


def metadata_cases(target: Target) -> st.SearchStrategy[Case]:
    return st.lists(records(), max_size=8).map(lambda drawn: {"records": drawn})


def usage_figures() -> st.SearchStrategy[Usage | None]:
    return st.one_of(
        st.none(),
        st.builds(
            lambda i, o, r: {"input_tokens": i, "output_tokens": o, "cache_read_tokens": r},
            st.integers(1, 9999),
            st.integers(0, 999),
            st.integers(0, 99),
        ),
    )


def user_turns(count: int) -> list[list[dict[str, Any]]]:
    return [[{"role": "user", "content": f"question {k + 1}"}] for k in range(count)]


def scripted_turn(index: int, turn_records: list[Usage | None], **extra: Any) -> dict[str, Any]:
    return {"chunks": [{"text": f"answer {index + 1}"}], "records": turn_records, **extra}


def failed_reads(code: str, calls: Sequence[int]) -> list[dict[str, Any]]:
    return [{"rpc": META, "call": call, "error_code": code} for call in calls]


@st.composite
def usage_less_conversations(draw: st.DrawFn, target: Target) -> Case:
    """2-4 turns of 1-4 records each, at least one of them without usage."""
    drawn = draw(st.lists(st.lists(usage_figures(), min_size=1, max_size=4), min_size=2, max_size=4))
    if not any(r is None for turn in drawn for r in turn):
        drawn[0][0] = None
    scenario = {"turns": [scripted_turn(k, r) for k, r in enumerate(drawn)]}
    return {"scenario": scenario, "conversation": user_turns(len(drawn))}


@st.composite
def unknown_offset_cases(draw: st.DrawFn, target: Target) -> Case:
    """Offsets to round-trip (null, 0 and positive generator offsets), then 0-2 ordinary turns, a
    turn whose own metadata read fails (sometimes the next turn's snapshot too) and one more turn."""
    stored = draw(
        st.lists(
            st.fixed_dictionaries(
                {
                    "step_offset": st.integers(0, 2**31 - 1),
                    "generator_offset": st.one_of(st.none(), st.just(0), st.integers(1, 2**31 - 1)),
                }
            ),
            min_size=1,
            max_size=4,
        )
    )
    before = draw(st.lists(st.lists(usage_figures(), min_size=1, max_size=3), max_size=2))
    failing = draw(st.lists(usage_figures(), min_size=1, max_size=3))
    last = draw(st.lists(usage_figures(), min_size=1, max_size=3))
    snapshot_fails = draw(st.booleans())
    code = draw(st.sampled_from(READ_ERRORS))
    turns = [scripted_turn(k, r) for k, r in enumerate(before)]
    # Call 0 after the failing turn's Send is its own read; call 1 is the next turn's resume snapshot.
    turns.append(scripted_turn(len(turns), failing, overrides=failed_reads(code, [0, 1] if snapshot_fails else [0])))
    turns.append(scripted_turn(len(turns), last))
    return {
        "stored": stored,
        "scenario": {"turns": turns},
        "conversation": user_turns(len(turns)),
        "failing_turn": len(before),
        "snapshot_fails": snapshot_fails,
    }


@st.composite
def turn_sequences(draw: st.DrawFn, target: Target) -> Case:
    """2-6 turns of 1-4 records, some followed by an expiry, some with a failed metadata read (the
    turn's own, sometimes also the next one, usually the next turn's resume snapshot)."""
    count = draw(st.integers(2, 6))
    turns = []
    for k in range(count):
        turn_records = draw(st.lists(usage_figures(), min_size=1, max_size=4))
        extra: dict[str, Any] = {}
        if k < count - 1 and draw(st.sampled_from([False, False, False, True])):
            extra["expire_after"] = True
        fail = draw(st.sampled_from(["none", "none", "none", "read", "read and snapshot"]))
        if fail != "none":
            code = draw(st.sampled_from(READ_ERRORS))
            extra["overrides"] = failed_reads(code, [0] if fail == "read" else [0, 1])
        turns.append(scripted_turn(k, turn_records, **extra))
    return {"scenario": {"turns": turns}, "conversation": user_turns(count)}


def _tool_call(turn: int, position: int, name: str) -> dict[str, Any]:
    marker = f"/w/t{turn}c{position}" if name in ("Read", "list_dir") else f"m-t{turn}c{position}"
    if name == "WebFetch":
        marker = f"https://example.test/t{turn}c{position}"
    argument = MAPPED_TOOLS[name][1] if name in MAPPED_TOOLS else "input"
    return {
        "id": f"call_{turn}_{position}",
        "type": "function",
        "function": {"name": name, "arguments": json.dumps({argument: marker})},
    }


@st.composite
def tool_conversations(draw: st.DrawFn, target: Target) -> Case:
    """Native mode, 2-5 turns; a turn adds one user message (or a tool result for a call of the
    previous round) and, usually, an assistant message with 1-3 tool calls, mapped by the native
    bridge or not; some turns are followed by an expiry."""
    count = draw(st.integers(2, 5))
    conversation: list[list[dict[str, Any]]] = []
    scripted: list[dict[str, Any]] = []
    previous_calls: list[str] = []
    for k in range(count):
        answers_a_call = draw(st.booleans())
        if previous_calls and answers_a_call:
            answered = draw(st.sampled_from(previous_calls))
            first: dict[str, Any] = {"role": "tool", "tool_call_id": answered, "content": f"result of {answered}"}
        else:
            first = {"role": "user", "content": f"question {k + 1}"}
        added = [first]
        names = draw(st.lists(st.sampled_from([*MAPPED_TOOLS, *UNMAPPED_TOOLS]), max_size=3))
        calls = [_tool_call(k + 1, i + 1, name) for i, name in enumerate(names)]
        previous_calls = [call["id"] for call in calls]
        if calls:
            content = draw(st.sampled_from([None, "", "let me look"]))
            added.append({"role": "assistant", "content": content, "tool_calls": calls})
        conversation.append(added)
        extra = {"expire_after": True} if k < count - 1 and draw(st.sampled_from([False, False, True])) else {}
        scripted.append(scripted_turn(k, [{"input_tokens": 3, "output_tokens": 1}], **extra))
    return {"scenario": {"turns": scripted}, "conversation": conversation}
