"""WIRE-1 golden vectors: bytes hand-assembled from wire.md section 2 decode field for field.

Every request here is written with :mod:`conformance.wire_bytes` in the field order the real client
(WindsurfAPI) emits, never through our generated classes, then decoded with
``fakels.decoder.decode`` and compared with a literal dict. The response side checks that the
bytes wire.md calls minimal are exactly what our classes (and the running fake) produce.
"""

from __future__ import annotations

from typing import Any

import grpc
import pytest

from conformance import wire_bytes as wb
from fakels import steps as fakels_steps
from fakels.decoder import decode
from fakels.proto.exa.chat_pb import chat_pb2 as chat
from fakels.proto.exa.codeium_common_pb import codeium_common_pb2 as common
from fakels.proto.exa.cortex_pb import cortex_pb2 as cortex
from fakels.proto.exa.language_server_pb import language_server_pb2 as ls
from fakels.rpcs import RPCS
from fakels.scenario import Chunk, Scenario, Turn, Usage
from fakels.server import FakeLSThread
from tests.support.wire_expectations import client_metadata_dict

pytestmark = pytest.mark.invariant("WIRE-1")

# ---------------------------------------------------------------- shared client values (wire.md 2.1)

REQUEST_ID = (1 << 48) - 12_345  # "random integer below 2^48": needs a 7-byte varint
SESSION_ID = "7f0c2d3e-5b4a-4c1d-9e8f-0a1b2c3d4e5f"
API_KEY = "sk-ws-01-EXAMPLEexampleEXAMPLEexample"
USER_JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ1c2VyLTEifQ.c2lnbmF0dXJl"
CASCADE_ID = "c0ffee00-1111-2222-3333-444455556666"
TRAJECTORY_ID = "7ra1ec70-aaaa-bbbb-cccc-ddddeeeeffff"
WORKSPACE = "/home/user/projects/workspace-0123456789abcdef"

# Emission order of windsurf.js:99-119: 1, 2, 3, 4, 5, 7, 8, 9, 10, 12, then 21.
METADATA: wb.Fields = [
    (1, "windsurf"),
    (2, "2.0.67"),
    (3, API_KEY),
    (4, "en"),
    (5, "linux"),
    (7, "2.0.67"),
    (8, "x86_64"),
    (9, REQUEST_ID),
    (10, SESSION_ID),
    (12, "windsurf"),
    (21, USER_JWT),
]
METADATA_DICT = client_metadata_dict(api_key=API_KEY, request_id=REQUEST_ID, session_id=SESSION_ID, user_jwt=USER_JWT)

PROMPT = (
    "You are a helpful assistant.\n"
    "[Context: The underlying model serving this request is claude-4.5-sonnet, developed by Anthropic.]\n\n"
    "Grüße! Explain 漢字 and emoji 🚀 in one line — «quoted»."
)
NO_TOOLS = "No tools are available."
CONSTRAINT = "CRITICAL OPERATING CONSTRAINT: you have no tools. Answer in plain text only."
COMMUNICATION = "Be concise and answer in the user's language."
PNG_B64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgYGD4DwABBAEAwS2OUAAAAABJRU5ErkJggg=="
JPEG_B64 = "/9j/4AAQSkZJRgABAQAAAQABAAD/2wBDAAgGBgcGBQgHBwcJCQgKDBQNDAsLDBkSEw8UHRofHh0aHBwgJC4nICIsIxwcKDcp"


def _assert_decodes(message_type: type[Any], raw: bytes, expected: dict[str, Any]) -> Any:
    decoded = decode(message_type, raw)
    assert decoded.fields == expected
    assert decoded.unknown == ()
    return decoded.message


# ---------------------------------------------------------------- the writer itself


