"""OFF: offset continuity and the tool-history delta (seed 001, D3 and D5).

OFF-1 feeds ``engine.parse_generator_metadata`` responses the kit encodes itself
(:func:`conformance.models.off.encode_metadata_response`). OFF-2..OFF-5 are end to end: the kit
starts its own fake LS (:class:`fakels.FakeLSThread`) with a scripted scenario, has the target play
a conversation against it (``engine.play_turns``), and judges what the fake received: its journal,
split into turns and windows by :mod:`conformance.models.off`. What the target reports about its
own offsets is evidence in the report, never an input to a verdict. Cases come from
:mod:`conformance.strategies.off`.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from typing import Any

from conformance.gateway import play_conversation
from conformance.models.journal import META, SEND, START
from conformance.models.off import (
    WireTurn,
    encode_metadata_response,
    expected_usage,
    newest_round,
    next_snapshots,
    records_per_cascade,
    step_id,
    wire_turns,
)
from conformance.properties import Case, Evidence, OverHttp, invariant_property, require
from conformance.strategies.off import (
    metadata_cases,
    tool_conversations,
    turn_sequences,
    unknown_offset_cases,
    usage_less_conversations,
)
from conformance.targets import Target


def _journal(entries: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    return [dict(e) for e in entries if e["method"] in (META, SEND, START)]


def _journal_summary(entries: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for entry in entries:
        request = entry.get("request") or {}
        item: dict[str, Any] = {"seq": entry["seq"], "method": entry["method"], "status": entry["status"]}
        if "cascade_id" in request:
            item["cascade_id"] = request["cascade_id"]
        if entry["method"] == META:
            item["generator_metadata_offset"] = request.get("generator_metadata_offset", 0)
            if entry.get("response") is not None:
                item["records_returned"] = len(entry["response"].get("generator_metadata", []))
        if entry["method"] == SEND and request.get("additional_steps"):
            item["additional_steps"] = [step_id(s) for s in request["additional_steps"]]
        if entry["method"] == START and entry.get("response"):
            item["cascade_id"] = entry["response"].get("cascade_id")
        out.append(item)
    return out


def _play(
    target: Target,
    scenario: dict[str, Any],
    conversation: list[list[dict[str, Any]]],
    evidence: Evidence,
    *,
    native_mode: bool = False,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Play ``conversation`` through the target against a fake playing ``scenario`` (a fresh
    kit-started one, or the one an HTTP gateway is wired to); the target's per-turn answer goes to
    the evidence only."""
    played = play_conversation(target, scenario, conversation, native_mode=native_mode)
    entries = _journal(played.journal)
    evidence.add("fakels journal", _journal_summary(entries))
    evidence.add("the target's own report per turn", played.reports)
    return played.reports, entries


def _check_turn_count(wire: Sequence[WireTurn], conversation: Sequence[Any]) -> None:
    assert len(wire) == len(conversation), (
        f"the fake accepted {len(wire)} SendUserCascadeMessage calls for {len(conversation)} turns"
    )


def _require_metadata_reads(wire: Sequence[WireTurn]) -> None:
    """How metadata windows advance applies only to a target that reads the LS's generator metadata."""
    require(
        any(turn.windows or turn.snapshots_before_send for turn in wire),
        "the target read no generator metadata at all (it bills without the LS's records, e.g. estimating "
        "usage from text): how metadata windows advance does not apply to it",
    )


@invariant_property("OFF-1", needs=("engine.parse_generator_metadata",), cases=metadata_cases, max_examples=60)
def parser_keeps_the_record_count(target: Target, case: Case, evidence: Evidence) -> None:
    """Any mix of records with usage, without usage (model uid only, an all-zero usage block, or
    nothing at all): the count is every record, ``has_usage`` says whether some record carries a
    non-zero figure, the sums are over those records, and ``null`` means zero records only."""
    records: list[dict[str, Any]] = case["records"]
    raw = encode_metadata_response(records)
    evidence.add("raw_hex", raw.hex())
    result = target.call("engine.parse_generator_metadata", raw_b64=base64.b64encode(raw).decode("ascii"))
    evidence.add("parsed", result)
    usage = result["usage"]
    expected = expected_usage(records)
    if expected is None:
        assert usage is None, f"a response without records parsed as {usage}, expected null"
        return
    assert usage is not None, (
        f"{len(records)} record(s) ({', '.join(r['shape'] for r in records)}) parsed as null: "
        "the record count that advances the window is lost"
    )
    got = {k: usage.get(k) for k in expected}
    assert got == expected, f"parsed usage differs\n  expected: {expected}\n  parsed:   {got}"


