"""The Cascade client end to end against the fake LS over real gRPC: resumes, offsets, tool-history delta.

Each test scripts the fake's turns, runs the client and reads what the fake decoded from the wire
in its journal.
"""

from __future__ import annotations

import itertools
import logging
from typing import Any

import pytest

from engine.cascade.channel import LsChannel
from engine.cascade.client import ResumeState, default_retry_backoff
from engine.cascade.errors import LsCallError, RejectionClass, ResumeRejectedError
from fakels.proto.exa.cortex_pb import cortex_pb2 as cortex
from fakels.scenario import Chunk, Fault, FaultKind, ResponseOverride, Scenario, Turn, Usage, default_answer
from fakels.server import FakeLSThread
from tests.engine.cascade_support import (
    META_RPC,
    SEND_RPC,
    STEPS_RPC,
    WARMUP,
    CountingRebuild,
    Harness,
    Image,
    answer,
    meta_offsets,
    run_command_step,
    step_offsets,
)

# ---------------------------------------------------------------------------------------------- resume


def test_resume_with_stored_offsets_skips_start_and_polls_from_the_stored_offsets(
    fake: FakeLSThread, harness: Harness
) -> None:
    first = harness.turn("first question")
    mark = harness.mark()
    second = harness.resume_from(first, "only the newest message")

    methods = [e.method for e in harness.since(mark)]
    assert "StartCascade" not in methods
    assert "InitializeCascadePanelState" not in methods
    assert methods[0] == SEND_RPC
    (send,) = harness.requests_since(mark, SEND_RPC)
    assert send["cascade_id"] == first.cascade_id
    assert send["items"] == [{"text": "only the newest message"}]
    assert send["metadata"]["session_id"] == first.session_id
    polls = harness.requests_since(mark, STEPS_RPC)
    assert step_offsets(polls) == [first.step_offset_next] * len(polls) == [2] * len(polls)
    assert meta_offsets(harness.requests_since(mark, META_RPC)) == [first.generator_offset_next] == [1]
    assert second.text == default_answer("only the newest message")
    assert second.cascade_id == first.cascade_id
    assert second.resumed
    assert (second.step_offset_next, second.generator_offset_next) == (4, 2)


def test_step_cursor_is_absolute_and_monotonic_over_three_resumed_turns(fake: FakeLSThread, harness: Harness) -> None:
    result = harness.turn("turn 0")
    cursors = [result.step_offset_next]
    polled: list[set[int]] = []
    for n in range(1, 4):
        mark = harness.mark()
        result = harness.resume_from(result, f"turn {n}")
        polled.append(set(step_offsets(harness.requests_since(mark, STEPS_RPC))))
        cursors.append(result.step_offset_next)
        assert result.text == default_answer(f"turn {n}")
    assert polled == [{2}, {4}, {6}]
    assert cursors == [2, 4, 6, 8]
    assert all(a < b for a, b in itertools.pairwise(cursors))
    assert fake.journal.methods().count("StartCascade") == 1


