"""The polling loop of one Cascade turn and its done rule (wire.md section 3).

Each iteration sleeps one poll interval (short at first, doubling up to the reference client's;
see :class:`PollSettings`), reads every step from the turn's absolute step offset
(a cumulative snapshot), walks them (text and thinking deltas, tool calls deduplicated, per-step
usage), then reads the run status. The turn is done when the run has been seen active (or the idle
grace has passed) and then reported IDLE often enough: twice with text once nothing has grown for
two poll intervals (those in force when it last grew), four times without text. A final read of
the steps at the same offset tops up the text. Stalls (no output at all, or output that stopped
growing while the run is still active) and the overall cap end the loop too.

The loop is transport-free: it takes two fetch callables, a clock and a sleep, so it can be driven
over real gRPC or by a scripted test double.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Literal

from engine.cascade.errors import CascadeModelError, CascadeStallError, LsCallError
from engine.cascade.trajectory import PENDING_STEP_STATUS, CascadeToolCall, StepUsage, StepView, read_step
from fakels.proto.exa.cortex_pb import cortex_pb2 as cortex

log = logging.getLogger("engine.cascade")

RUN_STATUS_IDLE = 1
_EPSILON_S = 1e-9
EndReason = Literal["idle_done", "idle_empty", "native_tool_call", "warm_stall", "max_wait", "aborted"]


@dataclass(frozen=True)
class PollSettings:
    """Timing of the done rule; the defaults are the reference client's (wire.md sections 1.5, 3),
    except the first polls: the reference client waits its full interval before every poll, so no
    turn takes less than about a second even when the LS answers at once (a fake does). Here the
    first poll comes after ``first_poll_interval_s`` and the interval doubles from there up to
    ``poll_interval_s``: a quick answer is seen quickly, and a long turn is polled as gently as
    the reference client polls it (six extra polls in its first 0.6 s, none after)."""

    poll_interval_s: float = 0.5  # the longest wait between two polls
    first_poll_interval_s: float = 0.01  # capped at poll_interval_s
    poll_backoff: float = 2.0
    max_wait_s: float = 600.0
    idle_grace_s: float = 8.0
    idle_polls_with_text: int = 2
    idle_polls_without_text: int = 4
    # Quiet time required (in poll intervals) before an IDLE run with text counts as done.
    quiet_intervals: float = 2.0
    cold_stall_base_s: float = 30.0
    cold_stall_per_chunk_s: float = 5.0
    cold_stall_chunk_chars: int = 1500
    warm_stall_text_s: float = 45.0
    warm_stall_thinking_s: float = 120.0
    warm_stall_tool_s: float = 180.0
    tool_recent_growth_s: float = 60.0
    warm_stall_min_text: int = 300
    stop_on_native_proposal: bool = True

    def intervals(self) -> Iterator[float]:
        """The waits before each poll: from the first interval, times the backoff, up to the longest."""
        interval = min(self.first_poll_interval_s, self.poll_interval_s)
        while True:
            yield interval
            interval = min(interval * self.poll_backoff, self.poll_interval_s)

    def cold_stall_limit(self, prompt_chars: int) -> float:
        return self.cold_stall_base_s + self.cold_stall_per_chunk_s * (prompt_chars // self.cold_stall_chunk_chars)


@dataclass(frozen=True)
class CascadeDelta:
    """One increment of the turn as it streams: a text or thinking delta, or a new tool call."""

    kind: Literal["text", "thinking", "tool_call"]
    text: str = ""
    tool_call: CascadeToolCall | None = None


@dataclass
class PollOutcome:
    text: str
    thinking: str
    tool_calls: list[CascadeToolCall]
    step_usage: StepUsage | None
    # Distinct steps that produced text / thinking, and the longest step list polled.
    text_steps: int
    thinking_steps: int
    last_step_count: int
    end_reason: EndReason
    polls: int
    saw_active: bool


FetchSteps = Callable[[float], Sequence[cortex.CortexTrajectoryStep]]
FetchStatus = Callable[[float], int]


@dataclass
class _Walk:
    """Cursors of one turn, keyed by step index relative to the offset."""

    step_offset: int
    native_mode: bool
    clock: Callable[[], float]
    on_delta: Callable[[CascadeDelta], None] | None
    text_by_step: dict[int, int] = field(default_factory=dict)
    thinking_by_step: dict[int, int] = field(default_factory=dict)
    usage_by_step: dict[int, StepUsage] = field(default_factory=dict)
    seen_calls: set[str] = field(default_factory=set)
    tool_calls: list[CascadeToolCall] = field(default_factory=list)
    text_parts: list[str] = field(default_factory=list)
    thinking_parts: list[str] = field(default_factory=list)
    text_chars: int = 0
    last_step_count: int = 0
    last_growth_at: float = 0.0
    last_tool_call_at: float | None = None
    pending_step: bool = False
    # The poll interval in force now, and when the output last grew (the quiet rule counts in it).
    interval: float = 0.0
    interval_at_growth: float = 0.0

    @property
    def saw_text(self) -> bool:
        return self.text_chars > 0

    @property
    def saw_output(self) -> bool:
        return self.saw_text or bool(self.thinking_parts) or bool(self.tool_calls)

    def _emit(self, delta: CascadeDelta) -> None:
        if self.on_delta is not None:
            self.on_delta(delta)

    def _grew(self) -> None:
        self.last_growth_at = self.clock()
        self.interval_at_growth = self.interval

    def _text(self, index: int, live: str) -> None:
        prev = self.text_by_step.get(index, 0)
        if len(live) > prev:
            delta = live[prev:]
            self.text_by_step[index] = len(live)
            self.text_parts.append(delta)
            self.text_chars += len(delta)
            self._grew()
            self._emit(CascadeDelta("text", text=delta))

    def walk(self, views: Sequence[StepView]) -> bool:
        """Walk one snapshot; True when a native proposal should end the turn (native mode)."""
        if len(views) > self.last_step_count:
            self.last_step_count = len(views)
            self._grew()
        native_stop = False
        self.pending_step = False
        for index, view in enumerate(views):
            if view.status == PENDING_STEP_STATUS:
                self.pending_step = True
            if view.usage is not None:
                self.usage_by_step[index] = view.usage
            for call in view.tool_calls:
                if call.dedup_key in self.seen_calls:
                    continue
                self.seen_calls.add(call.dedup_key)
                self.tool_calls.append(call)
                self._grew()
                self.last_tool_call_at = self.last_growth_at
                self._emit(CascadeDelta("tool_call", tool_call=call))
            if self.native_mode and any(call.native_proposal for call in view.tool_calls):
                native_stop = True
            prev_thinking = self.thinking_by_step.get(index, 0)
            if len(view.thinking) > prev_thinking:
                delta = view.thinking[prev_thinking:]
                self.thinking_by_step[index] = len(view.thinking)
                self.thinking_parts.append(delta)
                self._grew()
                self._emit(CascadeDelta("thinking", text=delta))
            if view.live_text:
                self._text(index, view.live_text)
        return native_stop

    def top_up_modified(self, views: Sequence[StepView]) -> None:
        """Append the LS's post-edited text where it strictly extends what was streamed."""
        for index, view in enumerate(views):
            modified = view.modified_response
            if len(modified) > self.text_by_step.get(index, 0) and modified.startswith(view.response):
                self._text(index, modified)

    def step_usage(self) -> StepUsage | None:
        if not self.usage_by_step:
            return None
        items = self.usage_by_step.values()
        return StepUsage(
            input_tokens=sum(u.input_tokens for u in items),
            output_tokens=sum(u.output_tokens for u in items),
            cache_read_tokens=sum(u.cache_read_tokens for u in items),
            cache_write_tokens=sum(u.cache_write_tokens for u in items),
        )