@invariant_property("OFF-2", needs=("engine.play_turns|gateway.chat",), cases=usage_less_conversations, max_examples=20)
def usage_less_records_advance_the_window(target: Target, case: Case, evidence: Evidence) -> None:
    """Turns whose generator records carry no usage (some or all of them), no failure: every turn
    reads exactly one window, from the number of records its cascade already held (a resumed turn
    asks from the count of the earlier turns' records, usage or not), and reports the offset after
    its own records as ``generator_offset_next``."""
    scenario, conversation = case["scenario"], case["conversation"]
    _, entries = _play(target, scenario, conversation, evidence)
    wire = wire_turns(entries)
    _check_turn_count(wire, conversation)
    _require_metadata_reads(wire)
    held: dict[str, int] = {}
    for turn in wire:
        before = held.get(turn.cascade_id, 0)
        held[turn.cascade_id] = before + len(scenario["turns"][turn.index]["records"])
        reads = [(r.cascade_id, r.offset) for r in turn.windows]
        after_send = [(r.cascade_id, r.offset) for r in (*turn.windows, *next_snapshots(wire, turn.index))]
        assert reads == [(turn.cascade_id, before)], (
            f"turn {turn.index + 1} on {turn.cascade_id}: expected one metadata read from offset {before} "
            f"(the records its cascade held before it, usage or not); its window reads: {reads or 'none'} "
            f"(all reads before the next turn's Send: {after_send or 'none'})"
        )
        assert turn.windows[0].returned is not None, f"turn {turn.index + 1}: its metadata read failed unscripted"


@invariant_property("OFF-3", needs=("engine.store_offsets",), cases=unknown_offset_cases, max_examples=20)
def unknown_offsets_stay_unknown(target: Target, case: Case, evidence: Evidence) -> None:
    """Stored offsets come back as stored: a ``null`` generator offset stays ``null`` (never 0), a
    known one (0 included) stays that integer. End to end: a turn whose own metadata read fails
    (an error status) reports ``generator_offset_next: null``, and the next turn, resuming that
    cascade, does not ask the metadata RPC from 0 after its Send: it may re-derive the start from
    a snapshot read at offset 0 *before* its Send (allowed: a snapshot bills nothing) and ask from
    the count it found, or abstain (when that snapshot fails too, or without one); asking from 0
    would bill every earlier record of the cascade again.
    """
    round_trips: list[dict[str, Any]] = []
    evidence.add("store_offsets", round_trips)
    for pair in case["stored"]:
        got = target.call("engine.store_offsets", **pair)
        round_trips.append({"checked in": pair, "came back": got})
        if pair["generator_offset"] is None:
            assert got["generator_offset"] is None, (
                f"an unknown (null) generator offset came back as {got['generator_offset']}: unknown must stay unknown"
            )
        assert got == pair, f"offsets checked in as {pair} came back as {got}"

    if "engine.play_turns" not in target.operations():
        evidence.not_observed("the end-to-end abstention (an engine.play_turns check)")
        return
    scenario, conversation, failing = case["scenario"], case["conversation"], case["failing_turn"]
    _, entries = _play(target, scenario, conversation, evidence)
    wire = wire_turns(entries)
    _check_turn_count(wire, conversation)
    after_send = [*wire[failing].windows, *next_snapshots(wire, failing)]
    require(
        any(r.returned is None for r in after_send),
        f"the target made no metadata read after turn {failing + 1}'s Send, so the scripted failure never happened",
    )
    cascade = wire[failing].cascade_id
    last = wire[-1]
    require(
        last.cascade_id == cascade and not last.sends[-1].fresh,
        "the target did not resume the cascade whose metadata read failed (a fresh cascade starts at 0)",
    )
    from_zero = [r for r in last.windows if r.cascade_id == cascade and r.offset == 0]
    assert not from_zero, (
        f"turn {last.index + 1} resumed {cascade} with an unknown generator start and asked the metadata RPC "
        f"from 0 after its Send ({from_zero}): that re-bills every earlier record; it must re-derive the start "
        "from a snapshot before the Send or abstain"
    )
    if case["snapshot_fails"]:
        snapshots = [r for r in last.snapshots_before_send if r.cascade_id == cascade]
        if snapshots and all(r.returned is None for r in snapshots):
            assert not [r for r in last.windows if r.cascade_id == cascade], (
                f"turn {last.index + 1}: its snapshot failed, so its start is unknown, yet it read "
                f"{[r.window for r in last.windows]}: it must abstain"
            )


