"""The gRPC client to the Cascade language server: warm-up, StartCascade, Send, polling until the
turn is done (wire.md section 3's done rule) and the generator-metadata usage read."""

from __future__ import annotations

import hashlib
import random
import re
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import grpc

from fakels.proto.exa.codeium_common_pb import codeium_common_pb2 as common
from fakels.proto.exa.cortex_pb import cortex_pb2 as cortex
from fakels.proto.exa.language_server_pb import language_server_pb2 as ls
from fakels.proto.exa.language_server_pb import language_server_pb2_grpc as ls_grpc
from tests.support.foreigngw.images import Picture
from tests.support.foreigngw.settings import Settings

ACCOUNT_KEY = "foreigngw-account"
CLIENT_VERSION = "2.0.67"
CSRF_HEADER = "x-codeium-csrf-token"
EXPIRED = re.compile(
    r"not_found.*(cascade|trajectory)|(cascade|trajectory).*not[ _-]?found|expired.*cascade|unknown.*cascade",
    re.IGNORECASE,
)
IDLE = cortex.CascadeRunStatus.CASCADE_RUN_STATUS_IDLE
ERROR_STEP = cortex.CortexStepType.CORTEX_STEP_TYPE_ERROR_MESSAGE
MODE_DEFAULT = common.ConversationalPlannerMode.CONVERSATIONAL_PLANNER_MODE_DEFAULT
MODE_NO_TOOL = common.ConversationalPlannerMode.CONVERSATIONAL_PLANNER_MODE_NO_TOOL
IDLE_GRACE_S = 8.0
# Through a silence (the LS working without a visible step) the polls slow down, doubling up to this; any growth
# brings them back to the configured interval.
SLOWEST_POLL_S = 0.025
CALL_TIMEOUT_S = 30.0
WARM_TIMEOUT_S = 5.0

# What one poll found: the growth of the reasoning and of the answer's text (either may be "").
OnGrowth = Callable[[str, str], None]


class UpstreamError(Exception):
    """An LS call answered with a gRPC error (or an unusable answer)."""

    def __init__(self, method: str, code: str, details: str) -> None:
        super().__init__(f"{method} failed: {code}: {details}")
        self.method = method
        self.code = code
        self.details = details

    @property
    def expired(self) -> bool:
        """The cascade is gone (expired or unknown): a resume may recover with a fresh one."""
        return EXPIRED.search(self.details) is not None


class ModelError(Exception):
    """The turn ended with an error step."""


@dataclass(frozen=True)
class Polled:
    text: str
    step_offset: int  # the absolute offset the next turn on this cascade polls from
    cut: bool = False  # the wait cap ended the turn while the LS still ran


@dataclass(frozen=True)
class Usage:
    records: int
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int