def test_writer_matches_the_protobuf_encoding_examples() -> None:
    # protobuf.dev "Encoding": field 1 = 150 is 08 96 01; wire.md 1.2: field 1 = "c" is 0a 01 63.
    assert wb.message([(1, 150)]) == bytes.fromhex("089601")
    assert wb.message([(1, "c")]) == bytes.fromhex("0a0163")
    assert wb.varint(300) == bytes.fromhex("ac02")
    assert wb.varint(-1) == bytes.fromhex("ffffffffffffffffff01")
    assert wb.message([(2, [(1, 1)])]) == bytes.fromhex("12020801")
    assert wb.message([(2, 1.5)]) == bytes.fromhex("150000c03f")
    assert wb.key(105, wb.LEN) == bytes.fromhex("ca06")


# ---------------------------------------------------------------- requests


def test_metadata_with_every_client_field() -> None:
    raw = wb.message(METADATA)
    assert wb.field(9, REQUEST_ID)[1:] == bytes.fromhex("c79fffffffff3f")  # 7-byte varint, no truncation
    message = _assert_decodes(common.Metadata, raw, METADATA_DICT)
    assert message.request_id == REQUEST_ID
    assert message.SerializeToString() == raw  # client order is canonical here


def test_start_cascade_request() -> None:
    raw = wb.message([(1, METADATA), (4, 1), (5, 1)])
    _assert_decodes(
        ls.StartCascadeRequest,
        raw,
        {
            "metadata": METADATA_DICT,
            "source": "CORTEX_TRAJECTORY_SOURCE_CASCADE_CLIENT",
            "trajectory_type": "CORTEX_TRAJECTORY_TYPE_USER_MAINLINE",
        },
    )


def _section(content: str) -> wb.Fields:
    return [(1, 1), (2, content)]


def _section_dict(content: str) -> dict[str, Any]:
    return {"mode": "SECTION_OVERRIDE_MODE_OVERRIDE", "content": content}


# Planner order on the wire (wire.md 2.4): 2, 35, 34, [15, 1], 6.
PLANNER: wb.Fields = [
    (2, [(4, 3), (10, _section(NO_TOOLS)), (12, _section(CONSTRAINT)), (13, _section(COMMUNICATION))]),
    (35, "MODEL_PRIVATE_2"),
    (34, "MODEL_PRIVATE_2"),
    (15, [(1, 353)]),
    (1, 353),
    (6, 32768),
]
CASCADE_CONFIG: wb.Fields = [(1, PLANNER), (7, [(1, 1)])]

# The native bridge labels steps with oneof numbers (wire.md 6.1): 28 = run_command, 14 = view_file.
RUN_COMMAND_STEP: wb.Fields = [
    (1, 28),
    (4, 3),
    (
        28,
        [
            (23, "ls -la src"),
            (2, WORKSPACE),
            (11, 1),
            (4, "total 8\nmain.py\n"),
            (5, "warning: ünïcode\n"),
            (6, 0),
            (21, [(1, "total 8\nmain.py\n"), (3, 2)]),
        ],
    ),
]
VIEW_FILE_STEP: wb.Fields = [
    (1, 14),
    (4, 3),
    (14, [(1, f"file://{WORKSPACE}/main.py"), (2, 1), (3, 20), (11, 0), (12, 20), (4, "print('héllo')\n")]),
]

