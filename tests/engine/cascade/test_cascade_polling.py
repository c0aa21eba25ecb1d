"""The done rule, the step reader, the request builders and the rejection classes, without a server.

The polling loop is driven by scripted fetchers and a fake clock that the loop's own sleep moves,
so long timings (idle grace, stall ceilings, the cap) cost nothing.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from engine.cascade.errors import CascadeModelError, CascadeStallError, LsCallError, RejectionClass, classify_rejection
from engine.cascade.polling import PollSettings, poll_turn
from engine.cascade.requests import ModelRef, PlannerOptions, cascade_config, workspace_path
from engine.cascade.trajectory import read_step
from fakels.proto.exa.codeium_common_pb import codeium_common_pb2 as common
from fakels.proto.exa.cortex_pb import cortex_pb2 as cortex
from tests.engine.polling_support import IDLE, RUNNING, FakeTime, Script, Step, planner, run


def test_text_is_done_after_two_idle_polls_then_a_final_sweep_tops_it_up() -> None:
    script = Script(
        [
            ([planner("Hel")], RUNNING),
            ([planner("Hello")], IDLE),
            ([planner("Hello")], IDLE),
            ([planner("Hello there")], IDLE),  # only the final sweep sees this
        ]
    )
    outcome = run(script, FakeTime())
    assert outcome.end_reason == "idle_done"
    assert outcome.text == "Hello there"
    assert script.step_calls == script.status_calls + 1  # the final sweep
    assert (outcome.text_steps, outcome.last_step_count) == (1, 1)


def test_idle_with_text_waits_until_nothing_grew_for_two_intervals() -> None:
    # Text grows on every poll while the status already says IDLE: not done until it settles.
    frames = [([planner("a" * n)], RUNNING if n == 1 else IDLE) for n in range(1, 6)]
    script = Script(frames)
    outcome = run(script, FakeTime())
    assert outcome.text == "aaaaa"
    assert script.status_calls >= 7  # 5 growing polls, then 2 quiet idle ones


def test_without_text_four_idle_polls_are_needed() -> None:
    script = Script([([], RUNNING), ([], IDLE)])
    outcome = run(script, FakeTime())
    assert outcome.end_reason == "idle_empty"
    assert script.status_calls == 5


def test_idle_before_any_activity_waits_for_the_grace_period() -> None:
    time = FakeTime()
    script = Script([([planner("done")], IDLE)])
    outcome = run(script, time, PollSettings(poll_interval_s=0.5, first_poll_interval_s=0.5, idle_grace_s=8.0))
    assert outcome.end_reason == "idle_done"
    assert time.now > 8.0
    assert not outcome.saw_active


def test_a_non_idle_status_resets_the_idle_count() -> None:
    script = Script(
        [([planner("x")], RUNNING), ([planner("x")], IDLE), ([planner("x")], RUNNING), ([planner("x")], IDLE)]
    )
    run(script, FakeTime())
    assert script.status_calls == 5  # IDLE, RUNNING (reset), IDLE, IDLE


def test_modified_response_is_appended_only_when_it_extends_the_response() -> None:
    extends = Script([([planner("Draft")], RUNNING), ([planner("Draft", modified="Draft, final")], IDLE)])
    assert run(extends, FakeTime()).text == "Draft, final"
    rewrites = Script([([planner("Draft")], RUNNING), ([planner("Draft", modified="Rewritten draft")], IDLE)])
    assert run(rewrites, FakeTime()).text == "Draft"


def test_thinking_and_text_stream_as_deltas_per_step() -> None:
    deltas: list[tuple[str, str]] = []
    script = Script(
        [
            ([planner(thinking="Let me")], RUNNING),
            ([planner("A", thinking="Let me think"), planner("B")], RUNNING),
            ([planner("AA", thinking="Let me think"), planner("BB")], IDLE),
        ]
    )
    outcome = run(script, FakeTime(), on_delta=lambda d: deltas.append((d.kind, d.text)))
    assert outcome.text == "ABAB"
    assert outcome.thinking == "Let me think"
    assert deltas[:4] == [("thinking", "Let me"), ("thinking", " think"), ("text", "A"), ("text", "B")]
    assert (outcome.text_steps, outcome.thinking_steps, outcome.last_step_count) == (2, 1, 2)


def test_tool_calls_are_deduplicated_by_id_and_choice_takes_the_chosen_call() -> None:
    proposal = Step(
        tool_call_proposal=cortex.CortexStepToolCallProposal(
            tool_call=common.ChatToolCall(id="c1", name="read", arguments_json="{}")
        )
    )
    choice = Step(
        tool_call_choice=cortex.CortexStepToolCallChoice(
            proposal_tool_calls=[common.ChatToolCall(id="a", name="x"), common.ChatToolCall(id="b", name="y")],
            choice=1,
        )
    )
    mcp = Step(
        mcp_tool=cortex.CortexStepMcpTool(
            server_name="srv", tool_call=common.ChatToolCall(id="m", name="z"), result_string="ok"
        )
    )
    custom = Step(custom_tool=cortex.CortexStepCustomTool(recipe_id="r1", arguments_json='{"a":1}', output="done"))
    script = Script([([planner("t"), proposal], RUNNING), ([planner("t"), proposal, choice, mcp, custom], IDLE)])
    outcome = run(script, FakeTime(), step_offset=10)
    assert [(c.id, c.source, c.step_index) for c in outcome.tool_calls] == [
        ("c1", "proposal", 11),
        ("b", "choice", 12),
        ("m", "mcp", 13),
        ("r1", "custom", 14),
    ]
    assert (outcome.tool_calls[2].server_name, outcome.tool_calls[2].result) == ("srv", "ok")
    assert (outcome.tool_calls[3].name, outcome.tool_calls[3].result) == ("r1", "done")


def test_an_error_step_raises_unless_a_native_proposal_is_in_the_same_batch() -> None:
    error = Step(
        type=17,  # type: ignore[arg-type]
        error_message=cortex.CortexStepErrorMessage(error=cortex.CortexErrorDetails(short_error="  quota\nmore")),
    )
    with pytest.raises(CascadeModelError) as info:
        run(Script([([planner("x"), error], RUNNING)]), FakeTime(), step_offset=4)
    assert (info.value.message, info.value.step_index) == ("quota", 5)

    proposal = Step(run_command=cortex.CortexStepRunCommand(command_line="ls"))
    outcome = run(Script([([planner("x"), error, proposal], RUNNING)]), FakeTime(), native_mode=True)
    assert outcome.end_reason == "native_tool_call"


def test_an_error_text_on_a_non_error_step_is_not_raised() -> None:
    step = Step(type=15, error=cortex.CortexErrorDetails(user_error_message="benign"))  # type: ignore[arg-type]
    outcome = run(Script([([planner("x"), step], RUNNING), ([planner("x"), step], IDLE)]), FakeTime())
    assert outcome.end_reason == "idle_done"


def test_a_cold_stall_raises_after_the_limit_scaled_by_prompt_size() -> None:
    time = FakeTime()
    with pytest.raises(CascadeStallError) as info:
        run(Script([([], RUNNING)]), time, prompt_chars=3000)
    assert info.value.stage == "cold"
    assert info.value.kind == "transient_stall"
    assert 40.0 < time.now <= 41.5  # 30 s + 2 x 5 s


def test_a_warm_stall_with_little_text_raises_and_with_enough_text_is_accepted() -> None:
    time = FakeTime()
    with pytest.raises(CascadeStallError) as info:
        run(Script([([planner("short")], RUNNING)]), time)
    assert info.value.stage == "warm"
    assert 45.0 < time.now <= 46.5

    time = FakeTime()
    outcome = run(Script([([planner("x" * 300)], RUNNING)]), time)
    assert outcome.end_reason == "warm_stall"
    assert outcome.text == "x" * 300


def test_the_warm_stall_ceiling_is_longer_after_thinking_and_while_a_step_is_pending() -> None:
    time = FakeTime()
    run(Script([([planner("x" * 300, thinking="hmm")], RUNNING)]), time)
    assert 120.0 < time.now <= 121.5
    pending = Step(status=1)  # type: ignore[arg-type]
    time = FakeTime()
    run(Script([([planner("x" * 300), pending], RUNNING)]), time)
    assert 180.0 < time.now <= 181.5


def test_the_cap_ends_the_loop_with_max_wait() -> None:
    time = FakeTime()
    outcome = run(
        Script([([], RUNNING)]), time, PollSettings(max_wait_s=5.0, cold_stall_base_s=100.0, first_poll_interval_s=0.5)
    )
    assert outcome.end_reason == "max_wait"
    assert time.now == pytest.approx(5.0)


def test_a_poll_rpc_timing_out_at_the_cap_ends_with_max_wait_and_other_errors_propagate() -> None:
    time = FakeTime()

    def slow_steps(timeout_s: float) -> Sequence[Step]:
        time.now += timeout_s
        raise LsCallError("GetCascadeTrajectorySteps", "DEADLINE_EXCEEDED", "no answer")

    outcome = poll_turn(
        slow_steps,
        lambda _: RUNNING,
        step_offset=0,
        prompt_chars=0,
        settings=PollSettings(max_wait_s=3.0),
        call_timeout_s=30.0,
        clock=time.clock,
        sleep=time.sleep,
    )
    assert outcome.end_reason == "max_wait"

    def failing_steps(timeout_s: float) -> Sequence[Step]:
        raise LsCallError("GetCascadeTrajectorySteps", "NOT_FOUND", "not_found: cascade x not found")

    with pytest.raises(LsCallError, match="not_found"):
        poll_turn(
            failing_steps,
            lambda _: RUNNING,
            step_offset=0,
            prompt_chars=0,
            settings=PollSettings(),
            call_timeout_s=30.0,
            clock=time.clock,
            sleep=time.sleep,
        )


def test_an_abort_stops_polling() -> None:
    import threading

    abort = threading.Event()
    script = Script([([planner("x")], RUNNING)])

    def status(timeout_s: float) -> int:
        abort.set()
        return RUNNING

    outcome = poll_turn(
        script.steps,
        status,
        step_offset=0,
        prompt_chars=0,
        settings=PollSettings(),
        call_timeout_s=30.0,
        clock=FakeTime().clock,
        sleep=lambda _: None,
        abort=abort,
    )
    assert outcome.end_reason == "aborted"
    assert outcome.text == "x"


@pytest.mark.parametrize(
    ("kind", "body", "result"),
    [
        ("view_file", cortex.CortexStepViewFile(absolute_path_uri="/a", content="text"), "text"),
        (
            "run_command",
            cortex.CortexStepRunCommand(command_line="ls", stdout="out", stderr="err"),
            "out\n[stderr]\nerr",
        ),
        (
            "run_command",
            cortex.CortexStepRunCommand(combined_output=cortex.RunCommandOutput(full="all")),
            "all",
        ),
        ("list_directory", cortex.CortexStepListDirectory(children=["a", "b"]), "a\nb"),
        ("grep_search_v2", cortex.CortexStepGrepSearchV2(pattern="x", raw_output="hit"), "hit"),
        ("find", cortex.CortexStepFind(pattern="*.py", raw_output="a.py"), "a.py"),
        (
            "read_url_content",
            cortex.CortexStepReadUrlContent(
                url="u", web_document=common.KnowledgeBaseItem(chunks=[common.KnowledgeBaseChunk(text="c")])
            ),
            "c",
        ),
        ("search_web", cortex.CortexStepSearchWeb(query="q", summary="s"), "s"),
        ("read_url_content", cortex.CortexStepReadUrlContent(url="u"), ""),
    ],
)
def test_native_steps_become_native_calls_with_their_result(kind: str, body: object, result: str) -> None:
    step = Step()
    getattr(step, kind).CopyFrom(body)
    (call,) = read_step(step, 7).tool_calls
    assert (call.id, call.name, call.source, call.result) == (f"native:{kind}:7", kind, "native", result)
    assert call.native_proposal is (result == "")


def test_step_usage_is_read_from_the_step_metadata() -> None:
    step = Step(
        metadata=cortex.CortexStepMetadata(
            model_usage=common.ModelUsageStats(input_tokens=3, output_tokens=2, cache_read_tokens=1)
        )
    )
    script = Script([([planner("x"), step], RUNNING), ([planner("x"), step], IDLE)])
    usage = run(script, FakeTime()).step_usage
    assert usage is not None
    assert (usage.input_tokens, usage.output_tokens, usage.cache_read_tokens, usage.cache_write_tokens) == (3, 2, 1, 0)


# ---------------------------------------------------------------------------------------------- requests


def test_planner_modes_and_sections() -> None:
    model = ModelRef(uid="m")
    no_tool = cascade_config(PlannerOptions(model=model)).planner_config.conversational
    assert no_tool.planner_mode == common.CONVERSATIONAL_PLANNER_MODE_NO_TOOL
    assert no_tool.tool_calling_section.content == "No tools are available."
    assert not no_tool.HasField("additional_instructions_section")

    with_tools = cascade_config(PlannerOptions(model=model, tool_preamble="TOOLS")).planner_config.conversational
    assert with_tools.planner_mode == common.CONVERSATIONAL_PLANNER_MODE_NO_TOOL
    assert not with_tools.HasField("tool_calling_section")
    assert with_tools.additional_instructions_section.content == "TOOLS"
    assert with_tools.additional_instructions_section.mode == cortex.SECTION_OVERRIDE_MODE_OVERRIDE

    images = cascade_config(PlannerOptions(model=model, planner_default=True)).planner_config
    assert images.conversational.planner_mode == common.CONVERSATIONAL_PLANNER_MODE_DEFAULT
    assert not images.HasField("tool_config")

    native = cascade_config(PlannerOptions(model=model, native_mode=True)).planner_config
    assert native.conversational.planner_mode == common.CONVERSATIONAL_PLANNER_MODE_DEFAULT
    assert native.HasField("tool_config")
    assert native.tool_config.HasField("read_url_content")

    config = cascade_config(PlannerOptions(model=ModelRef(enum=353)))
    assert config.planner_config.plan_model_deprecated == 353
    assert config.planner_config.requested_model_deprecated.model == 353
    assert not config.planner_config.requested_model_uid
    assert config.brain_config.enabled
    assert not config.HasField("memory_config")


def test_a_model_needs_a_uid_or_an_enum() -> None:
    with pytest.raises(ValueError, match="model uid or an enum"):
        ModelRef()


def test_workspace_path_is_keyed_by_the_api_key_digest() -> None:
    assert workspace_path("key") == "/home/user/projects/workspace-2c70e12b7a0646f9"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("panel state not found", RejectionClass.PANEL_MISSING),
        ("NOT_FOUND: Panel for session x", RejectionClass.PANEL_MISSING),
        ("not_found: cascade trajectory has been expired by ttl", RejectionClass.CASCADE_EXPIRED),
        ("cascade not found", RejectionClass.CASCADE_EXPIRED),
        ("Trajectory Not-Found", RejectionClass.CASCADE_EXPIRED),
        ("expired: the cascade is gone", RejectionClass.CASCADE_EXPIRED),
        ("unknown cascade id abc", RejectionClass.CASCADE_EXPIRED),
        ("untrusted workspace: workspace is not trusted", RejectionClass.UNTRUSTED_WORKSPACE),
        ("Workspace /x is NOT trusted", RejectionClass.UNTRUSTED_WORKSPACE),
        ("neither PlanModel nor RequestedModel specified", None),
        ("user status is nil", None),
        ("", None),
    ],
)
def test_rejection_classes_follow_the_reference_regexes(text: str, expected: RejectionClass | None) -> None:
    assert classify_rejection(text) is expected