@pytest.mark.parametrize(
    ("kind", "rejection"),
    [
        ("expired", RejectionClass.CASCADE_EXPIRED),
        ("panel_lost", RejectionClass.PANEL_MISSING),
        ("untrusted", RejectionClass.UNTRUSTED_WORKSPACE),
    ],
)
def test_rejected_resume_rewarms_starts_fresh_and_sends_the_rebuilt_history_once(
    fake: FakeLSThread, harness: Harness, kind: FaultKind, rejection: RejectionClass
) -> None:
    fake.load_scenario(Scenario(turns=(answer("one"), Turn(fault=Fault(kind)), answer("fresh answer"))))
    first = harness.turn("first")
    rebuild = CountingRebuild(images=(Image("aGlzdG9yeQ==", "image/png"),))
    mark = harness.mark()

    second = harness.resume_from(first, "newest only", rebuild=rebuild)

    entries = harness.since(mark)
    rejected = entries[0]
    assert (rejected.method, rejected.rejected) == (SEND_RPC, True)
    assert [e.method for e in entries[1:7]] == [*WARMUP, "StartCascade", SEND_RPC]
    assert not any(e.rejected for e in entries[1:])
    sends = [e.request for e in harness.since(mark, SEND_RPC)]
    assert sends[0] is not None
    assert sends[0]["items"] == [{"text": "newest only"}]
    assert sends[0]["cascade_id"] == first.cascade_id
    fresh = harness.requests_since(mark, SEND_RPC)[-1]
    assert fresh["items"] == [{"text": "FULL HISTORY"}]
    assert fresh["images"] == [{"base64_data": "aGlzdG9yeQ==", "mime_type": "image/png"}]
    assert fresh["metadata"]["session_id"] == "session-2"
    assert fresh["cascade_id"] == second.cascade_id != first.cascade_id
    assert rebuild.calls == 1
    assert second.history_rebuilt
    assert not second.resumed
    assert second.rejections == (rejection,)
    assert second.reuse_entry_invalidated is (kind == "expired")
    assert second.session_id == "session-2"
    assert set(step_offsets(harness.requests_since(mark, STEPS_RPC))) == {0}
    assert meta_offsets(harness.requests_since(mark, META_RPC)) == [0]
    assert (second.step_offset_next, second.generator_offset_next) == (2, 1)
    assert second.text == "fresh answer"
    assert harness.backoffs == []  # no wait before the first retry


def test_retries_exhausted_raise_a_typed_error_after_three_retries_with_backoff(
    fake: FakeLSThread, harness: Harness
) -> None:
    fake.load_scenario(Scenario(turns=(answer("one"), *[Turn(fault=Fault("expired"))] * 4)))
    first = harness.turn("first")
    rebuild = CountingRebuild()
    mark = harness.mark()

    with pytest.raises(ResumeRejectedError) as info:
        harness.resume_from(first, "newest", rebuild=rebuild)

    error = info.value
    assert error.rejections == (RejectionClass.CASCADE_EXPIRED,) * 4
    assert error.reuse_entry_invalidated
    assert "expired by ttl" in error.last.details
    assert "expired by ttl" in str(error)
    assert isinstance(error.__cause__, LsCallError)
    assert rebuild.calls == 1
    assert harness.backoffs == [0.5, 0.75]
    sends = harness.since(mark, SEND_RPC)
    assert len(sends) == 4
    assert all(e.rejected for e in sends)
    assert len(harness.since(mark, "StartCascade")) == 3
    assert len(harness.since(mark, "InitializeCascadePanelState")) == 3
    assert [default_retry_backoff(n) for n in (1, 2, 3)] == [0.0, 0.5, 0.75]


def test_an_unclassified_send_error_is_raised_at_once_with_the_ls_message(fake: FakeLSThread, harness: Harness) -> None:
    fake.load_scenario(
        Scenario(turns=(Turn(fault=Fault("error", message="neither PlanModel nor RequestedModel specified")),))
    )
    with pytest.raises(LsCallError) as info:
        harness.turn("x")
    assert info.value.details == "neither PlanModel nor RequestedModel specified"
    assert info.value.method == SEND_RPC
    assert info.value.code == "INTERNAL"
    assert info.value.cascade_id is not None
    assert fake.journal.methods().count(SEND_RPC) == 1
    assert fake.journal.methods().count("StartCascade") == 1


def test_a_fresh_start_without_panel_state_rewarms_and_retries(fake: FakeLSThread, harness: Harness) -> None:
    fake.load_scenario(Scenario(turns=(Turn(chunks=(Chunk(text="one"),), lose_panel_after=True), answer("two"))))
    harness.turn("one")  # the panel is gone after this turn
    result = harness.turn("two")
    assert result.rejections == (RejectionClass.PANEL_MISSING,)
    assert not result.history_rebuilt
    assert not result.reuse_entry_invalidated
    starts = fake.journal.entries("StartCascade")
    assert [e.rejected for e in starts] == [False, True, False]
    assert fake.journal.requests(SEND_RPC)[-1]["items"] == [{"text": "two"}]


