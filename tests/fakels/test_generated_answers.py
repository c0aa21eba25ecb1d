"""Generated answers are a cross-language contract: the gateway's tests predict them, so their exact
text, split and usage are pinned here as golden values (not recomputed with the same formula)."""

from __future__ import annotations

from fakels.proto.exa.cortex_pb import cortex_pb2 as cortex
from fakels.scenario import Chunk, Usage, default_answer, default_turn
from fakels.steps import native_step, user_input_step

StepType = cortex.CortexStepType


def test_default_answer_golden_values() -> None:
    assert default_answer("hello") == "fakels answer 2cf24dba5fb0: 5 chars, 0 images."
    assert default_answer("", 2) == "fakels answer e3b0c44298fc: 0 chars, 2 images."
    assert default_answer("a" * 40, 1) == "fakels answer e33cdf9c7f71: 40 chars, 1 images."


def test_default_turn_golden_chunks_and_usage() -> None:
    short = default_turn("hello")
    # Where the answer is cut into pieces is the fake's free choice (clients concatenate): only the
    # thinking chunk, the number of pieces and their concatenation are pinned.
    assert short.chunks[0] == Chunk(thinking="Reading 5 chars.")
    assert len(short.chunks) == 4
    assert all(c.text and not (c.thinking or c.tool_call or c.native or c.error) for c in short.chunks[1:])
    assert "".join(c.text for c in short.chunks) == "fakels answer 2cf24dba5fb0: 5 chars, 0 images."
    assert short.records == (Usage(input_tokens=1, output_tokens=11),)
    assert default_turn("").records == (Usage(input_tokens=1, output_tokens=11),)
    assert default_turn("a" * 40).records == (Usage(input_tokens=10, output_tokens=11),)
    assert default_turn("b" * 1000).records == (Usage(input_tokens=250, output_tokens=12),)


def test_default_turn_counts_no_image_unless_told() -> None:
    assert default_turn("x") == default_turn("x", 0)
    assert default_turn("x").chunks[-1].text.endswith(", 0 images.")
    assert default_turn("x", 3).chunks[-1].text.endswith(", 3 images.")


def test_user_input_echo_of_blank_multiline_and_long_prompts() -> None:
    assert user_input_step(" \n\t ").user_input.user_response == "user: "
    # The first line of the stripped prompt, its own trailing blanks kept.
    assert user_input_step("\n  first line  \nsecond").user_input.user_response == "user: first line  "
    long_prompt = "".join(chr(ord("a") + i % 26) for i in range(300))
    assert user_input_step(long_prompt).user_input.user_response == "user: " + long_prompt[:200]
    step = user_input_step("hi")
    assert (step.type, step.status) == (
        StepType.CORTEX_STEP_TYPE_USER_INPUT,
        cortex.CortexStepStatus.CORTEX_STEP_STATUS_DONE,
    )


def test_native_step_types() -> None:
    assert native_step("run_command", {"commandLine": "ls"}, None, None).type == StepType.CORTEX_STEP_TYPE_RUN_COMMAND
    assert native_step("run_command", {}, 99, 3).type == 99
    # A oneof body outside the table (only reachable from Python) gets UNSPECIFIED, never a real type.
    outside = native_step("checkpoint", {}, None, None)
    assert outside.type == StepType.CORTEX_STEP_TYPE_UNSPECIFIED == 0
    assert outside.status == cortex.CortexStepStatus.CORTEX_STEP_STATUS_PENDING
    assert outside.HasField("checkpoint")
