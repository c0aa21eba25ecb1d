"""What the client reads out of one trajectory step (wire.md 2.7.1-2.7.4), step by step.

Each step is built with the real generated classes and sent through the wire (serialised and parsed
back) before ``read_step`` sees it, as the polling loop would receive it.
"""

from __future__ import annotations

import pytest

from engine.cascade.trajectory import CascadeToolCall, StepUsage, StepView, read_step
from fakels.proto.exa.codeium_common_pb import codeium_common_pb2 as common
from fakels.proto.exa.cortex_pb import cortex_pb2 as cortex
from tests.engine.ls_requests_exact_support import chat_call, error_details


def _view(step: cortex.CortexTrajectoryStep, index: int = 0) -> StepView:
    return read_step(cortex.CortexTrajectoryStep.FromString(step.SerializeToString()), index)


# ---------------------------------------------------------------------------- text, status, usage


def test_text_and_thinking_come_from_the_planner_response_on_any_step_type() -> None:
    step = cortex.CortexTrajectoryStep(
        type=14,  # type: ignore[arg-type]  # USER_INPUT, not PLANNER_RESPONSE: the type is not checked
        status=2,  # type: ignore[arg-type]
        planner_response=cortex.CortexStepPlannerResponse(response="hi", modified_response="hi!", thinking="hmm"),
    )
    view = _view(step, 12)
    assert (view.index, view.step_type, view.status) == (12, 14, 2)
    assert (view.response, view.modified_response, view.thinking) == ("hi", "hi!", "hmm")
    assert (view.usage, view.tool_calls, view.error_text, view.is_error) == (None, (), "", False)


@pytest.mark.parametrize(("response", "modified", "live"), [("ab", "abc", "ab"), ("", "final", "final"), ("", "", "")])
def test_live_text_is_the_response_else_the_modified_response(response: str, modified: str, live: str) -> None:
    planner = cortex.CortexStepPlannerResponse(response=response, modified_response=modified)
    assert _view(cortex.CortexTrajectoryStep(planner_response=planner)).live_text == live


@pytest.mark.parametrize(
    ("stats", "usage"),
    [
        ({"input_tokens": 5}, StepUsage(5, 0, 0, 0)),
        ({"output_tokens": 6}, StepUsage(0, 6, 0, 0)),
        ({"cache_read_tokens": 7}, StepUsage(0, 0, 7, 0)),
        ({"cache_write_tokens": 8}, StepUsage(0, 0, 0, 8)),
        (
            {"input_tokens": 1, "output_tokens": 2, "cache_read_tokens": 3, "cache_write_tokens": 4},
            StepUsage(1, 2, 3, 4),
        ),
        ({}, None),
    ],
)
def test_step_usage_is_read_when_any_count_is_non_zero(stats: dict[str, int], usage: StepUsage | None) -> None:
    metadata = cortex.CortexStepMetadata(model_usage=common.ModelUsageStats(**stats))  # type: ignore[arg-type]
    assert _view(cortex.CortexTrajectoryStep(metadata=metadata)).usage == usage


# ---------------------------------------------------------------------------- errors (2.7.4)

LONG = "e" * 301


@pytest.mark.parametrize(
    ("details", "text"),
    [
        (error_details(user="quota", short="short", full="full"), "quota"),
        (error_details(user="  \n ", short="short one", full="full"), "short one"),
        (error_details(short="", full="  full trace\nline 2\nline 3"), "full trace"),
        (error_details(user="first line\nsecond line"), "first line"),
        (error_details(user="e" * 299), "e" * 299),
        (error_details(user="e" * 300), "e" * 300),
        (error_details(user=LONG), "e" * 300),
        (error_details(user="x" * 310 + "\nmore"), "x" * 300),
        (error_details(), ""),
    ],
)
def test_error_text_is_the_first_non_empty_detail_first_line_capped_at_300(
    details: cortex.CortexErrorDetails, text: str
) -> None:
    step = cortex.CortexTrajectoryStep(type=17, error_message=cortex.CortexStepErrorMessage(error=details))  # type: ignore[arg-type]
    view = _view(step)
    assert view.error_text == text
    assert view.is_error is bool(text)


def test_the_error_message_wins_over_the_step_error() -> None:
    step = cortex.CortexTrajectoryStep(
        type=17,  # type: ignore[arg-type]
        error_message=cortex.CortexStepErrorMessage(error=error_details(user="from 24")),
        error=error_details(user="from 31"),
    )
    assert _view(step).error_text == "from 24"


