"""The Cascade client end to end against the fake LS over real gRPC: fresh turns and errors.

Each test scripts the fake's turns, runs the client and reads what the fake decoded from the wire
in its journal. Resumes and offsets are in test_cascade_client_resume.py.
"""

from __future__ import annotations

import hashlib
import time
from typing import Any

import grpc
import pytest

from engine.cascade.channel import CallTimeouts, LsChannel
from engine.cascade.client import CascadeTurnRequest
from engine.cascade.errors import CascadeModelError, EmptyCascadeIdError, LsCallError
from engine.cascade.polling import CascadeDelta, PollSettings
from engine.cascade.requests import ModelRef
from fakels.proto.exa.language_server_pb import language_server_pb2 as ls
from fakels.scenario import Chunk, NativeStep, Scenario, ToolCall, Turn, Usage
from fakels.server import FakeLSThread
from tests.engine.cascade_support import (
    API_KEY,
    CSRF,
    META_RPC,
    SEND_RPC,
    STEPS_RPC,
    WARMUP,
    Harness,
    Image,
    meta_offsets,
    step_offsets,
)

# ---------------------------------------------------------------------------------------------- fresh


def test_fresh_turn_end_to_end(fake: FakeLSThread, harness: Harness) -> None:
    fake.load_scenario(
        Scenario(
            turns=(
                Turn(
                    chunks=(Chunk(thinking="plan"), Chunk(text="Hello "), Chunk(text="world")),
                    records=(Usage(input_tokens=12, output_tokens=3, cache_read_tokens=7),),
                ),
            )
        )
    )
    images = (Image("aW1hZ2Ux", "image/jpeg"), Image("aW1hZ2Uy", "image/png"))
    deltas: list[CascadeDelta] = []

    result = harness.turn("What is 2+2?", images=images, on_delta=deltas.append)

    assert result.text == "Hello world"
    assert result.thinking == "plan"
    assert result.tool_calls == ()
    assert result.end_reason == "idle_done"
    assert result.usage is not None
    assert (result.usage.input_tokens, result.usage.output_tokens, result.usage.cache_read_tokens) == (12, 3, 7)
    assert result.usage_source == "generator_metadata"
    assert (result.step_offset_next, result.generator_offset_next) == (2, 1)
    assert result.session_id == "session-1"
    assert not result.reuse_entry_invalidated
    assert not result.history_rebuilt
    assert not result.resumed
    assert "".join(d.text for d in deltas if d.kind == "text") == "Hello world"

    methods = fake.journal.methods()
    assert methods[:6] == [*WARMUP, "StartCascade", SEND_RPC]
    polls = methods[6:-2]
    assert polls
    assert polls == ["GetCascadeTrajectorySteps", "GetCascadeTrajectory"] * (len(polls) // 2)
    assert methods[-2:] == [STEPS_RPC, META_RPC]  # the final sweep, then usage
    assert all(
        e.headers.get("x-codeium-csrf-token") == f"<redacted: matches, {len(CSRF)} characters>" for e in fake.journal
    )
    assert all(e.status == "OK" and not e.unknown_fields for e in fake.journal)
    assert all("grpc-timeout" not in e.headers for e in fake.journal)

    init, workspace, trust, heartbeat = (fake.journal.requests(m)[0] for m in WARMUP)
    assert init["workspace_trusted"] is True
    assert init["metadata"]["session_id"] == "session-1"
    digest = hashlib.sha256(API_KEY.encode()).hexdigest()[:16]
    assert workspace == {"workspace": f"/home/user/projects/workspace-{digest}"}
    assert trust["workspace_trusted"] is True
    assert heartbeat["metadata"]["api_key"] == API_KEY

    start = fake.journal.requests("StartCascade")[0]
    assert start["source"] == "CORTEX_TRAJECTORY_SOURCE_CASCADE_CLIENT"
    assert start["trajectory_type"] == "CORTEX_TRAJECTORY_TYPE_USER_MAINLINE"

    send = fake.journal.requests(SEND_RPC)[0]
    assert set(send) == {"cascade_id", "items", "metadata", "cascade_config", "images"}
    assert send["cascade_id"] == result.cascade_id
    assert send["items"] == [{"text": "What is 2+2?"}]
    meta = send["metadata"]
    assert {k: meta[k] for k in ("ide_name", "extension_name", "locale", "api_key", "session_id")} == {
        "ide_name": "windsurf",
        "extension_name": "windsurf",
        "locale": "en",
        "api_key": API_KEY,
        "session_id": "session-1",
    }
    assert meta["extension_version"] == meta["ide_version"]
    assert 0 < meta["request_id"] < 2**48
    assert send["cascade_config"] == {
        "planner_config": {
            "conversational": {
                "planner_mode": "CONVERSATIONAL_PLANNER_MODE_NO_TOOL",
                "tool_calling_section": {
                    "mode": "SECTION_OVERRIDE_MODE_OVERRIDE",
                    "content": "No tools are available.",
                },
            },
            "requested_model_uid": "claude-sonnet-4-6",
            "plan_model_uid": "claude-sonnet-4-6",
            "requested_model_deprecated": {"model": "MODEL_CLAUDE_4_SONNET"},
            "plan_model_deprecated": "MODEL_CLAUDE_4_SONNET",
            "max_output_tokens": 32768,
        },
        "brain_config": {"enabled": True},
    }
    assert send["images"] == [
        {"base64_data": "aW1hZ2Ux", "mime_type": "image/jpeg"},
        {"base64_data": "aW1hZ2Uy", "mime_type": "image/png"},
    ]
    assert step_offsets(fake.journal.requests(STEPS_RPC)) == [0] * len(fake.journal.requests(STEPS_RPC))
    assert meta_offsets(fake.journal.requests(META_RPC)) == [0]


def test_planner_default_tool_preamble_and_uid_only_model(fake: FakeLSThread, harness: Harness) -> None:
    harness.client.run_turn(
        CascadeTurnRequest(api_key=API_KEY, model=ModelRef(uid="MODEL_PRIVATE_11"), text="look", planner_default=True)
    )
    harness.turn("call a tool", tool_preamble="You may call <tool_call>...</tool_call>")
    sends = fake.journal.requests(SEND_RPC)
    planner = sends[0]["cascade_config"]["planner_config"]
    assert planner["conversational"] == {"planner_mode": "CONVERSATIONAL_PLANNER_MODE_DEFAULT"}
    assert "requested_model_deprecated" not in planner
    assert "plan_model_deprecated" not in planner
    assert planner["requested_model_uid"] == planner["plan_model_uid"] == "MODEL_PRIVATE_11"
    conversational = sends[1]["cascade_config"]["planner_config"]["conversational"]
    assert conversational == {
        "planner_mode": "CONVERSATIONAL_PLANNER_MODE_NO_TOOL",
        "additional_instructions_section": {
            "mode": "SECTION_OVERRIDE_MODE_OVERRIDE",
            "content": "You may call <tool_call>...</tool_call>",
        },
    }


def test_warm_up_is_cached_per_ls_and_session_and_forced_rewarm_starts_a_new_session(
    fake: FakeLSThread, harness: Harness
) -> None:
    first = harness.turn("one")
    second = harness.turn("two")
    assert fake.journal.methods().count("InitializeCascadePanelState") == 1
    assert first.session_id == second.session_id == "session-1"

    assert harness.client.warm_up(API_KEY) == "session-1"  # cached: no call
    assert harness.client.warm_up(API_KEY, force=True) == "session-2"
    inits = fake.journal.requests("InitializeCascadePanelState")
    assert [r["metadata"]["session_id"] for r in inits] == ["session-1", "session-2"]
    assert [e.method for e in fake.journal.entries()[-4:]] == WARMUP
    third = harness.turn("three")
    assert third.session_id == "session-2"
    assert fake.journal.methods().count("InitializeCascadePanelState") == 2


def test_native_mode_surfaces_the_first_native_proposal_and_ends_the_turn(fake: FakeLSThread, harness: Harness) -> None:
    fake.load_scenario(
        Scenario(
            turns=(
                Turn(
                    chunks=(
                        Chunk(text="Let me look."),
                        Chunk(native=NativeStep(kind="run_command", body={"command_line": "ls -la"})),
                        Chunk(text=" never reached"),
                    )
                ),
            )
        )
    )
    result = harness.turn("list files", native_mode=True, tool_preamble="ignored in native mode")
    assert result.end_reason == "native_tool_call"
    (call,) = result.native_tool_calls
    assert call.id == "native:run_command:2"
    assert call.name == "run_command"
    assert call.native_proposal
    assert '"command_line":"ls -la"' in call.arguments_json
    planner = fake.journal.requests(SEND_RPC)[0]["cascade_config"]["planner_config"]
    assert planner["conversational"] == {"planner_mode": "CONVERSATIONAL_PLANNER_MODE_DEFAULT"}
    assert planner["tool_config"]["tool_allowlist"] == [
        "view_file",
        "run_command",
        "grep_search_v2",
        "find",
        "list_dir",
    ]


def test_tool_call_proposals_are_collected_once_each(fake: FakeLSThread, harness: Harness) -> None:
    call = ToolCall(id="call_1", name="get_weather", arguments_json='{"city":"Oslo"}')
    fake.load_scenario(
        Scenario(turns=(Turn(chunks=(Chunk(text="Checking."), Chunk(tool_call=call), Chunk(text=" Done."))),))
    )
    result = harness.turn("weather?")
    assert result.text == "Checking. Done."
    assert [(c.id, c.name, c.arguments_json, c.source) for c in result.tool_calls] == [
        ("call_1", "get_weather", '{"city":"Oslo"}', "proposal")
    ]


def test_modified_response_extending_the_answer_is_appended_at_the_end(fake: FakeLSThread, harness: Harness) -> None:
    fake.load_scenario(Scenario(turns=(Turn(chunks=(Chunk(text="Draft"),), modified_response="Draft, polished [1]"),)))
    assert harness.turn("x").text == "Draft, polished [1]"


# ---------------------------------------------------------------------------------------------- errors


def test_an_error_step_raises_a_typed_model_error(fake: FakeLSThread, harness: Harness) -> None:
    fake.load_scenario(
        Scenario(turns=(Turn(chunks=(Chunk(text="Working"), Chunk(error="permission_denied: model not allowed\nx"))),))
    )
    with pytest.raises(CascadeModelError) as info:
        harness.turn("x")
    assert info.value.message == "permission_denied: model not allowed"
    assert info.value.kind == "model_error"
    assert info.value.cascade_id == (fake.journal.last("StartCascade").response or {}).get("cascade_id")
    assert info.value.session_id == "session-1"
    assert META_RPC not in fake.journal.methods()


def test_a_wrong_csrf_token_surfaces_the_ls_message(fake: FakeLSThread) -> None:
    harness = Harness(fake, csrf="wrong-token")
    try:
        with pytest.raises(LsCallError) as info:
            harness.turn("x")
    finally:
        harness.client.close()
    assert info.value.method == "StartCascade"
    assert "invalid CSRF token" in info.value.details
    assert info.value.code == "UNAUTHENTICATED"


def test_empty_cascade_id_is_a_typed_error(
    fake: FakeLSThread, harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_call = LsChannel.call

    def call(self: LsChannel, method: str, request: Any, response_type: Any, timeout_s: float) -> Any:
        if method == "StartCascade":
            return ls.StartCascadeResponse()
        return real_call(self, method, request, response_type, timeout_s)

    monkeypatch.setattr(LsChannel, "call", call)
    with pytest.raises(EmptyCascadeIdError, match="StartCascade returned empty cascade_id"):
        harness.turn("x")


def test_the_overall_cap_ends_a_turn_that_never_finishes(fake: FakeLSThread) -> None:
    fake.load_scenario(Scenario(turns=(Turn(chunks=(Chunk(text="slow"), Chunk(text=" never", delay_s=60.0))),)))
    harness = Harness(fake, poll=PollSettings(poll_interval_s=0.005, max_wait_s=0.3))
    began = time.monotonic()
    try:
        result = harness.turn("x")
    finally:
        harness.client.close()
    assert time.monotonic() - began < 3.0
    assert result.end_reason == "max_wait"
    assert result.text == "slow"


def test_a_call_that_never_answers_times_out_and_is_cancelled() -> None:
    """Client-side timers: the call fails with DEADLINE_EXCEEDED well before the server answers."""

    def never(request: bytes, context: grpc.ServicerContext) -> bytes:
        time.sleep(2.0)
        return b""

    handler = grpc.method_handlers_generic_handler(
        "exa.language_server_pb.LanguageServerService",
        {"Heartbeat": grpc.unary_unary_rpc_method_handler(never)},
    )
    from concurrent.futures import ThreadPoolExecutor

    server = grpc.server(ThreadPoolExecutor(max_workers=2))
    server.add_generic_rpc_handlers((handler,))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    channel = LsChannel(f"127.0.0.1:{port}", CSRF)
    try:
        began = time.monotonic()
        with pytest.raises(LsCallError) as info:
            channel.call("Heartbeat", ls.HeartbeatRequest(), ls.HeartbeatResponse, 0.2)
        assert time.monotonic() - began < 1.5
        assert info.value.timed_out
        assert info.value.method == "Heartbeat"
    finally:
        channel.close()
        server.stop(None)


def test_call_timeouts_default_to_the_reference_values() -> None:
    assert CallTimeouts() == CallTimeouts(default_s=30.0, warmup_s=5.0, generator_metadata_s=5.0, interaction_s=10.0)
