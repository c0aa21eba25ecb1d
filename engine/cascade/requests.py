"""Builders for the LS requests of one Cascade turn (wire.md section 2), as protobuf messages.

Field numbers live in ``fakels/proto``; this module decides only which fields are set and to what.
Python's protobuf runtime serialises fields in field-number order, whereas the reference client
writes the planner config as 2, 35, 34, 15, 1, 6: the decoded message is the same, only the byte
order of the planner fields differs.
"""

from __future__ import annotations

import hashlib
import os
import platform
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from fakels.proto.exa.codeium_common_pb import codeium_common_pb2 as common
from fakels.proto.exa.cortex_pb import cortex_pb2 as cortex
from fakels.proto.exa.language_server_pb import language_server_pb2 as ls

DEFAULT_EXTENSION_VERSION = "2.0.67"
MAX_OUTPUT_TOKENS = 32768
NO_TOOLS_TEXT = "No tools are available."
NATIVE_TOOL_ALLOWLIST = ("view_file", "run_command", "grep_search_v2", "find", "list_dir")

PLANNER_MODE_DEFAULT = common.ConversationalPlannerMode.CONVERSATIONAL_PLANNER_MODE_DEFAULT
PLANNER_MODE_NO_TOOL = common.ConversationalPlannerMode.CONVERSATIONAL_PLANNER_MODE_NO_TOOL
_OVERRIDE = cortex.SectionOverrideMode.SECTION_OVERRIDE_MODE_OVERRIDE
_SOURCE_CASCADE_CLIENT = cortex.CortexTrajectorySource.CORTEX_TRAJECTORY_SOURCE_CASCADE_CLIENT
_TYPE_USER_MAINLINE = cortex.CortexTrajectoryType.CORTEX_TRAJECTORY_TYPE_USER_MAINLINE


def _default_os() -> str:
    system = platform.system().lower()
    return {"darwin": "macos", "windows": "windows"}.get(system, "linux")


def _default_hardware() -> str:
    return "arm64" if platform.machine().lower() in ("arm64", "aarch64") else "x86_64"


def _default_request_id() -> int:
    return random.SystemRandom().randrange(1 << 48)


@dataclass(frozen=True)
class ClientIdentity:
    """What the gateway says about itself in every ``Metadata`` (wire.md section 2.1)."""

    ide_name: str = "windsurf"
    extension_name: str = "windsurf"
    extension_version: str = field(
        default_factory=lambda: os.environ.get("WINDSURF_CLIENT_VERSION") or DEFAULT_EXTENSION_VERSION
    )
    locale: str = "en"
    os: str = field(default_factory=_default_os)
    hardware: str = field(default_factory=_default_hardware)
    user_jwt: str | None = None
    request_id: Callable[[], int] = field(default=_default_request_id, compare=False, repr=False)


def build_metadata(identity: ClientIdentity, api_key: str, session_id: str) -> common.Metadata:
    """A fresh ``Metadata`` (new request id) for one request."""
    meta = common.Metadata(
        ide_name=identity.ide_name,
        extension_version=identity.extension_version,
        api_key=api_key,
        locale=identity.locale,
        os=identity.os,
        ide_version=identity.extension_version,
        hardware=identity.hardware,
        request_id=identity.request_id(),
        session_id=session_id,
        extension_name=identity.extension_name,
    )
    if identity.user_jwt:
        meta.user_jwt = identity.user_jwt
    return meta


def workspace_path(api_key: str) -> str:
    """The tracked workspace of an account: a plain path, not a file:// URI."""
    digest = hashlib.sha256(api_key.encode("utf-8")).hexdigest()[:16]
    return f"/home/user/projects/workspace-{digest}"


# ---------------------------------------------------------------------------- warm-up


def initialize_panel_request(meta: common.Metadata) -> ls.InitializeCascadePanelStateRequest:
    return ls.InitializeCascadePanelStateRequest(metadata=meta, workspace_trusted=True)


def add_tracked_workspace_request(api_key: str) -> ls.AddTrackedWorkspaceRequest:
    return ls.AddTrackedWorkspaceRequest(workspace=workspace_path(api_key))


def update_workspace_trust_request(meta: common.Metadata) -> ls.UpdateWorkspaceTrustRequest:
    return ls.UpdateWorkspaceTrustRequest(metadata=meta, workspace_trusted=True)


def heartbeat_request(meta: common.Metadata) -> ls.HeartbeatRequest:
    return ls.HeartbeatRequest(metadata=meta)


# ---------------------------------------------------------------------------- cascade


def start_cascade_request(meta: common.Metadata) -> ls.StartCascadeRequest:
    return ls.StartCascadeRequest(metadata=meta, source=_SOURCE_CASCADE_CLIENT, trajectory_type=_TYPE_USER_MAINLINE)