@invariant_property("OFF-4", needs=("engine.play_turns|gateway.chat",), cases=turn_sequences, max_examples=25)
def windows_cover_every_record_once(target: Target, case: Case, evidence: Evidence) -> None:
    """2-6 turns, each scripted with 1-4 generator records with or without usage, some followed by
    an expiry (the next resume is rejected and the engine restarts fresh) and some with a failed
    metadata read (the first read after the turn's Send, sometimes also the second one, which is
    usually the next turn's resume snapshot). Per cascade, the windows read (module docstring)
    cover its records:

    * **never twice**: no record lies in two windows (it would be billed twice);
    * **never skipped** without cause: a record outside every window is allowed only when the
      engine could not read it, i.e. the turn that produced it read no window successfully (its read
      failed, or it abstained because its start was unknown) *and* a metadata read on that cascade
      had failed by then (up to the next turn's Send). The engine may abstain; it may also bill such
      records later, in a window of a later turn, at most once like every record. Records of a turn
      whose own window read succeeded must be in a window.

    Every scripted turn produces at least one record, as every real turn does. A window that
    answers no records is left to the engine (the reference treats it as an unknown end, engine.md
    Q2.1/Q2.2, and then skips the next turn's records: not judged here).
    """
    scenario, conversation = case["scenario"], case["conversation"]
    _, entries = _play(target, scenario, conversation, evidence)
    wire = wire_turns(entries)
    _check_turn_count(wire, conversation)
    _require_metadata_reads(wire)
    owners = records_per_cascade(wire, scenario["turns"])
    evidence.add("records per cascade (producing turn)", owners)
    for cascade, owner in owners.items():
        billed: dict[int, list[tuple[int, tuple[int, int]]]] = {}
        for turn in wire:
            for read in turn.windows:
                if read.cascade_id == cascade and read.returned:
                    for record in range(*read.window):
                        billed.setdefault(record, []).append((turn.index + 1, read.window))
        twice = {r: w for r, w in billed.items() if len(w) > 1}
        assert not twice, (
            f"{cascade}: record(s) {sorted(twice)} billed more than once; windows (turn, [from, to)): "
            f"{sorted({w for ws in twice.values() for w in ws})}"
        )
        for record, turn_index in enumerate(owner):
            if record in billed:
                continue
            turn = wire[turn_index]
            read_ok = [r.window for r in turn.windows if r.cascade_id == cascade and r.returned is not None]
            windows = sorted({w for ws in billed.values() for _, w in ws})
            assert not read_ok, (
                f"{cascade}: record {record} (from turn {turn_index + 1}) is in no window, although turn "
                f"{turn_index + 1} read {read_ok} successfully; windows read: {windows}"
            )
            reads_by_then = [
                *(r for t in wire[: turn_index + 1] for r in (*t.snapshots_before_send, *t.windows)),
                *next_snapshots(wire, turn_index),
            ]
            failed_by_then = [r for r in reads_by_then if r.cascade_id == cascade and r.returned is None]
            assert failed_by_then, (
                f"{cascade}: record {record} (from turn {turn_index + 1}) is in no window, and no metadata read on "
                f"that cascade had failed by then: nothing excuses skipping it; windows read: {windows}"
            )


@invariant_property(
    "OFF-5",
    needs=("engine.play_turns|gateway.chat",),
    cases=tool_conversations,
    max_examples=20,
    over_http=OverHttp(given="--native-bridge"),
)
def additional_steps_delta(target: Target, case: Case, evidence: Evidence) -> None:
    """Native mode, 2-5 turns; a turn adds one user message (or a tool result for a call of the
    previous round) and, usually, an assistant message with 1-3 tool calls, mapped by the native
    bridge or not; some turns are followed by an expiry. The kit computes from the conversation
    the full mapped tool history and the newest round (the mapped calls of the turn's own
    assistant message; none when it adds none), each call identified by its kind and a marker
    argument. Then, for every Send attempt the fake received (field 9, in order):

    * a Send on a cascade started in this turn (fresh, including the restart after a rejected
      resume) carries the full history;
    * a Send resuming a cascade of an earlier turn carries only the newest round;
    * a rejected resume is followed, in the same turn, by a fresh cascade whose Send carries the
      full history.
    """
    scenario, conversation = case["scenario"], case["conversation"]
    _, entries = _play(target, scenario, conversation, evidence, native_mode=True)
    wire = wire_turns(entries)
    _check_turn_count(wire, conversation)
    full: list[str] = []
    for turn, added in zip(wire, conversation, strict=True):
        newest = newest_round(added)
        full = [*full, *newest]
        for attempt in turn.sends:
            sent = [step_id(s) for s in attempt.steps]
            kind, expected = ("fresh cascade", full) if attempt.fresh else ("resume", newest)
            assert sent == expected, (
                f"turn {turn.index + 1}, {kind} Send on {attempt.cascade_id}"
                f"{'' if attempt.accepted else ' (rejected)'}: field 9 differs\n"
                f"  expected ({'the full mapped history' if attempt.fresh else 'the newest round only'}): {expected}\n"
                f"  sent:     {sent}"
            )
        rejected_resume = [a for a in turn.sends if not a.accepted and not a.fresh]
        if rejected_resume:
            assert turn.sends[-1].fresh, (
                f"turn {turn.index + 1}: after the rejected resume of {rejected_resume[0].cascade_id} the accepted "
                f"Send went to {turn.sends[-1].cascade_id}, not to a fresh cascade"
            )
