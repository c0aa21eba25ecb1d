"""The polling loop driven by a script: per poll a steps snapshot and a run status, on a fake clock
that advances only when the loop sleeps (no wall-clock waits)."""

from __future__ import annotations

from collections.abc import Sequence

from engine.cascade.polling import PollOutcome, PollSettings, poll_turn
from fakels.proto.exa.cortex_pb import cortex_pb2 as cortex

IDLE, RUNNING = 1, 2
Step = cortex.CortexTrajectoryStep


class FakeTime:
    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps = 0

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps += 1
        self.now += seconds


def planner(text: str = "", thinking: str = "", modified: str = "") -> Step:
    return Step(
        type=cortex.CortexStepType.CORTEX_STEP_TYPE_PLANNER_RESPONSE,
        planner_response=cortex.CortexStepPlannerResponse(response=text, thinking=thinking, modified_response=modified),
    )


class Script:
    """Per poll: the steps snapshot and the run status; the last entry repeats forever."""

    def __init__(self, frames: Sequence[tuple[Sequence[Step], int]]) -> None:
        self.frames = list(frames)
        self.step_calls = 0
        self.status_calls = 0

    def steps(self, timeout_s: float) -> Sequence[Step]:
        frame = self.frames[min(self.step_calls, len(self.frames) - 1)]
        self.step_calls += 1
        return frame[0]

    def status(self, timeout_s: float) -> int:
        frame = self.frames[min(self.status_calls, len(self.frames) - 1)]
        self.status_calls += 1
        return frame[1]


def run(script: Script, time: FakeTime, settings: PollSettings | None = None, **kwargs: object) -> PollOutcome:
    return poll_turn(
        script.steps,
        script.status,
        step_offset=kwargs.pop("step_offset", 0),  # type: ignore[arg-type]
        prompt_chars=kwargs.pop("prompt_chars", 10),  # type: ignore[arg-type]
        settings=settings or PollSettings(),
        call_timeout_s=30.0,
        clock=time.clock,
        sleep=time.sleep,
        **kwargs,  # type: ignore[arg-type]
    )
