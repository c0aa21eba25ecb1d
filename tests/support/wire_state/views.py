"""What a client can tell about the steps and generator records on the wire, the real client's
rejection classes, and the views a scripted turn must produce once it is finished."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from fakels.proto.exa.cortex_pb import cortex_pb2 as cortex
from fakels.scenario import Chunk, ToolCall, Turn, Usage
from fakels.steps import NATIVE_STEP_TYPES, native_body

IDLE = cortex.CascadeRunStatus.CASCADE_RUN_STATUS_IDLE
RUNNING = cortex.CascadeRunStatus.CASCADE_RUN_STATUS_RUNNING
StepStatus = cortex.CortexStepStatus
StepType = cortex.CortexStepType
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


def short(value: object, limit: int = 300) -> str:
    """``repr(value)``, cut to ``limit`` characters for assertion messages."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} chars)"


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
        return f"StepView({self.kind}, type={self.type}, status={self.status}, {short(self.content, 200)})"


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
            raise AssertionError(f"{what}: first difference at position {i}: got {short(g)}, want {short(w)}")
    raise AssertionError(f"{what}: got {len(got)} items, want {len(want)} (got {short(got)}, want {short(want)})")
