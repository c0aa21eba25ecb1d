"""WIRE-1 end to end: a real grpcio client sends every RPC, the journal decodes it field for field.

Each RPC of ``fakels.rpcs.RPCS`` has a realistic request built with the generated classes and
an expected dict written out by hand (not produced by our converter). A new RPC in the proto
without an example here fails the suite, so coverage stays complete.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import grpc
import pytest
from google.protobuf.message import Message

from fakels.proto.exa.chat_pb import chat_pb2 as chat
from fakels.proto.exa.codeium_common_pb import codeium_common_pb2 as common
from fakels.proto.exa.cortex_pb import cortex_pb2 as cortex
from fakels.proto.exa.language_server_pb import language_server_pb2 as ls
from fakels.proto.exa.language_server_pb import language_server_pb2_grpc as ls_grpc
from fakels.rpcs import RPCS
from fakels.scenario import default_answer
from fakels.server import FakeLSThread
from tests.support.fake_ls import CSRF_TOKEN
from tests.support.wire_expectations import client_metadata_dict

pytestmark = pytest.mark.invariant("WIRE-1")

Example = tuple[Message, dict[str, Any]]

SESSION_ID = "0b5c9a8e-3f1d-4e2a-8c7b-6d5e4f3a2b1c"
REQUEST_ID = 281_474_976_710_000  # just below 2^48
API_KEY = "sk-ws-01-RPCexampleRPCexampleRPCexample"
USER_JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJycGMifQ.c2ln"
WORKSPACE = "/home/user/projects/workspace-fedcba9876543210"
MODEL_UID = "MODEL_PRIVATE_2"
PROMPT = "System: be brief.\n\nWhat does `ls -la` print? Ünïcode: 日本語 🐍"


def _metadata() -> common.Metadata:
    return common.Metadata(
        ide_name="windsurf",
        extension_version="2.0.67",
        api_key=API_KEY,
        locale="en",
        os="linux",
        ide_version="2.0.67",
        hardware="x86_64",
        request_id=REQUEST_ID,
        session_id=SESSION_ID,
        extension_name="windsurf",
        user_jwt=USER_JWT,
    )


METADATA_DICT = client_metadata_dict(api_key=API_KEY, request_id=REQUEST_ID, session_id=SESSION_ID, user_jwt=USER_JWT)

_OVERRIDE = cortex.SectionOverrideMode.SECTION_OVERRIDE_MODE_OVERRIDE


def _section(content: str) -> cortex.SectionOverrideConfig:
    return cortex.SectionOverrideConfig(mode=_OVERRIDE, content=content)


def _section_dict(content: str) -> dict[str, Any]:
    return {"mode": "SECTION_OVERRIDE_MODE_OVERRIDE", "content": content}


# ---------------------------------------------------------------- one example per RPC


def _initialize_panel(cascade_id: str) -> Example:
    return (
        ls.InitializeCascadePanelStateRequest(metadata=_metadata(), workspace_trusted=True),
        {"metadata": METADATA_DICT, "workspace_trusted": True},
    )


def _add_tracked_workspace(cascade_id: str) -> Example:
    return ls.AddTrackedWorkspaceRequest(workspace=WORKSPACE), {"workspace": WORKSPACE}


def _update_workspace_trust(cascade_id: str) -> Example:
    return (
        ls.UpdateWorkspaceTrustRequest(metadata=_metadata(), workspace_trusted=True),
        {"metadata": METADATA_DICT, "workspace_trusted": True},
    )


def _heartbeat(cascade_id: str) -> Example:
    return ls.HeartbeatRequest(metadata=_metadata()), {"metadata": METADATA_DICT}


def _start_cascade(cascade_id: str) -> Example:
    return (
        ls.StartCascadeRequest(
            metadata=_metadata(),
            source=cortex.CortexTrajectorySource.CORTEX_TRAJECTORY_SOURCE_CASCADE_CLIENT,
            trajectory_type=cortex.CortexTrajectoryType.CORTEX_TRAJECTORY_TYPE_USER_MAINLINE,
        ),
        {
            "metadata": METADATA_DICT,
            "source": "CORTEX_TRAJECTORY_SOURCE_CASCADE_CLIENT",
            "trajectory_type": "CORTEX_TRAJECTORY_TYPE_USER_MAINLINE",
        },
    )


def _send(cascade_id: str) -> Example:
    done = cortex.CortexStepStatus.CORTEX_STEP_STATUS_DONE
    request = ls.SendUserCascadeMessageRequest(
        cascade_id=cascade_id,
        items=[common.TextOrScopeItem(text=PROMPT)],
        metadata=_metadata(),
        cascade_config=cortex.CascadeConfig(
            planner_config=cortex.CascadePlannerConfig(
                conversational=cortex.CascadeConversationalPlannerConfig(
                    planner_mode=common.ConversationalPlannerMode.CONVERSATIONAL_PLANNER_MODE_NO_TOOL,
                    tool_calling_section=_section("No tools are available."),
                    additional_instructions_section=_section("CRITICAL OPERATING CONSTRAINT: text only."),
                    communication_section=_section("Be concise."),
                ),
                requested_model_uid=MODEL_UID,
                plan_model_uid=MODEL_UID,
                requested_model_deprecated=common.ModelOrAlias(model=common.Model.MODEL_PRIVATE_2),
                plan_model_deprecated=common.Model.MODEL_PRIVATE_2,
                max_output_tokens=32768,
            ),
            brain_config=cortex.BrainConfig(enabled=True),
        ),
        images=[
            common.ImageData(base64_data="iVBORw0KGgo=", mime_type="image/png"),
            common.ImageData(base64_data="/9j/4AAQSkZJRg==", mime_type="image/jpeg"),
        ],
        additional_steps=[
            # The bridge's mislabelled types (wire.md 6.1): 28 for run_command, 14 for view_file.
            cortex.CortexTrajectoryStep(
                type=cortex.CortexStepType.CORTEX_STEP_TYPE_COMMAND_STATUS,
                status=done,
                run_command=cortex.CortexStepRunCommand(
                    command_line="ls -la", cwd=WORKSPACE, blocking=True, stdout="total 0\n", exit_code=0
                ),
            ),
            cortex.CortexTrajectoryStep(
                type=cortex.CortexStepType.CORTEX_STEP_TYPE_USER_INPUT,
                status=done,
                view_file=cortex.CortexStepViewFile(
                    absolute_path_uri=f"file://{WORKSPACE}/README.md", start_line=1, end_line=3, content="# hi\n"
                ),
            ),
        ],
    )
    expected = {
        "cascade_id": cascade_id,
        "items": [{"text": PROMPT}],
        "metadata": METADATA_DICT,
        "cascade_config": {
            "planner_config": {
                "plan_model_deprecated": "MODEL_PRIVATE_2",
                "conversational": {
                    "planner_mode": "CONVERSATIONAL_PLANNER_MODE_NO_TOOL",
                    "tool_calling_section": _section_dict("No tools are available."),
                    "additional_instructions_section": _section_dict("CRITICAL OPERATING CONSTRAINT: text only."),
                    "communication_section": _section_dict("Be concise."),
                },
                "max_output_tokens": 32768,
                "requested_model_deprecated": {"model": "MODEL_PRIVATE_2"},
                "plan_model_uid": MODEL_UID,
                "requested_model_uid": MODEL_UID,
            },
            "brain_config": {"enabled": True},
        },
        "images": [
            {"base64_data": "iVBORw0KGgo=", "mime_type": "image/png"},
            {"base64_data": "/9j/4AAQSkZJRg==", "mime_type": "image/jpeg"},
        ],
        "additional_steps": [
            {
                "type": "CORTEX_STEP_TYPE_COMMAND_STATUS",
                "status": "CORTEX_STEP_STATUS_DONE",
                "run_command": {
                    "command_line": "ls -la",
                    "cwd": WORKSPACE,
                    "blocking": True,
                    "stdout": "total 0\n",
                    "exit_code": 0,
                },
            },
            {
                "type": "CORTEX_STEP_TYPE_USER_INPUT",
                "status": "CORTEX_STEP_STATUS_DONE",
                "view_file": {
                    "absolute_path_uri": f"file://{WORKSPACE}/README.md",
                    "start_line": 1,
                    "end_line": 3,
                    "content": "# hi\n",
                },
            },
        ],
    }
    return request, expected


def _trajectory(cascade_id: str) -> Example:
    return ls.GetCascadeTrajectoryRequest(cascade_id=cascade_id), {"cascade_id": cascade_id}


def _steps(cascade_id: str) -> Example:
    return (
        ls.GetCascadeTrajectoryStepsRequest(cascade_id=cascade_id, step_offset=1),
        {"cascade_id": cascade_id, "step_offset": 1},
    )


def _generator_metadata(cascade_id: str) -> Example:
    return (
        ls.GetCascadeTrajectoryGeneratorMetadataRequest(cascade_id=cascade_id, generator_metadata_offset=1),
        {"cascade_id": cascade_id, "generator_metadata_offset": 1},
    )


def _handle_interaction(cascade_id: str) -> Example:
    return (
        ls.HandleCascadeUserInteractionRequest(
            cascade_id=cascade_id,
            interaction=cortex.CascadeUserInteraction(
                trajectory_id="fakels-trajectory-0001",
                step_index=4,
                read_url_content=cortex.ReadUrlContentInteractionAction(
                    action=cortex.ReadUrlContentAction.READ_URL_CONTENT_ACTION_ALLOW_ONCE,
                    url="https://example.com/docs?page=2",
                    origin="https://example.com",
                ),
            ),
        ),
        {
            "cascade_id": cascade_id,
            "interaction": {
                "trajectory_id": "fakels-trajectory-0001",
                "step_index": 4,
                "read_url_content": {
                    "action": "READ_URL_CONTENT_ACTION_ALLOW_ONCE",
                    "url": "https://example.com/docs?page=2",
                    "origin": "https://example.com",
                },
            },
        },
    )


def _get_user_status(cascade_id: str) -> Example:
    return ls.GetUserStatusRequest(metadata=_metadata()), {"metadata": METADATA_DICT}


def _update_panel_with_user_status(cascade_id: str) -> Example:
    status = common.UserStatus(
        pro=True,
        name="Grace Hopper",
        team_id="team-7",
        email="grace@example.com",
        used_prompt_credits=120,
        used_flow_credits=340,
        max_premium_chat_messages=25,
    )
    status.trial_end_time.FromSeconds(1_767_225_600)
    return (
        ls.UpdatePanelStateWithUserStatusRequest(metadata=_metadata(), user_status=status),
        {
            "metadata": METADATA_DICT,
            "user_status": {
                "pro": True,
                "name": "Grace Hopper",
                "team_id": "team-7",
                "email": "grace@example.com",
                "used_prompt_credits": 120,
                "used_flow_credits": 340,
                "trial_end_time": {"seconds": 1_767_225_600},
                "max_premium_chat_messages": 25,
            },
        },
    )


def _cancel(message_type: Callable[..., Message]) -> Callable[[str], Example]:
    def build(cascade_id: str) -> Example:
        return message_type(cascade_id=cascade_id), {"cascade_id": cascade_id}

    return build


def _cancel_steps(cascade_id: str) -> Example:
    return (
        ls.CancelCascadeStepsRequest(cascade_id=cascade_id, step_indices=[2, 3, 300]),
        {"cascade_id": cascade_id, "step_indices": [2, 3, 300]},
    )


def _raw_chat(cascade_id: str) -> Example:
    user = chat.ChatMessage(
        message_id="legacy-1",
        source=chat.ChatMessageSource.CHAT_MESSAGE_SOURCE_USER,
        conversation_id="conv-legacy",
        intent=chat.ChatMessageIntent(generic=chat.IntentGeneric(text="Say hi")),
    )
    user.timestamp.FromSeconds(1_767_225_600)
    assistant = chat.ChatMessage(
        message_id="legacy-2",
        source=chat.ChatMessageSource.CHAT_MESSAGE_SOURCE_UNKNOWN,  # the client's "assistant"
        conversation_id="conv-legacy",
        action=chat.ChatMessageAction(generic=chat.ActionGeneric(text="Hi!")),
    )
    assistant.timestamp.FromSeconds(1_767_225_601)
    request = chat.RawGetChatMessageRequest(
        metadata=_metadata(),
        chat_messages=[user, assistant],
        system_prompt_override="Be brief.",
        chat_model=common.Model.MODEL_CLAUDE_4_SONNET,
        chat_model_name="MODEL_CLAUDE_4_SONNET",
    )
    expected = {
        "metadata": METADATA_DICT,
        "chat_messages": [
            {
                "message_id": "legacy-1",
                "source": "CHAT_MESSAGE_SOURCE_USER",
                "timestamp": {"seconds": 1_767_225_600},
                "conversation_id": "conv-legacy",
                "intent": {"generic": {"text": "Say hi"}},
            },
            {
                "message_id": "legacy-2",
                "source": "CHAT_MESSAGE_SOURCE_UNKNOWN",
                "timestamp": {"seconds": 1_767_225_601},
                "conversation_id": "conv-legacy",
                "action": {"generic": {"text": "Hi!"}},
            },
        ],
        "system_prompt_override": "Be brief.",
        "chat_model": "MODEL_CLAUDE_4_SONNET",
        "chat_model_name": "MODEL_CLAUDE_4_SONNET",
    }
    return request, expected


EXAMPLES: dict[str, Callable[[str], Example]] = {
    "InitializeCascadePanelState": _initialize_panel,
    "AddTrackedWorkspace": _add_tracked_workspace,
    "UpdateWorkspaceTrust": _update_workspace_trust,
    "Heartbeat": _heartbeat,
    "StartCascade": _start_cascade,
    "SendUserCascadeMessage": _send,
    "GetCascadeTrajectory": _trajectory,
    "GetCascadeTrajectorySteps": _steps,
    "GetCascadeTrajectoryGeneratorMetadata": _generator_metadata,
    "HandleCascadeUserInteraction": _handle_interaction,
    "GetUserStatus": _get_user_status,
    "UpdatePanelStateWithUserStatus": _update_panel_with_user_status,
    "CancelCascadeInvocation": _cancel(ls.CancelCascadeInvocationRequest),
    "CancelCascadeInvocationAndWait": _cancel(ls.CancelCascadeInvocationAndWaitRequest),
    "CancelCascadeSteps": _cancel_steps,
    "RawGetChatMessage": _raw_chat,
}


def test_every_rpc_has_a_request_example() -> None:
    assert len(RPCS) == 16
    missing, stale = sorted(set(RPCS) - set(EXAMPLES)), sorted(set(EXAMPLES) - set(RPCS))
    assert not missing, f"add a request example to EXAMPLES for {missing}"
    assert not stale, f"EXAMPLES names RPCs the service no longer has: {stale}"


def _invoke(stub: ls_grpc.LanguageServerServiceStub, method: str, request: Message, csrf: list[tuple[str, str]]) -> Any:
    call = getattr(stub, method)
    if RPCS[method].server_streaming:
        return list(call(request, metadata=csrf, timeout=10))
    return call(request, metadata=csrf, timeout=10)


@pytest.mark.parametrize("method", sorted(RPCS))
def test_rpc_is_journaled_field_for_field(
    method: str, fake_ls: FakeLSThread, stub: ls_grpc.LanguageServerServiceStub, csrf: list[tuple[str, str]]
) -> None:
    assert method in EXAMPLES, f"no request example for {method}: add one to EXAMPLES"
    rpc = RPCS[method]
    cascade_id = stub.StartCascade(ls.StartCascadeRequest(metadata=_metadata()), metadata=csrf, timeout=10).cascade_id
    request, expected = EXAMPLES[method](cascade_id)
    assert isinstance(request, rpc.request_type)
    # Fully populated: every top-level field the request declares is sent.
    assert set(expected) == {f.name for f in rpc.request_type.DESCRIPTOR.fields}
    if "metadata" in expected:  # every Metadata field the client sets (wire.md 2.1); it never sets 6
        assert set(expected["metadata"]) == {f.name for f in common.Metadata.DESCRIPTOR.fields} - {"disable_telemetry"}

    response = _invoke(stub, method, request, csrf)

    entry = fake_ls.journal.last(method)
    assert entry.raw == request.SerializeToString()
    assert entry.request == expected
    assert entry.unknown_fields == ()
    assert (entry.status, entry.error) == ("OK", "")
    assert entry.transport == "grpc"
    assert entry.path == f"/exa.language_server_pb.LanguageServerService/{method}"
    assert entry.headers["x-codeium-csrf-token"] == f"<redacted: matches, {len(CSRF_TOKEN)} characters>"
    assert entry.headers["user-agent"].startswith("grpc-python/")  # grpcio keeps no content-type or te
    if rpc.server_streaming:
        text = "".join(r.delta_message.text for r in response)
        assert text == default_answer("Say hi\nHi!")
        assert response[-1].delta_message.in_progress is False
    else:
        assert isinstance(response, rpc.response_type)


def test_a_full_cascade_turn_is_journaled_in_call_order(
    fake_ls: FakeLSThread, stub: ls_grpc.LanguageServerServiceStub, csrf: list[tuple[str, str]]
) -> None:
    calls: list[str] = []

    def call(method: str, request: Message) -> Any:
        calls.append(method)
        return _invoke(stub, method, request, csrf)

    for warm_up in ("InitializeCascadePanelState", "AddTrackedWorkspace", "UpdateWorkspaceTrust", "Heartbeat"):
        call(warm_up, EXAMPLES[warm_up]("")[0])
    cascade_id = call("StartCascade", EXAMPLES["StartCascade"]("")[0]).cascade_id
    assert cascade_id
    send, _ = EXAMPLES["SendUserCascadeMessage"](cascade_id)
    call("SendUserCascadeMessage", send)

    idle = cortex.CascadeRunStatus.CASCADE_RUN_STATUS_IDLE
    statuses: list[int] = []
    idle_count = 0
    for _ in range(50):
        call("GetCascadeTrajectorySteps", ls.GetCascadeTrajectoryStepsRequest(cascade_id=cascade_id))
        status = call("GetCascadeTrajectory", ls.GetCascadeTrajectoryRequest(cascade_id=cascade_id)).status
        statuses.append(status)
        idle_count = idle_count + 1 if status == idle else 0
        if idle_count >= 2:
            break
    assert idle_count == 2, f"the run never went IDLE twice: {statuses}"
    assert cortex.CascadeRunStatus.CASCADE_RUN_STATUS_RUNNING in statuses
    final = call("GetCascadeTrajectorySteps", ls.GetCascadeTrajectoryStepsRequest(cascade_id=cascade_id))
    usage = call(
        "GetCascadeTrajectoryGeneratorMetadata",
        ls.GetCascadeTrajectoryGeneratorMetadataRequest(cascade_id=cascade_id),
    )

    assert fake_ls.journal.methods() == calls
    assert all(e.status == "OK" and e.transport == "grpc" and not e.unknown_fields for e in fake_ls.journal)
    assert fake_ls.journal.last("SendUserCascadeMessage").request == EXAMPLES["SendUserCascadeMessage"](cascade_id)[1]
    polls = fake_ls.journal.requests("GetCascadeTrajectorySteps")
    assert polls == [{"cascade_id": cascade_id}] * len(polls)  # offset 0 is not on the wire
    answer = "".join(step.planner_response.response for step in final.steps)
    assert answer == default_answer(PROMPT, image_count=2)
    assert len(usage.generator_metadata) == 1


def test_grpc_errors_are_not_hidden_by_the_examples(
    fake_ls: FakeLSThread, stub: ls_grpc.LanguageServerServiceStub, csrf: list[tuple[str, str]]
) -> None:
    """The per-RPC examples depend on a live cascade; against an unknown id the fake says NOT_FOUND."""
    request, _ = EXAMPLES["GetCascadeTrajectorySteps"]("no-such-cascade")
    with pytest.raises(grpc.RpcError) as info:
        _invoke(stub, "GetCascadeTrajectorySteps", request, csrf)
    assert info.value.code() == grpc.StatusCode.NOT_FOUND
    entry = fake_ls.journal.last("GetCascadeTrajectorySteps")
    assert entry.request == {"cascade_id": "no-such-cascade", "step_offset": 1}
    assert entry.status == "NOT_FOUND"
