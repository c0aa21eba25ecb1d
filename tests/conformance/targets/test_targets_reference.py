"""The embedded reference target: its ``ls.*`` operations (fakels) and ``engine.*`` operations (the
engine's pure pieces and a played conversation), called directly in this process."""

from __future__ import annotations

import base64
import contextlib
from collections.abc import Iterator
from typing import Any

import pytest

from conformance.operations import OPERATIONS
from conformance.targets import PythonTarget
from conformance.targets.reference import REFERENCE_CSRF_TOKEN, ReferenceTarget, make_target
from fakels.decoder import decode
from fakels.proto.exa.codeium_common_pb import codeium_common_pb2 as common
from fakels.proto.exa.cortex_pb import cortex_pb2 as cortex
from fakels.proto.exa.language_server_pb import language_server_pb2 as ls
from fakels.rpcs import RPCS
from tests.support.imagegen import b64, solid

IDENTITY = {
    "ide_name": "windsurf",
    "extension_version": "2.0.67",
    "api_key": "conformance-api-key",
    "locale": "en",
    "os": "linux",
    "ide_version": "2.0.67",
    "hardware": "x86_64",
    "request_id": 1,
    "session_id": "conformance-session",
    "extension_name": "windsurf",
}


@pytest.fixture
def reference() -> Iterator[ReferenceTarget]:
    target = make_target()
    yield target
    target.close()


def decoded_send(request_b64: str) -> dict[str, Any]:
    fields: dict[str, Any] = decode(RPCS["SendUserCascadeMessage"].request_type, base64.b64decode(request_b64)).fields
    return fields


# ---------------------------------------------------------------------- capabilities, ls.*


def test_capabilities_name_the_decoders_methods_the_log_fault_the_hang_up_and_every_optional_field(
    reference: ReferenceTarget,
) -> None:
    assert reference.capabilities("ls.decode_request") == {"methods": sorted(RPCS)}
    assert reference.capabilities("session.commit") == {"fail_log_write": True}
    assert reference.capabilities("gateway.chat") == {"hang_up": True}
    for name, op in OPERATIONS.items():
        if name not in {"ls.decode_request", "session.commit", "gateway.chat"}:
            expected = {"observes": list(op.optional)} if op.optional else {}
            assert reference.capabilities(name) == expected, name


def test_decoding_names_known_fields_and_rejects_the_rest(reference: ReferenceTarget) -> None:
    raw = ls.HeartbeatRequest(metadata=common.Metadata(api_key="k")).SerializeToString() + b"\xa8\x1f\x05"
    assert reference.ls_decode_request("Heartbeat", base64.b64encode(raw).decode()) == {
        "fields": {"metadata": {"api_key": "k"}},
        "unknown": [{"path": "<root>", "number": 501, "wire_type": "varint", "value": 5}],
    }
    assert reference.ls_decode_request("Nope", "") == {"rejected": "unknown method 'Nope'"}
    rejected = reference.ls_decode_request("Heartbeat", base64.b64encode(b"\xff").decode())
    assert rejected["rejected"].startswith("proto: cannot parse invalid wire-format data")


def test_a_served_ls_journals_what_it_received_and_stops(reference: ReferenceTarget) -> None:
    import grpc

    from fakels.proto.exa.language_server_pb import language_server_pb2_grpc as ls_grpc

    served = reference.ls_serve({"turns": []}, manual_clock=False)
    assert served["csrf_token"] == REFERENCE_CSRF_TOKEN == "conformance-reference-token"
    with grpc.insecure_channel(served["address"]) as channel:
        stub = ls_grpc.LanguageServerServiceStub(channel)
        metadata = (("x-codeium-csrf-token", REFERENCE_CSRF_TOKEN),)
        stub.Heartbeat(ls.HeartbeatRequest(), metadata=metadata, timeout=5)
        stub.Heartbeat(ls.HeartbeatRequest(), metadata=metadata, timeout=5)
    entries = reference.ls_journal(0)["entries"]
    assert [e["method"] for e in entries] == ["Heartbeat", "Heartbeat"]
    assert [e["method"] for e in reference.ls_journal(entries[1]["seq"])["entries"]] == ["Heartbeat"]
    with pytest.raises(RuntimeError) as info:
        reference.ls_advance_clock(1.0)
    assert str(info.value) == "ls.advance_clock needs a server started with manual_clock=true"
    assert reference.ls_stop() == {}
    with pytest.raises(RuntimeError) as info:
        reference.ls_journal(0)
    assert str(info.value) == "no language server is being served: call ls.serve first"
    assert reference.ls_stop() == {}


