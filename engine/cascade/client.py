"""The Cascade client: one turn against a language server, from warm-up to usage.

Flow of :meth:`CascadeClient.run_turn` (wire.md sections 1.6, 3, 4; engine.md sections 1.A.4, 2, 6):

1. Warm-up, once per LS and session (cached): InitializeCascadePanelState, AddTrackedWorkspace,
   UpdateWorkspaceTrust, Heartbeat. A forced re-warm starts a new session id.
2. A fresh turn calls StartCascade; a resumed turn reuses the stored cascade id and session, sends
   only the newest turn's text, and polls from the stored absolute offsets (offsets the pool does
   not have are counted first with offset-0 snapshots).
3. SendUserCascadeMessage. When the LS rejects it (or the StartCascade) with a panel-missing,
   expired-cascade or untrusted-workspace text, the client re-warms, starts a fresh cascade, sends
   the full history (the caller's rebuild callable, called once), resets both offsets to a known 0,
   and tries again: at most 3 retries, 250 ms x n backoff from the second retry on.
4. The polling loop and done rule (:mod:`engine.cascade.polling`).
5. GetCascadeTrajectoryGeneratorMetadata from the generator offset for usage; the next offset is
   the start plus the number of records, usage or not. An unknown start abstains from asking.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Protocol, TypeVar

from google.protobuf.message import Message

from engine.cascade import requests as rq
from engine.cascade.channel import CallTimeouts, LsChannel
from engine.cascade.errors import (
    CascadeError,
    EmptyCascadeIdError,
    LsCallError,
    RejectionClass,
    ResumeRejectedError,
    resets_warmup,
)
from engine.cascade.polling import CascadeDelta, EndReason, PollSettings, poll_turn
from engine.cascade.requests import AdditionalStep, ClientIdentity, ImageLike, ModelRef, PlannerOptions
from engine.cascade.steps_delta import additional_steps_for
from engine.cascade.trajectory import CascadeToolCall, StepUsage
from engine.cascade.usage import (
    GeneratorUsage,
    TurnOffsets,
    billable_usage,
    metadata_request_offset,
    next_generator_offset,
    next_step_offset,
    parse_generator_metadata,
    resume_offsets,
    usage_log_line,
)
from fakels.proto.exa.codeium_common_pb import codeium_common_pb2 as common
from fakels.proto.exa.cortex_pb import cortex_pb2 as cortex
from fakels.proto.exa.language_server_pb import language_server_pb2 as ls

log = logging.getLogger("engine.cascade")
M = TypeVar("M", bound=Message)

MAX_REJECTION_RETRIES = 3


def default_retry_backoff(retry: int) -> float:
    """Seconds to wait before the ``retry``-th retry (1-based): none before the first, 250 ms x n after."""
    return 0.25 * retry if retry >= 2 else 0.0


@dataclass(frozen=True)
class LsEndpoint:
    address: str  # "host:port"
    csrf_token: str


class PromptLike(Protocol):
    """What the rebuild callable returns: :class:`engine.prompt.build.PromptBuild` fits."""

    @property
    def text(self) -> str: ...

    @property
    def images(self) -> Sequence[ImageLike]: ...

    @property
    def planner_default(self) -> bool: ...


@dataclass(frozen=True)
class RebuiltPrompt:
    """A minimal :class:`PromptLike` for callers that do not use the prompt builder."""

    text: str
    images: Sequence[ImageLike] = ()
    planner_default: bool = False


@dataclass(frozen=True)
class ResumeState:
    """A pooled cascade to continue. ``None`` offsets are unknown: the step offset is then counted
    with an offset-0 steps snapshot, the generator offset with an offset-0 metadata snapshot (and
    when that snapshot is unreadable the turn abstains from reading usage)."""

    cascade_id: str
    session_id: str
    step_offset: int | None = None
    generator_offset: int | None = None


@dataclass(frozen=True)
class CascadeTurnRequest:
    """One turn. ``text`` / ``images`` / ``planner_default`` come from the prompt builder: the
    full history for a fresh cascade, the newest turn only for a resume. ``rebuild`` returns the
    full-history build for a resume the LS rejects (called at most once).

    ``additional_steps`` is the full mapped tool history (field 9); ``additional_steps_from`` the
    start of the newest round: a resumed trajectory gets ``additional_steps[from:]``, a fresh one
    (including the fresh restart after a rejected resume) the full list.
    """

    api_key: str
    model: ModelRef
    text: str
    images: Sequence[ImageLike] = ()
    planner_default: bool = False
    native_mode: bool = False
    tool_preamble: str = ""
    additional_steps: Sequence[AdditionalStep] = ()
    additional_steps_from: int | None = None
    resume: ResumeState | None = None
    rebuild: Callable[[], PromptLike] | None = None
    # Characters of the whole conversation, for the cold-stall limit; defaults to len(text).
    prompt_chars: int | None = None
    abort: threading.Event | None = None
    on_delta: Callable[[CascadeDelta], None] | None = None


@dataclass(frozen=True)
class CascadeTurnResult:
    text: str
    thinking: str
    tool_calls: tuple[CascadeToolCall, ...]
    usage: GeneratorUsage | None
    cascade_id: str
    session_id: str
    step_offset_next: int
    generator_offset_next: int | None
    reuse_entry_invalidated: bool
    end_reason: EndReason
    history_rebuilt: bool
    # Where ``usage`` came from: the generator-metadata RPC, the per-step fallback, or nowhere.
    usage_source: str | None = None
    # True when the answer came from the resumed cascade (no fresh restart was needed).
    resumed: bool = False
    rejections: tuple[RejectionClass, ...] = ()
    polls: int = 0

    @property
    def native_tool_calls(self) -> tuple[CascadeToolCall, ...]:
        return tuple(call for call in self.tool_calls if call.native)


@dataclass
class _WarmState:
    session_id: str
    warmed: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)


def _step_usage_as_generator_usage(usage: StepUsage) -> GeneratorUsage:
    return GeneratorUsage(
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        cache_read_tokens=usage.cache_read_tokens,
        cache_write_tokens=usage.cache_write_tokens,
        entry_count=0,
        has_usage=True,
    )


class CascadeClient:
    """A Cascade client for one language server (address + CSRF token). Thread-safe; one instance
    per LS (its warm-up state is per LS and API key)."""

    def __init__(
        self,
        endpoint: LsEndpoint,
        *,
        identity: ClientIdentity | None = None,
        timeouts: CallTimeouts | None = None,
        poll: PollSettings | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
        backoff_sleep: Callable[[float], None] = time.sleep,
        retry_backoff: Callable[[int], float] = default_retry_backoff,
        new_session_id: Callable[[], str] = lambda: str(uuid.uuid4()),
        max_rejection_retries: int = MAX_REJECTION_RETRIES,
    ) -> None:
        self.endpoint = endpoint
        self.identity = identity or ClientIdentity()
        self.timeouts = timeouts or CallTimeouts()
        self.poll = poll or PollSettings()
        self._clock = clock
        self._sleep = sleep
        self._backoff_sleep = backoff_sleep
        self._retry_backoff = retry_backoff
        self._new_session_id = new_session_id
        self._max_retries = max_rejection_retries
        self._channel = LsChannel(endpoint.address, endpoint.csrf_token)
        self._warm: dict[str, _WarmState] = {}
        self._warm_lock = threading.Lock()

    # ------------------------------------------------------------------ lifecycle

    def close(self) -> None:
        self._channel.close()

    def __enter__(self) -> CascadeClient:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    # ------------------------------------------------------------------ calls

    def _call(self, method: str, request: Message, response_type: type[M], timeout_s: float) -> M:
        try:
            return self._channel.call(method, request, response_type, timeout_s)
        except LsCallError as exc:
            if exc.code == "UNAVAILABLE" or resets_warmup(exc.details):
                self._forget_warmups()
            raise

    def _meta(self, api_key: str, session_id: str) -> common.Metadata:
        return rq.build_metadata(self.identity, api_key, session_id)

    # ------------------------------------------------------------------ warm-up

    def _forget_warmups(self) -> None:
        with self._warm_lock:
            for state in self._warm.values():
                state.warmed = False

    def warm_up(self, api_key: str, *, force: bool = False) -> str:
        """Warm the LS for ``api_key`` once (cached) and return the session id; ``force`` starts a
        new session and warms again. Failed warm-up calls are logged, not raised (the next call
        that needs them fails with the LS's own message), and leave the state un-cached."""
        with self._warm_lock:
            state = self._warm.get(api_key)
            if state is None:
                state = self._warm[api_key] = _WarmState(session_id=self._new_session_id())
        with state.lock:
            if force:
                state.session_id = self._new_session_id()
                state.warmed = False
            if state.warmed:
                return state.session_id
            session_id = state.session_id
            timeout = self.timeouts.warmup_s
            calls: list[tuple[str, Message, type[Message]]] = [
                (
                    "InitializeCascadePanelState",
                    rq.initialize_panel_request(self._meta(api_key, session_id)),
                    ls.InitializeCascadePanelStateResponse,
                ),
                ("AddTrackedWorkspace", rq.add_tracked_workspace_request(api_key), ls.AddTrackedWorkspaceResponse),
                (
                    "UpdateWorkspaceTrust",
                    rq.update_workspace_trust_request(self._meta(api_key, session_id)),
                    ls.UpdateWorkspaceTrustResponse,
                ),
                ("Heartbeat", rq.heartbeat_request(self._meta(api_key, session_id)), ls.HeartbeatResponse),
            ]
            ok = True
            for method, request, response_type in calls:
                try:
                    self._channel.call(method, request, response_type, timeout)
                except LsCallError as exc:
                    ok = False
                    log.warning("Cascade warm-up %s failed on %s: %s", method, self.endpoint.address, exc.details)
            state.warmed = ok
            return session_id

    # ------------------------------------------------------------------ cascade steps

    def _start(self, api_key: str, session_id: str) -> str:
        response = self._call(
            "StartCascade",
            rq.start_cascade_request(self._meta(api_key, session_id)),
            ls.StartCascadeResponse,
            self.timeouts.default_s,
        )
        if not response.cascade_id:
            raise EmptyCascadeIdError()
        return str(response.cascade_id)

    def _resume_offsets(self, resume: ResumeState) -> TurnOffsets:
        """The absolute step offset and generator start of a resumed cascade (None: unknown)."""
        cascade_id = resume.cascade_id

        def read_step_count() -> int:
            snapshot = self._call(
                "GetCascadeTrajectorySteps",
                rq.steps_request(cascade_id, 0),
                ls.GetCascadeTrajectoryStepsResponse,
                self.timeouts.default_s,
            )
            return len(snapshot.steps)

        def read_generator_snapshot() -> GeneratorUsage | None:
            response = self._call(
                "GetCascadeTrajectoryGeneratorMetadata",
                rq.generator_metadata_request(cascade_id, 0),
                ls.GetCascadeTrajectoryGeneratorMetadataResponse,
                self.timeouts.generator_metadata_s,
            )
            return parse_generator_metadata(response)

        return resume_offsets(
            resume.step_offset,
            resume.generator_offset,
            read_step_count=read_step_count,
            read_generator_snapshot=read_generator_snapshot,
        )

    def _send(
        self,
        request: CascadeTurnRequest,
        *,
        cascade_id: str,
        session_id: str,
        text: str,
        images: Sequence[ImageLike],
        planner_default: bool,
        resumed_trajectory: bool,
    ) -> None:
        steps = additional_steps_for(request.additional_steps, request.additional_steps_from, resumed_trajectory)
        options = PlannerOptions(
            model=request.model,
            native_mode=request.native_mode,
            planner_default=planner_default,
            tool_preamble="" if request.native_mode else request.tool_preamble,
        )
        message = rq.send_request(
            cascade_id=cascade_id,
            text=text,
            meta=self._meta(request.api_key, session_id),
            options=options,
            images=images,
            additional_steps=steps,
        )
        self._call("SendUserCascadeMessage", message, ls.SendUserCascadeMessageResponse, self.timeouts.default_s)

    # ------------------------------------------------------------------ one turn

    def run_turn(self, request: CascadeTurnRequest) -> CascadeTurnResult:
        """Run one turn to its end. Raises a :class:`engine.cascade.errors.CascadeError` subclass; every
        raised error carries the cascade/session it happened on and ``reuse_entry_invalidated``."""
        api_key = request.api_key
        session_id = self.warm_up(api_key)
        resume = request.resume
        text, images, planner_default = request.text, request.images, request.planner_default
        prompt_chars = request.prompt_chars if request.prompt_chars is not None else len(request.text)
        cascade_id: str | None = None
        resumed_trajectory = False
        step_offset = 0
        generator_offset: int | None = 0
        if resume is not None:
            cascade_id, session_id = resume.cascade_id, resume.session_id
            resumed_trajectory = True
            offsets = self._resume_offsets(resume)
            step_offset, generator_offset = offsets.step_offset, offsets.generator_offset
        history_rebuilt = rebuild_attempted = False
        reuse_invalidated = False
        rejections: list[RejectionClass] = []

        def annotate(exc: CascadeError) -> CascadeError:
            exc.cascade_id = cascade_id
            exc.session_id = session_id
            exc.reuse_entry_invalidated = exc.reuse_entry_invalidated or reuse_invalidated
            return exc

        retries = 0
        while True:
            try:
                if cascade_id is None:
                    cascade_id = self._start(api_key, session_id)
                self._send(
                    request,
                    cascade_id=cascade_id,
                    session_id=session_id,
                    text=text,
                    images=images,
                    planner_default=planner_default,
                    resumed_trajectory=resumed_trajectory,
                )
                break
            except LsCallError as exc:
                rejection = exc.rejection
                if rejection is None:
                    raise annotate(exc) from None
                rejections.append(rejection)
                if rejection is RejectionClass.CASCADE_EXPIRED:
                    reuse_invalidated = True
                if retries >= self._max_retries:
                    error = ResumeRejectedError(
                        f"{exc.message} — the LS rejected the turn {len(rejections)} times "
                        f"({', '.join(r.value for r in rejections)}); gave up after {retries} "
                        f"re-warm and fresh-cascade retries (prompt {len(text)} chars)",
                        rejections=tuple(rejections),
                        last=exc,
                    )
                    raise annotate(error) from exc
                retries += 1
                log.warning(
                    "Cascade %s rejected (%s: %s); re-warming and starting a fresh cascade (retry %d/%d)",
                    "resume" if resumed_trajectory else "start",
                    rejection.value,
                    exc.details,
                    retries,
                    self._max_retries,
                )
                if resume is not None and not history_rebuilt and not rebuild_attempted:
                    rebuild_attempted = True
                    if request.rebuild is None:
                        log.warning(
                            "Cascade: resume rejected and no rebuild given; the fresh cascade gets the newest turn only"
                        )
                    else:
                        build = request.rebuild()
                        text, images, planner_default = build.text, tuple(build.images), build.planner_default
                        history_rebuilt = True
                        log.info("Cascade: rebuilt full history after resume failure")
                session_id = self.warm_up(api_key, force=True)
                delay = self._retry_backoff(retries)
                if delay > 0:
                    self._backoff_sleep(delay)
                cascade_id = None
                resumed_trajectory = False
                step_offset = 0
                generator_offset = 0
            except CascadeError as exc:
                raise annotate(exc) from None

        assert cascade_id is not None
        live_cascade = cascade_id

        def fetch_steps(timeout_s: float) -> Sequence[cortex.CortexTrajectoryStep]:
            response = self._call(
                "GetCascadeTrajectorySteps",
                rq.steps_request(live_cascade, step_offset),
                ls.GetCascadeTrajectoryStepsResponse,
                timeout_s,
            )
            return list(response.steps)

        def fetch_status(timeout_s: float) -> int:
            response = self._call(
                "GetCascadeTrajectory",
                rq.trajectory_request(live_cascade),
                ls.GetCascadeTrajectoryResponse,
                timeout_s,
            )
            return int(response.status)

        try:
            outcome = poll_turn(
                fetch_steps,
                fetch_status,
                step_offset=step_offset,
                prompt_chars=prompt_chars,
                settings=self.poll,
                call_timeout_s=self.timeouts.default_s,
                native_mode=request.native_mode,
                clock=self._clock,
                sleep=self._sleep,
                abort=request.abort,
                on_delta=request.on_delta,
            )
        except CascadeError as exc:
            raise annotate(exc) from None

        usage, usage_source, generator_next = self._read_usage(live_cascade, generator_offset)
        if usage is None and outcome.step_usage is not None:
            usage, usage_source = _step_usage_as_generator_usage(outcome.step_usage), "steps"
        if usage is not None:
            log.info("%s", usage_log_line(usage))
        return CascadeTurnResult(
            text=outcome.text,
            thinking=outcome.thinking,
            tool_calls=tuple(outcome.tool_calls),
            usage=usage,
            cascade_id=live_cascade,
            session_id=session_id,
            step_offset_next=next_step_offset(
                step_offset, outcome.text_steps, outcome.thinking_steps, outcome.last_step_count
            ),
            generator_offset_next=generator_next,
            reuse_entry_invalidated=reuse_invalidated,
            end_reason=outcome.end_reason,
            history_rebuilt=history_rebuilt,
            usage_source=usage_source,
            resumed=resumed_trajectory,
            rejections=tuple(rejections),
            polls=outcome.polls,
        )

    def _read_usage(self, cascade_id: str, start: int | None) -> tuple[GeneratorUsage | None, str | None, int | None]:
        """Billable usage from the generator-metadata window starting at ``start``, and the next start.

        An unknown start abstains (asking from 0 would bill every earlier turn again); a failed
        read leaves the next start unknown rather than reusing ``start``."""
        offset = metadata_request_offset(start, cascade_id)
        if offset is None:
            return None, None, None
        try:
            response = self._call(
                "GetCascadeTrajectoryGeneratorMetadata",
                rq.generator_metadata_request(cascade_id, offset),
                ls.GetCascadeTrajectoryGeneratorMetadataResponse,
                self.timeouts.generator_metadata_s,
            )
        except LsCallError as exc:
            log.debug("GetCascadeTrajectoryGeneratorMetadata failed: %s", exc.details)
            return None, None, None
        parsed = parse_generator_metadata(response)
        usage = billable_usage(parsed)
        return usage, ("generator_metadata" if usage is not None else None), next_generator_offset(offset, parsed)
