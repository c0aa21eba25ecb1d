"""OFF: offset continuity and the tool-history delta (seed 001, D3 and D5).

OFF-1 feeds ``engine.parse_generator_metadata`` responses hand-assembled with
:mod:`conformance.wire_bytes` from wire.md section 2.8. OFF-2..OFF-5 are end to end: the kit
starts its own fake LS (:class:`fakels.server.FakeLSThread`) with a scripted scenario, has the
target play a conversation against it (``engine.play_turns``), and judges what the fake received
(its journal). The target's own answer counts only where the invariant is about it (the offsets it
ends a turn with) and, below, to tell an abstention from a read at 0.

A resume needs the pool to recognise the conversation: each turn adds exactly one user (or tool)
message first, and only assistant messages after it, to the conversation so far plus the
engine's previous answer.

Reading the journal. Every check splits it the same way (:func:`_wire_turns`): a turn is the
Send attempts up to and including the n-th accepted ``SendUserCascadeMessage`` (the fake plays
its n-th scripted turn on it; a rejected resume adds an attempt before it). The metadata reads
between a turn's accepted Send and the next turn's first Send attempt are the turn's **window
reads**, except the reads that belong to the next turn's resume **snapshot**: a snapshot asks
from offset 0 and comes after the turn's own read. So, within that stretch:

* the first read is the turn's window, every later read at an offset above 0 is one too, and a
  later read at offset 0 is the next turn's snapshot (it bills nothing);
* a turn that reports ``generator_offset_next: null`` and whose stretch holds only reads at
  offset 0 made no window read of its own (it abstained, or its read was the failed one): those
  reads are the next turn's snapshot. On the wire a turn that abstained before the next turn's
  snapshot looks exactly like a turn that asked from 0; its reported offset tells them apart;
* the last turn has no next turn: all its reads are its windows.

A window is ``[offset, offset + number of records returned)`` on the read's cascade; a failed
read (an error status) is a window of nothing.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st

from conformance import wire_bytes as wb
from conformance.properties import Case, Evidence, invariant_property
from conformance.targets import Target
from fakels.scenario import parse_scenario
from fakels.server import FakeLSThread

_META = "GetCascadeTrajectoryGeneratorMetadata"
_SEND = "SendUserCascadeMessage"
_START = "StartCascade"
_CSRF = "conformance-off-csrf-token"
_MODEL_UID = "claude-sonnet-4-6"
_READ_ERRORS = ("UNAVAILABLE", "INTERNAL")

Usage4 = dict[str, int]

# ---------------------------------------------------------------------------- OFF-1: the parser

_USAGE_FIELDS = (("input_tokens", 2), ("output_tokens", 3), ("cache_write_tokens", 4), ("cache_read_tokens", 5))


@st.composite
def _record(draw: st.DrawFn) -> dict[str, Any]:
    """One CortexStepGeneratorMetadata as a plain description (the case) of its bytes."""
    shape = draw(st.sampled_from(["usage", "usage", "no_usage", "zero_usage", "empty"]))
    record: dict[str, Any] = {"shape": shape}
    if shape == "usage":
        figure = st.one_of(st.just(0), st.integers(1, 50_000), st.integers(1, 2**31 - 1))
        values = {name: draw(figure) for name, _ in _USAGE_FIELDS}
        record["usage"] = values
        record["explicit_zeros"] = draw(st.booleans())
    if shape != "empty":
        record["model_uid"] = draw(st.sampled_from(["claude-sonnet-4-6", "MODEL_PRIVATE_2", ""]))
    return record


def _record_pairs(record: dict[str, Any]) -> wb.Fields:
    """``{1: {1: {4: {2: in, 3: out, 4: cw, 5: cr}, 15: uid}}}``; no usage: ``{1: {1: {15: uid}}}``."""
    if record["shape"] == "empty":
        return []
    chat_model: list[tuple[int, wb.Value]] = []
    if record["shape"] == "usage":
        values = record["usage"]
        usage = [(n, values[k]) for k, n in _USAGE_FIELDS if values[k] or record["explicit_zeros"]]
        chat_model.append((4, usage))
    elif record["shape"] == "zero_usage":
        chat_model.append((4, [(n, 0) for _, n in _USAGE_FIELDS]))
    if record["model_uid"]:
        chat_model.append((15, record["model_uid"]))
    return [(1, chat_model)]


def _metadata_cases(target: Target) -> st.SearchStrategy[Case]:
    return st.lists(_record(), max_size=8).map(lambda records: {"records": records})


@invariant_property("OFF-1", needs=("engine.parse_generator_metadata",), cases=_metadata_cases, max_examples=60)
def parser_keeps_the_record_count(target: Target, case: Case, evidence: Evidence) -> None:
    """Any mix of records with usage, without usage (model uid only, an all-zero usage block, or
    nothing at all): the count is every record, ``has_usage`` says whether some record carries a
    non-zero figure, the sums are over those records, and ``null`` means zero records only."""
    records: list[dict[str, Any]] = case["records"]
    raw = wb.message([(1, _record_pairs(r)) for r in records])
    evidence.add("raw_hex", raw.hex())
    result = target.call("engine.parse_generator_metadata", raw_b64=base64.b64encode(raw).decode("ascii"))
    evidence.add("parsed", result)
    usage = result["usage"]
    if not records:
        assert usage is None, f"a response without records parsed as {usage}, expected null"
        return
    assert usage is not None, (
        f"{len(records)} record(s) ({', '.join(r['shape'] for r in records)}) parsed as null: "
        "the record count that advances the window is lost"
    )
    with_usage = [r["usage"] for r in records if r["shape"] == "usage" and any(r["usage"].values())]
    expected = {name: sum(u[name] for u in with_usage) for name, _ in _USAGE_FIELDS}
    expected |= {"entry_count": len(records), "has_usage": bool(with_usage)}
    got = {k: usage.get(k) for k in expected}
    assert got == expected, f"parsed usage differs\n  expected: {expected}\n  parsed:   {got}"


# ---------------------------------------------------------------------------- journal reading


@dataclass(frozen=True)
class _Read:
    seq: int
    cascade_id: str
    offset: int
    returned: int | None  # records in the answer; None: the read failed

    @property
    def window(self) -> tuple[int, int]:
        return self.offset, self.offset + (self.returned or 0)


@dataclass(frozen=True)
class _Send:
    seq: int
    cascade_id: str
    accepted: bool
    fresh: bool  # the cascade was not the target of an accepted Send of an earlier turn
    steps: tuple[dict[str, Any], ...]


@dataclass
class _WireTurn:
    index: int
    sends: list[_Send]
    windows: list[_Read] = field(default_factory=list)
    snapshots_before_send: list[_Read] = field(default_factory=list)

    @property
    def cascade_id(self) -> str:
        return self.sends[-1].cascade_id


def _wire_turns(entries: Sequence[dict[str, Any]], reported: Sequence[dict[str, Any]]) -> list[_WireTurn]:
    """Split the journal into turns (module docstring); ``reported`` is ``play_turns``' per-turn answer."""
    turns: list[_WireTurn] = []
    attempts: list[_Send] = []  # Send attempts of the turn being assembled
    stretch: list[_Read] = []  # reads after the last accepted Send, before the next attempt
    between: list[_Read] = []  # reads after a rejected attempt, before the accepted one
    snapshots: list[_Read] = []  # the next turn's snapshot reads, split off the stretch
    known: set[str] = set()  # cascades of the accepted Sends so far
    for entry in entries:
        method, request = entry["method"], entry.get("request") or {}
        if method == _META:
            answer = entry.get("response")
            ok = entry["status"] == "OK" and answer is not None
            returned = len(answer.get("generator_metadata", [])) if ok and answer is not None else None
            offset = int(request.get("generator_metadata_offset", 0))
            read = _Read(entry["seq"], str(request.get("cascade_id", "")), offset, returned)
            (between if attempts else stretch).append(read)
        elif method == _SEND:
            if not attempts:  # a new turn begins: the stretch after the previous accepted Send ends
                if turns:
                    previous = turns[-1]
                    own, snapshots = _split_stretch(
                        stretch, reported[previous.index] if previous.index < len(reported) else None
                    )
                    previous.windows.extend(own)
                else:
                    snapshots = list(stretch)
                stretch = []
            cascade = str(request.get("cascade_id", ""))
            accepted = entry["status"] == "OK"
            steps = tuple(request.get("additional_steps", []))
            attempts.append(_Send(entry["seq"], cascade, accepted, cascade not in known, steps))
            if accepted:
                turns.append(_WireTurn(len(turns), attempts, snapshots_before_send=[*snapshots, *between]))
                known.add(cascade)
                attempts, between, snapshots = [], [], []
    if turns:
        turns[-1].windows.extend(stretch)
    return turns