def test_the_clock_cannot_be_advanced_before_a_server_is_served(reference: ReferenceTarget) -> None:
    with pytest.raises(RuntimeError) as info:
        reference.ls_advance_clock(1.0)
    assert str(info.value) == "ls.advance_clock needs a server started with manual_clock=true"


def test_a_served_ls_checks_its_csrf_token(reference: ReferenceTarget) -> None:
    import grpc

    from fakels.proto.exa.language_server_pb import language_server_pb2_grpc as ls_grpc

    served = reference.ls_serve({"turns": []}, manual_clock=False)
    with grpc.insecure_channel(served["address"]) as channel:
        stub = ls_grpc.LanguageServerServiceStub(channel)
        with pytest.raises(grpc.RpcError):
            stub.Heartbeat(ls.HeartbeatRequest(), metadata=(("x-codeium-csrf-token", "wrong"),), timeout=5)


def test_a_bad_scenario_is_named_as_the_ls_serve_scenario(reference: ReferenceTarget) -> None:
    from fakels.scenario import ScenarioError

    with pytest.raises(ScenarioError) as info:
        reference.ls_serve({"turns": "no"}, manual_clock=False)
    assert str(info.value).startswith("ls.serve scenario: ")


def test_a_manual_clock_moves_only_when_advanced(reference: ReferenceTarget) -> None:
    """The served fake reads the manual clock: its journal times move by exactly what was advanced."""
    import grpc

    from fakels.proto.exa.language_server_pb import language_server_pb2_grpc as ls_grpc

    served = reference.ls_serve({"turns": []}, manual_clock=True)
    with grpc.insecure_channel(served["address"]) as channel:
        stub = ls_grpc.LanguageServerServiceStub(channel)
        metadata = (("x-codeium-csrf-token", REFERENCE_CSRF_TOKEN),)
        stub.Heartbeat(ls.HeartbeatRequest(), metadata=metadata, timeout=5)
        stub.Heartbeat(ls.HeartbeatRequest(), metadata=metadata, timeout=5)
        assert reference.ls_advance_clock(2.5) == {}
        stub.Heartbeat(ls.HeartbeatRequest(), metadata=metadata, timeout=5)
    times = [entry["time"] for entry in reference.ls_journal(0)["entries"]]
    assert [later - times[0] for later in times] == [0.0, 0.0, 2.5]
    reference.ls_serve({"turns": []}, manual_clock=False)
    assert reference._clock is None


# ---------------------------------------------------------------------- engine.*


def test_a_send_is_built_with_the_fixed_identity(reference: ReferenceTarget) -> None:
    built = reference.engine_build_send_request(
        [{"role": "user", "content": "hi"}], "claude-x", "", native_mode=False, is_resume=False, env={}
    )
    assert built["attached"] == 0
    assert built["drops"] == {"cap": 0, "bytes": 0, "truncated": 0, "no_vision": 0, "unextractable": 0}
    fields = decoded_send(built["request_b64"])
    assert fields["cascade_id"] == "conformance-cascade"
    assert fields["metadata"] == IDENTITY
    assert fields["items"] == [
        {"text": "[Context: The underlying model serving this request is claude-x, developed by Anthropic.]\n\nhi"}
    ]
    planner = fields["cascade_config"]["planner_config"]
    assert planner["plan_model_uid"] == planner["requested_model_uid"] == "claude-x"


TOOL_HISTORY: list[dict[str, Any]] = [
    {"role": "user", "content": "look it up"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "view_file", "arguments": '{"AbsolutePath": "/a"}'}}
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "found"},
]


def test_native_mode_sends_tool_history_as_steps_without_the_preamble(reference: ReferenceTarget) -> None:
    preamble = "You may call lookup(query)."
    native = decoded_send(
        reference.engine_build_send_request(TOOL_HISTORY, "claude-x", preamble, True, False, {})["request_b64"]
    )
    emulated = decoded_send(
        reference.engine_build_send_request(TOOL_HISTORY, "claude-x", preamble, False, False, {})["request_b64"]
    )
    assert native.get("additional_steps")
    assert "additional_steps" not in emulated
    assert native["cascade_config"]["planner_config"]["conversational"] == {
        "planner_mode": "CONVERSATIONAL_PLANNER_MODE_DEFAULT"
    }
    emulated_planner = emulated["cascade_config"]["planner_config"]["conversational"]
    assert emulated_planner["planner_mode"] == "CONVERSATIONAL_PLANNER_MODE_NO_TOOL"
    assert preamble in emulated_planner["additional_instructions_section"]["content"]
    assert preamble not in str(native)
    assert preamble in str(emulated)
    assert native["cascade_config"]["planner_config"]["tool_config"]["tool_allowlist"] == [
        "view_file",
        "run_command",
        "grep_search_v2",
        "find",
        "list_dir",
    ]
    assert "tool_config" not in emulated["cascade_config"]["planner_config"]