SEND_DICT: dict[str, Any] = {
    "cascade_id": CASCADE_ID,
    "items": [{"text": PROMPT}],
    "metadata": METADATA_DICT,
    "cascade_config": {
        "planner_config": {
            "plan_model_deprecated": "MODEL_PRIVATE_2",
            "conversational": {
                "planner_mode": "CONVERSATIONAL_PLANNER_MODE_NO_TOOL",
                "tool_calling_section": _section_dict(NO_TOOLS),
                "additional_instructions_section": _section_dict(CONSTRAINT),
                "communication_section": _section_dict(COMMUNICATION),
            },
            "max_output_tokens": 32768,
            "requested_model_deprecated": {"model": "MODEL_PRIVATE_2"},
            "plan_model_uid": "MODEL_PRIVATE_2",
            "requested_model_uid": "MODEL_PRIVATE_2",
        },
        "brain_config": {"enabled": True},
    },
    "images": [
        {"base64_data": PNG_B64, "mime_type": "image/png"},
        {"base64_data": JPEG_B64, "mime_type": "image/jpeg"},
    ],
    "additional_steps": [
        {
            # 28 is COMMAND_STATUS in the enum; the body is what counts.
            "type": "CORTEX_STEP_TYPE_COMMAND_STATUS",
            "status": "CORTEX_STEP_STATUS_DONE",
            "run_command": {
                "command_line": "ls -la src",
                "cwd": WORKSPACE,
                "blocking": True,
                "stdout": "total 8\nmain.py\n",
                "stderr": "warning: ünïcode\n",
                "exit_code": 0,
                "combined_output": {"full": "total 8\nmain.py\n", "num_lines_above": 2},
            },
        },
        {
            "type": "CORTEX_STEP_TYPE_USER_INPUT",
            "status": "CORTEX_STEP_STATUS_DONE",
            "view_file": {
                "absolute_path_uri": f"file://{WORKSPACE}/main.py",
                "start_line": 1,
                "end_line": 20,
                "limit": 20,
                "content": "print('héllo')\n",
            },
        },
    ],
}


def test_send_user_cascade_message_request_as_the_client_emits_it() -> None:
    raw = wb.message(
        [
            (1, CASCADE_ID),
            (2, [(1, PROMPT)]),
            (3, METADATA),
            (5, CASCADE_CONFIG),
            (6, [(1, PNG_B64), (2, "image/png")]),
            (6, [(1, JPEG_B64), (2, "image/jpeg")]),
            (9, RUN_COMMAND_STEP),
            (9, VIEW_FILE_STEP),
        ]
    )
    message = _assert_decodes(ls.SendUserCascadeMessageRequest, raw, SEND_DICT)
    # The mislabelled type stays the opaque int the client wrote; the oneof names the real kind.
    run, view = message.additional_steps
    assert (run.type, run.WhichOneof("step")) == (28, "run_command")
    assert (view.type, view.WhichOneof("step")) == (14, "view_file")
    assert run.run_command.HasField("exit_code")  # optional int32: an explicit 0 is kept
    assert message.items[0].text == PROMPT
    planner = message.cascade_config.planner_config
    assert planner.WhichOneof("planner_type_config") == "conversational"
    assert not planner.HasField("allow_pending_steps")
    assert not message.cascade_config.HasField("memory_config")  # never emitted (wire.md 2.4)


def test_step_type_outside_the_enum_survives_as_an_int() -> None:
    # find is labelled 34 by the bridge; 34 is not a CortexStepType value (proto3 enums are open).
    raw = wb.message([(1, 34), (4, 3), (34, [(1, "*.py"), (10, WORKSPACE), (11, "main.py\n")])])
    message = _assert_decodes(
        cortex.CortexTrajectoryStep,
        raw,
        {
            "type": 34,
            "status": "CORTEX_STEP_STATUS_DONE",
            "find": {"pattern": "*.py", "search_directory": WORKSPACE, "raw_output": "main.py\n"},
        },
    )
    assert message.type == 34
    assert message.SerializeToString() == raw


def test_native_tool_config_presence_fields() -> None:
    # Native mode: zero-length LEN bodies mean "enabled with defaults" (wire.md 2.4).
    allow = ["view_file", "run_command", "grep_search_v2", "find", "list_dir"]
    tool_config: wb.Fields = [(8, b""), (10, b""), (19, b""), (33, b""), (5, b""), (13, b""), (37, b"")]
    tool_config = [*tool_config, *((32, name) for name in allow)]
    uid = "claude-sonnet-4-6"
    raw = wb.message([(2, [(4, 1)]), (35, uid), (34, uid), (6, 32768), (13, tool_config)])
    _assert_decodes(
        cortex.CascadePlannerConfig,
        raw,
        {
            "conversational": {"planner_mode": "CONVERSATIONAL_PLANNER_MODE_DEFAULT"},
            "max_output_tokens": 32768,
            "tool_config": {
                "find": {},
                "run_command": {},
                "view_file": {},
                "search_web": {},
                "list_dir": {},
                "tool_allowlist": allow,
                "grep_v2": {},
                "read_url_content": {},
            },
            "plan_model_uid": "claude-sonnet-4-6",
            "requested_model_uid": "claude-sonnet-4-6",
        },
    )


