"""The reference model of the fake's documented Cascade semantics, written from the scenario's
point of view (wire.md sections 3 and 4): one chunk revealed per poll once its ``delay_s`` has
passed; RUNNING while chunks remain or for the first ``min_running_polls`` status polls after the
Send; records appended when the turn finishes; expiry, panel loss and distrust."""

from __future__ import annotations

from dataclasses import dataclass, field

import grpc

from fakels.cascade import EXPIRED_TEXT, PANEL_MISSING_TEXT, UNTRUSTED_TEXT
from fakels.scenario import Fault, Scenario, Turn
from tests.support.wire_state.views import (
    IDLE,
    RUNNING,
    USER_INPUT_VIEW,
    RecordView,
    StepView,
    chunk_views,
    expected_record,
    planner_view,
)


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