def _check_errors(views: Sequence[StepView], native_mode: bool) -> None:
    if native_mode and any(call.native_proposal for view in views for call in view.tool_calls):
        return
    for view in views:
        if view.is_error:
            raise CascadeModelError(view.error_text, step_index=view.index)


def poll_turn(
    fetch_steps: FetchSteps,
    fetch_status: FetchStatus,
    *,
    step_offset: int,
    prompt_chars: int,
    settings: PollSettings,
    call_timeout_s: float,
    native_mode: bool = False,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    abort: threading.Event | None = None,
    on_delta: Callable[[CascadeDelta], None] | None = None,
) -> PollOutcome:
    """Poll one turn to its end. Raises :class:`CascadeModelError` on an error step,
    :class:`CascadeStallError` on a stall, :class:`LsCallError` when a poll RPC fails."""
    start = clock()
    deadline = start + settings.max_wait_s
    walk = _Walk(step_offset=step_offset, native_mode=native_mode, clock=clock, on_delta=on_delta)
    walk.last_growth_at = start
    intervals = settings.intervals()
    walk.interval = walk.interval_at_growth = next(settings.intervals())
    cold_limit = settings.cold_stall_limit(prompt_chars)
    saw_active = False
    last_status = -1
    idle_count = 0
    polls = 0
    end_reason: EndReason | None = None

    def timeout() -> float:
        return max(0.0, min(call_timeout_s, deadline - clock()))

    def read(snapshot: Sequence[cortex.CortexTrajectoryStep]) -> list[StepView]:
        return [read_step(step, step_offset + i) for i, step in enumerate(snapshot)]

    def aborted() -> bool:
        return abort is not None and abort.is_set()

    try:
        while clock() < deadline:
            if aborted():
                end_reason = "aborted"
                break
            walk.interval = next(intervals)
            sleep(walk.interval)
            if aborted():
                end_reason = "aborted"
                break
            polls += 1
            views = read(fetch_steps(timeout()))
            _check_errors(views, native_mode)

            now = clock()
            if now - start > cold_limit and saw_active and not walk.saw_output:
                raise CascadeStallError(f"Cascade planner stalled — no output after {round(cold_limit)}s", stage="cold")

            if walk.walk(views) and settings.stop_on_native_proposal:
                end_reason = "native_tool_call"
                break

            now = clock()
            tool_active = walk.pending_step or (
                walk.last_tool_call_at is not None and now - walk.last_tool_call_at < settings.tool_recent_growth_s
            )
            if tool_active:
                ceiling = settings.warm_stall_tool_s
            elif walk.thinking_parts:
                ceiling = settings.warm_stall_thinking_s
            else:
                ceiling = settings.warm_stall_text_s
            if walk.saw_text and last_status != RUN_STATUS_IDLE and now - walk.last_growth_at > ceiling:
                if walk.text_chars < settings.warm_stall_min_text:
                    raise CascadeStallError(
                        f"Cascade planner stalled after preamble — no progress for {round(ceiling)}s", stage="warm"
                    )
                log.warning("Cascade warm stall: accepting %d chars of partial text", walk.text_chars)
                end_reason = "warm_stall"
                break

            status = fetch_status(timeout())
            last_status = status
            if status != RUN_STATUS_IDLE:
                saw_active = True
                idle_count = 0
                continue
            if not saw_active and clock() - start <= settings.idle_grace_s:
                continue
            idle_count += 1
            if walk.saw_text:
                # With a doubling backoff the first poll after a growth comes exactly two intervals later:
                # the tolerance keeps that boundary on the not-quiet side whatever the float sums give.
                quiet = clock() - walk.last_growth_at > settings.quiet_intervals * walk.interval_at_growth + _EPSILON_S
                done = idle_count >= settings.idle_polls_with_text and quiet
            else:
                done = idle_count >= settings.idle_polls_without_text
            if done:
                final = read(fetch_steps(timeout()))
                _check_errors(final, native_mode)
                walk.walk(final)
                walk.top_up_modified(final)
                end_reason = "idle_done" if walk.saw_text else "idle_empty"
                break
    except LsCallError as exc:
        if not (exc.timed_out and clock() >= deadline):
            raise
        end_reason = None  # the cap was hit inside a poll call
    if end_reason is None:
        end_reason = "max_wait"
        log.warning("Cascade turn hit the %.0f s cap after %d polls", settings.max_wait_s, polls)

    return PollOutcome(
        text="".join(walk.text_parts),
        thinking="".join(walk.thinking_parts),
        tool_calls=list(walk.tool_calls),
        step_usage=walk.step_usage(),
        text_steps=len(walk.text_by_step),
        thinking_steps=len(walk.thinking_by_step),
        last_step_count=walk.last_step_count,
        end_reason=end_reason,
        polls=polls,
        saw_active=saw_active,
    )