def test_get_cascade_trajectory_request() -> None:
    _assert_decodes(ls.GetCascadeTrajectoryRequest, wb.message([(1, CASCADE_ID)]), {"cascade_id": CASCADE_ID})


@pytest.mark.parametrize(
    ("message_type", "offset_name"),
    [
        (ls.GetCascadeTrajectoryStepsRequest, "step_offset"),
        (ls.GetCascadeTrajectoryGeneratorMetadataRequest, "generator_metadata_offset"),
    ],
)
def test_offset_requests_with_and_without_the_offset(message_type: type[Any], offset_name: str) -> None:
    without = wb.message([(1, CASCADE_ID)])  # offset 0 is omitted (wire.md 2.7, 2.8)
    _assert_decodes(message_type, without, {"cascade_id": CASCADE_ID})
    assert message_type(cascade_id=CASCADE_ID, **{offset_name: 0}).SerializeToString() == without
    with_offset = wb.message([(1, CASCADE_ID), (2, 300)])
    message = _assert_decodes(message_type, with_offset, {"cascade_id": CASCADE_ID, offset_name: 300})
    assert getattr(message, offset_name) == 300


def test_initialize_cascade_panel_state_request() -> None:
    raw = wb.message([(1, METADATA), (3, True)])
    _assert_decodes(ls.InitializeCascadePanelStateRequest, raw, {"metadata": METADATA_DICT, "workspace_trusted": True})


def test_add_tracked_workspace_request() -> None:
    _assert_decodes(ls.AddTrackedWorkspaceRequest, wb.message([(1, WORKSPACE)]), {"workspace": WORKSPACE})


def test_update_workspace_trust_request() -> None:
    raw = wb.message([(1, METADATA), (2, True)])
    _assert_decodes(ls.UpdateWorkspaceTrustRequest, raw, {"metadata": METADATA_DICT, "workspace_trusted": True})


@pytest.mark.parametrize("message_type", [ls.HeartbeatRequest, ls.GetUserStatusRequest])
def test_metadata_only_requests(message_type: type[Any]) -> None:
    _assert_decodes(message_type, wb.message([(1, METADATA)]), {"metadata": METADATA_DICT})


def test_handle_cascade_user_interaction_request() -> None:
    url = "https://docs.example.com/ünïcode?q=1&r=2"
    interaction: wb.Fields = [(1, TRAJECTORY_ID), (2, 7), (15, [(1, 1), (2, url), (3, "https://docs.example.com")])]
    _assert_decodes(
        ls.HandleCascadeUserInteractionRequest,
        wb.message([(1, CASCADE_ID), (2, interaction)]),
        {
            "cascade_id": CASCADE_ID,
            "interaction": {
                "trajectory_id": TRAJECTORY_ID,
                "step_index": 7,
                "read_url_content": {
                    "action": "READ_URL_CONTENT_ACTION_ALLOW_ONCE",
                    "url": url,
                    "origin": "https://docs.example.com",
                },
            },
        },
    )


