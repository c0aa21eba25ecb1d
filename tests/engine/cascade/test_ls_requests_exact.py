"""The LS requests of one Cascade turn, read back by field number and compared with wire.md section 2.

Every request is serialised, parsed with the real generated class and compared as a whole, so a
field the builder must leave off (memory_config, an offset of 0, user_jwt without a token) is
pinned as absent as well.
"""

from __future__ import annotations

import itertools
import platform
from collections.abc import Sequence
from dataclasses import dataclass

import pytest

from engine.cascade import requests as rq
from fakels.proto.exa.codeium_common_pb import codeium_common_pb2 as common
from fakels.proto.exa.cortex_pb import cortex_pb2 as cortex
from tests.engine.ls_requests_exact_support import numbered

KEY = "sk-wire-test"
SESSION = "4e1f2a9c-0000-4000-8000-000000000001"
IDENTITY = rq.ClientIdentity(
    extension_version="1.9.9", os="linux", hardware="x86_64", request_id=itertools.count(7).__next__
)
META = {1: "windsurf", 2: "1.9.9", 3: KEY, 4: "en", 5: "linux", 7: "1.9.9", 8: "x86_64", 10: SESSION, 12: "windsurf"}
NO_TOOLS = {1: 1, 2: "No tools are available."}
ALL_NATIVE_TOOLS: dict[int, object] = {8: {}, 10: {}, 19: {}, 33: {}, 5: {}, 13: {}, 37: {}}


@dataclass(frozen=True)
class Img:
    base64_data: str
    mime_type: str


def _meta() -> common.Metadata:
    return rq.build_metadata(rq.ClientIdentity(request_id=lambda: 42), KEY, SESSION)


# ---------------------------------------------------------------------------- Metadata (wire.md 2.1)


def test_metadata_carries_the_identity_the_key_and_the_session() -> None:
    first = numbered(rq.build_metadata(IDENTITY, KEY, SESSION))
    second = numbered(rq.build_metadata(IDENTITY, KEY, SESSION))
    assert first == {**META, 9: 7}
    assert second == {**META, 9: 8}, "every request gets a fresh request id"


@pytest.mark.parametrize(("jwt", "extra"), [(None, {}), ("", {}), ("eyJ.jwt", {21: "eyJ.jwt"})])
def test_user_jwt_is_written_only_when_there_is_one(jwt: str | None, extra: dict[int, str]) -> None:
    identity = rq.ClientIdentity(
        extension_version="1.9.9", os="linux", hardware="x86_64", user_jwt=jwt, request_id=lambda: 7
    )
    assert numbered(rq.build_metadata(identity, KEY, SESSION)) == {**META, 9: 7, **extra}


