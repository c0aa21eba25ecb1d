"""WIRE-4 spelled out: two scripted examples over real gRPC, readable end to end: a whole turn with
unicode, thinking, a tool call, usage with and without tokens, a resumed turn and the TTL expiry;
then panel loss, distrust and a scripted expiry, each lasting until the RPC that lifts it. The
property-based form of the same semantics is ``test_wire_state_stateful.py``."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from typing import Any

import grpc
import pytest
from google.protobuf.message import Message

from fakels.proto.exa.codeium_common_pb import codeium_common_pb2 as common
from fakels.proto.exa.cortex_pb import cortex_pb2 as cortex
from fakels.proto.exa.language_server_pb import language_server_pb2 as ls
from fakels.proto.exa.language_server_pb import language_server_pb2_grpc as ls_grpc
from fakels.scenario import Chunk, Fault, NativeStep, Scenario, ToolCall, Turn, Usage
from tests.support.fake_ls import CSRF_TOKEN
from tests.support.wire_state.client import GrpcFake
from tests.support.wire_state.views import IDLE, POLL_INTERVAL_S, RUNNING, error_classes

pytestmark = pytest.mark.invariant("WIRE-4")


class _Stub:
    """The generated stub with the CSRF header on every call."""

    def __init__(self, stub: ls_grpc.LanguageServerServiceStub) -> None:
        self.stub = stub

    def __call__(self, method: str, request: Message) -> Any:
        return getattr(self.stub, method)(request, metadata=[("x-codeium-csrf-token", CSRF_TOKEN)], timeout=30)

    def send(self, cascade_id: str, text: str, session: str = "s") -> None:
        items = [common.TextOrScopeItem(text=text)]
        metadata = common.Metadata(session_id=session)
        request = ls.SendUserCascadeMessageRequest(cascade_id=cascade_id, items=items, metadata=metadata)
        self("SendUserCascadeMessage", request)

    def start(self, session: str = "s") -> str:
        request = ls.StartCascadeRequest(metadata=common.Metadata(session_id=session))
        cascade_id: str = self("StartCascade", request).cascade_id
        return cascade_id

    def rejection(self, call: Callable[[], object]) -> tuple[grpc.StatusCode, str]:
        with pytest.raises(grpc.RpcError) as info:
            call()
        error: Any = info.value
        return error.code(), error.details()


def test_scripted_turn_and_expiry_over_grpc(
    grpc_fake: GrpcFake,
) -> None:
    """One readable end-to-end example: a unicode answer with thinking, a tool call with a large
    JSON argument, usage with and without tokens, then a resumed turn with a native step polled at
    its absolute offset, then the TTL passes on the clock and every cascade RPC answers NOT_FOUND
    with expired-class text."""
    fake, clock, raw_stub = grpc_fake
    stub = _Stub(raw_stub)
    big_args = json.dumps({"path": "/work/\u00e9t\u00e9.txt", "content": "\U0001f600\n" * 5000}, ensure_ascii=False)
    answer = "Hello, \u4e16\u754c \U0001f9d1\u200d\U0001f4bb\nbye"
    first = Turn(
        chunks=(
            Chunk(thinking="Let me think \U0001d518\n"),
            Chunk(text="Hello, \u4e16\u754c"),
            Chunk(tool_call=ToolCall(id="call_1", name="write_file", arguments_json=big_args), delay_s=1.0),
            Chunk(text=" \U0001f9d1\u200d\U0001f4bb\nbye", thinking="done."),
        ),
        records=(Usage(input_tokens=1719, output_tokens=25, cache_read_tokens=100), None),
        modified_response=answer + "!",
        min_running_polls=2,
    )
    second = Turn(
        chunks=(Chunk(native=NativeStep(kind="run_command", body={"commandLine": "ls -la /work"})),),
        records=(None,),
    )
    fake.load_scenario(Scenario(turns=(first, second), cascade_ttl_s=30.0))
    cascade_id = stub.start()

    def play(step_offset: int) -> tuple[list[int], list[cortex.CortexTrajectoryStep]]:
        """Poll as the real client does until IDLE twice; planner text must only grow."""
        statuses: list[int] = []
        responses: list[str] = []
        steps: list[cortex.CortexTrajectoryStep] = []
        while statuses[-2:] != [IDLE, IDLE]:
            assert len(statuses) < 50, statuses
            clock.advance(POLL_INTERVAL_S)
            request = ls.GetCascadeTrajectoryStepsRequest(cascade_id=cascade_id, step_offset=step_offset)
            steps = list(stub("GetCascadeTrajectorySteps", request).steps)
            responses.extend(s.planner_response.response for s in steps if s.HasField("planner_response"))
            statuses.append(stub("GetCascadeTrajectory", ls.GetCascadeTrajectoryRequest(cascade_id=cascade_id)).status)
        assert all(later.startswith(earlier) for earlier, later in itertools.pairwise(responses)), responses
        return statuses, steps

    stub.send(cascade_id, "Say hello\nin two languages \U0001f30d")
    statuses, steps = play(0)
    first_idle = statuses.index(IDLE)
    assert first_idle >= 2
    assert statuses[:first_idle] == [RUNNING] * first_idle
    assert [s.WhichOneof("step") for s in steps] == ["user_input", "planner_response", "tool_call_proposal"]
    planner = steps[1].planner_response
    assert (planner.response, planner.thinking) == (answer, "Let me think \U0001d518\ndone.")
    assert planner.modified_response == first.modified_response
    assert steps[2].tool_call_proposal.tool_call.arguments_json == big_args

    metadata_request = ls.GetCascadeTrajectoryGeneratorMetadataRequest(cascade_id=cascade_id)
    records = stub("GetCascadeTrajectoryGeneratorMetadata", metadata_request).generator_metadata
    assert [r.chat_model.HasField("usage") for r in records] == [True, False]
    assert records[0].chat_model.usage.input_tokens == 1719

    stub.send(cascade_id, "Now list the files")
    _, resumed = play(3)
    assert [s.WhichOneof("step") for s in resumed] == ["user_input", "run_command"]
    assert resumed[1].run_command.command_line == "ls -la /work"
    metadata_request.generator_metadata_offset = 2
    later = stub("GetCascadeTrajectoryGeneratorMetadata", metadata_request).generator_metadata
    assert len(later) == 1
    assert not later[0].chat_model.HasField("usage")

    clock.advance(30.5)
    metadata_request.generator_metadata_offset = 0
    calls: list[Callable[[], object]] = [
        lambda: stub("GetCascadeTrajectorySteps", ls.GetCascadeTrajectoryStepsRequest(cascade_id=cascade_id)),
        lambda: stub("GetCascadeTrajectory", ls.GetCascadeTrajectoryRequest(cascade_id=cascade_id)),
        lambda: stub("GetCascadeTrajectoryGeneratorMetadata", metadata_request),
        lambda: stub.send(cascade_id, "are you still there?"),
    ]
    for call in calls:
        code, details = stub.rejection(call)
        assert code == grpc.StatusCode.NOT_FOUND
        assert error_classes(details) == {"expired"}, details


def test_rejections_and_recovery_over_grpc(
    grpc_fake: GrpcFake,
) -> None:
    """Panel loss, distrust and a scripted expiry, each seen through grpc-message (percent-encoded
    on the wire) with the text the real client classifies, each lasting until the RPC that lifts it."""
    fake, _clock, raw_stub = grpc_fake
    stub = _Stub(raw_stub)
    fake.load_scenario(
        Scenario(
            turns=(
                Turn(fault=Fault(kind="panel_lost")),
                Turn(fault=Fault(kind="untrusted")),
                Turn(fault=Fault(kind="expired", message="cascade not found \u2013 \U0001f480")),
                Turn(chunks=(Chunk(text="back \U0001f44b"),)),
            )
        )
    )
    cascade_id = stub.start()

    code, details = stub.rejection(lambda: stub.send(cascade_id, "one"))
    assert code == grpc.StatusCode.NOT_FOUND
    assert error_classes(details) == {"panel"}, details
    code, details = stub.rejection(lambda: stub.start())
    assert error_classes(details) == {"panel"}, details
    stub("InitializeCascadePanelState", ls.InitializeCascadePanelStateRequest(metadata=common.Metadata(session_id="s")))
    cascade_id = stub.start()

    code, details = stub.rejection(lambda: stub.send(cascade_id, "two"))
    assert code == grpc.StatusCode.FAILED_PRECONDITION
    assert error_classes(details) == {"untrusted"}, details
    stub("UpdateWorkspaceTrust", ls.UpdateWorkspaceTrustRequest(workspace_trusted=False))
    code, details = stub.rejection(lambda: stub.send(cascade_id, "three"))
    assert error_classes(details) == {"untrusted"}, details
    stub("UpdateWorkspaceTrust", ls.UpdateWorkspaceTrustRequest(workspace_trusted=True))

    code, details = stub.rejection(lambda: stub.send(cascade_id, "four"))
    assert (code, details) == (grpc.StatusCode.NOT_FOUND, "cascade not found \u2013 \U0001f480")
    assert error_classes(details) == {"expired"}
    steps_request = ls.GetCascadeTrajectoryStepsRequest(cascade_id=cascade_id)
    code, details = stub.rejection(lambda: stub("GetCascadeTrajectorySteps", steps_request))
    assert code == grpc.StatusCode.NOT_FOUND
    assert error_classes(details) == {"expired"}, details
    unknown_request = ls.GetCascadeTrajectoryRequest(cascade_id="fakels-cascade-\u00e9\U0001f600")
    code, details = stub.rejection(lambda: stub("GetCascadeTrajectory", unknown_request))
    assert code == grpc.StatusCode.NOT_FOUND
    assert error_classes(details) == {"expired"}, details

    fresh = stub.start()
    stub.send(fresh, "five")
    status_request = ls.GetCascadeTrajectoryRequest(cascade_id=fresh)
    assert [stub("GetCascadeTrajectory", status_request).status for _ in range(3)] == [RUNNING, IDLE, IDLE]
    steps_request = ls.GetCascadeTrajectoryStepsRequest(cascade_id=fresh, step_offset=1)
    steps = stub("GetCascadeTrajectorySteps", steps_request).steps
    assert [s.planner_response.response for s in steps] == ["back \U0001f44b"]
