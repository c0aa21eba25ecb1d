"""A Cascade client on the fake LS, and the scripted turns and steps the client tests share.

The ``fake`` and ``harness`` fixtures built on it are in this folder's conftest.py.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

from engine.cascade.client import (
    CascadeClient,
    CascadeTurnRequest,
    CascadeTurnResult,
    LsEndpoint,
    RebuiltPrompt,
    ResumeState,
)
from engine.cascade.polling import PollSettings
from engine.cascade.requests import ModelRef
from fakels.journal import JournalEntry
from fakels.proto.exa.cortex_pb import cortex_pb2 as cortex
from fakels.scenario import Chunk, Turn, Usage
from fakels.server import FakeLSThread

CSRF = "windsurf-api-csrf-fixed-token"
API_KEY = "sk-test-cascade-client"
MODEL = ModelRef(uid="claude-sonnet-4-6", enum=281)
FAST = PollSettings(poll_interval_s=0.005, idle_grace_s=1.0, max_wait_s=10.0)
WARMUP = ["InitializeCascadePanelState", "AddTrackedWorkspace", "UpdateWorkspaceTrust", "Heartbeat"]
META_RPC = "GetCascadeTrajectoryGeneratorMetadata"
STEPS_RPC = "GetCascadeTrajectorySteps"
SEND_RPC = "SendUserCascadeMessage"


@dataclass(frozen=True)
class Image:
    base64_data: str
    mime_type: str


class Harness:
    """A client on the fake with recorded backoff sleeps and predictable session ids."""

    def __init__(self, fake: FakeLSThread, **kwargs: Any) -> None:
        self.fake = fake
        self.backoffs: list[float] = []
        sessions = itertools.count(1)
        self.client = CascadeClient(
            LsEndpoint(fake.address, kwargs.pop("csrf", CSRF)),
            poll=kwargs.pop("poll", FAST),
            backoff_sleep=self.backoffs.append,
            new_session_id=lambda: f"session-{next(sessions)}",
            **kwargs,
        )

    def mark(self) -> int:
        return len(self.fake.journal)

    def since(self, mark: int, method: str | None = None) -> list[JournalEntry]:
        return self.fake.journal.entries(method, since=mark)

    def requests_since(self, mark: int, method: str) -> list[dict[str, Any]]:
        return [e.request for e in self.since(mark, method) if e.request is not None and not e.rejected]

    def turn(self, text: str = "hello", **kwargs: Any) -> CascadeTurnResult:
        return self.client.run_turn(CascadeTurnRequest(api_key=API_KEY, model=MODEL, text=text, **kwargs))

    def resume_from(self, result: CascadeTurnResult, text: str = "next", **kwargs: Any) -> CascadeTurnResult:
        resume = ResumeState(
            cascade_id=result.cascade_id,
            session_id=result.session_id,
            step_offset=result.step_offset_next,
            generator_offset=result.generator_offset_next,
        )
        return self.turn(text, resume=resume, **kwargs)


def meta_offsets(requests: list[dict[str, Any]]) -> list[int]:
    return [r.get("generator_metadata_offset", 0) for r in requests]


def step_offsets(requests: list[dict[str, Any]]) -> list[int]:
    return [r.get("step_offset", 0) for r in requests]


def run_command_step(command: str, output: str) -> cortex.CortexTrajectoryStep:
    return cortex.CortexTrajectoryStep(
        type=28,  # type: ignore[arg-type]  # the bridge's oneof number, as real clients send it
        status=cortex.CortexStepStatus.CORTEX_STEP_STATUS_DONE,
        run_command=cortex.CortexStepRunCommand(command_line=command, stdout=output),
    )


def answer(text: str, *records: Usage | None) -> Turn:
    """A scripted turn that thinks, then answers ``text`` in two chunks."""
    half = len(text) // 2
    return Turn(
        chunks=(Chunk(thinking="thinking"), Chunk(text=text[:half]), Chunk(text=text[half:])),
        records=records or (Usage(input_tokens=4, output_tokens=2),),
    )


class CountingRebuild:
    def __init__(self, text: str = "FULL HISTORY", images: tuple[Image, ...] = ()) -> None:
        self.calls = 0
        self.text = text
        self.images = images

    def __call__(self) -> RebuiltPrompt:
        self.calls += 1
        return RebuiltPrompt(text=self.text, images=self.images)
