"""Stateful cascades: absolute steps, append-only planner text, run status, usage records.

This module holds the language server's state and answers each RPC from it. It knows nothing
about transports: :mod:`fakels.service` hands it decoded requests and sends back what it returns.
"""

from __future__ import annotations

import itertools
import secrets
from dataclasses import dataclass, field

import grpc

from fakels import steps as step_builders
from fakels.clock import Clock
from fakels.proto.exa.codeium_common_pb import codeium_common_pb2 as common
from fakels.proto.exa.cortex_pb import cortex_pb2 as cortex
from fakels.proto.exa.language_server_pb import language_server_pb2 as ls
from fakels.scenario import Chunk, ResponseOverride, Scenario, Turn, Usage

RunStatus = cortex.CascadeRunStatus

# Error texts the real clients classify (wire.md section 4): the gateway matches on text only.
DEFAULT_MAX_CASCADES = 1000
EXPIRED_TEXT = "not_found: cascade trajectory has been expired by ttl"
PANEL_MISSING_TEXT = "panel state not found"
UNTRUSTED_TEXT = "untrusted workspace: workspace is not trusted"


class LsError(Exception):
    """An RPC failure with the status code and the text the fake puts in ``grpc-message``."""

    def __init__(self, code: grpc.StatusCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(frozen=True)
class RawPayload:
    """Bytes sent as the response body instead of an encoded message (malformed on purpose), or, with
    ``fault``, the real answer's bytes and how the transport is to fail in sending them."""

    data: bytes
    fault: TransportFault | None = None


@dataclass(frozen=True)
class TransportFault:
    """A failure at the HTTP level: an HTTP error status in place of a gRPC answer, or the answer's frame
    cut mid-message with no trailers. Only fakels' h2 gRPC port sends it as such; the others answer
    ``code``, the status a gRPC client reads from it."""

    http_status: int | None = None
    cut_frame: bool = False

    @property
    def code(self) -> grpc.StatusCode:
        if self.cut_frame:
            return grpc.StatusCode.INTERNAL
        return _HTTP_TO_GRPC.get(self.http_status or 0, grpc.StatusCode.UNKNOWN)

    def describe(self) -> str:
        return "its gRPC frame cut mid-message" if self.cut_frame else f"HTTP {self.http_status}"


# How gRPC clients read an HTTP status that carries no gRPC status (gRPC's http-grpc-status-mapping).
_HTTP_TO_GRPC = {
    400: grpc.StatusCode.INTERNAL,
    401: grpc.StatusCode.UNAUTHENTICATED,
    403: grpc.StatusCode.PERMISSION_DENIED,
    404: grpc.StatusCode.UNIMPLEMENTED,
    429: grpc.StatusCode.UNAVAILABLE,
    502: grpc.StatusCode.UNAVAILABLE,
    503: grpc.StatusCode.UNAVAILABLE,
    504: grpc.StatusCode.UNAVAILABLE,
}


@dataclass
class _ActiveTurn:
    turn: Turn
    prompt: str
    started_at: float
    revealed: int = 0
    last_reveal_at: float = 0.0
    status_polls: int = 0
    planner_index: int | None = None
    response: str = ""
    thinking: str = ""
    rpc_calls: dict[str, int] = field(default_factory=dict)
    finished: bool = False

    @property
    def complete(self) -> bool:
        return self.revealed >= len(self.turn.chunks)


@dataclass
class CascadeState:
    cascade_id: str
    trajectory_id: str
    model_uid: str = ""
    steps: list[cortex.CortexTrajectoryStep] = field(default_factory=list)
    records: list[cortex.CortexStepGeneratorMetadata] = field(default_factory=list)
    current: _ActiveTurn | None = None
    turns_played: int = 0
    expired: bool = False
    # expire_after: the finished turn stays readable; the next Send finds the cascade expired.
    expire_pending: bool = False
    last_used: float = 0.0

    @property
    def active(self) -> _ActiveTurn | None:
        """The turn still being played, if any."""
        if self.current is None or self.current.finished:
            return None
        return self.current


class LanguageServerState:
    """Everything the fake remembers between calls; one instance per server."""

    def __init__(
        self,
        scenario: Scenario,
        clock: Clock,
        *,
        id_prefix: str | None = None,
        max_cascades: int = DEFAULT_MAX_CASCADES,
    ) -> None:
        if max_cascades < 1:
            raise ValueError(f"the fake keeps at least one cascade, got {max_cascades}")
        self.clock = clock
        self.max_cascades = max_cascades
        # Like the real LS's UUID-like ids, cascade ids are never handed out twice: the counter
        # survives resets and scenario loads, and the prefix (random unless given) differs per server.
        self.id_prefix = id_prefix if id_prefix is not None else secrets.token_hex(4)
        self._ids = itertools.count(1)
        self._begin(scenario)

    def _begin(self, scenario: Scenario) -> None:
        self.scenario = scenario
        self.cascades: dict[str, CascadeState] = {}
        self._evicted = 0
        # The id numbers handed out since the last reset: one of them that is no longer kept was evicted.
        self._numbers: range = range(0)
        self.sends_accepted = 0
        self.turn_index = 0
        self.panel_sessions: set[str] = set()
        self.panel_lost = False
        self.workspace_untrusted = False

    def reset(self, scenario: Scenario | None = None) -> None:
        """Forget every cascade and restart the scenario; ids handed out before stay retired (a Send or
        poll on one answers not-found)."""
        self._begin(scenario or self.scenario)

    # ------------------------------------------------------------------ warm-up and account

    def initialize_panel(self, session_id: str) -> None:
        self.panel_sessions.add(session_id)
        self.panel_lost = False

    def update_workspace_trust(self, trusted: bool) -> None:
        if trusted:
            self.workspace_untrusted = False

    # ------------------------------------------------------------------ cascade lifecycle

    def start_cascade(self, session_id: str) -> str:
        self._check_panel(session_id)
        n = next(self._ids)
        self._numbers = range(self._numbers.start if self._numbers else n, n + 1)
        cascade_id = f"fakels-cascade-{self.id_prefix}-{n:04d}"
        self.cascades[cascade_id] = CascadeState(
            cascade_id=cascade_id,
            trajectory_id=f"fakels-trajectory-{self.id_prefix}-{n:04d}",
            last_used=self.clock.now(),
        )
        if len(self.cascades) > self.max_cascades:
            self._evict_least_recently_used()
        return cascade_id

    def _evict_least_recently_used(self) -> None:
        """Past the bound the cascade used longest ago is forgotten, as a real LS lets old trajectories
        expire: a later call on it answers the expired text, which clients recover from."""
        oldest = min(self.cascades.values(), key=lambda c: c.last_used)
        del self.cascades[oldest.cascade_id]
        self._evicted += 1

    @property
    def evicted(self) -> int:
        """Cascades the bound made the fake forget since the last reset."""
        return self._evicted

    def send(self, request: ls.SendUserCascadeMessageRequest) -> None:
        cascade = self._cascade(request.cascade_id)
        if cascade.expire_pending:
            cascade.expired = True
            raise LsError(grpc.StatusCode.NOT_FOUND, EXPIRED_TEXT)
        self._check_panel(request.metadata.session_id)
        prompt = "".join(item.text for item in request.items)
        turn = self.scenario.turn(self.turn_index, prompt, len(request.images))
        self.turn_index += 1
        if turn.fault is not None:
            self._apply_fault(cascade, turn)
        self.sends_accepted += 1
        if cascade.active is not None:
            self._finish(cascade)
        cascade.model_uid = request.cascade_config.planner_config.requested_model_uid
        if turn.user_input_step:
            cascade.steps.append(step_builders.user_input_step(prompt))
        now = self.clock.now()
        cascade.current = _ActiveTurn(turn=turn, prompt=prompt, started_at=now, last_reveal_at=now)

    def _apply_fault(self, cascade: CascadeState, turn: Turn) -> None:
        assert turn.fault is not None
        kind, message = turn.fault.kind, turn.fault.message
        if kind == "expired":
            cascade.expired = True
            raise LsError(grpc.StatusCode.NOT_FOUND, message or EXPIRED_TEXT)
        if kind == "panel_lost":
            self.panel_lost = True
            self.panel_sessions.clear()
            raise LsError(grpc.StatusCode.NOT_FOUND, message or PANEL_MISSING_TEXT)
        if kind == "untrusted":
            self.workspace_untrusted = True
            raise LsError(grpc.StatusCode.FAILED_PRECONDITION, message or UNTRUSTED_TEXT)
        raise LsError(grpc.StatusCode.INTERNAL, message or "fakels: scripted send failure")

    # ------------------------------------------------------------------ polling

    def steps(self, cascade_id: str, offset: int) -> list[cortex.CortexTrajectoryStep]:
        cascade = self._cascade(cascade_id)
        self._advance(cascade)
        return cascade.steps[offset:]

    def run_status(self, cascade_id: str) -> tuple[CascadeState, int]:
        cascade = self._cascade(cascade_id)
        self._advance(cascade)
        active = cascade.active
        if active is None:
            return cascade, RunStatus.CASCADE_RUN_STATUS_IDLE
        active.status_polls += 1
        if not active.complete or active.status_polls <= active.turn.min_running_polls:
            return cascade, RunStatus.CASCADE_RUN_STATUS_RUNNING
        self._finish(cascade)
        return cascade, RunStatus.CASCADE_RUN_STATUS_IDLE

    def generator_metadata(self, cascade_id: str, offset: int) -> list[cortex.CortexStepGeneratorMetadata]:
        cascade = self._cascade(cascade_id)
        self._advance(cascade)
        active = cascade.active
        # A complete turn's records are readable, but reading them must not cut short the
        # RUNNING polls the turn promises (min_running_polls).
        if active is not None and active.complete and active.status_polls >= active.turn.min_running_polls:
            self._finish(cascade)
        return cascade.records[offset:]

    def override_for(self, cascade_id: str, rpc: str) -> ResponseOverride | None:
        """The scripted malformed answer for this call of ``rpc`` in the cascade's latest turn,
        if any (counts the call)."""
        cascade = self.cascades.get(cascade_id)
        if cascade is None or cascade.current is None:
            return None
        calls = cascade.current.rpc_calls
        index = calls.get(rpc, 0)
        calls[rpc] = index + 1
        for item in cascade.current.turn.overrides:
            if item.rpc == rpc and item.call == index:
                return item
        return None

    # ------------------------------------------------------------------ internals

    def _cascade(self, cascade_id: str) -> CascadeState:
        cascade = self.cascades.get(cascade_id)
        if cascade is None and self._was_evicted(cascade_id):
            raise LsError(grpc.StatusCode.NOT_FOUND, EXPIRED_TEXT)
        if cascade is None:
            raise LsError(grpc.StatusCode.NOT_FOUND, f"not_found: cascade {cascade_id!r} not found")
        now = self.clock.now()
        ttl = self.scenario.cascade_ttl_s
        if ttl is not None and now - cascade.last_used > ttl:
            cascade.expired = True
        if cascade.expired:
            raise LsError(grpc.StatusCode.NOT_FOUND, EXPIRED_TEXT)
        cascade.last_used = now
        return cascade

    def _was_evicted(self, cascade_id: str) -> bool:
        prefix, _, number = cascade_id.rpartition("-")
        return prefix == f"fakels-cascade-{self.id_prefix}" and number.isdigit() and int(number) in self._numbers

    def _check_panel(self, session_id: str) -> None:
        if self.panel_lost or (self.scenario.require_panel and session_id not in self.panel_sessions):
            raise LsError(grpc.StatusCode.NOT_FOUND, PANEL_MISSING_TEXT)
        if self.workspace_untrusted:
            raise LsError(grpc.StatusCode.FAILED_PRECONDITION, UNTRUSTED_TEXT)

    def _advance(self, cascade: CascadeState) -> None:
        """Reveal at most one chunk per poll, once its delay has passed on the clock."""
        active = cascade.active
        if active is None or active.complete:
            return
        chunk = active.turn.chunks[active.revealed]
        now = self.clock.now()
        if now - active.last_reveal_at < chunk.delay_s:
            return
        active.revealed += 1
        active.last_reveal_at = now
        self._reveal(cascade, active, chunk)

    def _reveal(self, cascade: CascadeState, active: _ActiveTurn, chunk: Chunk) -> None:
        if chunk.text or chunk.thinking:
            active.response += chunk.text
            active.thinking += chunk.thinking
            step = step_builders.planner_step(active.response, active.thinking, done=False, modified_response=None)
            if active.planner_index is None:
                active.planner_index = len(cascade.steps)
                cascade.steps.append(step)
            else:
                cascade.steps[active.planner_index] = step
        if chunk.tool_call is not None:
            call = chunk.tool_call
            cascade.steps.append(step_builders.tool_call_step(call.id, call.name, call.arguments_json))
        if chunk.native is not None:
            native = chunk.native
            cascade.steps.append(step_builders.native_step(native.kind, native.body, native.step_type, native.status))
        if chunk.error is not None:
            cascade.steps.append(step_builders.error_step(chunk.error))

    def _finish(self, cascade: CascadeState) -> None:
        active = cascade.active
        if active is None:
            return
        while not active.complete:
            chunk = active.turn.chunks[active.revealed]
            active.revealed += 1
            self._reveal(cascade, active, chunk)
        if active.planner_index is not None or active.turn.modified_response is not None:
            step = step_builders.planner_step(
                active.response, active.thinking, done=True, modified_response=active.turn.modified_response
            )
            if active.planner_index is None:
                cascade.steps.append(step)
            else:
                cascade.steps[active.planner_index] = step
        for usage in active.turn.records:
            cascade.records.append(step_builders.generator_record(_usage_message(usage), cascade.model_uid))
        active.finished = True
        cascade.turns_played += 1
        if active.turn.expire_after:
            cascade.expire_pending = True
        if active.turn.lose_panel_after:
            self.panel_lost = True
            self.panel_sessions.clear()


def _usage_message(usage: Usage | None) -> common.ModelUsageStats | None:
    if usage is None:
        return None
    return common.ModelUsageStats(
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        cache_write_tokens=usage.cache_write_tokens,
        cache_read_tokens=usage.cache_read_tokens,
    )