def _split_stretch(reads: list[_Read], reported: dict[str, Any] | None) -> tuple[list[_Read], list[_Read]]:
    """A turn's own window reads and the next turn's snapshot reads, from the stretch after its Send."""
    if not reads:
        return [], []
    if reported is not None and reported.get("generator_offset_next") is None and all(r.offset == 0 for r in reads):
        return [], reads
    own: list[_Read] = [reads[0]]
    snapshot: list[_Read] = []
    for read in reads[1:]:
        (snapshot if read.offset == 0 else own).append(read)
    return own, snapshot


def _journal(fake: FakeLSThread) -> list[dict[str, Any]]:
    return [e.to_json() for e in fake.journal.entries() if e.method in (_META, _SEND, _START)]


def _journal_summary(entries: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for entry in entries:
        request = entry.get("request") or {}
        item: dict[str, Any] = {"seq": entry["seq"], "method": entry["method"], "status": entry["status"]}
        if "cascade_id" in request:
            item["cascade_id"] = request["cascade_id"]
        if entry["method"] == _META:
            item["generator_metadata_offset"] = request.get("generator_metadata_offset", 0)
            if entry.get("response") is not None:
                item["records_returned"] = len(entry["response"].get("generator_metadata", []))
        if entry["method"] == _SEND and request.get("additional_steps"):
            item["additional_steps"] = [_step_id(s) for s in request["additional_steps"]]
        if entry["method"] == _START and entry.get("response"):
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
    """Play ``conversation`` through the target against a fresh kit-started fake LS playing ``scenario``."""
    with FakeLSThread(csrf_token=_CSRF, scenario=parse_scenario(scenario, source="OFF scenario")) as fake:
        try:
            answer = target.call(
                "engine.play_turns",
                ls_address=fake.address,
                csrf_token=_CSRF,
                model_uid=_MODEL_UID,
                native_mode=native_mode,
                turns=conversation,
            )
        finally:
            entries = _journal(fake)
            evidence.add("fakels journal", _journal_summary(entries))
    turns: list[dict[str, Any]] = answer["turns"]
    evidence.add("play_turns", turns)
    assert len(turns) == len(conversation), f"play_turns answered {len(turns)} turns for {len(conversation)}"
    return turns, entries


def _records_per_cascade(wire: Sequence[_WireTurn], scenario: dict[str, Any]) -> dict[str, list[int]]:
    """For every cascade, the scripted turn that produced each of its records (index = record number)."""
    owners: dict[str, list[int]] = {}
    for turn in wire:
        scripted = scenario["turns"][turn.index] if turn.index < len(scenario["turns"]) else {"records": [{}]}
        owners.setdefault(turn.cascade_id, []).extend([turn.index] * len(scripted.get("records", [{}])))
    return owners


def _check_turn_count(wire: Sequence[_WireTurn], conversation: Sequence[Any]) -> None:
    assert len(wire) == len(conversation), (
        f"the fake accepted {len(wire)} SendUserCascadeMessage calls for {len(conversation)} turns"
    )


def _usage_figures() -> st.SearchStrategy[Usage4 | None]:
    return st.one_of(
        st.none(),
        st.builds(
            lambda i, o, r: {"input_tokens": i, "output_tokens": o, "cache_read_tokens": r},
            st.integers(1, 9999),
            st.integers(0, 999),
            st.integers(0, 99),
        ),
    )


def _user_turns(count: int) -> list[list[dict[str, Any]]]:
    return [[{"role": "user", "content": f"question {k + 1}"}] for k in range(count)]


def _scripted_turn(index: int, records: list[Usage4 | None], **extra: Any) -> dict[str, Any]:
    return {"chunks": [{"text": f"answer {index + 1}"}], "records": records, **extra}


def _failed_reads(code: str, calls: Sequence[int]) -> list[dict[str, Any]]:
    return [{"rpc": _META, "call": call, "error_code": code} for call in calls]


# ---------------------------------------------------------------------------- OFF-2


@st.composite
def _usage_less_conversations(draw: st.DrawFn, target: Target) -> Case:
    records = draw(st.lists(st.lists(_usage_figures(), min_size=1, max_size=4), min_size=2, max_size=4))
    if not any(r is None for turn in records for r in turn):
        records[0][0] = None
    scenario = {"turns": [_scripted_turn(k, r) for k, r in enumerate(records)]}
    return {"scenario": scenario, "conversation": _user_turns(len(records))}


@invariant_property("OFF-2", needs=("engine.play_turns",), cases=_usage_less_conversations, max_examples=20)
def usage_less_records_advance_the_window(target: Target, case: Case, evidence: Evidence) -> None:
    """Turns whose generator records carry no usage (some or all of them), no failure: every turn
    reads exactly one window, from the number of records its cascade already held (a resumed turn
    asks from the count of the earlier turns' records, usage or not), and reports the offset after
    its own records as ``generator_offset_next``."""
    scenario, conversation = case["scenario"], case["conversation"]
    reported, entries = _play(target, scenario, conversation, evidence)
    wire = _wire_turns(entries, reported)
    _check_turn_count(wire, conversation)
    held: dict[str, int] = {}
    expected_next = []
    for turn in wire:
        before = held.get(turn.cascade_id, 0)
        held[turn.cascade_id] = before + len(scenario["turns"][turn.index]["records"])
        expected_next.append((before, held[turn.cascade_id]))
        reads = [(r.cascade_id, r.offset) for r in turn.windows]
        after_send = [(r.cascade_id, r.offset) for r in (*turn.windows, *_next_snapshots(wire, turn.index))]
        assert reads == [(turn.cascade_id, before)], (
            f"turn {turn.index + 1} on {turn.cascade_id}: expected one metadata read from offset {before} "
            f"(the records its cascade held before it, usage or not); its window reads: {reads or 'none'} "
            f"(all reads before the next turn's Send: {after_send or 'none'})"
        )
        assert turn.windows[0].returned is not None, f"turn {turn.index + 1}: its metadata read failed unscripted"
    for turn, (before, after) in zip(wire, expected_next, strict=True):
        got = reported[turn.index]["generator_offset_next"]
        assert got == after, (
            f"turn {turn.index + 1}: generator_offset_next is {got}, expected {after} "
            f"({before} + its {after - before} record(s), usage or not)"
        )


# ---------------------------------------------------------------------------- OFF-3


@st.composite
def _unknown_offset_cases(draw: st.DrawFn, target: Target) -> Case:
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
    before = draw(st.lists(st.lists(_usage_figures(), min_size=1, max_size=3), max_size=2))
    failing = draw(st.lists(_usage_figures(), min_size=1, max_size=3))
    last = draw(st.lists(_usage_figures(), min_size=1, max_size=3))
    snapshot_fails = draw(st.booleans())
    code = draw(st.sampled_from(_READ_ERRORS))
    turns = [_scripted_turn(k, r) for k, r in enumerate(before)]
    # Call 0 after the failing turn's Send is its own read; call 1 is the next turn's resume snapshot.
    turns.append(_scripted_turn(len(turns), failing, overrides=_failed_reads(code, [0, 1] if snapshot_fails else [0])))
    turns.append(_scripted_turn(len(turns), last))
    return {
        "stored": stored,
        "scenario": {"turns": turns},
        "conversation": _user_turns(len(turns)),
        "failing_turn": len(before),
        "snapshot_fails": snapshot_fails,
    }


@invariant_property(
    "OFF-3", needs=("engine.store_offsets", "engine.play_turns"), cases=_unknown_offset_cases, max_examples=20
)
def unknown_offsets_stay_unknown(target: Target, case: Case, evidence: Evidence) -> None:
    """Stored offsets come back as stored: a ``null`` generator offset stays ``null`` (never 0), a
    known one (0 included) stays that integer. End to end: a turn whose own metadata read fails
    (an error status) reports ``generator_offset_next: null``, and the next turn, resuming that
    cascade, does not ask the metadata RPC from 0 after its Send: it may re-derive the start from
    a snapshot read at offset 0 *before* its Send (allowed: a snapshot bills nothing) and ask from
    the count it found, or abstain (when that snapshot fails too, or without one); asking from 0
    would bill every earlier record of the cascade again. No later turn on that cascade reports 0.
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

    scenario, conversation, failing = case["scenario"], case["conversation"], case["failing_turn"]
    reported, entries = _play(target, scenario, conversation, evidence)
    wire = _wire_turns(entries, reported)
    _check_turn_count(wire, conversation)
    after_send = [*wire[failing].windows, *_next_snapshots(wire, failing)]
    failed_reads = [r for r in after_send if r.returned is None]
    assert failed_reads, f"turn {failing + 1}: the scripted failed metadata read did not happen after its Send"
    got = reported[failing]["generator_offset_next"]
    assert got is None, (
        f"turn {failing + 1}: its metadata read failed ({failed_reads[0]}), yet generator_offset_next is {got}; "
        "the end of its window is unknown and must stay null"
    )
    cascade = wire[failing].cascade_id
    last = wire[-1]
    if last.cascade_id != cascade or last.sends[-1].fresh:
        return  # not resumed: a fresh cascade legitimately starts at 0
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
    for turn in wire[failing + 1 :]:
        if turn.cascade_id == cascade:
            assert reported[turn.index]["generator_offset_next"] != 0, (
                f"turn {turn.index + 1} reports generator_offset_next 0 on {cascade}, which holds earlier records"
            )


# ---------------------------------------------------------------------------- OFF-4


@st.composite
def _turn_sequences(draw: st.DrawFn, target: Target) -> Case:
    count = draw(st.integers(2, 6))
    turns = []
    for k in range(count):
        records = draw(st.lists(_usage_figures(), min_size=1, max_size=4))
        extra: dict[str, Any] = {}
        if k < count - 1 and draw(st.sampled_from([False, False, False, True])):
            extra["expire_after"] = True
        fail = draw(st.sampled_from(["none", "none", "none", "read", "read and snapshot"]))
        if fail != "none":
            code = draw(st.sampled_from(_READ_ERRORS))
            extra["overrides"] = _failed_reads(code, [0] if fail == "read" else [0, 1])
        turns.append(_scripted_turn(k, records, **extra))
    return {"scenario": {"turns": turns}, "conversation": _user_turns(count)}


@invariant_property("OFF-4", needs=("engine.play_turns",), cases=_turn_sequences, max_examples=25)
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
    reported, entries = _play(target, scenario, conversation, evidence)
    wire = _wire_turns(entries, reported)
    _check_turn_count(wire, conversation)
    owners = _records_per_cascade(wire, scenario)
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
            stretch = [*wire[turn_index].windows, *_next_snapshots(wire, turn_index)]
            failed_by_then = [
                r
                for r in (*(r for t in wire[: turn_index + 1] for r in t.snapshots_before_send), *stretch)
                if r.cascade_id == cascade and r.returned is None
            ]
            assert failed_by_then, (
                f"{cascade}: record {record} (from turn {turn_index + 1}) is in no window, and no metadata read on "
                f"that cascade had failed by then: nothing excuses skipping it; windows read: {windows}"
            )


def _next_snapshots(wire: Sequence[_WireTurn], index: int) -> list[_Read]:
    """The snapshot reads taken right after turn ``index`` (before the next turn's Send)."""
    return list(wire[index + 1].snapshots_before_send) if index + 1 < len(wire) else []


# ---------------------------------------------------------------------------- OFF-5

# What the native bridge maps (engine.md section 6.A, the bridge's TOOL_MAP), restricted to tools
# whose marker argument lands verbatim in one body field: caller tool name -> (Cascade body kind,
# the argument holding the marker, the body field it lands in, whether it becomes a file URI).
_MAPPED_TOOLS: dict[str, tuple[str, str, str, bool]] = {
    "Bash": ("run_command", "command", "command_line", False),
    "shell_command": ("run_command", "command", "command_line", False),
    "Read": ("view_file", "file_path", "absolute_path_uri", True),
    "list_dir": ("list_directory", "path", "directory_path_uri", True),
    "Glob": ("find", "pattern", "pattern", False),
    "Grep": ("grep_search_v2", "pattern", "pattern", False),
    "WebSearch": ("search_web", "query", "query", False),
    "WebFetch": ("read_url_content", "url", "url", False),
}
_UNMAPPED_TOOLS = ("TodoWrite", "Task", "NotebookEdit", "apply_patch")
_KINDS = sorted({kind for kind, _, _, _ in _MAPPED_TOOLS.values()})
_MARKER_FIELDS = {kind: body_field for kind, _, body_field, _ in _MAPPED_TOOLS.values()}


def _step_id(step: dict[str, Any]) -> str:
    """A field-9 step as ``kind:marker`` (``?`` when no mapped body is present)."""
    for kind in _KINDS:
        if kind in step:
            return f"{kind}:{step[kind].get(_MARKER_FIELDS[kind], '')}"
    return "?:" + ",".join(sorted(k for k in step if k not in ("type", "status")))


def _call_id(call: dict[str, Any]) -> str | None:
    """What the bridge should send for one tool call, or None when the tool is not mapped."""
    function = call["function"]
    mapped = _MAPPED_TOOLS.get(function["name"])
    if mapped is None:
        return None
    kind, argument, _, uri = mapped
    marker = json.loads(function["arguments"])[argument]
    return f"{kind}:{'file://' + marker if uri else marker}"


@st.composite
def _tool_conversations(draw: st.DrawFn, target: Target) -> Case:
    count = draw(st.integers(2, 5))
    conversation: list[list[dict[str, Any]]] = []
    scripted: list[dict[str, Any]] = []
    previous_calls: list[str] = []
    for k in range(count):
        # A resume needs the conversation so far plus exactly one new user/tool message first; the
        # round's assistant message with its tool calls follows it.
        answers_a_call = draw(st.booleans())
        if previous_calls and answers_a_call:
            call_id = draw(st.sampled_from(previous_calls))
            first: dict[str, Any] = {"role": "tool", "tool_call_id": call_id, "content": f"result of {call_id}"}
        else:
            first = {"role": "user", "content": f"question {k + 1}"}
        added = [first]
        names = draw(st.lists(st.sampled_from([*_MAPPED_TOOLS, *_UNMAPPED_TOOLS]), max_size=3))
        previous_calls = []
        if names:
            calls = []
            for i, name in enumerate(names):
                call_id = f"call_{k + 1}_{i + 1}"
                marker = f"/w/t{k + 1}c{i + 1}" if name in ("Read", "list_dir") else f"m-t{k + 1}c{i + 1}"
                if name == "WebFetch":
                    marker = f"https://example.test/t{k + 1}c{i + 1}"
                argument = _MAPPED_TOOLS[name][1] if name in _MAPPED_TOOLS else "input"
                calls.append(
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {"name": name, "arguments": json.dumps({argument: marker})},
                    }
                )
                previous_calls.append(call_id)
            content = draw(st.sampled_from([None, "", "let me look"]))
            added.append({"role": "assistant", "content": content, "tool_calls": calls})
        conversation.append(added)
        extra = {"expire_after": True} if k < count - 1 and draw(st.sampled_from([False, False, True])) else {}
        scripted.append(_scripted_turn(k, [{"input_tokens": 3, "output_tokens": 1}], **extra))
    return {"scenario": {"turns": scripted}, "conversation": conversation}


@invariant_property("OFF-5", needs=("engine.play_turns",), cases=_tool_conversations, max_examples=20)
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
    reported, entries = _play(target, scenario, conversation, evidence, native_mode=True)
    wire = _wire_turns(entries, reported)
    _check_turn_count(wire, conversation)
    full: list[str] = []
    for turn, added in zip(wire, conversation, strict=True):
        newest = [
            call
            for message in added
            if message["role"] == "assistant"
            for call in (_call_id(c) for c in message.get("tool_calls", []))
            if call is not None
        ]
        full = [*full, *newest]
        for attempt in turn.sends:
            sent = [_step_id(s) for s in attempt.steps]
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