@dataclass(frozen=True)
class ModelRef:
    """How the planner is told which model to run: a catalog uid, a legacy enum, or both."""

    uid: str | None = None
    enum: int = 0

    def __post_init__(self) -> None:
        if not self.uid and self.enum <= 0:
            raise ValueError("a Cascade model needs a model uid or an enum value > 0 (got neither)")


@dataclass(frozen=True)
class PlannerOptions:
    """The switches the CascadeConfig depends on.

    ``planner_default`` is the prompt builder's verdict (current-turn images without a tool
    preamble); ``native_mode`` is the native tool bridge; ``tool_preamble`` is the emulated-tools
    instruction block (empty when there are no tools, and always empty in native mode).
    """

    model: ModelRef
    native_mode: bool = False
    planner_default: bool = False
    tool_preamble: str = ""
    tool_allowlist: Sequence[str] = NATIVE_TOOL_ALLOWLIST

    @property
    def planner_mode(self) -> int:
        return PLANNER_MODE_DEFAULT if self.native_mode or self.planner_default else PLANNER_MODE_NO_TOOL


def cascade_config(options: PlannerOptions) -> cortex.CascadeConfig:
    """CascadeConfig (Send field 5): planner config, and brain config ``{enabled: true}``.

    memory_config is never on the wire (the reference client's ``{1: false}`` encodes to nothing).
    """
    mode = options.planner_mode
    conversational = cortex.CascadeConversationalPlannerConfig(planner_mode=mode)  # type: ignore[arg-type]
    if mode == PLANNER_MODE_NO_TOOL and not options.tool_preamble:
        conversational.tool_calling_section.CopyFrom(
            cortex.SectionOverrideConfig(mode=_OVERRIDE, content=NO_TOOLS_TEXT)
        )
    if options.tool_preamble:
        conversational.additional_instructions_section.CopyFrom(
            cortex.SectionOverrideConfig(mode=_OVERRIDE, content=options.tool_preamble)
        )
    planner = cortex.CascadePlannerConfig(conversational=conversational, max_output_tokens=MAX_OUTPUT_TOKENS)
    model = options.model
    if model.uid:
        planner.requested_model_uid = model.uid
        planner.plan_model_uid = model.uid
    if model.enum > 0:
        planner.requested_model_deprecated.model = model.enum  # type: ignore[assignment]
        planner.plan_model_deprecated = model.enum  # type: ignore[assignment]
    if options.native_mode:
        tools = planner.tool_config
        for name in ("run_command", "view_file", "list_dir", "grep_v2", "find", "search_web", "read_url_content"):
            getattr(tools, name).SetInParent()
        tools.tool_allowlist.extend(options.tool_allowlist)
    return cortex.CascadeConfig(planner_config=planner, brain_config=cortex.BrainConfig(enabled=True))


class ImageLike(Protocol):
    """Any image the prompt builder returns: base64 data and a MIME type."""

    @property
    def base64_data(self) -> str: ...

    @property
    def mime_type(self) -> str: ...


AdditionalStep = cortex.CortexTrajectoryStep | bytes


def _step_message(step: AdditionalStep) -> cortex.CortexTrajectoryStep:
    if isinstance(step, bytes):
        return cortex.CortexTrajectoryStep.FromString(step)
    return step


def send_request(
    *,
    cascade_id: str,
    text: str,
    meta: common.Metadata,
    options: PlannerOptions,
    images: Sequence[ImageLike] = (),
    additional_steps: Sequence[AdditionalStep] = (),
) -> ls.SendUserCascadeMessageRequest:
    """SendUserCascadeMessage: fields 1, 2 (exactly one text item), 3, 5, then 6 and 9 when given.

    Images keep the order given; empty additional steps are skipped, as the reference writer does.
    """
    request = ls.SendUserCascadeMessageRequest(
        cascade_id=cascade_id,
        items=[common.TextOrScopeItem(text=text)],
        metadata=meta,
        cascade_config=cascade_config(options),
    )
    for image in images:
        request.images.add(base64_data=image.base64_data, mime_type=image.mime_type or "image/png")
    for step in additional_steps:
        message = _step_message(step)
        if message.ByteSize() > 0:
            request.additional_steps.append(message)
    return request


def steps_request(cascade_id: str, step_offset: int) -> ls.GetCascadeTrajectoryStepsRequest:
    """Field 2 stays off the wire when the offset is 0 (proto3 default)."""
    return ls.GetCascadeTrajectoryStepsRequest(cascade_id=cascade_id, step_offset=step_offset)


def trajectory_request(cascade_id: str) -> ls.GetCascadeTrajectoryRequest:
    return ls.GetCascadeTrajectoryRequest(cascade_id=cascade_id)


def generator_metadata_request(cascade_id: str, offset: int) -> ls.GetCascadeTrajectoryGeneratorMetadataRequest:
    return ls.GetCascadeTrajectoryGeneratorMetadataRequest(cascade_id=cascade_id, generator_metadata_offset=offset)
