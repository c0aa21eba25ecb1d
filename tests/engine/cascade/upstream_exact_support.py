"""Shared pieces of the exact Cascade client / polling / channel tests: a fake clock that moves only
when the client sleeps, and raw scripted LS answers."""

from __future__ import annotations

from collections.abc import Sequence

from fakels.proto.exa.codeium_common_pb import codeium_common_pb2 as common
from fakels.proto.exa.cortex_pb import cortex_pb2 as cortex
from fakels.proto.exa.language_server_pb import language_server_pb2 as ls

STATUS_RPC = "GetCascadeTrajectory"
# A chunk that never shows up in a test's lifetime: the turn stays RUNNING without output.
NEVER_S = 3600.0


class SteppedClock:
    """A monotonic clock that starts far from 0 and advances only by the sleeps it is given."""

    def __init__(self, start: float = 1000.0) -> None:
        self.start = start
        self.now = start
        self.sleeps: list[float] = []

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds

    @property
    def elapsed(self) -> float:
        return self.now - self.start


def usage_step(input_tokens: int, output_tokens: int, cache_read: int, cache_write: int) -> cortex.CortexTrajectoryStep:
    """A step that carries only per-step model usage in its metadata."""
    return cortex.CortexTrajectoryStep(
        metadata=cortex.CortexStepMetadata(
            model_usage=common.ModelUsageStats(
                input_tokens=input_tokens,
                output_tokens=output_tokens,
                cache_read_tokens=cache_read,
                cache_write_tokens=cache_write,
            )
        )
    )


def steps_payload_hex(steps: Sequence[cortex.CortexTrajectoryStep]) -> str:
    """A GetCascadeTrajectorySteps answer as the hex a scripted ResponseOverride replays."""
    return ls.GetCascadeTrajectoryStepsResponse(steps=list(steps)).SerializeToString().hex()


IDLE, RUNNING = 1, 2
Frame = tuple[Sequence[cortex.CortexTrajectoryStep], int]


class Frames:
    """Per poll: the steps snapshot and the run status (the last frame repeats), recording the
    call timeouts the loop passes."""

    def __init__(self, frames: Sequence[Frame]) -> None:
        self.frames = list(frames)
        self.step_timeouts: list[float] = []
        self.status_timeouts: list[float] = []

    def steps(self, timeout_s: float) -> Sequence[cortex.CortexTrajectoryStep]:
        frame = self.frames[min(len(self.step_timeouts), len(self.frames) - 1)]
        self.step_timeouts.append(timeout_s)
        return frame[0]

    def status(self, timeout_s: float) -> int:
        frame = self.frames[min(len(self.status_timeouts), len(self.frames) - 1)]
        self.status_timeouts.append(timeout_s)
        return frame[1]


def planner(text: str = "", thinking: str = "") -> cortex.CortexTrajectoryStep:
    return cortex.CortexTrajectoryStep(
        type=cortex.CortexStepType.CORTEX_STEP_TYPE_PLANNER_RESPONSE,
        planner_response=cortex.CortexStepPlannerResponse(response=text, thinking=thinking),
    )


def proposal(call_id: str, name: str) -> cortex.CortexTrajectoryStep:
    step = cortex.CortexTrajectoryStep()
    step.tool_call_proposal.tool_call.id = call_id
    step.tool_call_proposal.tool_call.name = name
    step.tool_call_proposal.tool_call.arguments_json = "{}"
    return step


def error_step(text: str) -> cortex.CortexTrajectoryStep:
    return cortex.CortexTrajectoryStep(
        type=17,  # type: ignore[arg-type]
        error_message=cortex.CortexStepErrorMessage(error=cortex.CortexErrorDetails(short_error=text)),
    )


def native_proposal() -> cortex.CortexTrajectoryStep:
    return cortex.CortexTrajectoryStep(run_command=cortex.CortexStepRunCommand(command_line="ls"))
