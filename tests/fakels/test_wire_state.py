"""WIRE-4: the fake language server's stateful semantics, driven through encoded requests.

Hypothesis generates a scenario and a sequence of client actions (:func:`client_actions`);
:class:`WireClient` plays them against the fake: it starts cascades, sends turns, polls steps, run
status and generator metadata at random offsets, moves the ``ManualClock``, re-initialises the
panel, re-trusts the workspace, and plays whole turns the way the real client does (wire.md
section 3), recovering from rejections as it does (section 4). Every answer is checked twice:

* against :class:`Model`, a small reference model of the documented semantics (one chunk
  revealed per poll once its ``delay_s`` has passed; RUNNING while chunks remain or for the first
  ``min_running_polls`` status polls after the Send; records appended when the turn finishes;
  expiry, panel loss and distrust as wire.md section 4 describes). ``Steps(k)`` must equal the
  model's full snapshot ``[k:]`` at that moment, ``GeneratorMetadata(k)`` its records ``[k:]``;
* against what the client itself can rely on, independently of the model
  (:class:`CascadeObservations`): absolute step indices keep their kind, planner text and thinking
  only grow, the run status never goes back to RUNNING after IDLE within a turn, the whole scripted
  turn is present when IDLE is first seen, records never change, an expired cascade stays expired,
  and each rejection's text falls in the error class the real client's regexes give it.

The same client runs in-process (encoded requests into the core, one event loop per example)
and over real gRPC (generated stubs against a FakeLSThread); two scripted examples spell out the
semantics over gRPC.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

import grpc
import pytest
from google.protobuf.message import Message
from hypothesis import Phase, given, settings
from hypothesis import strategies as st

from conformance.strategies import prompts, scenarios, unicode_text
from fakels.cascade import EXPIRED_TEXT, PANEL_MISSING_TEXT, UNTRUSTED_TEXT
from fakels.clock import ManualClock
from fakels.proto.exa.codeium_common_pb import codeium_common_pb2 as common
from fakels.proto.exa.cortex_pb import cortex_pb2 as cortex
from fakels.proto.exa.language_server_pb import language_server_pb2 as ls
from fakels.proto.exa.language_server_pb import language_server_pb2_grpc as ls_grpc
from fakels.rpcs import SERVICE_NAME
from fakels.scenario import Chunk, Fault, NativeStep, Scenario, ToolCall, Turn, Usage
from fakels.server import FakeLSThread
from fakels.service import FakeLanguageServer, IncomingCall, ServerConfig
from fakels.steps import NATIVE_STEP_TYPES, native_body

pytestmark = pytest.mark.invariant("WIRE-4")

CSRF_TOKEN = "windsurf-api-csrf-fixed-token"
IDLE = cortex.CascadeRunStatus.CASCADE_RUN_STATUS_IDLE
RUNNING = cortex.CascadeRunStatus.CASCADE_RUN_STATUS_RUNNING
StepStatus = cortex.CortexStepStatus
StepType = cortex.CortexStepType
SESSIONS = ("session-a", "session-b")
MODEL_UIDS = ("MODEL_SWE_1_5", "claude-sonnet-4", "gpt-5\U0001f680")
CLOCK_STEPS = (0.5, 1.0, 2.5, 6.0, 31.0)
POLL_INTERVAL_S = 0.5  # the real client's pollInterval (wire.md section 3)

# The real client's rejection classes: message-text regexes, case-insensitive (wire.md section 4).
CLIENT_ERROR_CLASSES: dict[str, tuple[str, ...]] = {
    "expired": (
        r"not_found.*(cascade|trajectory)",
        r"(cascade|trajectory).*not[ _-]?found",
        r"expired.*cascade",
        r"unknown.*cascade",
    ),
    "panel": (r"panel state not found", r"not_found.*panel"),
    "untrusted": (r"untrusted workspace", r"workspace.*not.*trusted"),
}


def error_classes(message: str) -> set[str]:
    """The classes of the real client that ``message`` falls in."""
    return {
        name
        for name, patterns in CLIENT_ERROR_CLASSES.items()
        if any(re.search(pattern, message, re.IGNORECASE) for pattern in patterns)
    }


def _short(value: object, limit: int = 300) -> str:
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} chars)"


# ------------------------------------------------------------------ views of what is on the wire


@dataclass(frozen=True)
class StepView:
    """What a client can tell about one step: oneof kind, type, status and the fields it reads."""

    kind: str
    type: int
    status: int
    content: tuple[Any, ...] = ()

    @property
    def is_planner(self) -> bool:
        return self.kind == "planner_response"

    def __repr__(self) -> str:
        return f"StepView({self.kind}, type={self.type}, status={self.status}, {_short(self.content, 200)})"


@dataclass(frozen=True)
class RecordView:
    """One generator-metadata record: its usage (None when the record carries none) and model."""

    usage: tuple[int, int, int, int] | None
    model_uid: str


def step_view(step: cortex.CortexTrajectoryStep) -> StepView:
    kind = step.WhichOneof("step") or ""
    content: tuple[Any, ...]
    if kind == "planner_response":
        planner = step.planner_response
        content = (planner.response, planner.thinking, planner.modified_response)
    elif kind == "tool_call_proposal":
        call = step.tool_call_proposal.tool_call
        content = (call.id, call.name, call.arguments_json)
    elif kind == "error_message":
        content = (step.error_message.error.user_error_message,)
    elif kind in ("user_input", ""):
        content = ()
    else:
        content = (getattr(step, kind).SerializeToString(deterministic=True),)
    return StepView(kind, step.type, step.status, content)


def record_view(record: cortex.CortexStepGeneratorMetadata) -> RecordView:
    chat_model = record.chat_model
    usage = None
    if chat_model.HasField("usage"):
        u = chat_model.usage
        usage = (u.input_tokens, u.output_tokens, u.cache_write_tokens, u.cache_read_tokens)
    return RecordView(usage, chat_model.model_uid)


def expected_record(usage: Usage | None, model_uid: str) -> RecordView:
    if usage is None:
        return RecordView(None, model_uid)
    return RecordView(
        (usage.input_tokens, usage.output_tokens, usage.cache_write_tokens, usage.cache_read_tokens), model_uid
    )


USER_INPUT_VIEW = StepView("user_input", StepType.CORTEX_STEP_TYPE_USER_INPUT, StepStatus.CORTEX_STEP_STATUS_DONE)


def planner_view(response: str, thinking: str, *, done: bool, modified: str | None) -> StepView:
    status = StepStatus.CORTEX_STEP_STATUS_DONE if done else StepStatus.CORTEX_STEP_STATUS_RUNNING
    return StepView(
        "planner_response", StepType.CORTEX_STEP_TYPE_PLANNER_RESPONSE, status, (response, thinking, modified or "")
    )


def tool_call_view(call: ToolCall) -> StepView:
    return StepView(
        "tool_call_proposal",
        StepType.CORTEX_STEP_TYPE_TOOL_CALL_PROPOSAL,
        StepStatus.CORTEX_STEP_STATUS_DONE,
        (call.id, call.name, call.arguments_json),
    )


def chunk_views(chunk: Chunk) -> list[StepView]:
    """The steps a chunk appends, besides growing the planner step."""
    views: list[StepView] = []
    if chunk.tool_call is not None:
        views.append(tool_call_view(chunk.tool_call))
    if chunk.native is not None:
        native = chunk.native
        body = native_body(native.kind, native.body).SerializeToString(deterministic=True)
        step_type = native.step_type if native.step_type is not None else NATIVE_STEP_TYPES.get(native.kind, 0)
        status = native.status if native.status is not None else StepStatus.CORTEX_STEP_STATUS_PENDING
        views.append(StepView(native.kind, step_type, status, (body,)))
    if chunk.error is not None:
        error_type, done = StepType.CORTEX_STEP_TYPE_ERROR_MESSAGE, StepStatus.CORTEX_STEP_STATUS_DONE
        views.append(StepView("error_message", error_type, done, (chunk.error,)))
    return views


def final_turn_views(turn: Turn) -> list[StepView]:
    """All steps of a finished turn, straight from the script: the user echo, then in chunk order
    the planner step (at the place its first text or thinking appeared, holding the concatenation
    of all texts and thinking and the modified response) and every tool, native and error step."""
    views: list[StepView | None] = [USER_INPUT_VIEW] if turn.user_input_step else []
    planner_at: int | None = None
    for chunk in turn.chunks:
        if (chunk.text or chunk.thinking) and planner_at is None:
            planner_at = len(views)
            views.append(None)
        views.extend(chunk_views(chunk))
    if planner_at is not None or turn.modified_response is not None:
        planner = planner_view(
            "".join(c.text for c in turn.chunks),
            "".join(c.thinking for c in turn.chunks),
            done=True,
            modified=turn.modified_response,
        )
        if planner_at is None:
            views.append(planner)
        else:
            views[planner_at] = planner
    return [v for v in views if v is not None]


def assert_views_equal(got: list[Any], want: list[Any], what: str) -> None:
    if got == want:
        return
    for i, (g, w) in enumerate(zip(got, want, strict=False)):
        if g != w:
            raise AssertionError(f"{what}: first difference at position {i}: got {_short(g)}, want {_short(w)}")
    raise AssertionError(f"{what}: got {len(got)} items, want {len(want)} (got {_short(got)}, want {_short(want)})")


# ------------------------------------------------------------------ reference model


class Rejected(Exception):
    """The model's prediction that a call fails with ``code`` and a message of class ``klass``
    (``"other"`` for none of the client's classes; ``message`` when the scenario scripts it)."""

    def __init__(self, code: grpc.StatusCode, klass: str, message: str | None = None) -> None:
        super().__init__(f"{code.name} ({klass}) {message or ''}")
        self.code = code
        self.klass = klass
        self.message = message


@dataclass
class ModelTurn:
    turn: Turn
    last_reveal_at: float
    revealed: int = 0
    status_polls: int = 0
    planner_index: int | None = None
    response: str = ""
    thinking: str = ""
    finished: bool = False

    @property
    def complete(self) -> bool:
        return self.revealed >= len(self.turn.chunks)


@dataclass
class ModelCascade:
    last_used: float
    steps: list[StepView] = field(default_factory=list)
    records: list[RecordView] = field(default_factory=list)
    current: ModelTurn | None = None
    model_uid: str = ""
    expired: bool = False
    expire_pending: bool = False

    @property
    def active(self) -> ModelTurn | None:
        return None if self.current is None or self.current.finished else self.current


class Model:
    """The documented semantics, written from the scenario's point of view."""

    def __init__(self, scenario: Scenario) -> None:
        self.scenario = scenario
        self.turn_index = 0
        self.panel_sessions: set[str] = set()
        self.panel_lost = False
        self.untrusted = False
        self.cascades: dict[str, ModelCascade] = {}

    # -- checks shared by several RPCs

    def _check_panel(self, session: str) -> None:
        if self.panel_lost or (self.scenario.require_panel and session not in self.panel_sessions):
            raise Rejected(grpc.StatusCode.NOT_FOUND, "panel")
        if self.untrusted:
            raise Rejected(grpc.StatusCode.FAILED_PRECONDITION, "untrusted")

    def cascade(self, cascade_id: str, now: float) -> ModelCascade:
        cascade = self.cascades.get(cascade_id)
        if cascade is None:
            raise Rejected(grpc.StatusCode.NOT_FOUND, "expired")
        ttl = self.scenario.cascade_ttl_s
        if ttl is not None and now - cascade.last_used > ttl:
            cascade.expired = True
        if cascade.expired:
            raise Rejected(grpc.StatusCode.NOT_FOUND, "expired", EXPIRED_TEXT)
        cascade.last_used = now
        return cascade

    # -- RPCs

    def initialize_panel(self, session: str) -> None:
        self.panel_sessions.add(session)
        self.panel_lost = False

    def update_trust(self, trusted: bool) -> None:
        if trusted:
            self.untrusted = False

    def check_start(self, session: str) -> None:
        self._check_panel(session)

    def started(self, cascade_id: str, now: float) -> None:
        self.cascades[cascade_id] = ModelCascade(last_used=now)

    def send(self, cascade_id: str, session: str, prompt: str, model_uid: str, now: float) -> Turn:
        cascade = self.cascade(cascade_id, now)
        if cascade.expire_pending:  # expire_after: the next resume finds the cascade expired
            cascade.expired = True
            raise Rejected(grpc.StatusCode.NOT_FOUND, "expired", EXPIRED_TEXT)
        self._check_panel(session)
        turn = self.scenario.turn(self.turn_index, prompt, 0)
        self.turn_index += 1
        if turn.fault is not None:
            self._fault(cascade, turn.fault)
        self._finish(cascade)
        cascade.model_uid = model_uid
        if turn.user_input_step:
            cascade.steps.append(USER_INPUT_VIEW)
        cascade.current = ModelTurn(turn=turn, last_reveal_at=now)
        return turn

    def _fault(self, cascade: ModelCascade, fault: Fault) -> None:
        if fault.kind == "expired":
            cascade.expired = True
            raise Rejected(grpc.StatusCode.NOT_FOUND, "expired", fault.message or EXPIRED_TEXT)
        if fault.kind == "panel_lost":
            self.panel_lost = True
            self.panel_sessions.clear()
            raise Rejected(grpc.StatusCode.NOT_FOUND, "panel", fault.message or PANEL_MISSING_TEXT)
        if fault.kind == "untrusted":
            self.untrusted = True
            raise Rejected(grpc.StatusCode.FAILED_PRECONDITION, "untrusted", fault.message or UNTRUSTED_TEXT)
        klass = "other" if fault.message is None else "any"
        raise Rejected(grpc.StatusCode.INTERNAL, klass, fault.message)

    def steps(self, cascade_id: str, offset: int, now: float) -> list[StepView]:
        cascade = self.cascade(cascade_id, now)
        self._advance(cascade, now)
        return cascade.steps[offset:]

    def status(self, cascade_id: str, now: float) -> int:
        cascade = self.cascade(cascade_id, now)
        self._advance(cascade, now)
        active = cascade.active
        if active is None:
            return IDLE
        active.status_polls += 1
        if not active.complete or active.status_polls <= active.turn.min_running_polls:
            return RUNNING
        self._finish(cascade)
        return IDLE

    def metadata(self, cascade_id: str, offset: int, now: float) -> list[RecordView]:
        cascade = self.cascade(cascade_id, now)
        self._advance(cascade, now)
        active = cascade.active
        # Records are there once the turn is over; reading them never cuts the RUNNING phase short.
        if active is not None and active.complete and active.status_polls >= active.turn.min_running_polls:
            self._finish(cascade)
        return cascade.records[offset:]

    # -- internals

    def _advance(self, cascade: ModelCascade, now: float) -> None:
        active = cascade.active
        if active is None or active.complete:
            return
        chunk = active.turn.chunks[active.revealed]
        if now - active.last_reveal_at < chunk.delay_s:
            return
        active.last_reveal_at = now
        self._reveal(cascade, active)

    def _reveal(self, cascade: ModelCascade, active: ModelTurn) -> None:
        chunk = active.turn.chunks[active.revealed]
        active.revealed += 1
        if chunk.text or chunk.thinking:
            active.response += chunk.text
            active.thinking += chunk.thinking
            view = planner_view(active.response, active.thinking, done=False, modified=None)
            if active.planner_index is None:
                active.planner_index = len(cascade.steps)
                cascade.steps.append(view)
            else:
                cascade.steps[active.planner_index] = view
        cascade.steps.extend(chunk_views(chunk))

    def _finish(self, cascade: ModelCascade) -> None:
        active = cascade.active
        if active is None:
            return
        while not active.complete:
            self._reveal(cascade, active)
        turn = active.turn
        if active.planner_index is not None or turn.modified_response is not None:
            view = planner_view(active.response, active.thinking, done=True, modified=turn.modified_response)
            if active.planner_index is None:
                cascade.steps.append(view)
            else:
                cascade.steps[active.planner_index] = view
        cascade.records.extend(expected_record(usage, cascade.model_uid) for usage in turn.records)
        active.finished = True
        if turn.expire_after:
            cascade.expire_pending = True
        if turn.lose_panel_after:
            self.panel_lost = True
            self.panel_sessions.clear()


# ------------------------------------------------------------------ client-side observations


@dataclass
class SentTurn:
    turn: Turn
    model_uid: str


@dataclass
class CascadeObservations:
    """What a client saw of one cascade; the checks here do not use the model."""

    steps: dict[int, StepView] = field(default_factory=dict)
    known_steps: int = 0
    records: dict[int, RecordView] = field(default_factory=dict)
    sent: list[SentTurn] = field(default_factory=list)
    turn_statuses: list[int] = field(default_factory=list)
    expired: bool = False

    def check_steps(self, offset: int, views: list[StepView]) -> None:
        for j, view in enumerate(views):
            index = offset + j
            before = self.steps.get(index)
            if before is not None:
                assert view.kind == before.kind, f"step {index} changed kind: {before!r} -> {view!r}"
                if view.is_planner:
                    response, thinking, _ = view.content
                    old_response, old_thinking, _ = before.content
                    assert response.startswith(old_response), (
                        f"planner response at step {index} is not append-only: {_short(old_response)} -> "
                        f"{_short(response)}"
                    )
                    assert thinking.startswith(old_thinking), (
                        f"planner thinking at step {index} is not append-only: {_short(old_thinking)} -> "
                        f"{_short(thinking)}"
                    )
                    if before.status == StepStatus.CORTEX_STEP_STATUS_DONE:
                        assert view == before, f"finished planner step {index} changed: {before!r} -> {view!r}"
                else:
                    assert view == before, f"step {index} changed: {before!r} -> {view!r}"
            self.steps[index] = view
        if views:
            assert offset + len(views) >= self.known_steps, (
                f"steps shrank: {self.known_steps} known, offset {offset} returned {len(views)}"
            )
            self.known_steps = offset + len(views)
        else:
            assert offset >= self.known_steps, f"offset {offset} returned nothing though {self.known_steps} steps exist"

    def check_records(self, offset: int, views: list[RecordView]) -> None:
        for j, view in enumerate(views):
            before = self.records.setdefault(offset + j, view)
            assert view == before, f"generator record {offset + j} changed: {before} -> {view}"

    def history_steps(self) -> list[StepView]:
        return [view for sent in self.sent for view in final_turn_views(sent.turn)]

    def history_records(self) -> list[RecordView]:
        return [expected_record(usage, sent.model_uid) for sent in self.sent for usage in sent.turn.records]


# ------------------------------------------------------------------ drivers


@dataclass(frozen=True)
class Outcome:
    code: grpc.StatusCode
    message: str
    payload: bytes

    @property
    def ok(self) -> bool:
        return bool(self.code == grpc.StatusCode.OK)


class Driver(Protocol):
    clock: ManualClock

    def call(self, method: str, request: Message) -> Outcome: ...

    def close(self) -> None: ...


class InProcessDriver:
    """Encoded requests straight into the transport-independent core, on one event loop."""

    def __init__(self, scenario: Scenario) -> None:
        self.clock = ManualClock()
        self.core = FakeLanguageServer(ServerConfig(scenario=scenario), clock=self.clock)
        self.loop = asyncio.new_event_loop()

    def call(self, method: str, request: Message) -> Outcome:
        incoming = IncomingCall("grpc", f"/{SERVICE_NAME}/{method}", {}, [request.SerializeToString()])
        reply = self.loop.run_until_complete(self.core.handle(incoming))
        return Outcome(reply.code, reply.message, reply.payloads[0] if reply.payloads else b"")

    def close(self) -> None:
        self.loop.close()


class GrpcDriver:
    """The same calls through generated gRPC stubs to a FakeLSThread on loopback."""

    def __init__(self, fake: FakeLSThread, clock: ManualClock, stub: ls_grpc.LanguageServerServiceStub) -> None:
        self.clock = clock
        self.fake = fake
        self.stub = stub

    def call(self, method: str, request: Message) -> Outcome:
        try:
            response = getattr(self.stub, method)(request, metadata=[("x-codeium-csrf-token", CSRF_TOKEN)], timeout=30)
        except grpc.RpcError as exc:
            return Outcome(exc.code(), exc.details() or "", b"")
        return Outcome(grpc.StatusCode.OK, "", response.SerializeToString())

    def close(self) -> None:
        pass


# ------------------------------------------------------------------ client actions


@dataclass(frozen=True)
class StartCascade:
    session: str


@dataclass(frozen=True)
class SendTurn:
    """A Send, then polls of that cascade in any order and mix (not necessarily the real client's):
    ``"steps"`` (at the turn's offset), ``"status"``, ``"metadata"`` (at offset 0) or ``"clock"``
    (half a second passes)."""

    cascade: int  # index into the cascades started so far (modulo their number)
    session: str
    prompt: str
    model_uid: str
    then: tuple[str, ...] = ()


@dataclass(frozen=True)
class PlayTurn:
    """A Send followed by the real client's polling loop (wire.md section 3)."""

    cascade: int
    session: str
    prompt: str
    model_uid: str


@dataclass(frozen=True)
class PollSteps:
    cascade: int
    offset: int  # reduced modulo (steps + 3): any offset in [0, n + 2]


@dataclass(frozen=True)
class PollStatus:
    cascade: int


@dataclass(frozen=True)
class PollMetadata:
    cascade: int
    offset: int  # reduced modulo (records + 3)


@dataclass(frozen=True)
class AdvanceClock:
    seconds: float


@dataclass(frozen=True)
class InitializePanel:
    session: str


@dataclass(frozen=True)
class UpdateTrust:
    trusted: bool


@dataclass(frozen=True)
class UnknownCascade:
    cascade_id: str
    method: str


@dataclass(frozen=True)
class WholeHistory:
    """Run the cascade to IDLE, then read every step and record from offset 0."""

    cascade: int


Action = (
    StartCascade
    | SendTurn
    | PlayTurn
    | PollSteps
    | PollStatus
    | PollMetadata
    | AdvanceClock
    | InitializePanel
    | UpdateTrust
    | UnknownCascade
    | WholeHistory
)

UNKNOWN_CASCADE_IDS = ("", "fakels-cascade-9999", "cascade-of-another-ls")
CASCADE_METHODS = (
    "SendUserCascadeMessage",
    "GetCascadeTrajectory",
    "GetCascadeTrajectorySteps",
    "GetCascadeTrajectoryGeneratorMetadata",
)


def client_actions(max_bursts: int = 12, burst_size: int = 6) -> st.SearchStrategy[list[Action]]:
    """What a client may do, weighted towards playing and polling turns: up to ``max_bursts``
    bursts of 1 to ``burst_size`` actions (about ten on average, yet shrinkable to none)."""
    ref = st.integers(min_value=0, max_value=3)
    offset = st.integers(min_value=0, max_value=40)
    session = st.sampled_from(SESSIONS)
    model_uid = st.sampled_from(MODEL_UIDS)
    send_args = {"cascade": ref, "session": session, "prompt": prompts(), "model_uid": model_uid}
    polls = st.lists(st.sampled_from(("steps", "status", "metadata", "clock")), max_size=8).map(tuple)
    choices: list[tuple[int, st.SearchStrategy[Action]]] = [
        (3, st.builds(PlayTurn, **send_args)),
        (3, st.builds(SendTurn, **send_args, then=polls)),
        (3, st.builds(PollSteps, cascade=ref, offset=offset)),
        (3, st.builds(PollStatus, cascade=ref)),
        (2, st.builds(PollMetadata, cascade=ref, offset=offset)),
        (2, st.builds(AdvanceClock, seconds=st.sampled_from(CLOCK_STEPS))),
        (1, st.builds(StartCascade, session=session)),
        (1, st.builds(InitializePanel, session=session)),
        (1, st.builds(UpdateTrust, trusted=st.booleans())),
        (1, st.builds(WholeHistory, cascade=ref)),
        (
            1,
            st.builds(
                UnknownCascade,
                cascade_id=st.one_of(st.sampled_from(UNKNOWN_CASCADE_IDS), unicode_text()),
                method=st.sampled_from(CASCADE_METHODS),
            ),
        ),
    ]
    weighted = [strategy for weight, strategy in choices for _ in range(weight)]
    # sampled_from over the strategies (not one_of) keeps the weights and shrinks towards PlayTurn.
    action: st.SearchStrategy[Action] = st.sampled_from(weighted).flatmap(lambda strategy: strategy)
    bursts = st.lists(st.lists(action, min_size=1, max_size=burst_size), max_size=max_bursts)
    return bursts.map(lambda groups: [a for group in groups for a in group])


# ------------------------------------------------------------------ the client that checks everything


class WireClient:
    """Plays actions against a driver; every answer is checked against the model and against
    what a client may rely on."""

    def __init__(self, driver: Driver, scenario: Scenario) -> None:
        self.d = driver
        self.model = Model(scenario)
        self.cascade_ids: list[str] = []
        self.seen: dict[str, CascadeObservations] = {}
        self.panel_failed: set[str] = set()  # sessions refused for panel state, until a re-warm
        self.untrusted_seen = False

    def warm_up(self) -> None:
        """What the client does before its first cascade: panel, trust, one StartCascade."""
        self.initialize_panel(SESSIONS[0])
        self.update_workspace_trust(True)
        self.start(SESSIONS[0])

    def apply(self, action: Action) -> None:
        match action:
            case StartCascade(session=session):
                self.start(session)
            case AdvanceClock(seconds=seconds):
                self.d.clock.advance(seconds)
            case InitializePanel(session=session):
                self.initialize_panel(session)
            case UpdateTrust(trusted=trusted):
                self.update_workspace_trust(trusted)
            case UnknownCascade(cascade_id=cascade_id, method=method):
                self.unknown_cascade(cascade_id, method)
            case _ if not self.cascade_ids:
                return
            case SendTurn(cascade=ref, session=session, prompt=prompt, model_uid=model_uid, then=then):
                self.send_and_poll(self._ref(ref), session, prompt, model_uid, then)
            case PlayTurn(cascade=ref, session=session, prompt=prompt, model_uid=model_uid):
                self.play_turn(self._ref(ref), session, prompt, model_uid)
            case PollSteps(cascade=ref, offset=offset):
                cascade_id = self._ref(ref)
                self.poll_steps(cascade_id, offset % (len(self.model.cascades[cascade_id].steps) + 3))
            case PollStatus(cascade=ref):
                self.poll_status(self._ref(ref))
            case PollMetadata(cascade=ref, offset=offset):
                cascade_id = self._ref(ref)
                self.poll_metadata(cascade_id, offset % (len(self.model.cascades[cascade_id].records) + 3))
            case WholeHistory(cascade=ref):
                self.whole_history(self._ref(ref))

    def _ref(self, ref: int) -> str:
        """Refs 0 and 1 pick among the cascades not yet seen expired (when there are any), so
        examples keep exercising live cascades; 2 and 3 pick among all of them."""
        live = [c for c in self.cascade_ids if not self.seen[c].expired]
        pool = live if ref < 2 and live else self.cascade_ids
        return pool[ref % len(pool)]

    # -- plumbing

    def _expect(self, predict: Callable[[], Any]) -> tuple[Any, Rejected | None]:
        try:
            return predict(), None
        except Rejected as rejected:
            return None, rejected

    def _check_rejection(self, outcome: Outcome, rejected: Rejected, what: str) -> None:
        assert outcome.code == rejected.code, (
            f"{what}: expected {rejected.code.name} ({rejected.klass}), got {outcome.code.name}: {outcome.message!r}"
        )
        if rejected.message is not None:
            assert outcome.message == rejected.message, f"{what}: message {outcome.message!r} != {rejected.message!r}"
        if rejected.klass == "any":
            return
        want = set() if rejected.klass == "other" else {rejected.klass}
        assert error_classes(outcome.message) == want, (
            f"{what}: the client would classify {outcome.message!r} as {error_classes(outcome.message) or 'nothing'}, "
            f"not {rejected.klass}"
        )

    def _cascade_call(self, cascade_id: str, what: str, predict: Callable[[], Any], method: str, request: Message) -> (
        tuple[Any, Outcome] | None
    ):
        """Call ``method`` on a cascade and check a predicted rejection; None when rejected."""
        expected, rejected = self._expect(predict)
        outcome = self.d.call(method, request)
        seen = self.seen.setdefault(cascade_id, CascadeObservations())
        if seen.expired:
            sticky = outcome.code == grpc.StatusCode.NOT_FOUND and error_classes(outcome.message) == {"expired"}
            assert sticky, f"{what}: the cascade answered expired before, now {outcome.code.name} {outcome.message!r}"
        if rejected is not None:
            self._check_rejection(outcome, rejected, what)
            if rejected.klass == "expired":
                seen.expired = True
            return None
        assert outcome.ok, f"{what}: expected OK, got {outcome.code.name}: {outcome.message!r}"
        return expected, outcome

    # -- actions (each checks its answer)

    def start(self, session: str) -> str | None:
        now = self.d.clock.now()
        _, rejected = self._expect(lambda: self.model.check_start(session))
        outcome = self.d.call("StartCascade", ls.StartCascadeRequest(metadata=common.Metadata(session_id=session)))
        if rejected is not None:
            self._check_rejection(outcome, rejected, f"StartCascade({session})")
            self._note_session_rejection(session, rejected.klass, "StartCascade")
            return None
        assert outcome.ok, f"StartCascade: expected OK, got {outcome.code.name}: {outcome.message!r}"
        assert session not in self.panel_failed, f"StartCascade({session}) accepted before InitializeCascadePanelState"
        assert not self.untrusted_seen, "StartCascade accepted before UpdateWorkspaceTrust(true)"
        cascade_id = ls.StartCascadeResponse.FromString(outcome.payload).cascade_id
        assert cascade_id, "StartCascade returned an empty cascade id"
        assert cascade_id not in self.model.cascades, f"cascade id {cascade_id!r} handed out twice"
        self.model.started(cascade_id, now)
        self.seen[cascade_id] = CascadeObservations()
        self.cascade_ids.append(cascade_id)
        return cascade_id

    def _note_session_rejection(self, session: str, klass: str, method: str) -> None:
        """Panel loss and distrust persist until the re-warm RPC that lifts them."""
        if session in self.panel_failed:
            assert klass in ("panel", "expired"), f"{method}({session}) after a panel failure was {klass}, not panel"
        elif self.untrusted_seen:
            assert klass in ("panel", "untrusted", "expired"), f"{method} on an untrusted workspace was {klass}"
        if klass == "panel":
            self.panel_failed.add(session)
        if klass == "untrusted":
            self.untrusted_seen = True

    def send(self, cascade_id: str, session: str, prompt: str, model_uid: str) -> Rejected | None:
        """Send a turn; the predicted rejection (already checked) or None when accepted."""
        now = self.d.clock.now()
        request = ls.SendUserCascadeMessageRequest(
            cascade_id=cascade_id,
            items=[common.TextOrScopeItem(text=prompt)],
            metadata=common.Metadata(session_id=session),
            cascade_config=cortex.CascadeConfig(planner_config=cortex.CascadePlannerConfig(requested_model_uid=model_uid)),
        )
        expected, rejected = self._expect(lambda: self.model.send(cascade_id, session, prompt, model_uid, now))
        outcome = self.d.call("SendUserCascadeMessage", request)
        seen = self.seen.setdefault(cascade_id, CascadeObservations())
        what = f"Send({cascade_id})"
        if seen.expired:
            assert error_classes(outcome.message) == {"expired"}, f"{what} after expiry: {outcome.message!r}"
        if rejected is not None:
            self._check_rejection(outcome, rejected, what)
            if rejected.klass == "expired":
                seen.expired = True
            self._note_session_rejection(session, rejected.klass, "Send")
            return rejected
        assert outcome.ok, f"{what}: expected OK, got {outcome.code.name}: {outcome.message!r}"
        assert session not in self.panel_failed, f"{what} accepted before InitializeCascadePanelState"
        assert not self.untrusted_seen, f"{what} accepted before UpdateWorkspaceTrust(true)"
        assert outcome.payload == b"", "SendUserCascadeMessage answers an empty message"
        seen.sent.append(SentTurn(expected, model_uid))
        seen.turn_statuses = []
        return None

    def poll_steps(self, cascade_id: str, offset: int) -> list[StepView] | None:
        now = self.d.clock.now()
        request = ls.GetCascadeTrajectoryStepsRequest(cascade_id=cascade_id, step_offset=offset)
        what = f"Steps({cascade_id}, offset={offset})"
        result = self._cascade_call(
            cascade_id, what, lambda: self.model.steps(cascade_id, offset, now), "GetCascadeTrajectorySteps", request
        )
        if result is None:
            return None
        expected, outcome = result
        views = [step_view(s) for s in ls.GetCascadeTrajectoryStepsResponse.FromString(outcome.payload).steps]
        # Cumulative from the requested offset: exactly the full snapshot's [offset:] at this moment.
        assert_views_equal(views, expected, what)
        self.seen[cascade_id].check_steps(offset, views)
        return views

    def poll_status(self, cascade_id: str) -> int | None:
        now = self.d.clock.now()
        request = ls.GetCascadeTrajectoryRequest(cascade_id=cascade_id)
        what = f"Trajectory({cascade_id})"
        result = self._cascade_call(
            cascade_id, what, lambda: self.model.status(cascade_id, now), "GetCascadeTrajectory", request
        )
        if result is None:
            return None
        expected, outcome = result
        response = ls.GetCascadeTrajectoryResponse.FromString(outcome.payload)
        model_cascade = self.model.cascades[cascade_id]
        assert response.status == expected, f"{what}: status {response.status}, expected {expected}"
        assert response.trajectory.cascade_id == cascade_id
        assert response.trajectory.trajectory_id, "the trajectory id is needed for HandleCascadeUserInteraction"
        assert response.num_total_steps == len(model_cascade.steps)
        assert response.num_total_generator_metadata == len(model_cascade.records)

        seen = self.seen[cascade_id]
        statuses = seen.turn_statuses
        assert not (response.status == RUNNING and IDLE in statuses), f"{what}: RUNNING again after IDLE: {statuses}"
        first_idle = response.status == IDLE and IDLE not in statuses
        statuses.append(response.status)
        if first_idle and seen.sent:
            self._check_turn_done(cascade_id, seen)
        return response.status

    def _check_turn_done(self, cascade_id: str, seen: CascadeObservations) -> None:
        """When IDLE is first seen after a Send: RUNNING came first (as often as the turn asks) and
        the steps and records already hold the whole scripted turn."""
        turn = seen.sent[-1].turn
        running = seen.turn_statuses.count(RUNNING)
        assert running >= turn.min_running_polls, (
            f"IDLE after {running} RUNNING polls; the turn asks for {turn.min_running_polls}"
        )
        history = seen.history_steps()
        start = len(history) - len(final_turn_views(turn))
        views = self.poll_steps(cascade_id, start)
        if views is None:  # expired as the turn finished (expire_after); the rejection was checked
            return
        assert_views_equal(views, final_turn_views(turn), f"steps of the finished turn at IDLE ({cascade_id})")
        records = self.poll_metadata(cascade_id, 0)
        assert records is not None
        assert_views_equal(records, seen.history_records(), f"records of the finished turns at IDLE ({cascade_id})")

    def poll_metadata(self, cascade_id: str, offset: int) -> list[RecordView] | None:
        now = self.d.clock.now()
        request = ls.GetCascadeTrajectoryGeneratorMetadataRequest(
            cascade_id=cascade_id, generator_metadata_offset=offset
        )
        what = f"GeneratorMetadata({cascade_id}, offset={offset})"
        result = self._cascade_call(
            cascade_id,
            what,
            lambda: self.model.metadata(cascade_id, offset, now),
            "GetCascadeTrajectoryGeneratorMetadata",
            request,
        )
        if result is None:
            return None
        expected, outcome = result
        response = ls.GetCascadeTrajectoryGeneratorMetadataResponse.FromString(outcome.payload)
        views = [record_view(r) for r in response.generator_metadata]
        assert_views_equal(views, expected, what)
        self.seen[cascade_id].check_records(offset, views)
        return views

    def initialize_panel(self, session: str) -> None:
        request = ls.InitializeCascadePanelStateRequest(
            metadata=common.Metadata(session_id=session), workspace_trusted=True
        )
        outcome = self.d.call("InitializeCascadePanelState", request)
        assert outcome.ok, outcome
        self.model.initialize_panel(session)
        self.panel_failed.clear()

    def update_workspace_trust(self, trusted: bool) -> None:
        metadata = common.Metadata(session_id=SESSIONS[0])
        request = ls.UpdateWorkspaceTrustRequest(metadata=metadata, workspace_trusted=trusted)
        outcome = self.d.call("UpdateWorkspaceTrust", request)
        assert outcome.ok, outcome
        self.model.update_trust(trusted)
        if trusted:
            self.untrusted_seen = False

    def unknown_cascade(self, cascade_id: str, method: str) -> None:
        if cascade_id in self.model.cascades:
            return
        requests: dict[str, Message] = {
            "SendUserCascadeMessage": ls.SendUserCascadeMessageRequest(
                cascade_id=cascade_id, items=[common.TextOrScopeItem(text="hello")]
            ),
            "GetCascadeTrajectory": ls.GetCascadeTrajectoryRequest(cascade_id=cascade_id),
            "GetCascadeTrajectorySteps": ls.GetCascadeTrajectoryStepsRequest(cascade_id=cascade_id, step_offset=1),
            "GetCascadeTrajectoryGeneratorMetadata": ls.GetCascadeTrajectoryGeneratorMetadataRequest(
                cascade_id=cascade_id
            ),
        }
        outcome = self.d.call(method, requests[method])
        assert outcome.code == grpc.StatusCode.NOT_FOUND, f"{method} on unknown cascade {cascade_id!r}: {outcome}"
        assert error_classes(outcome.message) == {"expired"}, (
            f"{method} on unknown cascade {cascade_id!r}: the client would not see an expired cascade in "
            f"{outcome.message!r}"
        )

    def send_and_poll(self, cascade: str, session: str, prompt: str, model_uid: str, polls: tuple[str, ...]) -> None:
        step_offset = len(self.model.cascades[cascade].steps)
        if self.send(cascade, session, prompt, model_uid) is not None:
            return
        for poll in polls:
            if poll == "clock":
                self.d.clock.advance(POLL_INTERVAL_S)
            elif poll == "steps":
                self.poll_steps(cascade, step_offset)
            elif poll == "status":
                self.poll_status(cascade)
            else:
                self.poll_metadata(cascade, 0)

    def _probe_persistence(self, cascade: str, session: str, klass: str) -> None:
        """Before recovering, check that the failure lasts: an expired cascade stays expired, panel
        loss lasts until InitializeCascadePanelState, distrust until UpdateWorkspaceTrust(true)
        (UpdateWorkspaceTrust(false) does not lift it). The model predicts each answer."""
        if klass == "expired":
            self.poll_status(cascade)
        elif klass == "panel":
            self.start(session)
        else:
            self.update_workspace_trust(False)
            self.start(session)

    def play_turn(self, cascade: str, session: str, prompt: str, model_uid: str) -> None:
        """A whole turn the way the real client plays it: Send, then Steps at the stored absolute
        offset and Trajectory every 500 ms until IDLE twice, a final Steps sweep, then usage.

        A rejected Send is recovered as the real client does (wire.md section 4): re-warm the panel
        and the workspace trust, start a fresh cascade unless only the trust was missing, and
        send again, at most three times."""
        for _ in range(3):
            model_cascade = self.model.cascades[cascade]
            step_offset, generator_offset = len(model_cascade.steps), len(model_cascade.records)
            rejected = self.send(cascade, session, prompt, model_uid)
            if rejected is None:
                break
            if rejected.klass not in ("expired", "panel", "untrusted"):
                return
            self._probe_persistence(cascade, session, rejected.klass)
            self.initialize_panel(session)
            self.update_workspace_trust(True)
            if rejected.klass != "untrusted":
                fresh = self.start(session)
                if fresh is None:
                    return
                cascade = fresh
        else:
            return
        idle = 0
        for _ in range(200):
            self.d.clock.advance(POLL_INTERVAL_S)
            if self.poll_steps(cascade, step_offset) is None:
                return
            status = self.poll_status(cascade)
            if status is None:
                return
            idle = idle + 1 if status == IDLE else 0
            if idle >= 2:
                break
        else:
            raise AssertionError(f"turn on {cascade} still RUNNING after 200 polls of {POLL_INTERVAL_S} s")
        if self.poll_steps(cascade, step_offset) is None:
            return
        self.poll_metadata(cascade, generator_offset)

    def whole_history(self, cascade: str) -> None:
        """Run the cascade to IDLE, then Steps(0) is every turn's scripted steps in order and
        GeneratorMetadata(0) every turn's records in order: absolute indices never move."""
        for _ in range(200):
            status = self.poll_status(cascade)
            if status is None:
                return
            if status == IDLE:
                break
            self.d.clock.advance(POLL_INTERVAL_S)
        seen = self.seen[cascade]
        steps = self.poll_steps(cascade, 0)
        if steps is None:
            return
        assert_views_equal(steps, seen.history_steps(), f"whole step history of {cascade}")
        records = self.poll_metadata(cascade, 0)
        if records is None:
            return
        assert_views_equal(records, seen.history_records(), f"whole record history of {cascade}")



def _settings(scale: float) -> settings:
    """The loaded profile with ``scale`` times its examples: in-process examples are cheap (a few
    ms), gRPC ones are not."""
    current = settings.default
    assert current is not None
    # No explain phase: it replays a failure hundreds of times, too slow for these examples.
    phases = tuple(phase for phase in current.phases if phase is not Phase.explain)
    return settings(current, max_examples=max(1, round(current.max_examples * scale)), phases=phases)


def play(client: WireClient, actions: list[Action]) -> None:
    client.warm_up()
    for action in actions:
        client.apply(action)
    for cascade_id in client.cascade_ids:
        client.whole_history(cascade_id)


@_settings(5)
@given(scenario=scenarios(fault_one_in=3), actions=client_actions())
def test_stateful_semantics_in_process(scenario: Scenario, actions: list[Action]) -> None:
    driver = InProcessDriver(scenario)
    try:
        play(WireClient(driver, scenario), actions)
    finally:
        driver.close()


# ------------------------------------------------------------------ over real gRPC


@pytest.fixture(scope="module")
def grpc_fake() -> Iterator[tuple[FakeLSThread, ManualClock, ls_grpc.LanguageServerServiceStub]]:
    clock = ManualClock()
    with FakeLSThread(csrf_token=CSRF_TOKEN, clock=clock) as fake, grpc.insecure_channel(fake.address) as channel:
        yield fake, clock, ls_grpc.LanguageServerServiceStub(channel)


@_settings(0.5)
@given(scenario=scenarios(max_turns=3, fault_one_in=3), actions=client_actions(max_bursts=4))
def test_stateful_semantics_over_grpc(
    grpc_fake: tuple[FakeLSThread, ManualClock, ls_grpc.LanguageServerServiceStub],
    scenario: Scenario,
    actions: list[Action],
) -> None:
    fake, clock, stub = grpc_fake
    fake.load_scenario(scenario)
    play(WireClient(GrpcDriver(fake, clock, stub), scenario), actions)


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
    grpc_fake: tuple[FakeLSThread, ManualClock, ls_grpc.LanguageServerServiceStub],
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
    grpc_fake: tuple[FakeLSThread, ManualClock, ls_grpc.LanguageServerServiceStub],
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
