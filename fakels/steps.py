"""Builders for the CortexTrajectoryStep messages a scripted turn produces."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from google.protobuf import json_format
from google.protobuf.message import Message

from fakels.proto.exa.codeium_common_pb import codeium_common_pb2 as common
from fakels.proto.exa.cortex_pb import cortex_pb2 as cortex

StepType = cortex.CortexStepType
StepStatus = cortex.CortexStepStatus

# The real step type of each native oneof body (wire.md section 2.11).
NATIVE_STEP_TYPES: dict[str, int] = {
    "grep_search": StepType.CORTEX_STEP_TYPE_GREP_SEARCH,
    "view_file": StepType.CORTEX_STEP_TYPE_VIEW_FILE,
    "list_directory": StepType.CORTEX_STEP_TYPE_LIST_DIRECTORY,
    "write_to_file": StepType.CORTEX_STEP_TYPE_WRITE_TO_FILE,
    "run_command": StepType.CORTEX_STEP_TYPE_RUN_COMMAND,
    "propose_code": StepType.CORTEX_STEP_TYPE_PROPOSE_CODE,
    "find": StepType.CORTEX_STEP_TYPE_FIND,
    "read_url_content": StepType.CORTEX_STEP_TYPE_READ_URL_CONTENT,
    "search_web": StepType.CORTEX_STEP_TYPE_SEARCH_WEB,
    "grep_search_v2": StepType.CORTEX_STEP_TYPE_GREP_SEARCH_V2,
    "custom_tool": StepType.CORTEX_STEP_TYPE_CUSTOM_TOOL,
    "mcp_tool": StepType.CORTEX_STEP_TYPE_MCP_TOOL,
    "tool_call_choice": StepType.CORTEX_STEP_TYPE_TOOL_CALL_CHOICE,
}

_PATH_LIKE = re.compile(r"^\s*(?:[/~.\\]|[A-Za-z]:[\\/]|[A-Za-z][A-Za-z0-9+.-]*://)")


def native_body(kind: str, body: Mapping[str, Any]) -> Message:
    """The oneof body message ``kind`` of CortexTrajectoryStep, filled from a JSON object.

    Raises ``json_format.ParseError`` when ``body`` does not fit the message.
    """
    message: Message = getattr(cortex.CortexTrajectoryStep(), kind)
    json_format.ParseDict(dict(body), message)
    return message


def native_step(
    kind: str, body: Mapping[str, Any], step_type: int | None, status: int | None
) -> cortex.CortexTrajectoryStep:
    step = cortex.CortexTrajectoryStep(
        type=step_type if step_type is not None else NATIVE_STEP_TYPES.get(kind, 0),  # type: ignore[arg-type]
        status=status if status is not None else StepStatus.CORTEX_STEP_STATUS_PENDING,  # type: ignore[arg-type]
    )
    getattr(step, kind).CopyFrom(native_body(kind, body))
    return step


def user_input_step(prompt: str) -> cortex.CortexTrajectoryStep:
    """The USER_INPUT echo of a turn, kept non-path-like so clients see no phantom view_file."""
    first_line = prompt.strip().splitlines()[0] if prompt.strip() else ""
    text = f"user: {first_line[:200]}"
    assert not _PATH_LIKE.match(text)
    return cortex.CortexTrajectoryStep(
        type=StepType.CORTEX_STEP_TYPE_USER_INPUT,
        status=StepStatus.CORTEX_STEP_STATUS_DONE,
        user_input=cortex.CortexStepUserInput(user_response=text),
    )


def planner_step(
    response: str, thinking: str, done: bool, modified_response: str | None
) -> cortex.CortexTrajectoryStep:
    body = cortex.CortexStepPlannerResponse(response=response, thinking=thinking)
    if modified_response is not None:
        body.modified_response = modified_response
    return cortex.CortexTrajectoryStep(
        type=StepType.CORTEX_STEP_TYPE_PLANNER_RESPONSE,
        status=StepStatus.CORTEX_STEP_STATUS_DONE if done else StepStatus.CORTEX_STEP_STATUS_RUNNING,
        planner_response=body,
    )


def error_step(message: str) -> cortex.CortexTrajectoryStep:
    return cortex.CortexTrajectoryStep(
        type=StepType.CORTEX_STEP_TYPE_ERROR_MESSAGE,
        status=StepStatus.CORTEX_STEP_STATUS_DONE,
        error_message=cortex.CortexStepErrorMessage(error=cortex.CortexErrorDetails(user_error_message=message)),
    )


def tool_call_step(call_id: str, name: str, arguments_json: str) -> cortex.CortexTrajectoryStep:
    return cortex.CortexTrajectoryStep(
        type=StepType.CORTEX_STEP_TYPE_TOOL_CALL_PROPOSAL,
        status=StepStatus.CORTEX_STEP_STATUS_DONE,
        tool_call_proposal=cortex.CortexStepToolCallProposal(
            tool_call=common.ChatToolCall(id=call_id, name=name, arguments_json=arguments_json)
        ),
    )


def generator_record(usage: common.ModelUsageStats | None, model_uid: str) -> cortex.CortexStepGeneratorMetadata:
    chat_model = cortex.ChatModelMetadata(model_uid=model_uid)
    if usage is not None:
        chat_model.usage.CopyFrom(usage)
    return cortex.CortexStepGeneratorMetadata(chat_model=chat_model)
