"""OFF: the kit's own model of offset continuity and the tool-history delta (seed 001, D3 and D5).

Everything here reads what the fake saw, never what the target says about itself: the journal's
metadata reads (cascade, offset, order, how many records came back, or that the read failed), the
Send attempts (cascade, accepted or rejected, field 9) and the turn boundaries (each accepted
``SendUserCascadeMessage`` plays the next scripted turn). What a target reports (its
``generator_offset_next``) is evidence for the report only.

**Turns on the wire** (:func:`wire_turns`). A turn is the Send attempts up to and including the
n-th accepted Send. The metadata reads between a turn's accepted Send and the next turn's first
Send attempt are its *stretch*; a stretch holds the turn's own **window reads** and, possibly, the
next turn's resume **snapshot** (a read from offset 0 that re-derives an unknown start; it bills
nothing). Which is which follows from what the engine could know, judged from the fake's side:

* the turn's **start is knowable** when its cascade was fresh in this turn, or when the last
  metadata read on that cascade before the turn's Send succeeded and returned records (a previous
  window or a snapshot). Then the stretch's first read on the cascade is the turn's window, any
  later read above offset 0 is a window too, and a later read at offset 0 is the next snapshot;
* otherwise (a failed or empty read left the start unknown) the turn may only abstain or read
  from a start re-derived before its Send: reads above offset 0 are its windows, reads at offset 0
  are the next turn's snapshot (a turn asking from 0 there looks the same on the wire; it is caught
  where it matters, when the resuming turn asks from 0 after its own Send);
* the last turn has no next turn: all its reads are windows.

A window is ``[offset, offset + records returned)`` on the read's cascade; a failed read (an
error status) is a window of nothing.

**The delta** (OFF-5): the native bridge's mapping of caller tool names to Cascade step bodies
(engine.md section 6.A), restricted to tools whose marker argument lands verbatim in one body field.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from conformance import wire_bytes as wb
from conformance.models.journal import META, SEND
from fakels.rpcs import RPCS

USAGE_FIGURES = ("input_tokens", "output_tokens", "cache_write_tokens", "cache_read_tokens")

# ---------------------------------------------------------------------------- OFF-1: what a parse must give


def _numbers(message: Any, *path: str) -> list[int]:
    """The field numbers along ``path`` (``chat_model``, ``usage``, ...) from the proto descriptors."""
    numbers = []
    for name in path:
        descriptor = message.fields_by_name[name]
        numbers.append(descriptor.number)
        message = descriptor.message_type
    return numbers


def _numbers_by_name(message: Any, repeated_field: str) -> dict[str, int]:
    """The fields of the message type of ``repeated_field``, by name."""
    inner = message.fields_by_name[repeated_field].message_type
    return {f.name: f.number for f in inner.fields}


_RECORD = RPCS[META].response_type.DESCRIPTOR.fields_by_name["generator_metadata"].message_type
_CHAT_MODEL, _USAGE = _numbers(_RECORD, "chat_model", "usage")
_UID = _numbers(_RECORD, "chat_model", "model_uid")[1]
_FIGURE_NUMBERS = {name: _numbers(_RECORD, "chat_model", "usage", name)[2] for name in USAGE_FIGURES}
_RECORDS = _numbers(RPCS[META].response_type.DESCRIPTOR, "generator_metadata")[0]


def encode_metadata_response(records: Sequence[Mapping[str, Any]]) -> bytes:
    """A GetCascadeTrajectoryGeneratorMetadata response holding the described records, encoded by
    the kit (field numbers from the proto): ``shape`` ``usage`` writes the figures (zeros only when
    ``explicit_zeros``), ``zero_usage`` an all-zero usage block, ``no_usage`` only the model uid,
    ``empty`` an empty record."""
    encoded: list[tuple[int, wb.Value]] = []
    for record in records:
        chat_model: list[tuple[int, wb.Value]] = []
        if record["shape"] == "usage":
            values = record["usage"]
            figures = [(_FIGURE_NUMBERS[k], values[k]) for k in USAGE_FIGURES if values[k] or record["explicit_zeros"]]
            chat_model.append((_USAGE, figures))
        elif record["shape"] == "zero_usage":
            chat_model.append((_USAGE, [(_FIGURE_NUMBERS[k], 0) for k in USAGE_FIGURES]))
        if record.get("model_uid"):
            chat_model.append((_UID, record["model_uid"]))
        encoded.append((_RECORDS, [(_CHAT_MODEL, chat_model)] if record["shape"] != "empty" else []))
    return wb.message(encoded)


def expected_usage(records: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """What parsing these records must give: ``None`` for no record at all; otherwise every record
    counted, ``has_usage`` when one carries a non-zero figure, and the figures summed over those.

    A record is the case's description of its bytes: ``{"shape": "usage" | "no_usage" |
    "zero_usage" | "empty", "usage": {figure: n}, ...}``.
    """
    if not records:
        return None
    with_usage = [r["usage"] for r in records if r["shape"] == "usage" and any(r["usage"].values())]
    expected: dict[str, Any] = {name: sum(u[name] for u in with_usage) for name in USAGE_FIGURES}
    return expected | {"entry_count": len(records), "has_usage": bool(with_usage)}


# ---------------------------------------------------------------------------- the journal, turn by turn


@dataclass(frozen=True)
class Read:
    """One metadata read the fake answered."""

    seq: int
    cascade_id: str
    offset: int
    returned: int | None  # records in the answer; None: the read failed

    @property
    def window(self) -> tuple[int, int]:
        return self.offset, self.offset + (self.returned or 0)


@dataclass(frozen=True)
class SendAttempt:
    seq: int
    cascade_id: str
    accepted: bool
    fresh: bool  # the cascade was not the target of an accepted Send of an earlier turn
    steps: tuple[dict[str, Any], ...]


@dataclass
class WireTurn:
    index: int
    sends: list[SendAttempt]
    windows: list[Read] = field(default_factory=list)
    snapshots_before_send: list[Read] = field(default_factory=list)
    start_known: bool = True

    @property
    def cascade_id(self) -> str:
        return self.sends[-1].cascade_id


def _read_of(entry: Mapping[str, Any]) -> Read:
    request = entry.get("request") or {}
    answer = entry.get("response")
    ok = entry["status"] == "OK" and answer is not None
    returned = len(answer.get("generator_metadata", [])) if ok and answer is not None else None
    offset = int(request.get("generator_metadata_offset", 0))
    return Read(entry["seq"], str(request.get("cascade_id", "")), offset, returned)


def wire_turns(entries: Sequence[Mapping[str, Any]]) -> list[WireTurn]:
    """Split journal entries (``JournalEntry.to_json()`` dicts, in order) into turns (module docstring)."""
    turns: list[WireTurn] = []
    attempts: list[SendAttempt] = []  # Send attempts of the turn being assembled
    stretch: list[Read] = []  # reads after the last accepted Send, before the next attempt
    between: list[Read] = []  # reads after a rejected attempt, before the accepted one
    snapshots: list[Read] = []  # the next turn's snapshot reads, split off the stretch
    known: set[str] = set()  # cascades of the accepted Sends so far
    last_read: dict[str, Read] = {}  # per cascade, the latest read so far
    for entry in entries:
        method, request = entry["method"], entry.get("request") or {}
        if method == META:
            read = _read_of(entry)
            (between if attempts else stretch).append(read)
            continue
        if method != SEND:
            continue
        if not attempts:  # a new turn begins: the stretch after the previous accepted Send ends
            if turns:
                own, snapshots = _split_stretch(stretch, turns[-1])
                turns[-1].windows.extend(own)
            else:
                snapshots = list(stretch)
            for read in stretch:
                last_read[read.cascade_id] = read
            stretch = []
        cascade = str(request.get("cascade_id", ""))
        accepted = entry["status"] == "OK"
        steps = tuple(request.get("additional_steps", []))
        attempts.append(SendAttempt(entry["seq"], cascade, accepted, cascade not in known, steps))
        if not accepted:
            continue
        for read in between:
            last_read[read.cascade_id] = read
        fresh = cascade not in known
        previous = last_read.get(cascade)
        start_known = fresh or (previous is not None and bool(previous.returned))
        turns.append(WireTurn(len(turns), attempts, [], [*snapshots, *between], start_known))
        known.add(cascade)
        attempts, between, snapshots = [], [], []
    if turns:
        turns[-1].windows.extend(stretch)
    return turns


def _split_stretch(reads: Sequence[Read], turn: WireTurn) -> tuple[list[Read], list[Read]]:
    """A turn's own window reads and the next turn's snapshot reads, from the stretch after its Send."""
    own: list[Read] = []
    snapshot: list[Read] = []
    first_on_cascade = True
    for read in reads:
        mine = read.cascade_id == turn.cascade_id
        if read.offset > 0 or (mine and first_on_cascade and turn.start_known):
            own.append(read)
        else:
            snapshot.append(read)
        if mine:
            first_on_cascade = False
    return own, snapshot


def next_snapshots(wire: Sequence[WireTurn], index: int) -> list[Read]:
    """The snapshot reads taken right after turn ``index`` (before the next turn's Send)."""
    return list(wire[index + 1].snapshots_before_send) if index + 1 < len(wire) else []


def records_per_cascade(wire: Sequence[WireTurn], scripted_turns: Sequence[Mapping[str, Any]]) -> dict[str, list[int]]:
    """For every cascade, the turn that produced each of its records (index = record number): the
    n-th accepted Send plays the n-th scripted turn, which appends its scripted records."""
    owners: dict[str, list[int]] = {}
    for turn in wire:
        scripted = scripted_turns[turn.index] if turn.index < len(scripted_turns) else {"records": [{}]}
        owners.setdefault(turn.cascade_id, []).extend([turn.index] * len(scripted.get("records", [{}])))
    return owners


# ---------------------------------------------------------------------------- OFF-5: the native bridge

# caller tool name -> (Cascade body kind, the argument holding the marker, the body field it lands
# in, whether it becomes a file URI)
MAPPED_TOOLS: dict[str, tuple[str, str, str, bool]] = {
    "Bash": ("run_command", "command", "command_line", False),
    "shell_command": ("run_command", "command", "command_line", False),
    "Read": ("view_file", "file_path", "absolute_path_uri", True),
    "list_dir": ("list_directory", "path", "directory_path_uri", True),
    "Glob": ("find", "pattern", "pattern", False),
    "Grep": ("grep_search_v2", "pattern", "pattern", False),
    "WebSearch": ("search_web", "query", "query", False),
    "WebFetch": ("read_url_content", "url", "url", False),
}
UNMAPPED_TOOLS = ("TodoWrite", "Task", "NotebookEdit", "apply_patch")
_KINDS = sorted({kind for kind, _, _, _ in MAPPED_TOOLS.values()})
_MARKER_FIELDS = {kind: body_field for kind, _, body_field, _ in MAPPED_TOOLS.values()}

# The step bodies the mapping names must exist in the proto (a renamed field fails here, loudly).
_STEP_FIELDS = set(_numbers_by_name(RPCS[SEND].request_type.DESCRIPTOR, "additional_steps"))
if not set(_KINDS) <= _STEP_FIELDS:
    raise RuntimeError(f"step kinds missing from the proto: {set(_KINDS) - _STEP_FIELDS}")


def step_id(step: Mapping[str, Any]) -> str:
    """A decoded field-9 step as ``kind:marker`` (``?`` when no mapped body is present)."""
    for kind in _KINDS:
        if kind in step:
            return f"{kind}:{step[kind].get(_MARKER_FIELDS[kind], '')}"
    return "?:" + ",".join(sorted(k for k in step if k not in ("type", "status")))


def call_id(call: Mapping[str, Any]) -> str | None:
    """What the bridge must send for one OpenAI tool call, or None when the tool is not mapped."""
    function = call["function"]
    mapped = MAPPED_TOOLS.get(function["name"])
    if mapped is None:
        return None
    kind, argument, _, uri = mapped
    marker = json.loads(function["arguments"])[argument]
    return f"{kind}:{'file://' + marker if uri else marker}"


def newest_round(added: Sequence[Mapping[str, Any]]) -> list[str]:
    """The mapped calls a turn's own assistant messages add (the newest round of the tool history)."""
    return [
        mapped
        for message in added
        if message["role"] == "assistant"
        for mapped in (call_id(c) for c in message.get("tool_calls", []))
        if mapped is not None
    ]