@pytest.mark.parametrize(("env", "version"), [("3.1.4", "3.1.4"), ("", "2.0.67"), (None, "2.0.67")])
def test_the_extension_version_comes_from_the_environment_or_defaults_to_2_0_67(
    env: str | None, version: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if env is None:
        monkeypatch.delenv("WINDSURF_CLIENT_VERSION", raising=False)
    else:
        monkeypatch.setenv("WINDSURF_CLIENT_VERSION", env)
    identity = rq.ClientIdentity()
    assert (identity.ide_name, identity.extension_name, identity.locale) == ("windsurf", "windsurf", "en")
    assert identity.extension_version == version


@pytest.mark.parametrize(
    ("system", "expected"), [("Darwin", "macos"), ("Windows", "windows"), ("Linux", "linux"), ("FreeBSD", "linux")]
)
def test_the_default_os_names_the_platform_as_windsurf_does(
    system: str, expected: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(platform, "system", lambda: system)
    assert rq.ClientIdentity().os == expected


@pytest.mark.parametrize(
    ("machine", "expected"),
    [("arm64", "arm64"), ("aarch64", "arm64"), ("ARM64", "arm64"), ("x86_64", "x86_64"), ("AMD64", "x86_64")],
)
def test_the_default_hardware_is_arm64_or_x86_64(machine: str, expected: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(platform, "machine", lambda: machine)
    assert rq.ClientIdentity().hardware == expected


def test_default_request_ids_are_random_integers_below_2_to_the_48() -> None:
    identity = rq.ClientIdentity()
    ids = [identity.request_id() for _ in range(64)]
    assert all(0 <= i < 1 << 48 for i in ids)
    # With 64 uniform draws, all of them below 2^47 has probability 2^-64: the range is the full 48 bits.
    assert any(i >= 1 << 47 for i in ids)
    assert len(set(ids)) == len(ids)


def test_identities_differing_only_in_their_request_id_source_are_equal() -> None:
    one = rq.ClientIdentity(os="linux", hardware="x86_64", request_id=lambda: 1)
    other = rq.ClientIdentity(os="linux", hardware="x86_64", request_id=lambda: 2)
    assert one == other
    assert "request_id" not in repr(one)


# ---------------------------------------------------------------------------- warm-up (wire.md 2.9) and start (2.2)


def test_the_workspace_is_a_plain_path_named_after_the_key_digest() -> None:
    assert rq.workspace_path("sk-test") == "/home/user/projects/workspace-f3abf2a6cc4f0098"
    assert rq.workspace_path("ключ") == "/home/user/projects/workspace-1de36a32af798da0"
    assert numbered(rq.add_tracked_workspace_request("sk-test")) == {
        1: "/home/user/projects/workspace-f3abf2a6cc4f0098"
    }


def test_warm_up_requests_match_the_wire_tables() -> None:
    meta = _meta()
    expected_meta = numbered(meta)
    assert numbered(rq.initialize_panel_request(meta)) == {1: expected_meta, 3: True}
    assert numbered(rq.update_workspace_trust_request(meta)) == {1: expected_meta, 2: True}
    assert numbered(rq.heartbeat_request(meta)) == {1: expected_meta}


def test_start_cascade_is_a_cascade_client_user_mainline_trajectory() -> None:
    meta = _meta()
    assert numbered(rq.start_cascade_request(meta)) == {1: numbered(meta), 4: 1, 5: 1}


# ---------------------------------------------------------------------------- poll requests (2.6, 2.7, 2.8)


@pytest.mark.parametrize(("offset", "expected"), [(0, {1: "c-1"}), (1, {1: "c-1", 2: 1}), (37, {1: "c-1", 2: 37})])
def test_poll_offsets_are_omitted_when_zero(offset: int, expected: dict[int, object]) -> None:
    assert numbered(rq.steps_request("c-1", offset)) == expected
    assert numbered(rq.generator_metadata_request("c-1", offset)) == expected


def test_the_status_request_names_only_the_cascade() -> None:
    assert numbered(rq.trajectory_request("c-9")) == {1: "c-9"}


# ---------------------------------------------------------------------------- model reference (2.5)


@pytest.mark.parametrize(("uid", "enum"), [(None, 0), ("", 0), (None, -1), ("", -5)])
def test_a_model_needs_a_uid_or_a_positive_enum(uid: str | None, enum: int) -> None:
    with pytest.raises(ValueError, match=r"^a Cascade model needs a model uid or an enum value > 0 \(got neither\)$"):
        rq.ModelRef(uid=uid, enum=enum)


@pytest.mark.parametrize(("uid", "enum"), [("m", 0), (None, 1), ("m", 353)])
def test_a_uid_or_a_positive_enum_is_enough(uid: str | None, enum: int) -> None:
    assert rq.ModelRef(uid=uid, enum=enum).enum == enum


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        (rq.ModelRef(uid="claude-sonnet-4-6"), {35: "claude-sonnet-4-6", 34: "claude-sonnet-4-6"}),
        (rq.ModelRef(enum=1), {15: {1: 1}, 1: 1}),
        (
            rq.ModelRef(uid="MODEL_PRIVATE_2", enum=353),
            {35: "MODEL_PRIVATE_2", 34: "MODEL_PRIVATE_2", 15: {1: 353}, 1: 353},
        ),
        (rq.ModelRef(uid="", enum=281), {15: {1: 281}, 1: 281}),
    ],
)
def test_the_planner_names_the_model_by_uid_and_by_enum_when_positive(
    model: rq.ModelRef, expected: dict[int, object]
) -> None:
    planner = numbered(rq.cascade_config(rq.PlannerOptions(model=model)))[1]
    assert {k: v for k, v in planner.items() if k in (1, 15, 34, 35)} == expected


# ---------------------------------------------------------------------------- CascadeConfig (2.4)


@pytest.mark.parametrize(
    ("native", "planner_default", "mode"), [(False, False, 3), (True, False, 1), (False, True, 1), (True, True, 1)]
)
def test_planner_mode_is_no_tool_unless_native_or_planner_default(
    native: bool, planner_default: bool, mode: int
) -> None:
    options = rq.PlannerOptions(model=rq.ModelRef(uid="m"), native_mode=native, planner_default=planner_default)
    assert options.planner_mode == mode


UID = "claude-sonnet-4-6"
MODEL = {35: UID, 34: UID, 6: 32768}


@pytest.mark.parametrize(
    ("native", "planner_default", "preamble", "conversational"),
    [
        (False, False, "", {4: 3, 10: NO_TOOLS}),
        (False, False, "TOOLS: x", {4: 3, 12: {1: 1, 2: "TOOLS: x"}}),
        (False, True, "", {4: 1}),
        (False, True, "TOOLS: y", {4: 1, 12: {1: 1, 2: "TOOLS: y"}}),
    ],
)
def test_emulated_mode_config(
    native: bool, planner_default: bool, preamble: str, conversational: dict[int, object]
) -> None:
    options = rq.PlannerOptions(
        model=rq.ModelRef(uid=UID), native_mode=native, planner_default=planner_default, tool_preamble=preamble
    )
    # memory_config (5) never reaches the wire; brain_config is {1: true} only.
    assert numbered(rq.cascade_config(options)) == {1: {2: conversational, **MODEL}, 7: {1: True}}


def test_native_mode_enables_the_bridge_tools_with_the_default_allowlist() -> None:
    options = rq.PlannerOptions(model=rq.ModelRef(uid=UID), native_mode=True)
    tools = {**ALL_NATIVE_TOOLS, 32: ["view_file", "run_command", "grep_search_v2", "find", "list_dir"]}
    assert numbered(rq.cascade_config(options)) == {1: {2: {4: 1}, **MODEL, 13: tools}, 7: {1: True}}


def test_native_mode_writes_a_given_allowlist_in_order() -> None:
    options = rq.PlannerOptions(model=rq.ModelRef(uid=UID), native_mode=True, tool_allowlist=("find", "view_file"))
    assert numbered(rq.cascade_config(options))[1][13] == {**ALL_NATIVE_TOOLS, 32: ["find", "view_file"]}


# ---------------------------------------------------------------------------- SendUserCascadeMessage (2.3)


def _send(images: Sequence[rq.ImageLike] = (), steps: Sequence[rq.AdditionalStep] = ()) -> dict[int, object]:
    options = rq.PlannerOptions(model=rq.ModelRef(uid=UID))
    request = rq.send_request(
        cascade_id="c-7", text="hello\nworld", meta=_meta(), options=options, images=images, additional_steps=steps
    )
    return numbered(request)


def test_send_holds_one_text_item_the_metadata_and_the_config() -> None:
    config = numbered(rq.cascade_config(rq.PlannerOptions(model=rq.ModelRef(uid=UID))))
    assert _send() == {1: "c-7", 2: [{1: "hello\nworld"}], 3: numbered(_meta()), 5: config}


def test_send_images_keep_their_order_and_default_to_png() -> None:
    images = [Img("QUFB", "image/jpeg"), Img("QkJC", ""), Img("Q0ND", "image/webp")]
    assert _send(images=images)[6] == [
        {1: "QUFB", 2: "image/jpeg"},
        {1: "QkJC", 2: "image/png"},
        {1: "Q0ND", 2: "image/webp"},
    ]


def test_send_additional_steps_accept_messages_and_bytes_and_skip_empty_ones() -> None:
    done = cortex.CortexStepStatus.CORTEX_STEP_STATUS_DONE
    run = cortex.CortexStepType.CORTEX_STEP_TYPE_RUN_COMMAND
    view = cortex.CortexStepType.CORTEX_STEP_TYPE_VIEW_FILE
    command = cortex.CortexStepRunCommand(stdout="ok")
    as_message = cortex.CortexTrajectoryStep(type=run, status=done, run_command=command)
    as_bytes = cortex.CortexTrajectoryStep(
        type=view, status=done, view_file=cortex.CortexStepViewFile(content="x")
    ).SerializeToString()
    steps: list[rq.AdditionalStep] = [cortex.CortexTrajectoryStep(), as_message, b"", as_bytes]
    assert _send(steps=steps)[9] == [{1: 21, 4: 3, 28: {4: "ok"}}, {1: 8, 4: 3, 14: {4: "x"}}]


def test_a_send_with_only_empty_steps_has_no_field_9() -> None:
    assert 9 not in _send(steps=[b"", cortex.CortexTrajectoryStep()])
