"""The Cascade client end to end against the fake LS over real gRPC (loopback, fast polling).

Each test scripts the fake's turns, runs the client and reads what the fake decoded from the wire
in its journal.
"""

from __future__ import annotations

import hashlib
import itertools
import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import grpc
import pytest

from engine.cascade_client import (
    CascadeClient,
    CascadeTurnRequest,
    CascadeTurnResult,
    LsEndpoint,
    RebuiltPrompt,
    ResumeState,
    default_retry_backoff,
)
from engine.errors import (
    CascadeModelError,
    EmptyCascadeIdError,
    LsCallError,
    RejectionClass,
    ResumeRejectedError,
)
from engine.ls_channel import CallTimeouts, LsChannel
from engine.ls_requests import ModelRef
from engine.polling import CascadeDelta, PollSettings
from fakels.journal import JournalEntry
from fakels.proto.exa.cortex_pb import cortex_pb2 as cortex
from fakels.proto.exa.language_server_pb import language_server_pb2 as ls
from fakels.scenario import (
    Chunk,
    Fault,
    FaultKind,
    NativeStep,
    ResponseOverride,
    Scenario,
    ToolCall,
    Turn,
    Usage,
    default_answer,
)
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


@pytest.fixture
def fake() -> Iterator[FakeLSThread]:
    with FakeLSThread(csrf_token=CSRF) as server:
        yield server


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


@pytest.fixture
def harness(fake: FakeLSThread) -> Iterator[Harness]:
    h = Harness(fake)
    yield h
    h.client.close()


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
    assert all(e.headers.get("x-codeium-csrf-token") == CSRF for e in fake.journal)
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


# ---------------------------------------------------------------------------------------------- errors


def test_an_error_step_raises_a_typed_model_error(fake: FakeLSThread, harness: Harness) -> None:
    fake.load_scenario(
        Scenario(turns=(Turn(chunks=(Chunk(text="Working"), Chunk(error="permission_denied: model not allowed\nx"))),))
    )
    with pytest.raises(CascadeModelError) as info:
        harness.turn("x")
    assert info.value.message == "permission_denied: model not allowed"
    assert info.value.kind == "model_error"
    assert info.value.cascade_id == "fakels-cascade-0001"
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