# ---------------------------------------------------------------------------------------------- offsets


@pytest.mark.invariant("OFF-2")
def test_no_usage_records_still_advance_the_window_the_next_reuse_asks_from_2_not_0(
    fake: FakeLSThread, harness: Harness
) -> None:
    fake.load_scenario(
        Scenario(turns=(answer("one", None, None), answer("two", Usage(input_tokens=5, output_tokens=1))))
    )
    first = harness.turn("first")
    assert first.generator_offset_next == 2
    assert first.usage is None
    assert first.usage_source is None

    second = harness.resume_from(first, "second")

    assert meta_offsets(fake.journal.requests(META_RPC)) == [0, 2]
    assert second.generator_offset_next == 3
    assert second.usage is not None
    assert (second.usage.input_tokens, second.usage.output_tokens) == (5, 1)


def test_usage_falls_back_to_step_metadata_when_no_record_carries_usage(
    fake: FakeLSThread, harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Records without usage still count for the window, and the per-step usage is the turn's usage."""
    fake.load_scenario(Scenario(turns=(answer("one", None, None),)))
    real_call = LsChannel.call

    def call(self: LsChannel, method: str, request: Any, response_type: Any, timeout_s: float) -> Any:
        response = real_call(self, method, request, response_type, timeout_s)
        if method == STEPS_RPC:  # the fake's steps carry no per-step usage: add some to the planner step
            for step in response.steps:
                if step.HasField("planner_response"):
                    step.metadata.model_usage.input_tokens = 40
                    step.metadata.model_usage.output_tokens = 9
        return response

    monkeypatch.setattr(LsChannel, "call", call)
    result = harness.turn("x")
    assert result.usage_source == "steps"
    assert result.usage is not None
    assert (result.usage.input_tokens, result.usage.output_tokens) == (40, 9)
    assert result.generator_offset_next == 2


@pytest.mark.invariant("OFF-3")
def test_an_unknown_stored_offset_is_rederived_from_a_snapshot_not_assumed_0(
    fake: FakeLSThread, harness: Harness
) -> None:
    fake.load_scenario(Scenario(turns=(answer("one", None, None), answer("two"))))
    first = harness.turn("first")
    mark = harness.mark()
    legacy = ResumeState(cascade_id=first.cascade_id, session_id=first.session_id)  # no offsets stored
    second = harness.turn("second", resume=legacy)
    entries = harness.since(mark)
    # Both snapshots come before the Send; the usage window then starts after the 2 records.
    assert [e.method for e in entries[:3]] == [STEPS_RPC, META_RPC, SEND_RPC]
    assert meta_offsets(harness.requests_since(mark, META_RPC)) == [0, 2]
    assert set(step_offsets(harness.requests_since(mark, STEPS_RPC))[1:]) == {2}
    assert second.generator_offset_next == 3


@pytest.mark.invariant("OFF-3")
@pytest.mark.parametrize("snapshot", ["no records", "failed read"])
def test_an_unknown_start_abstains_instead_of_asking_from_0(
    fake: FakeLSThread, harness: Harness, caplog: pytest.LogCaptureFixture, snapshot: str
) -> None:
    if snapshot == "no records":
        first_turn = Turn(chunks=(Chunk(text="one"),), records=())
    else:  # the first turn's metadata read is call 0; the resume snapshot is call 1
        first_turn = Turn(
            chunks=(Chunk(text="one"),), overrides=(ResponseOverride(rpc=META_RPC, call=1, error_code="INTERNAL"),)
        )
    fake.load_scenario(Scenario(turns=(first_turn, answer("answer"))))
    first = harness.turn("first")
    mark = harness.mark()
    with caplog.at_level(logging.WARNING):
        second = harness.turn("second", resume=ResumeState(first.cascade_id, first.session_id, first.step_offset_next))
    send_at = next(i for i, e in enumerate(harness.since(mark)) if e.method == SEND_RPC)
    assert [e.method for e in harness.since(mark)[send_at:]].count(META_RPC) == 0
    assert second.generator_offset_next is None
    assert second.text == "answer"
    assert "generator offset unknown for resumed cascade" in caplog.text


@pytest.mark.invariant("OFF-4")
def test_metadata_windows_cover_every_record_exactly_once_over_resumes_and_expiry(
    fake: FakeLSThread, harness: Harness
) -> None:
    used = Usage(input_tokens=10, output_tokens=2)
    fake.load_scenario(
        Scenario(
            turns=(
                answer("t1", used, None),
                answer("t2", None),
                Turn(fault=Fault("expired")),
                answer("t3", used),
                answer("t4", None, used, None),
            )
        )
    )
    result = harness.turn("t1")
    result = harness.resume_from(result, "t2")
    result = harness.resume_from(result, "t3", rebuild=CountingRebuild())
    assert result.reuse_entry_invalidated
    harness.resume_from(result, "t4")

    windows: dict[str, list[tuple[int, int]]] = {}
    for entry in fake.journal.entries(META_RPC):
        assert entry.request is not None
        assert entry.response is not None
        start = entry.request.get("generator_metadata_offset", 0)
        count = len(entry.response.get("generator_metadata", []))
        windows.setdefault(entry.request["cascade_id"], []).append((start, start + count))
    totals = {cid: len(fake.server.core.state.cascades[cid].records) for cid in windows}  # type: ignore[union-attr]
    for cascade_id, spans in windows.items():
        covered = [i for lo, hi in spans for i in range(lo, hi)]
        assert covered == list(range(totals[cascade_id])), (cascade_id, spans)
    assert sorted(totals.values()) == [3, 4]


@pytest.mark.invariant("OFF-5")
def test_additional_steps_fresh_gets_full_history_ordinary_resume_only_the_newest_round(
    fake: FakeLSThread, harness: Harness
) -> None:
    history = [run_command_step(f"cmd{i}", f"out{i}") for i in range(3)]
    first = harness.turn("t1", additional_steps=history[:2], additional_steps_from=1)
    harness.resume_from(first, "t2", additional_steps=history, additional_steps_from=2)
    sends = fake.journal.requests(SEND_RPC)
    assert [len(s.get("additional_steps", [])) for s in sends] == [2, 1]
    assert sends[1]["additional_steps"][0]["run_command"] == {"command_line": "cmd2", "stdout": "out2"}
    # The type number travels as given (28, the bridge's oneof number, which [P] calls COMMAND_STATUS).
    assert sends[1]["additional_steps"][0]["type"] == "CORTEX_STEP_TYPE_COMMAND_STATUS"


@pytest.mark.invariant("OFF-5")
def test_additional_steps_rejected_resume_sends_the_delta_first_then_the_full_history(
    fake: FakeLSThread, harness: Harness
) -> None:
    fake.load_scenario(Scenario(turns=(answer("one"), Turn(fault=Fault("expired")), answer("two"))))
    history = [run_command_step(f"cmd{i}", f"out{i}") for i in range(3)]
    first = harness.turn("t1")
    mark = harness.mark()
    harness.resume_from(first, "t2", additional_steps=history, additional_steps_from=2, rebuild=CountingRebuild())
    sends = [e.request for e in harness.since(mark, SEND_RPC)]
    counts = [len(s.get("additional_steps", [])) for s in sends if s is not None]
    assert counts == [1, 3]
    full = sends[1]
    assert full is not None
    assert [s["run_command"]["command_line"] for s in full["additional_steps"]] == ["cmd0", "cmd1", "cmd2"]


def test_raw_additional_step_bytes_are_sent_and_empty_ones_skipped(fake: FakeLSThread, harness: Harness) -> None:
    raw = run_command_step("pwd", "/").SerializeToString()
    harness.turn("x", additional_steps=[raw, b"", cortex.CortexTrajectoryStep()])
    (send,) = fake.journal.requests(SEND_RPC)
    assert [s["run_command"]["command_line"] for s in send["additional_steps"]] == ["pwd"]
