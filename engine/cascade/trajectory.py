"""What the client reads out of one ``CortexTrajectoryStep`` (wire.md section 2.7).

A step's kind is the oneof body present; its ``type`` is only checked for 17 (an error step).
Text and thinking come from ``planner_response`` on any step type.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Literal

from google.protobuf import json_format
from google.protobuf.message import Message

from fakels.proto.exa.codeium_common_pb import codeium_common_pb2 as common
from fakels.proto.exa.cortex_pb import cortex_pb2 as cortex

ERROR_STEP_TYPE = 17
PENDING_STEP_STATUS = 1
ERROR_TEXT_LIMIT = 300

NATIVE_KINDS = (
    "grep_search",
    "view_file",
    "list_directory",
    "write_to_file",
    "run_command",
    "find",
    "read_url_content",
    "search_web",
    "grep_search_v2",
)

ToolCallSource = Literal["proposal", "choice", "custom", "mcp", "native"]


@dataclass(frozen=True)
class CascadeToolCall:
    """A tool call seen in the trajectory. ``source`` says which step body carried it; native calls
    (the LS's own tools) have ids ``native:<kind>:<absolute step index>`` and, once executed, a
    ``result``."""

    id: str
    name: str
    arguments_json: str
    source: ToolCallSource
    step_index: int
    result: str = ""
    server_name: str = ""

    @property
    def native(self) -> bool:
        return self.source == "native"

    @property
    def native_proposal(self) -> bool:
        """A native call the LS proposes but has not executed (no result yet)."""
        return self.native and not self.result

    @property
    def dedup_key(self) -> str:
        return self.id or f"{self.name}:{self.arguments_json}"


@dataclass(frozen=True)
class StepUsage:
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int


@dataclass(frozen=True)
class StepView:
    index: int  # absolute within the cascade
    step_type: int
    status: int
    response: str
    modified_response: str
    thinking: str
    error_text: str
    usage: StepUsage | None
    tool_calls: tuple[CascadeToolCall, ...]

    @property
    def live_text(self) -> str:
        """The streamed text: ``response``, or the post-edited text when there is no response."""
        return self.response or self.modified_response

    @property
    def is_error(self) -> bool:
        return self.step_type == ERROR_STEP_TYPE and bool(self.error_text)


def _error_details_text(details: cortex.CortexErrorDetails) -> str:
    for candidate in (details.user_error_message, details.short_error, details.full_error):
        text = candidate.strip()
        if text:
            return text.split("\n", 1)[0][:ERROR_TEXT_LIMIT]
    return ""


def _chat_call(call: common.ChatToolCall, source: ToolCallSource, index: int) -> CascadeToolCall:
    return CascadeToolCall(
        id=call.id, name=call.name, arguments_json=call.arguments_json, source=source, step_index=index
    )


def _native_result(kind: str, body: Message) -> str:
    match body:
        case cortex.CortexStepViewFile():
            return str(body.content)
        case cortex.CortexStepRunCommand():
            if body.combined_output.full:
                return str(body.combined_output.full)
            return str(body.stdout) + (f"\n[stderr]\n{body.stderr}" if body.stderr else "")
        case cortex.CortexStepGrepSearchV2() | cortex.CortexStepGrepSearch():
            return str(body.raw_output)
        case cortex.CortexStepFind():
            return str(body.raw_output)
        case cortex.CortexStepListDirectory():
            return "\n".join(body.children)
        case cortex.CortexStepReadUrlContent():
            document = body.web_document
            if document.text:
                return str(document.text)
            chunks = [chunk.text or chunk.markdown_chunk.text for chunk in document.chunks]
            joined = "\n".join(c for c in chunks if c)
            return joined or str(document.summary)
        case cortex.CortexStepSearchWeb():
            return str(body.summary)
    return ""


def _native_call(step: cortex.CortexTrajectoryStep, kind: str, index: int) -> CascadeToolCall:
    body: Message = getattr(step, kind)
    arguments = json_format.MessageToDict(body, preserving_proto_field_name=True)
    return CascadeToolCall(
        id=f"native:{kind}:{index}",
        name=kind,
        arguments_json=json.dumps(arguments, separators=(",", ":"), ensure_ascii=False),
        source="native",
        step_index=index,
        result=_native_result(kind, body),
    )


def _tool_calls(step: cortex.CortexTrajectoryStep, index: int) -> tuple[CascadeToolCall, ...]:
    calls: list[CascadeToolCall] = []
    kind = step.WhichOneof("step")
    if kind == "custom_tool":
        custom = step.custom_tool
        calls.append(
            CascadeToolCall(
                id=custom.recipe_id,
                name=custom.recipe_name or custom.recipe_id or "custom_tool",
                arguments_json=custom.arguments_json,
                source="custom",
                step_index=index,
                result=custom.output,
            )
        )
    elif kind == "mcp_tool" and step.mcp_tool.HasField("tool_call"):
        mcp = step.mcp_tool
        base = _chat_call(mcp.tool_call, "mcp", index)
        calls.append(
            CascadeToolCall(
                id=base.id,
                name=base.name,
                arguments_json=base.arguments_json,
                source="mcp",
                step_index=index,
                result=mcp.result_string,
                server_name=mcp.server_name,
            )
        )
    elif kind == "tool_call_proposal" and step.tool_call_proposal.HasField("tool_call"):
        calls.append(_chat_call(step.tool_call_proposal.tool_call, "proposal", index))
    elif kind == "tool_call_choice" and len(step.tool_call_choice.proposal_tool_calls) > 0:
        choice = step.tool_call_choice
        proposals = choice.proposal_tool_calls
        chosen = proposals[choice.choice] if choice.choice < len(proposals) else proposals[0]
        calls.append(_chat_call(chosen, "choice", index))
    elif kind in NATIVE_KINDS:
        calls.append(_native_call(step, kind, index))
    return tuple(calls)


def read_step(step: cortex.CortexTrajectoryStep, absolute_index: int) -> StepView:
    """Everything the polling loop needs from one step."""
    planner = step.planner_response
    error_text = ""
    if step.HasField("error_message"):
        error_text = _error_details_text(step.error_message.error)
    if not error_text and step.HasField("error"):
        error_text = _error_details_text(step.error)
    usage = None
    stats = step.metadata.model_usage
    values = (stats.input_tokens, stats.output_tokens, stats.cache_read_tokens, stats.cache_write_tokens)
    if any(values):
        usage = StepUsage(*(int(v) for v in values))
    return StepView(
        index=absolute_index,
        step_type=int(step.type),
        status=int(step.status),
        response=planner.response,
        modified_response=planner.modified_response,
        thinking=planner.thinking,
        error_text=error_text,
        usage=usage,
        tool_calls=_tool_calls(step, absolute_index),
    )