@pytest.mark.parametrize(
    "error_message",
    [None, cortex.CortexStepErrorMessage(), cortex.CortexStepErrorMessage(error=error_details(full=" "))],
)
def test_the_step_error_is_the_fallback(error_message: cortex.CortexStepErrorMessage | None) -> None:
    step = cortex.CortexTrajectoryStep(type=17, error=error_details(short="from 31"))  # type: ignore[arg-type]
    if error_message is not None:
        step.error_message.CopyFrom(error_message)
    assert _view(step).error_text == "from 31"


@pytest.mark.parametrize(("step_type", "is_error"), [(17, True), (15, False), (16, False), (0, False)])
def test_only_type_17_with_text_is_an_error_step(step_type: int, is_error: bool) -> None:
    step = cortex.CortexTrajectoryStep(type=step_type, error=error_details(user="boom"))  # type: ignore[arg-type]
    view = _view(step)
    assert view.error_text == "boom"
    assert view.is_error is is_error


# ---------------------------------------------------------------------------- chat-shaped tool calls (2.7.1)


def test_a_proposal_carries_its_chat_tool_call() -> None:
    step = cortex.CortexTrajectoryStep(
        tool_call_proposal=cortex.CortexStepToolCallProposal(tool_call=chat_call("call_1", "Read", '{"p":1}'))
    )
    call = CascadeToolCall(id="call_1", name="Read", arguments_json='{"p":1}', source="proposal", step_index=4)
    assert _view(step, 4).tool_calls == (call,)
    assert (call.native, call.native_proposal, call.dedup_key) == (False, False, "call_1")


def test_a_proposal_without_a_tool_call_is_no_call() -> None:
    step = cortex.CortexTrajectoryStep(tool_call_proposal=cortex.CortexStepToolCallProposal())
    assert _view(step).tool_calls == ()


@pytest.mark.parametrize(("choice", "chosen"), [(0, "a"), (1, "b"), (2, "c"), (3, "a"), (9, "a")])
def test_a_choice_uses_the_chosen_proposal_or_the_first_when_out_of_range(choice: int, chosen: str) -> None:
    proposals = [chat_call(f"id-{n}", n, "{}") for n in "abc"]
    step = cortex.CortexTrajectoryStep(
        tool_call_choice=cortex.CortexStepToolCallChoice(proposal_tool_calls=proposals, choice=choice)
    )
    assert _view(step, 2).tool_calls == (
        CascadeToolCall(id=f"id-{chosen}", name=chosen, arguments_json="{}", source="choice", step_index=2),
    )


def test_a_choice_of_a_single_proposal_is_that_proposal() -> None:
    step = cortex.CortexTrajectoryStep(
        tool_call_choice=cortex.CortexStepToolCallChoice(proposal_tool_calls=[chat_call("only", "Read", "{}")])
    )
    assert _view(step, 5).tool_calls == (
        CascadeToolCall(id="only", name="Read", arguments_json="{}", source="choice", step_index=5),
    )


def test_a_choice_without_proposals_is_no_call() -> None:
    step = cortex.CortexTrajectoryStep(tool_call_choice=cortex.CortexStepToolCallChoice(choice=0, reason="none"))
    assert _view(step).tool_calls == ()


def test_an_mcp_call_carries_its_server_and_result() -> None:
    mcp = cortex.CortexStepMcpTool(
        server_name="srv", tool_call=chat_call("m1", "lookup", '{"q":"x"}'), result_string="42"
    )
    expected = CascadeToolCall(
        id="m1", name="lookup", arguments_json='{"q":"x"}', source="mcp", step_index=3, result="42", server_name="srv"
    )
    assert _view(cortex.CortexTrajectoryStep(mcp_tool=mcp), 3).tool_calls == (expected,)


def test_an_mcp_step_without_a_tool_call_is_no_call() -> None:
    step = cortex.CortexTrajectoryStep(mcp_tool=cortex.CortexStepMcpTool(server_name="srv", result_string="42"))
    assert _view(step).tool_calls == ()


@pytest.mark.parametrize(
    ("recipe_id", "recipe_name", "name"),
    [("r-1", "deploy", "deploy"), ("r-1", "", "r-1"), ("", "", "custom_tool"), ("", "named", "named")],
)
def test_a_custom_tool_is_named_by_recipe_name_then_id(recipe_id: str, recipe_name: str, name: str) -> None:
    custom = cortex.CortexStepCustomTool(
        recipe_id=recipe_id, recipe_name=recipe_name, arguments_json="{}", output="done"
    )
    step = cortex.CortexTrajectoryStep(custom_tool=custom)
    expected = CascadeToolCall(
        id=recipe_id, name=name, arguments_json="{}", source="custom", step_index=1, result="done"
    )
    assert _view(step, 1).tool_calls == (expected,)


