"""The kit's OFF model (conformance/models/off.py), journal side: how what the fake saw splits into
turns, each turn's window reads, the next turn's resume snapshots and whether a turn's start was
knowable (seed 001 D5: a resume asked the metadata RPC from 0 and billed every earlier turn again),
and which turn produced each record of a cascade."""

from __future__ import annotations

from typing import Any

import pytest

from conformance.models.off import Read, SendAttempt, WireTurn, next_snapshots, records_per_cascade, wire_turns
from tests.conformance.models.model_off_support import Wire, step

STEPS = "GetCascadeTrajectorySteps"


def _reads(wire: Wire, *seqs: int) -> list[Read]:
    """The reads at these journal positions, as the model must see them (written out per test)."""
    out = []
    for seq in seqs:
        entry = wire.entries[seq]
        request, response = entry["request"], entry["response"]
        returned = None if entry["status"] != "OK" else len(response.get("generator_metadata", []))
        out.append(Read(seq, request.get("cascade_id", ""), request.get("generator_metadata_offset", 0), returned))
    return out


# ---------------------------------------------------------------------------- reads


@pytest.mark.parametrize(
    ("offset", "returned", "window"),
    [(0, 2, (0, 2)), (3, 1, (3, 4)), (5, 0, (5, 5)), (4, None, (4, 4))],
)
def test_a_window_is_the_records_a_read_returned_and_a_failed_read_covers_nothing(
    offset: int, returned: int | None, window: tuple[int, int]
) -> None:
    assert Read(0, "c1", offset, returned).window == window


def test_reads_are_taken_from_the_decoded_request_and_answer() -> None:
    wire = Wire().send("c1").read("c1", 0, 2).read("c1", 2, 0).read("c1", 2, None).read("c1", 7, 1)
    assert wire_turns(wire.entries)[0].windows == [
        Read(1, "c1", 0, 2),  # offset 0 is absent from the decoded request
        Read(2, "c1", 2, 0),  # an empty answer decodes as {}: zero records, not a failure
        Read(3, "c1", 2, None),
        Read(4, "c1", 7, 1),
    ]


def test_an_answer_the_fake_could_not_encode_is_a_failed_read() -> None:
    wire = Wire().send("c1").read("c1", 0, 1)
    wire.entries[-1]["response"] = None  # "malformed response sent on purpose": status OK, nothing decoded
    assert wire_turns(wire.entries)[0].windows == [Read(1, "c1", 0, None)]


def test_an_error_status_fails_the_read_whatever_the_entry_holds() -> None:
    wire = Wire().send("c1").read("c1", 0, 1)
    wire.entries[-1]["status"] = "INTERNAL"
    assert wire_turns(wire.entries)[0].windows == [Read(1, "c1", 0, None)]


def test_fields_proto3_left_out_read_as_their_defaults() -> None:
    wire = Wire().send("c1")
    wire.add("GetCascadeTrajectoryGeneratorMetadata", {}, "OK", {"generator_metadata": [{}]})
    wire.add("SendUserCascadeMessage", None, "INVALID_ARGUMENT", None)  # undecodable request
    wire.add("SendUserCascadeMessage", {"items": [{"text": "q"}]}, "OK", {})
    turns = wire_turns(wire.entries)
    assert turns[0].windows == []
    assert turns[1].snapshots_before_send == [Read(1, "", 0, 1)]  # at 0 on another cascade than c1
    assert turns[1].sends == [SendAttempt(2, "", False, True, ()), SendAttempt(3, "", True, True, ())]


# ---------------------------------------------------------------------------- turns and attempts


def test_an_ordinary_resume_reads_one_window_per_turn_on_the_same_cascade() -> None:
    wire = Wire().start("c1").send("c1").other(STEPS, "c1").read("c1", 0, 2).send("c1").other(STEPS, "c1")
    wire.read("c1", 2, 1)
    turns = wire_turns(wire.entries)
    assert turns == [
        WireTurn(0, [SendAttempt(1, "c1", True, True, ())], [Read(3, "c1", 0, 2)], [], True),
        WireTurn(1, [SendAttempt(4, "c1", True, False, ())], [Read(6, "c1", 2, 1)], [], True),
    ]
    assert [t.cascade_id for t in turns] == ["c1", "c1"]


