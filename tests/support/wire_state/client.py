"""The client that checks everything: :class:`WireClient` plays actions through a driver (the
in-process core or real gRPC) and checks every answer twice, against the model and against what a
client may rely on without it (:class:`CascadeObservations`)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import grpc
from google.protobuf.message import Message

from fakels.clock import ManualClock
from fakels.proto.exa.codeium_common_pb import codeium_common_pb2 as common
from fakels.proto.exa.cortex_pb import cortex_pb2 as cortex
from fakels.proto.exa.language_server_pb import language_server_pb2 as ls
from fakels.proto.exa.language_server_pb import language_server_pb2_grpc as ls_grpc
from fakels.rpcs import SERVICE_NAME
from fakels.scenario import Scenario, Turn
from fakels.server import FakeLSThread
from fakels.service import FakeLanguageServer, IncomingCall, ServerConfig
from tests.support.fake_ls import CSRF_TOKEN
from tests.support.wire_state.actions import (
    SESSIONS,
    Action,
    AdvanceClock,
    InitializePanel,
    PlayTurn,
    PollMetadata,
    PollStatus,
    PollSteps,
    SendTurn,
    StartCascade,
    UnknownCascade,
    UpdateTrust,
    WholeHistory,
)
from tests.support.wire_state.model import Model, Rejected
from tests.support.wire_state.views import (
    IDLE,
    POLL_INTERVAL_S,
    RUNNING,
    RecordView,
    StepStatus,
    StepView,
    assert_views_equal,
    error_classes,
    expected_record,
    final_turn_views,
    record_view,
    short,
    step_view,
)


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
                        f"planner response at step {index} is not append-only: {short(old_response)} -> "
                        f"{short(response)}"
                    )
                    assert thinking.startswith(old_thinking), (
                        f"planner thinking at step {index} is not append-only: {short(old_thinking)} -> "
                        f"{short(thinking)}"
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


GrpcFake = tuple[FakeLSThread, ManualClock, ls_grpc.LanguageServerServiceStub]
"""A fake LS on a manual clock and a stub connected to it (the ``grpc_fake`` fixture)."""


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

    def _cascade_call(
        self, cascade_id: str, what: str, predict: Callable[[], Any], method: str, request: Message
    ) -> tuple[Any, Outcome] | None:
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
            cascade_config=cortex.CascadeConfig(
                planner_config=cortex.CascadePlannerConfig(requested_model_uid=model_uid)
            ),
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


def play(client: WireClient, actions: list[Action]) -> None:
    """Warm up, play ``actions``, then check every cascade's whole history."""
    client.warm_up()
    for action in actions:
        client.apply(action)
    for cascade_id in client.cascade_ids:
        client.whole_history(cascade_id)