def test_update_panel_state_with_user_status_request() -> None:
    # Field 2 is GetUserStatusResponse.user_status copied through as raw bytes (wire.md 2.9).
    user_status: wb.Fields = [
        (1, True),
        (3, "Ada Lovelace"),
        (5, "team-42"),
        (7, "ada@example.com"),
        (10, 3),
        (28, 150),
        (29, 2500),
        (34, [(1, 1_767_225_600), (2, 5)]),
        (35, 50),
    ]
    raw = wb.message([(1, METADATA), (2, wb.message(user_status))])
    _assert_decodes(
        ls.UpdatePanelStateWithUserStatusRequest,
        raw,
        {
            "metadata": METADATA_DICT,
            "user_status": {
                "pro": True,
                "name": "Ada Lovelace",
                "team_id": "team-42",
                "email": "ada@example.com",
                "teams_tier": 3,  # not in our TeamsTier subset: kept as the int
                "used_prompt_credits": 150,
                "used_flow_credits": 2500,
                "trial_end_time": {"seconds": 1_767_225_600, "nanos": 5},
                "max_premium_chat_messages": 50,
            },
        },
    )


def test_raw_get_chat_message_request() -> None:
    user: wb.Fields = [(1, "m-1"), (2, 1), (3, [(1, 1_767_225_600), (2, 10)]), (4, "conv-1"), (5, [(1, [(1, "Hi?")])])]
    assistant: wb.Fields = [(1, "m-2"), (2, 3), (3, [(1, 1_767_225_601)]), (4, "conv-1"), (6, [(1, [(1, "Hi! 👋")])])]
    raw = wb.message(
        [(1, METADATA), (2, user), (2, assistant), (3, "Answer briefly."), (4, 281), (5, "claude-4-sonnet")]
    )
    message = _assert_decodes(
        chat.RawGetChatMessageRequest,
        raw,
        {
            "metadata": METADATA_DICT,
            "chat_messages": [
                {
                    "message_id": "m-1",
                    "source": "CHAT_MESSAGE_SOURCE_USER",
                    "timestamp": {"seconds": 1_767_225_600, "nanos": 10},
                    "conversation_id": "conv-1",
                    "intent": {"generic": {"text": "Hi?"}},
                },
                {
                    "message_id": "m-2",
                    "source": "CHAT_MESSAGE_SOURCE_UNKNOWN",  # the client's "assistant" (wire.md 6.7)
                    "timestamp": {"seconds": 1_767_225_601},
                    "conversation_id": "conv-1",
                    "action": {"generic": {"text": "Hi! 👋"}},
                },
            ],
            "system_prompt_override": "Answer briefly.",
            "chat_model": "MODEL_CLAUDE_4_SONNET",
            "chat_model_name": "claude-4-sonnet",
        },
    )
    assert [m.WhichOneof("content") for m in message.chat_messages] == ["intent", "action"]


def test_every_request_type_has_a_golden_vector() -> None:
    covered = {
        ls.StartCascadeRequest,
        ls.SendUserCascadeMessageRequest,
        ls.GetCascadeTrajectoryRequest,
        ls.GetCascadeTrajectoryStepsRequest,
        ls.GetCascadeTrajectoryGeneratorMetadataRequest,
        ls.InitializeCascadePanelStateRequest,
        ls.AddTrackedWorkspaceRequest,
        ls.UpdateWorkspaceTrustRequest,
        ls.HeartbeatRequest,
        ls.GetUserStatusRequest,
        ls.UpdatePanelStateWithUserStatusRequest,
        ls.HandleCascadeUserInteractionRequest,
        chat.RawGetChatMessageRequest,
    }
    # The client never sends the Cancel* RPCs (wire.md 1.6); test_wire_rpcs covers them end to end.
    never_sent = {"CancelCascadeInvocation", "CancelCascadeInvocationAndWait", "CancelCascadeSteps"}
    missing = {n for n, rpc in RPCS.items() if rpc.request_type not in covered and n not in never_sent}
    assert not missing, f"add a golden vector for {sorted(missing)}"


# ---------------------------------------------------------------- responses the fake produces (wire.md 5)