def test_a_rejected_resume_and_the_fresh_restart_are_one_turn_on_the_new_cascade() -> None:
    steps = (step("run_command", {"command_line": "ls"}),)
    wire = Wire().start("c1").send("c1").read("c1", 0, 1).read("c1", 0, 1)
    wire.send("c1", status="NOT_FOUND", steps=steps).start("c2").send("c2", steps=steps).read("c2", 0, 2)
    turns = wire_turns(wire.entries)
    assert len(turns) == 2
    assert turns[1].sends == [SendAttempt(4, "c1", False, False, steps), SendAttempt(6, "c2", True, True, steps)]
    assert turns[1].cascade_id == "c2"
    assert turns[1].windows == [Read(7, "c2", 0, 2)]
    assert turns[1].snapshots_before_send == _reads(wire, 3)
    assert turns[1].start_known


def test_a_cascade_is_fresh_until_a_send_on_it_is_accepted() -> None:
    wire = Wire().send("c1", status="INTERNAL").read("c1", 0, None).send("c1").send("c1")
    turns = wire_turns(wire.entries)
    assert [[(a.seq, a.accepted, a.fresh) for a in t.sends] for t in turns] == [
        [(0, False, True), (2, True, True)],
        [(3, True, False)],
    ]
    assert turns[0].start_known  # a fresh cascade starts at 0, whatever failed before its Send
    assert turns[0].snapshots_before_send == _reads(wire, 1)


def test_an_attempt_no_send_completed_is_no_turn_and_its_reads_belong_to_none() -> None:
    wire = Wire().send("c1").read("c1", 0, 1).send("c1", status="INTERNAL").read("c1", 1, 1)
    turns = wire_turns(wire.entries)
    assert len(turns) == 1
    assert turns[0].windows == _reads(wire, 1)


def test_reads_before_the_first_send_are_the_first_turns_snapshots() -> None:
    wire = Wire().read("c0", 0, 3).read("c0", 3, None).send("c1").read("c1", 0, 1)
    turns = wire_turns(wire.entries)
    assert turns[0].snapshots_before_send == _reads(wire, 0, 1)
    assert turns[0].windows == _reads(wire, 3)


def test_no_send_no_turn() -> None:
    assert wire_turns(Wire().start("c1").read("c1", 0, 1).entries) == []


# ---------------------------------------------------------------------------- windows and snapshots


def test_after_a_known_start_the_first_read_is_the_window_and_a_later_read_from_0_the_next_snapshot() -> None:
    wire = Wire().send("c1").read("c1", 0, 2).read("c1", 1, 1).read("c1", 0, 2).send("c1").read("c1", 2, 1)
    turns = wire_turns(wire.entries)
    assert turns[0].windows == _reads(wire, 1, 2)  # offset 1 is above 0: a window
    assert turns[1].snapshots_before_send == _reads(wire, 3)
    assert next_snapshots(turns, 0) == _reads(wire, 3)
    assert turns[1].windows == _reads(wire, 5)


def test_a_failed_window_then_a_snapshot_re_derives_the_start() -> None:
    wire = Wire().send("c1").read("c1", 0, None).read("c1", 0, 3).send("c1").read("c1", 3, 1)
    turns = wire_turns(wire.entries)
    assert turns[0].windows == _reads(wire, 1)
    assert turns[1].snapshots_before_send == _reads(wire, 2)
    assert turns[1].start_known
    assert turns[1].windows == _reads(wire, 4)


def test_a_resume_after_a_failed_read_without_snapshot_has_an_unknown_start_and_its_read_from_0_is_a_window() -> None:
    """The D5 defect on the wire: the last turn asks from 0 after its Send."""
    wire = Wire().send("c1").read("c1", 0, None).send("c1").read("c1", 0, 3)
    turns = wire_turns(wire.entries)
    assert not turns[1].start_known
    assert turns[1].snapshots_before_send == []
    assert turns[1].windows == _reads(wire, 3)


def test_an_empty_answer_leaves_the_next_start_unknown() -> None:
    wire = Wire().send("c1").read("c1", 0, 0).send("c1")
    assert [t.start_known for t in wire_turns(wire.entries)] == [True, False]