def test_a_call_without_an_id_dedups_by_name_and_arguments() -> None:
    step = cortex.CortexTrajectoryStep(
        tool_call_proposal=cortex.CortexStepToolCallProposal(tool_call=chat_call("", "Read", "{}"))
    )
    assert _view(step).tool_calls[0].dedup_key == "Read:{}"


def test_steps_without_a_tool_body_carry_no_call() -> None:
    step = cortex.CortexTrajectoryStep(type=19, user_input=cortex.CortexStepUserInput(user_response="/etc/passwd"))  # type: ignore[arg-type]
    assert _view(step).tool_calls == ()


# ---------------------------------------------------------------------------- native tool steps (2.7.3)


def _native(kind: str, body: object, index: int = 6) -> CascadeToolCall:
    step = cortex.CortexTrajectoryStep(**{kind: body})  # type: ignore[arg-type]
    (call,) = _view(step, index).tool_calls
    assert (call.id, call.name, call.source, call.step_index) == (f"native:{kind}:{index}", kind, "native", index)
    assert call.native
    return call


def test_a_native_call_reports_its_body_as_compact_json_with_proto_field_names() -> None:
    body = cortex.CortexStepViewFile(absolute_path_uri="/src/é.py", start_line=3, end_line=9)
    call = _native("view_file", body)
    assert call.arguments_json == '{"absolute_path_uri":"/src/é.py","start_line":3,"end_line":9}'
    assert (call.result, call.native_proposal, call.dedup_key) == ("", True, "native:view_file:6")


NATIVE_RESULTS = [
    ("view_file", cortex.CortexStepViewFile(absolute_path_uri="/a", content="line 1\nline 2"), "line 1\nline 2"),
    (
        "run_command",
        cortex.CortexStepRunCommand(
            command_line="ls", stdout="out", stderr="err", combined_output=cortex.RunCommandOutput(full="combined")
        ),
        "combined",
    ),
    ("run_command", cortex.CortexStepRunCommand(command_line="ls", stdout="out", stderr="err"), "out\n[stderr]\nerr"),
    ("run_command", cortex.CortexStepRunCommand(command_line="ls", stdout="out"), "out"),
    ("run_command", cortex.CortexStepRunCommand(command_line="ls", stderr="err"), "\n[stderr]\nerr"),
    ("grep_search_v2", cortex.CortexStepGrepSearchV2(pattern="x", raw_output="a.py:1:x"), "a.py:1:x"),
    ("grep_search", cortex.CortexStepGrepSearch(query="x", raw_output="b.py:2:x"), "b.py:2:x"),
    ("find", cortex.CortexStepFind(pattern="*.py", raw_output="c.py"), "c.py"),
    ("list_directory", cortex.CortexStepListDirectory(directory_path_uri="/d", children=["a", "b/"]), "a\nb/"),
    ("search_web", cortex.CortexStepSearchWeb(query="q", summary="the web says"), "the web says"),
    (
        "read_url_content",
        cortex.CortexStepReadUrlContent(
            url="u",
            web_document=common.KnowledgeBaseItem(
                text="page", chunks=[common.KnowledgeBaseChunk(text="chunk")], summary="sum"
            ),
        ),
        "page",
    ),
    (
        "read_url_content",
        cortex.CortexStepReadUrlContent(
            url="u",
            web_document=common.KnowledgeBaseItem(
                chunks=[
                    common.KnowledgeBaseChunk(text="one"),
                    common.KnowledgeBaseChunk(),
                    common.KnowledgeBaseChunk(markdown_chunk=common.KnowledgeBaseMarkdownChunk(text="two")),
                    common.KnowledgeBaseChunk(
                        text="three", markdown_chunk=common.KnowledgeBaseMarkdownChunk(text="unused")
                    ),
                ],
                summary="sum",
            ),
        ),
        "one\ntwo\nthree",
    ),
    (
        "read_url_content",
        cortex.CortexStepReadUrlContent(
            url="u", web_document=common.KnowledgeBaseItem(chunks=[common.KnowledgeBaseChunk()], summary="sum")
        ),
        "sum",
    ),
    ("write_to_file", cortex.CortexStepWriteToFile(target_file_uri="/f", code_content=["x"]), ""),
]


@pytest.mark.parametrize(("kind", "body", "result"), NATIVE_RESULTS)
def test_a_native_call_result_is_the_field_windsurf_reads(kind: str, body: object, result: str) -> None:
    call = _native(kind, body)
    assert call.result == result
    assert call.native_proposal is (result == "")
