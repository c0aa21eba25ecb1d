"""``fakels demo``: start the fake LS, play one cascade turn against it the way a gateway does,
and show what the fake decoded. A smoke test of the whole fake, runnable on a fresh machine."""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass

import grpc

from fakels.proto.exa.codeium_common_pb import codeium_common_pb2 as common
from fakels.proto.exa.cortex_pb import cortex_pb2 as cortex
from fakels.proto.exa.language_server_pb import language_server_pb2 as ls
from fakels.proto.exa.language_server_pb import language_server_pb2_grpc as ls_grpc
from fakels.scenario import default_answer
from fakels.server import FakeLSThread

DEMO_TOKEN = "windsurf-api-csrf-fixed-token"
DEMO_PROMPT = "Hello from the fakels demo. What is 2 + 2?"


@dataclass(frozen=True)
class TurnResult:
    text: str
    thinking: str
    input_tokens: int
    output_tokens: int
    polls: int
    seconds: float


def play_turn(address: str, token: str, prompt: str, poll_interval_s: float = 0.005) -> TurnResult:
    """One fresh cascade turn: warm-up, StartCascade, Send, poll to the done rule, usage."""
    md = [("x-codeium-csrf-token", token)]
    meta = common.Metadata(
        ide_name="windsurf",
        extension_version="2.0.67",
        api_key="demo-key",
        locale="en",
        os="linux",
        ide_version="2.0.67",
        hardware="x86_64",
        request_id=1,
        session_id=str(uuid.uuid4()),
        extension_name="windsurf",
    )
    started = time.perf_counter()
    with grpc.insecure_channel(address) as channel:
        stub = ls_grpc.LanguageServerServiceStub(channel)
        stub.InitializeCascadePanelState(
            ls.InitializeCascadePanelStateRequest(metadata=meta, workspace_trusted=True), metadata=md
        )
        stub.AddTrackedWorkspace(
            ls.AddTrackedWorkspaceRequest(workspace="/home/user/projects/workspace-demo"), metadata=md
        )
        stub.UpdateWorkspaceTrust(ls.UpdateWorkspaceTrustRequest(metadata=meta, workspace_trusted=True), metadata=md)
        stub.Heartbeat(ls.HeartbeatRequest(metadata=meta), metadata=md)
        cascade_id = stub.StartCascade(
            ls.StartCascadeRequest(
                metadata=meta,
                source=cortex.CORTEX_TRAJECTORY_SOURCE_CASCADE_CLIENT,
                trajectory_type=cortex.CORTEX_TRAJECTORY_TYPE_USER_MAINLINE,
            ),
            metadata=md,
        ).cascade_id
        stub.SendUserCascadeMessage(
            ls.SendUserCascadeMessageRequest(
                cascade_id=cascade_id, items=[common.TextOrScopeItem(text=prompt)], metadata=meta
            ),
            metadata=md,
        )
        steps_request = ls.GetCascadeTrajectoryStepsRequest(cascade_id=cascade_id)
        idle = polls = 0
        while idle < 2:
            time.sleep(poll_interval_s)
            polls += 1
            stub.GetCascadeTrajectorySteps(steps_request, metadata=md)
            status = stub.GetCascadeTrajectory(
                ls.GetCascadeTrajectoryRequest(cascade_id=cascade_id), metadata=md
            ).status
            idle = idle + 1 if status == cortex.CASCADE_RUN_STATUS_IDLE else 0
        steps = list(stub.GetCascadeTrajectorySteps(steps_request, metadata=md).steps)
        records = stub.GetCascadeTrajectoryGeneratorMetadata(
            ls.GetCascadeTrajectoryGeneratorMetadataRequest(cascade_id=cascade_id), metadata=md
        ).generator_metadata
    text = "".join(s.planner_response.response for s in steps if s.HasField("planner_response"))
    thinking = "".join(s.planner_response.thinking for s in steps if s.HasField("planner_response"))
    return TurnResult(
        text=text,
        thinking=thinking,
        input_tokens=sum(r.chat_model.usage.input_tokens for r in records),
        output_tokens=sum(r.chat_model.usage.output_tokens for r in records),
        polls=polls,
        seconds=time.perf_counter() - started,
    )


def run_demo() -> int:
    with FakeLSThread(csrf_token=DEMO_TOKEN) as fake:
        print(f"fakels: gRPC fake language server on {fake.address}")
        result = play_turn(fake.address, DEMO_TOKEN, DEMO_PROMPT)
        print(f"turn done in {result.seconds * 1000:.1f} ms after {result.polls} polls")
        print(f"  thinking: {result.thinking!r}")
        print(f"  answer:   {result.text!r}")
        print(f"  usage:    {result.input_tokens} in / {result.output_tokens} out")
        print("journal:")
        for entry in fake.journal:
            unknown = f", {len(entry.unknown_fields)} unknown field(s)" if entry.unknown_fields else ""
            print(f"  #{entry.seq:<3} {entry.method:<40} {entry.status:<10} {len(entry.raw):>5} bytes{unknown}")
        expected = default_answer(DEMO_PROMPT)
        if result.text != expected:
            print(f"FAIL: expected the answer {expected!r}, got {result.text!r}")
            return 1
        print("OK: the turn completed with the predicted answer")
        return 0