ANSWER = "Hi! 4 — ünïcode ✓"
MINIMAL_STEP: wb.Fields = [(1, 15), (4, 3), (20, [(1, ANSWER)])]
USAGE: wb.Fields = [(2, 1719), (3, 25), (4, 7), (5, 100)]


def test_minimal_planner_step() -> None:
    raw = wb.message(MINIMAL_STEP)
    _assert_decodes(
        cortex.CortexTrajectoryStep,
        raw,
        {
            "type": "CORTEX_STEP_TYPE_PLANNER_RESPONSE",
            "status": "CORTEX_STEP_STATUS_DONE",
            "planner_response": {"response": ANSWER},
        },
    )
    assert fakels_steps.planner_step(ANSWER, "", done=True, modified_response=None).SerializeToString() == raw
    assert ls.GetCascadeTrajectoryStepsResponse(
        steps=[fakels_steps.planner_step(ANSWER, "", done=True, modified_response=None)]
    ).SerializeToString() == wb.message([(1, MINIMAL_STEP)])


def test_user_input_and_error_steps() -> None:
    user = wb.message([(1, 14), (4, 3), (19, [(2, "user: What is 2+2?")])])
    assert fakels_steps.user_input_step("What is 2+2?\nsecond line").SerializeToString() == user
    error = wb.message([(1, 17), (4, 3), (24, [(3, [(1, "model overloaded")])])])
    assert fakels_steps.error_step("model overloaded").SerializeToString() == error
    _assert_decodes(
        cortex.CortexTrajectoryStep,
        error,
        {
            "type": "CORTEX_STEP_TYPE_ERROR_MESSAGE",
            "status": "CORTEX_STEP_STATUS_DONE",
            "error_message": {"error": {"user_error_message": "model overloaded"}},
        },
    )


def test_trajectory_response() -> None:
    raw = wb.message([(1, [(1, TRAJECTORY_ID), (6, CASCADE_ID)]), (2, 1)])
    _assert_decodes(
        ls.GetCascadeTrajectoryResponse,
        raw,
        {"trajectory": {"trajectory_id": TRAJECTORY_ID, "cascade_id": CASCADE_ID}, "status": "CASCADE_RUN_STATUS_IDLE"},
    )
    ours = ls.GetCascadeTrajectoryResponse(
        trajectory=cortex.CortexTrajectory(trajectory_id=TRAJECTORY_ID, cascade_id=CASCADE_ID),
        status=cortex.CascadeRunStatus.CASCADE_RUN_STATUS_IDLE,
    )
    assert ours.SerializeToString() == raw


def test_generator_metadata_response() -> None:
    raw = wb.message([(1, [(1, [(4, USAGE)])])])
    _assert_decodes(
        ls.GetCascadeTrajectoryGeneratorMetadataResponse,
        raw,
        {
            "generator_metadata": [
                {
                    "chat_model": {
                        "usage": {
                            "input_tokens": 1719,
                            "output_tokens": 25,
                            "cache_write_tokens": 7,
                            "cache_read_tokens": 100,
                        }
                    }
                }
            ]
        },
    )
    usage = common.ModelUsageStats(input_tokens=1719, output_tokens=25, cache_write_tokens=7, cache_read_tokens=100)
    record = fakels_steps.generator_record(usage, "")
    assert ls.GetCascadeTrajectoryGeneratorMetadataResponse(generator_metadata=[record]).SerializeToString() == raw


