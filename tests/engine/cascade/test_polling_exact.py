"""The polling loop's done rule, stalls, deadlines and deltas, exactly, on a stepped clock.

The clock starts at 1000 s and moves only by the loop's sleeps (a constant 1 s poll interval unless a
test says otherwise), so every end is pinned to the poll it must happen on: poll k runs at 1000 + k.
The short first polls that back off to the longest interval have tests of their own, at the end.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from typing import Any

import pytest

from engine.cascade.errors import CascadeModelError, CascadeStallError, LsCallError
from engine.cascade.polling import CascadeDelta, PollOutcome, PollSettings, poll_turn
from engine.cascade.trajectory import read_step
from fakels.proto.exa.cortex_pb import cortex_pb2 as cortex
from tests.engine.cascade.upstream_exact_support import (
    IDLE,
    RUNNING,
    Frames,
    SteppedClock,
    error_step,
    native_proposal,
    planner,
    proposal,
)

SECOND = PollSettings(poll_interval_s=1.0, first_poll_interval_s=1.0)


def drive(
    frames: Frames, time: SteppedClock, settings: PollSettings = SECOND, *, call_timeout_s: float = 30.0, **kwargs: Any
) -> PollOutcome:
    return poll_turn(
        frames.steps,
        frames.status,
        step_offset=kwargs.pop("step_offset", 0),
        prompt_chars=kwargs.pop("prompt_chars", 0),
        settings=settings,
        call_timeout_s=call_timeout_s,
        clock=time.clock,
        sleep=time.sleep,
        **kwargs,
    )


@pytest.mark.parametrize(("chars", "limit"), [(0, 30.0), (1499, 30.0), (1500, 35.0), (2999, 35.0), (3000, 40.0)])
def test_the_cold_stall_limit_adds_5s_per_whole_1500_chars(chars: int, limit: float) -> None:
    assert PollSettings().cold_stall_limit(chars) == limit


# ---------------------------------------------------------------------------------------------- done rule


def test_a_run_never_seen_active_counts_idle_only_after_the_grace_period() -> None:
    """Grace 8 s: polls 1-8 are within it; idle polls 9 and 10 (text quiet for > 2 intervals) end it."""
    time = SteppedClock()
    frames = Frames([([planner("hi")], IDLE)])
    outcome = drive(frames, time)
    assert (outcome.end_reason, outcome.text, outcome.polls) == ("idle_done", "hi", 10)
    assert outcome.saw_active is False
    assert time.elapsed == 10
    assert len(frames.step_timeouts) == 11  # ten polls and the final sweep


def test_idle_with_text_needs_more_than_two_quiet_intervals() -> None:
    """Text at poll 1 (running), idle from poll 2: at poll 3 the text is exactly 2 intervals old, not more."""
    time = SteppedClock()
    outcome = drive(Frames([([planner("hi")], RUNNING), ([planner("hi")], IDLE)]), time)
    assert (outcome.end_reason, outcome.polls, outcome.saw_active) == ("idle_done", 4, True)


def test_without_text_the_fourth_idle_poll_after_the_grace_ends_the_turn() -> None:
    time = SteppedClock()
    outcome = drive(Frames([([], IDLE)]), time)
    assert (outcome.end_reason, outcome.text, outcome.polls, outcome.saw_active) == ("idle_empty", "", 12, False)


def test_a_run_reported_idle_never_warm_stalls() -> None:
    """The warm-stall check needs a non-idle last status: an idle run waits for the done rule."""
    settings = PollSettings(poll_interval_s=1.0, first_poll_interval_s=1.0, idle_grace_s=100.0, warm_stall_text_s=5.0)
    time = SteppedClock()
    outcome = drive(Frames([([planner("short")], IDLE)]), time, settings)
    assert (outcome.end_reason, outcome.text, outcome.polls) == ("idle_done", "short", 102)


# ---------------------------------------------------------------------------------------------- stalls


def test_a_cold_stall_raises_on_the_first_poll_past_the_limit() -> None:
    time = SteppedClock()
    settings = PollSettings(poll_interval_s=1.0, first_poll_interval_s=1.0, cold_stall_base_s=10.0)
    with pytest.raises(CascadeStallError) as info:
        drive(Frames([([], RUNNING)]), time, settings)
    assert info.value.message == "Cascade planner stalled — no output after 10s"
    assert time.elapsed == 11


def test_a_warm_stall_raises_on_the_first_poll_more_than_45s_after_the_last_growth() -> None:
    time = SteppedClock()
    with pytest.raises(CascadeStallError) as info:
        drive(Frames([([planner("short")], RUNNING)]), time)
    assert info.value.message == "Cascade planner stalled after preamble — no progress for 45s"
    assert info.value.stage == "warm"
    assert time.elapsed == 47  # growth at poll 1; 46 s later is past the ceiling, 45 s is not


def test_text_grown_over_several_polls_counts_in_full_for_the_warm_stall_minimum(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """200 then 350 chars: 350 >= 300 is enough partial text to accept at the stall."""
    time = SteppedClock()
    frames = Frames([([planner("x" * 200)], RUNNING), ([planner("x" * 350)], RUNNING)])
    with caplog.at_level(logging.WARNING, logger="engine.cascade"):
        outcome = drive(frames, time)
    assert (outcome.end_reason, outcome.text) == ("warm_stall", "x" * 350)
    assert time.elapsed == 48
    assert [r.getMessage() for r in caplog.records] == ["Cascade warm stall: accepting 350 chars of partial text"]


def test_a_tool_call_keeps_the_long_ceiling_for_60s_then_the_text_ceiling_applies() -> None:
    """Text and a tool call at poll 1: tool-active while less than 60 s old (180 s ceiling); at poll 61
    the call is 60 s old, the text ceiling (45 s) applies and 60 s without growth ends the turn."""
    time = SteppedClock()
    outcome = drive(Frames([([planner("x" * 300), proposal("c1", "get")], RUNNING)]), time)
    assert outcome.end_reason == "warm_stall"
    assert time.elapsed == 61


# ---------------------------------------------------------------------------------------------- deadlines


def test_each_poll_call_gets_the_call_timeout_capped_by_the_time_left(caplog: pytest.LogCaptureFixture) -> None:
    """Cap 10 s, 0.75 s polls, 4 s call timeout: poll 14 starts at 9.75 s and wakes past the cap (0 s left)."""
    time = SteppedClock()
    frames = Frames([([], RUNNING)])
    settings = PollSettings(poll_interval_s=0.75, first_poll_interval_s=0.75, max_wait_s=10.0, cold_stall_base_s=1000.0)
    with caplog.at_level(logging.WARNING, logger="engine.cascade"):
        outcome = drive(frames, time, settings, call_timeout_s=4.0)
    assert (outcome.end_reason, outcome.polls) == ("max_wait", 14)
    assert [r.getMessage() for r in caplog.records] == ["Cascade turn hit the 10 s cap after 14 polls"]
    expected = [max(0.0, min(4.0, 10.0 - 0.75 * k)) for k in range(1, 15)]
    assert frames.step_timeouts == expected == frames.status_timeouts
    assert expected[-2:] == [0.25, 0.0]


def test_an_abort_set_before_the_turn_ends_it_without_sleeping() -> None:
    abort = threading.Event()
    abort.set()
    time = SteppedClock()
    frames = Frames([([planner("x")], RUNNING)])
    outcome = drive(frames, time, abort=abort)
    assert (outcome.end_reason, outcome.polls, time.sleeps, frames.step_timeouts) == ("aborted", 0, [], [])


def test_an_abort_during_the_poll_sleep_ends_the_turn_before_the_poll() -> None:
    abort = threading.Event()
    time = SteppedClock()

    def sleep(seconds: float) -> None:
        time.sleep(seconds)
        abort.set()

    frames = Frames([([planner("x")], RUNNING)])
    outcome = poll_turn(
        frames.steps,
        frames.status,
        step_offset=0,
        prompt_chars=0,
        settings=SECOND,
        call_timeout_s=30.0,
        clock=time.clock,
        sleep=sleep,
        abort=abort,
    )
    assert (outcome.end_reason, outcome.polls, time.sleeps, frames.step_timeouts) == ("aborted", 0, [1.0], [])


# ---------------------------------------------------------------------------------------------- steps


def test_text_and_tool_calls_stream_as_deltas_in_order() -> None:
    call_step = proposal("c1", "get_weather")
    frames = Frames(
        [
            ([planner("Checking.")], RUNNING),
            ([planner("Checking."), call_step], RUNNING),
            ([planner("Checking."), call_step], IDLE),
        ]
    )
    deltas: list[CascadeDelta] = []
    outcome = drive(frames, SteppedClock(), on_delta=deltas.append)
    (call,) = read_step(call_step, 1).tool_calls
    assert outcome.tool_calls == [call]
    assert deltas == [CascadeDelta("text", text="Checking."), CascadeDelta("tool_call", tool_call=call)]


def test_native_mode_still_raises_an_error_step_without_a_native_proposal() -> None:
    with pytest.raises(CascadeModelError) as info:
        drive(Frames([([planner("x"), error_step("quota")], RUNNING)]), SteppedClock(), native_mode=True)
    assert (info.value.message, info.value.step_index) == ("quota", 1)


def test_in_native_mode_the_final_sweep_excuses_an_error_next_to_a_native_proposal() -> None:
    """Idle at poll 4 with quiet text; the final sweep (steps call 5) shows an error and a native proposal."""
    quiet = ([planner("x")], IDLE)
    final = ([planner("x"), error_step("quota"), native_proposal()], IDLE)
    frames = Frames([([planner("x")], RUNNING), quiet, quiet, quiet, final])
    outcome = drive(frames, SteppedClock(), native_mode=True)
    assert (outcome.end_reason, outcome.text, outcome.polls) == ("idle_done", "x", 4)
    assert [call.name for call in outcome.tool_calls] == ["run_command"]


def test_a_poll_call_timing_out_before_the_cap_propagates() -> None:
    time = SteppedClock()

    def timing_out(timeout_s: float) -> Sequence[cortex.CortexTrajectoryStep]:
        raise LsCallError("GetCascadeTrajectorySteps", "DEADLINE_EXCEEDED", "no answer within 30 s (cancelled)")

    with pytest.raises(LsCallError) as info:
        poll_turn(
            timing_out,
            Frames([([], RUNNING)]).status,
            step_offset=0,
            prompt_chars=0,
            settings=SECOND,
            call_timeout_s=30.0,
            clock=time.clock,
            sleep=time.sleep,
        )
    assert info.value.timed_out
    assert time.elapsed == 1


def test_outside_native_mode_a_native_proposal_does_not_excuse_an_error_step() -> None:
    frames = Frames([([planner("x"), error_step("quota"), native_proposal()], RUNNING)])
    with pytest.raises(CascadeModelError) as info:
        drive(frames, SteppedClock())
    assert info.value.message == "quota"


def test_with_a_zero_text_ceiling_the_first_poll_already_checks_for_a_warm_stall() -> None:
    """Before any status is read the run counts as not idle: on a clock that ticks 1 ms per reading,
    text that has not grown since it appeared is past a 0 s ceiling on poll 1."""
    time = SteppedClock()

    def ticking() -> float:
        time.now += 0.001
        return time.now

    frames = Frames([([planner("short")], RUNNING)])
    with pytest.raises(CascadeStallError) as info:
        poll_turn(
            frames.steps,
            frames.status,
            step_offset=0,
            prompt_chars=0,
            settings=PollSettings(poll_interval_s=1.0, first_poll_interval_s=1.0, warm_stall_text_s=0.0),
            call_timeout_s=30.0,
            clock=ticking,
            sleep=time.sleep,
        )
    assert info.value.message == "Cascade planner stalled after preamble — no progress for 0s"
    assert (len(frames.step_timeouts), frames.status_timeouts) == (1, [])


# ---------------------------------------------------------------------------------------------- backoff


def test_the_default_waits_start_at_10_ms_and_double_up_to_the_reference_clients_half_second() -> None:
    intervals = PollSettings().intervals()
    assert [next(intervals) for _ in range(9)] == pytest.approx([0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.5, 0.5, 0.5])


FIRST_50_MS = PollSettings(first_poll_interval_s=0.05)


@pytest.mark.parametrize(
    ("longest", "first", "waits"),
    [
        (0.5, 0.05, [0.05, 0.1, 0.2, 0.4, 0.5, 0.5]),
        (0.4, 0.05, [0.05, 0.1, 0.2, 0.4, 0.4, 0.4]),  # a doubling that lands on the longest exactly
        (0.051, 0.05, [0.05, 0.051, 0.051, 0.051, 0.051, 0.051]),  # one over the first
        (0.05, 0.05, [0.05] * 6),  # at the first: constant
        (0.049, 0.05, [0.049] * 6),  # under the first: the longest caps the first too
        (1.0, 1.0, [1.0] * 6),
    ],
)
def test_the_waits_start_at_the_first_interval_and_double_up_to_the_longest(
    longest: float, first: float, waits: list[float]
) -> None:
    intervals = PollSettings(poll_interval_s=longest, first_poll_interval_s=first).intervals()
    assert [next(intervals) for _ in waits] == pytest.approx(waits)


def test_a_quick_answer_ends_the_turn_within_the_first_half_second() -> None:
    """Text at poll 1 (0.05 s, running), idle from poll 2 (0.15 s): at poll 3 (0.35 s) it has been
    idle twice and quiet for more than two of the 0.05 s intervals in force when it grew. The
    reference client's constant 0.5 s would end it at poll 4, at 2 s."""
    time = SteppedClock()
    outcome = drive(Frames([([planner("hi")], RUNNING), ([planner("hi")], IDLE)]), time, FIRST_50_MS)
    assert (outcome.end_reason, outcome.text, outcome.polls) == ("idle_done", "hi", 3)
    assert time.sleeps == pytest.approx([0.05, 0.1, 0.2])


def test_quiet_counts_in_the_interval_in_force_when_the_output_last_grew() -> None:
    """Text grows at polls 1-5 (the fifth after a 0.5 s wait, at 1.25 s), idle from poll 6: quiet must
    exceed 2 x 0.5 s, so poll 7 (exactly 1 s after) is not enough and poll 8 ends it."""
    growing = [([planner("a" * n)], RUNNING) for n in range(1, 6)]
    time = SteppedClock()
    outcome = drive(Frames([*growing, ([planner("a" * 5)], IDLE)]), time, FIRST_50_MS)
    assert (outcome.end_reason, outcome.text, outcome.polls) == ("idle_done", "aaaaa", 8)
    assert time.sleeps == pytest.approx([0.05, 0.1, 0.2, 0.4, 0.5, 0.5, 0.5, 0.5])