def test_the_latest_read_before_the_send_decides_the_start() -> None:
    failed_last = Wire().send("c1").read("c1", 0, 2).read("c1", 0, None).send("c1")
    ok_last = Wire().send("c1").read("c1", 0, None).read("c1", 0, 2).send("c1")
    assert wire_turns(failed_last.entries)[1].start_known is False
    assert wire_turns(ok_last.entries)[1].start_known is True


def test_with_an_unknown_start_a_read_from_0_belongs_to_the_next_turn_and_one_above_0_is_a_window() -> None:
    wire = Wire().send("c1").read("c1", 0, None)
    wire.send("c1").read("c1", 4, 1).read("c1", 0, 5)  # turn 2: unknown start
    wire.send("c1").read("c1", 5, 1)
    turns = wire_turns(wire.entries)
    assert not turns[1].start_known
    assert turns[1].windows == _reads(wire, 3)
    assert turns[2].snapshots_before_send == _reads(wire, 4)
    assert next_snapshots(turns, 1) == _reads(wire, 4)
    assert turns[2].start_known
    assert turns[2].windows == _reads(wire, 6)


def test_reads_on_another_cascade_are_windows_above_0_and_snapshots_at_0() -> None:
    wire = Wire().send("c1").read("c2", 0, 1).read("c1", 0, 2).read("c2", 3, 1).send("c1")
    turns = wire_turns(wire.entries)
    # c2 at 0 does not use up c1's first read: c1 at 0 is still the window
    assert turns[0].windows == _reads(wire, 2, 3)
    assert turns[1].snapshots_before_send == _reads(wire, 1)


def test_reads_between_a_rejected_and_the_accepted_send_are_snapshots_and_decide_the_start() -> None:
    wire = Wire().send("c1").read("c1", 0, None)
    wire.read("c1", 0, None).send("c1", status="UNAVAILABLE").read("c1", 0, 2).send("c1").read("c1", 2, 1)
    turns = wire_turns(wire.entries)
    assert turns[1].snapshots_before_send == _reads(wire, 2, 4)
    assert turns[1].start_known
    assert turns[1].windows == _reads(wire, 6)
    assert turns[0].windows == _reads(wire, 1)

    failing = Wire().send("c1").read("c1", 0, 2)
    failing.read("c1", 0, 2).send("c1", status="UNAVAILABLE").read("c1", 0, None).send("c1")
    assert wire_turns(failing.entries)[1].start_known is False


def test_the_last_turn_keeps_every_read_as_its_window() -> None:
    wire = Wire().send("c1").read("c1", 0, 1).read("c1", 0, 1).read("c2", 0, None)
    assert wire_turns(wire.entries)[0].windows == _reads(wire, 1, 2, 3)


@pytest.mark.parametrize(("index", "expected"), [(0, [2]), (1, [])])
def test_next_snapshots_are_the_reads_before_the_following_send(index: int, expected: list[int]) -> None:
    wire = Wire().send("c1").read("c1", 0, None).read("c1", 0, 1).send("c1").read("c1", 1, 1)
    turns = wire_turns(wire.entries)
    assert next_snapshots(turns, index) == _reads(wire, *expected)


# ---------------------------------------------------------------------------- who produced each record


def test_each_record_of_a_cascade_belongs_to_the_turn_that_produced_it() -> None:
    wire = Wire().send("c1").read("c1", 0, 2).send("c1").read("c1", 2, 1)
    wire.send("c1", status="NOT_FOUND").send("c2").read("c2", 0, 3)
    scripted: list[dict[str, Any]] = [{"records": [None, None]}, {"records": [None]}, {"records": [{}, None, {}]}]
    assert records_per_cascade(wire_turns(wire.entries), scripted) == {"c1": [0, 0, 1], "c2": [2, 2, 2]}


def test_a_turn_scripted_without_records_or_not_scripted_produces_one_record() -> None:
    wire = Wire().send("c1").send("c1").send("c1")
    scripted: list[dict[str, Any]] = [{"records": [None, None]}, {"chunks": [{"text": "a"}]}]
    assert records_per_cascade(wire_turns(wire.entries), scripted) == {"c1": [0, 0, 1, 2]}