def test_get_user_status_response_with_float_multipliers() -> None:
    # wire.md 2.9: PlanInfo 21 = AllowedModelConfig {1 ModelOrAlias, 2 credit_multiplier float (WT 5)}.
    plan_info: wb.Fields = [
        (2, "Pro"),
        (12, 500),
        (13, 1000),
        (21, [(1, [(1, 353)]), (2, 1.5)]),
        (21, [(1, [(3, "claude-sonnet-4-6")]), (2, 0.25)]),
        (32, True),
    ]
    raw = wb.message([(1, [(1, True), (3, "Ada"), (7, "ada@example.com")]), (2, plan_info)])
    assert wb.field(2, 1.5) == bytes.fromhex("150000c03f")
    _assert_decodes(
        ls.GetUserStatusResponse,
        raw,
        {
            "user_status": {"pro": True, "name": "Ada", "email": "ada@example.com"},
            "plan_info": {
                "plan_name": "Pro",
                "monthly_prompt_credits": 500,
                "monthly_flow_credits": 1000,
                "cascade_allowed_models_config": [
                    {"model_or_alias": {"model": "MODEL_PRIVATE_2"}, "credit_multiplier": 1.5},
                    {"model_or_alias": {"model_uid": "claude-sonnet-4-6"}, "credit_multiplier": 0.25},
                ],
                "has_paid_features": True,
            },
        },
    )


def _raw_call(channel: grpc.Channel, method: str, request: bytes, metadata: list[tuple[str, str]]) -> bytes:
    call = channel.unary_unary(RPCS[method].path)  # no (de)serializers: bytes in, bytes out
    response: bytes = call(request, metadata=metadata, timeout=10)
    return response


def test_the_running_fake_answers_the_minimal_payloads(
    fake_ls: FakeLSThread, channel: grpc.Channel, csrf: list[tuple[str, str]]
) -> None:
    """Request bytes from wire_bytes, response bytes from the fake over gRPC, compared byte for byte."""
    fake_ls.load_scenario(Scenario(turns=(Turn(chunks=(Chunk(text=ANSWER),), records=(Usage(1719, 25, 7, 100),)),)))
    start = _raw_call(channel, "StartCascade", wb.message([(1, METADATA), (4, 1), (5, 1)]), csrf)
    cascade_id = ls.StartCascadeResponse.FromString(start).cascade_id
    assert start == wb.message([(1, cascade_id)])
    send = wb.message([(1, cascade_id), (2, [(1, "What is 2+2?")]), (3, METADATA), (5, [(1, PLANNER[1:])])])
    assert _raw_call(channel, "SendUserCascadeMessage", send, csrf) == b""  # empty message

    statuses: list[int] = []
    for _ in range(20):
        _raw_call(channel, "GetCascadeTrajectorySteps", wb.message([(1, cascade_id)]), csrf)
        trajectory = ls.GetCascadeTrajectoryResponse.FromString(
            _raw_call(channel, "GetCascadeTrajectory", wb.message([(1, cascade_id)]), csrf)
        )
        statuses.append(trajectory.status)
        if statuses[-2:] == [1, 1]:
            break
    assert statuses[0] == cortex.CascadeRunStatus.CASCADE_RUN_STATUS_RUNNING  # RUNNING at least once,
    assert statuses[-2:] == [1, 1]  # then IDLE twice
    trajectory_id = trajectory.trajectory.trajectory_id
    assert _raw_call(channel, "GetCascadeTrajectory", wb.message([(1, cascade_id)]), csrf) == wb.message(
        [(1, [(1, trajectory_id), (6, cascade_id)]), (2, 1), (3, 2), (4, 1)]
    )
    user_step: wb.Fields = [(1, 14), (4, 3), (19, [(2, "user: What is 2+2?")])]
    steps = _raw_call(channel, "GetCascadeTrajectorySteps", wb.message([(1, cascade_id)]), csrf)
    assert steps == wb.message([(1, user_step), (1, MINIMAL_STEP)])
    steps_from_1 = _raw_call(channel, "GetCascadeTrajectorySteps", wb.message([(1, cascade_id), (2, 1)]), csrf)
    assert steps_from_1 == wb.message([(1, MINIMAL_STEP)])
    metadata = _raw_call(channel, "GetCascadeTrajectoryGeneratorMetadata", wb.message([(1, cascade_id)]), csrf)
    assert metadata == wb.message([(1, [(1, [(4, USAGE), (15, "MODEL_PRIVATE_2")])])])