class LsClient:
    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self._channel = grpc.insecure_channel(settings.ls_address)
        self._stub = ls_grpc.LanguageServerServiceStub(self._channel)
        self._md = [(CSRF_HEADER, settings.csrf_token)]
        self._session = str(uuid.uuid4())
        self._warm = False
        self._warm_lock = threading.Lock()

    def close(self) -> None:
        self._channel.close()

    def _meta(self) -> common.Metadata:
        return common.Metadata(
            ide_name="windsurf",
            extension_version=CLIENT_VERSION,
            api_key=ACCOUNT_KEY,
            locale="en",
            os="linux",
            ide_version=CLIENT_VERSION,
            hardware="x86_64",
            request_id=random.randrange(1 << 48),
            session_id=self._session,
            extension_name="windsurf",
        )

    def _call(self, method: str, request: Any, timeout: float = CALL_TIMEOUT_S) -> Any:
        try:
            return getattr(self._stub, method)(request, metadata=self._md, timeout=timeout)
        except grpc.RpcError as exc:
            code = exc.code().name if exc.code() is not None else "UNKNOWN"
            raise UpstreamError(method, code, exc.details() or "") from exc

    def warm_up(self) -> None:
        """Once per process: panel state, the tracked workspace, workspace trust, a heartbeat."""
        with self._warm_lock:
            if self._warm:
                return
            workspace = "/home/user/projects/workspace-" + hashlib.sha256(ACCOUNT_KEY.encode()).hexdigest()[:16]
            meta = self._meta()
            self._call(
                "InitializeCascadePanelState",
                ls.InitializeCascadePanelStateRequest(metadata=meta, workspace_trusted=True),
                WARM_TIMEOUT_S,
            )
            self._call("AddTrackedWorkspace", ls.AddTrackedWorkspaceRequest(workspace=workspace), WARM_TIMEOUT_S)
            self._call(
                "UpdateWorkspaceTrust",
                ls.UpdateWorkspaceTrustRequest(metadata=meta, workspace_trusted=True),
                WARM_TIMEOUT_S,
            )
            self._call("Heartbeat", ls.HeartbeatRequest(metadata=meta), WARM_TIMEOUT_S)
            self._warm = True

    def start(self) -> str:
        request = ls.StartCascadeRequest(
            metadata=self._meta(),
            source=cortex.CortexTrajectorySource.CORTEX_TRAJECTORY_SOURCE_CASCADE_CLIENT,
            trajectory_type=cortex.CortexTrajectoryType.CORTEX_TRAJECTORY_TYPE_USER_MAINLINE,
        )
        cascade_id = str(self._call("StartCascade", request).cascade_id)
        if not cascade_id:
            raise UpstreamError("StartCascade", "OK", "StartCascade returned empty cascade_id")
        return cascade_id

    def send(self, cascade_id: str, text: str, images: Sequence[Picture], model: str, *, tools: bool) -> None:
        mode = MODE_DEFAULT if images and not tools else MODE_NO_TOOL
        planner = cortex.CascadePlannerConfig(
            conversational=cortex.CascadeConversationalPlannerConfig(planner_mode=mode),
            requested_model_uid=model,
            plan_model_uid=model,
            max_output_tokens=32768,
        )
        request = ls.SendUserCascadeMessageRequest(
            cascade_id=cascade_id,
            items=[common.TextOrScopeItem(text=text)],
            metadata=self._meta(),
            cascade_config=cortex.CascadeConfig(planner_config=planner, brain_config=cortex.BrainConfig(enabled=True)),
            images=[common.ImageData(base64_data=p.b64, mime_type=p.mime) for p in images],
        )
        self._call("SendUserCascadeMessage", request)

    def _steps(self, cascade_id: str, offset: int) -> list[cortex.CortexTrajectoryStep]:
        request = ls.GetCascadeTrajectoryStepsRequest(cascade_id=cascade_id, step_offset=offset)
        return list(self._call("GetCascadeTrajectorySteps", request).steps)

    def _status(self, cascade_id: str) -> int:
        request = ls.GetCascadeTrajectoryRequest(cascade_id=cascade_id)
        return int(self._call("GetCascadeTrajectory", request).status)

    def run_turn(self, cascade_id: str, offset: int, on_growth: OnGrowth | None = None) -> Polled:
        """Poll from ``offset`` until the turn is done; ``on_growth`` gets what each poll found."""
        interval = delay = self._settings.poll_interval_s
        started = last_growth = time.monotonic()
        saw_active, idle_polls, text, thinking, seen_steps, cut = False, 0, "", "", -1, False
        while True:
            time.sleep(delay)
            steps = self._steps(cascade_id, offset)
            _raise_error_step(steps)
            grown = _answer(steps, final=False)
            now = time.monotonic()
            grew = grown != text or len(steps) != seen_steps
            if grew:
                last_growth = now
            thinking, text = _emit((thinking, text), (_thinking(steps), grown), on_growth)
            seen_steps = len(steps)
            if now - started > self._settings.max_wait_s:
                cut = True  # the hard cap: what the turn said so far is the answer, cut
                break
            if self._status(cascade_id) != IDLE:
                saw_active, idle_polls = True, 0
                delay = interval if grew else min(2 * delay, max(interval, SLOWEST_POLL_S))
                continue
            delay = interval  # the turn may be over: its end is seen at the configured pace
            if not saw_active and now - started < IDLE_GRACE_S:
                continue
            idle_polls += 1
            quiet = time.monotonic() - last_growth > 2 * interval
            if (text and idle_polls >= 2 and quiet) or (not text and idle_polls >= 4):
                break
        final = self._steps(cascade_id, offset)
        _raise_error_step(final)
        _, text = _emit((thinking, text), (_thinking(final), _answer(final, final=True)), on_growth)
        return Polled(text, offset + max(len(final), seen_steps), cut)

    def usage(self, cascade_id: str, offset: int) -> Usage | None:
        """The generator records from ``offset`` (records without usage counted too); None when the
        read fails (usage is then unknown, the offset unchanged)."""
        request = ls.GetCascadeTrajectoryGeneratorMetadataRequest(
            cascade_id=cascade_id, generator_metadata_offset=offset
        )
        try:
            records = list(
                self._call("GetCascadeTrajectoryGeneratorMetadata", request, WARM_TIMEOUT_S).generator_metadata
            )
        except UpstreamError:
            return None
        figures = [r.chat_model.usage for r in records if r.HasField("chat_model") and r.chat_model.HasField("usage")]
        return Usage(
            records=len(records),
            input_tokens=sum(int(u.input_tokens) for u in figures),
            output_tokens=sum(int(u.output_tokens) for u in figures),
            cache_read_tokens=sum(int(u.cache_read_tokens) for u in figures),
        )


def _answer(steps: Sequence[cortex.CortexTrajectoryStep], *, final: bool) -> str:
    """The planner text of the steps; at the end a modified response that extends it wins."""
    parts = []
    for step in steps:
        if step.HasField("planner_response"):
            body = step.planner_response
            modified = body.modified_response
            use_modified = final and modified.startswith(body.response) and len(modified) > len(body.response)
            parts.append(modified if use_modified else body.response)
    return "".join(parts)


def _thinking(steps: Sequence[cortex.CortexTrajectoryStep]) -> str:
    return "".join(step.planner_response.thinking for step in steps if step.HasField("planner_response"))


def _grown(sent: str, now: str) -> str:
    return now[len(sent) :] if len(now) > len(sent) and now.startswith(sent) else ""


def _emit(sent: tuple[str, str], now: tuple[str, str], on_growth: OnGrowth | None) -> tuple[str, str]:
    """Tell ``on_growth`` what grew since ``sent`` (reasoning, text); ``now`` is what is sent after."""
    thinking, text = _grown(sent[0], now[0]), _grown(sent[1], now[1])
    if on_growth is not None and (thinking or text):
        on_growth(thinking, text)
    return now


def _raise_error_step(steps: Sequence[cortex.CortexTrajectoryStep]) -> None:
    for step in steps:
        if step.type != ERROR_STEP:
            continue
        details = step.error_message.error if step.HasField("error_message") else step.error
        message = details.user_error_message or details.short_error or details.full_error
        if message:
            raise ModelError(message.splitlines()[0][:300])