def test_current_turn_images_without_tools_ask_for_the_default_planner(reference: ReferenceTarget) -> None:
    """The prompt builder's planner verdict reaches the send's CascadeConfig (emulated mode, no preamble)."""
    part = {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{b64(solid(8, 8))}"}}
    messages = [{"role": "user", "content": [{"type": "text", "text": "look"}, part]}]
    fields = decoded_send(
        reference.engine_build_send_request(messages, "claude-x", "", False, False, {})["request_b64"]
    )
    assert len(fields["images"]) == 1
    assert fields["cascade_config"]["planner_config"]["conversational"] == {
        "planner_mode": "CONVERSATIONAL_PLANNER_MODE_DEFAULT"
    }


def test_history_image_limits_come_from_the_env(reference: ReferenceTarget) -> None:
    png = b64(solid(8, 8))
    part = {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{png}"}}
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": [part]},
        {"role": "assistant", "content": "ok"},
        {"role": "user", "content": [{"type": "text", "text": "again"}, part]},
    ]
    default = reference.engine_build_send_request(messages, "claude-sonnet-4-6", "", False, False, {})
    capped = reference.engine_build_send_request(
        messages, "claude-sonnet-4-6", "", False, False, {"CASCADE_MAX_HISTORY_IMAGES": "0"}
    )
    assert default["attached"] >= 1
    assert (capped["attached"], capped["drops"]) != (default["attached"], default["drops"])


HISTORY_IMAGE: list[dict[str, Any]] = [
    {"role": "system", "content": "SYS"},
    {
        "role": "user",
        "content": [
            {"type": "text", "text": "first"},
            {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{b64(solid(64, 32))}"}},
        ],
    },
    {"role": "assistant", "content": "ok"},
    {"role": "user", "content": "again"},
]


@pytest.mark.parametrize(
    ("preamble", "native", "resume", "attached", "no_vision", "text_start"),
    [
        ("", False, False, 1, 0, "SYS\n[Context: "),
        ("P", False, False, 0, 1, "SYS\n[Context: "),
        ("P", True, False, 1, 0, "SYS\n[Context: "),
        ("", False, True, 0, 0, "again"),
    ],
)
def test_history_images_follow_the_tool_mode_and_a_resume_sends_only_the_newest_turn(
    reference: ReferenceTarget,
    preamble: str,
    native: bool,
    resume: bool,
    attached: int,
    no_vision: int,
    text_start: str,
) -> None:
    built = reference.engine_build_send_request(HISTORY_IMAGE, "claude-sonnet-4-6", preamble, native, resume, {})
    assert (built["attached"], built["drops"]["no_vision"]) == (attached, no_vision)
    assert len(decoded_send(built["request_b64"]).get("images", [])) == attached
    assert decoded_send(built["request_b64"])["items"][0]["text"].startswith(text_start)


def test_image_settings_come_from_the_env(reference: ReferenceTarget) -> None:
    default = reference.engine_build_send_request(HISTORY_IMAGE, "claude-sonnet-4-6", "", False, False, {})
    small = reference.engine_build_send_request(
        HISTORY_IMAGE, "claude-sonnet-4-6", "", False, False, {"WINDSURFAPI_IMAGE_MAX_LONG_SIDE": "8"}
    )
    assert small["attached"] == default["attached"] == 1
    assert small["request_b64"] != default["request_b64"]  # resized to the long side of 8


def test_generator_metadata_usage_is_summed(reference: ReferenceTarget) -> None:
    meta = cortex.ChatModelMetadata(model_uid="M")
    meta.usage.CopyFrom(
        common.ModelUsageStats(input_tokens=5, output_tokens=7, cache_write_tokens=2, cache_read_tokens=3)
    )
    record = cortex.CortexStepGeneratorMetadata(chat_model=meta)
    raw = ls.GetCascadeTrajectoryGeneratorMetadataResponse(generator_metadata=[record, record]).SerializeToString()
    usage = reference.engine_parse_generator_metadata(base64.b64encode(raw).decode())["usage"]
    assert (usage["input_tokens"], usage["output_tokens"], usage["cache_write_tokens"], usage["cache_read_tokens"]) == (
        10,
        14,
        4,
        6,
    )
    assert reference.engine_parse_generator_metadata("") == {"usage": None}


@pytest.mark.parametrize(("step", "generator"), [(0, None), (3, None), (2, 5), (7, 0)])
def test_store_offsets_come_back_as_checked_in(reference: ReferenceTarget, step: int, generator: int | None) -> None:
    assert reference.engine_store_offsets(step, generator) == {"step_offset": step, "generator_offset": generator}


@pytest.mark.parametrize(
    ("native", "planner_mode"),
    [(False, "CONVERSATIONAL_PLANNER_MODE_NO_TOOL"), (True, "CONVERSATIONAL_PLANNER_MODE_DEFAULT")],
)
def test_played_turns_resume_the_same_cascade(reference: ReferenceTarget, native: bool, planner_mode: str) -> None:
    served = reference.ls_serve({"turns": [{"chunks": [{"text": "one"}]}, {"chunks": [{"text": "two"}]}]}, False)
    turns = [[{"role": "user", "content": "first"}], [{"role": "user", "content": "second"}]]
    played = reference.engine_play_turns(served["address"], served["csrf_token"], "claude-sonnet-4-6", native, turns)
    first, second = played["turns"]
    assert (first["text"], second["text"]) == ("one", "two")
    assert (first["resumed"], second["resumed"]) == (False, True)
    assert first["cascade_id"] == second["cascade_id"]
    assert second["step_offset_next"] > first["step_offset_next"]
    assert (first["generator_offset_next"], second["generator_offset_next"]) == (1, 2)
    assert first["reuse_entry_invalidated"] is False
    sends = [e for e in reference.ls_journal(0)["entries"] if e["method"] == "SendUserCascadeMessage"]
    assert len(sends) == 2
    for send in sends:
        metadata = send["request"]["metadata"]
        assert {k: v for k, v in metadata.items() if k != "session_id"} == {
            k: v for k, v in IDENTITY.items() if k != "session_id"
        }
        assert send["request"]["cascade_config"]["planner_config"]["conversational"]["planner_mode"] == planner_mode


def test_a_turn_whose_cascade_is_rejected_is_retried_on_fresh_cascades(reference: ReferenceTarget) -> None:
    scenario = {
        "turns": [
            {"chunks": [{"text": "one"}], "expire_after": True},
            {"fault": {"kind": "panel_lost"}},
            {"fault": {"kind": "untrusted"}},
            {"chunks": [{"text": "two"}]},
        ]
    }
    served = reference.ls_serve(scenario, False)
    turns = [[{"role": "user", "content": "a"}], [{"role": "user", "content": "b"}]]
    played = reference.engine_play_turns(served["address"], served["csrf_token"], "claude-sonnet-4-6", False, turns)
    assert [turn["text"] for turn in played["turns"]] == ["one", "two"]
    assert played["turns"][1]["reuse_entry_invalidated"] is True
    sends = [e["status"] for e in reference.ls_journal(0)["entries"] if e["method"] == "SendUserCascadeMessage"]
    assert sends == ["OK", "NOT_FOUND", "NOT_FOUND", "FAILED_PRECONDITION", "OK"]


def test_inside_impatient_a_rate_limit_of_the_served_gateway_comes_back_as_it_came() -> None:
    """The reference reaches its gateway through the kit's HTTP client, which waits rate limits out: a property
    judging how a rate limit is passed on (TURN-3) asks for the first answer through ``impatient()``, which the
    python target forwards. Outside it, the LS's rate limit is waited out and the retry answered."""
    target = PythonTarget(make_target(), "python:conformance.targets.reference:make_target")
    limited = {
        "rpc": "GetCascadeTrajectorySteps",
        "call": 0,
        "error_code": "RESOURCE_EXHAUSTED",
        "error_message": "quota",
    }
    turn = {"chunks": [{"text": "answered"}], "records": [{"input_tokens": 5, "output_tokens": 3}]}
    # Each limited turn is used up: the first request meets one, the second one too and then the answer.
    scenario = {"turns": [{**turn, "overrides": [limited]}, {**turn, "overrides": [limited]}, turn]}
    try:
        served = target.call("ls.serve", scenario=scenario, manual_clock=False)
        defaults = target.call("gateway.start", ls_address=served["address"], csrf_token=served["csrf_token"])
        request = {"model": defaults["model"], "messages": [{"role": "user", "content": "hello"}], "stream": False}
        key = defaults["api_keys"][0]
        answers = []
        for impatient in (True, False):
            with target.impatient() if impatient else contextlib.nullcontext():
                answers.append(target.call("gateway.chat", request=request, api_key=key)["status"])
    finally:
        target.close()
    assert answers == [429, 200]
