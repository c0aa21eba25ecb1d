"""Edges of the prompt builder, its history window and usage arithmetic that mutmut found unpinned.

Each test names the documented behaviour it pins (engine.md 1.A.2, 1.C for the log lines, 2 for the
offsets); they came out of the engine mutmut triage (docs/mutmut-triage-engine.md).
"""

from __future__ import annotations

from typing import Any

import pytest

from engine.cascade.usage import (
    GeneratorMetadataError,
    known_offset,
    next_step_offset,
    offsets_to_store,
    parse_generator_metadata,
)
from engine.config import HistoryImageLimits
from engine.media.gate import ImageSettings
from engine.prompt.build import Message, PromptBuild, build_cascade_prompt
from engine.prompt.history import (
    Coverage,
    HistoryEntry,
    kib_rounded,
    render_entry,
    render_line,
    select_history_window,
)
from engine.prompt.history_images import count_image_like
from engine.prompt.metrics import ImageHistoryMetrics
from fakels.proto.exa.codeium_common_pb import codeium_common_pb2 as common
from fakels.proto.exa.cortex_pb import cortex_pb2 as cortex
from fakels.proto.exa.language_server_pb import language_server_pb2 as ls
from tests.engine.prompt_support import (
    CLAUDE,
    IMG_A,
    IMG_B,
    PLAIN_MODEL,
    FakeFetcher,
    b64_image,
    build,
    captured,
    text_block,
)

# ------------------------------------------------------------------------------------ history window


@pytest.mark.parametrize(
    ("units", "kib"),
    [(0, 0), (100, 0), (511, 0), (512, 1), (1535, 1), (1536, 2), (1024 * 1000 + 511, 1000), (1024 * 1000 + 512, 1001)],
)
def test_kib_rounded_is_math_round_of_units_over_1024(units: int, kib: int) -> None:
    # the "(NKB kept)" figure of the trimmed-history log line: halves go up, and it is an integer
    assert kib_rounded(units) == kib
    assert isinstance(kib_rounded(units), int)


def test_a_conversation_of_one_turn_has_an_empty_window_starting_at_turn_0() -> None:
    window = select_history_window([Message("user", "only")], "system", 10)
    assert (window.entries, window.first_included, window.total_turns) == ((), 0, 1)
    assert window.coverage == Coverage(0, 0, 1)


def test_markers_only_replace_blocks_of_a_list_content() -> None:
    text = HistoryEntry(1, "human", "plain text", render_line("human", "plain text"))
    assert render_entry(text, {0: "[marker]"}) == text.line
    empty = HistoryEntry(2, "assistant", None, render_line("assistant", ""))
    assert render_entry(empty, {0: "[marker]"}) == empty.line
    odd: Any = {"a": 1}  # a malformed content object: its JSON, never its keys
    entry = HistoryEntry(3, "human", odd, render_line("human", '{"a":1}'))
    assert render_entry(entry, {}) == entry.line


def test_a_history_turn_with_object_content_is_replayed_as_its_json() -> None:
    odd: Any = {"note": "é"}
    built = build([Message("user", odd), Message("assistant", "ok"), Message("user", "next")], model_uid=PLAIN_MODEL)
    assert '<human>\n{"note":"é"}\n</human>\n\n<assistant>\nok\n</assistant>' in built.text


def test_turns_without_content_hold_no_image_blocks() -> None:
    assert count_image_like(None) == 0
    assert count_image_like("text [Image #1]") == 0
    # a tool-call-only assistant turn (content null) in the replayed history
    messages = [
        Message("user", [text_block("see"), b64_image(IMG_A)]),
        Message("assistant", None),
        Message("user", "and?"),
    ]
    built = build(messages, model_uid=PLAIN_MODEL)
    assert built.attached == 1
    assert "<assistant>\n\n</assistant>" in built.text


# ------------------------------------------------------------------------------------ prompt builder


def _prompt(messages: list[Message], **options: Any) -> PromptBuild:
    """build_cascade_prompt with only the required arguments plus ``options`` (defaults are under test)."""
    return build_cascade_prompt(
        messages,
        model_uid=options.pop("model_uid", PLAIN_MODEL),
        limits=HistoryImageLimits.from_env({}),
        image_settings=options.pop("image_settings", ImageSettings()),
        fetcher=FakeFetcher(),
        env={},
        metrics=ImageHistoryMetrics(),
        **options,
    )


THREE_TURNS = [Message("user", "a"), Message("assistant", "b"), Message("user", "c")]


def test_native_mode_is_off_by_default_and_on_asks_the_default_planner_for_every_build() -> None:
    assert _prompt([Message("user", "hi")]).planner_default is False
    assert _prompt(THREE_TURNS).planner_default is False
    for messages, resume in (([Message("user", "hi")], False), (THREE_TURNS, False), (THREE_TURNS, True)):
        built = _prompt(messages, native_mode=True, tool_preamble="", is_resume=resume)
        assert built.images == ()
        assert built.planner_default is True


@pytest.mark.parametrize(("messages", "resume"), [([Message("user", "hi")], False), (THREE_TURNS, True)])
def test_single_turn_and_resume_builds_cover_every_turn_from_0(messages: list[Message], resume: bool) -> None:
    assert _prompt(messages, is_resume=resume).coverage == Coverage(0, 0, len(messages))


def test_with_no_conversation_turn_the_current_text_is_empty() -> None:
    assert _prompt([Message("system", "Be brief.")]).text == "Be brief.\n\n"
    assert _prompt([Message("user", None)]).text == ""
    assert _prompt([Message("system", "S"), Message("user", None)]).text == "S\n\n"


def test_the_display_model_names_the_model_in_the_context_line() -> None:
    built = _prompt([Message("user", "hi")], model_uid=CLAUDE, display_model="Claude Shown")
    assert built.text == (
        "[Context: The underlying model serving this request is Claude Shown, developed by Anthropic.]\n\nhi"
    )


def test_the_image_settings_gate_current_and_history_images() -> None:
    messages = [
        Message("user", [text_block("old"), b64_image(IMG_A)]),
        Message("assistant", "ok"),
        Message("user", [text_block("now"), b64_image(IMG_B)]),
    ]
    assert len(_prompt(messages).images) == 2
    tight = _prompt(messages, image_settings=ImageSettings(max_base64_len=10))
    assert (tight.images, tight.attached, tight.drops.unextractable) == ((), 0, 1)


def test_the_documented_log_lines() -> None:
    # engine.md 1.C: "Cascade: attaching N image(s) to field 6" and the rebuild line, exactly
    with captured() as lines:
        build([Message("user", [text_block("x"), b64_image(IMG_A), b64_image(IMG_B)])])
    assert "Cascade: attaching 2 image(s) to field 6" in lines
    with captured() as lines:
        build(THREE_TURNS)
        build(THREE_TURNS, is_resume=True)
    assert not [line for line in lines if "attaching" in line or "rebuilt" in line]
    with captured() as lines:
        build(THREE_TURNS, is_resume=True, rebuild=True)
    assert "Cascade: rebuilt full history after resume failure" in lines


def test_a_rebuild_of_a_fresh_request_is_refused_with_the_reason() -> None:
    with pytest.raises(
        ValueError, match=r"^rebuild=True rebuilds a resumed request; a fresh request reuses its own build$"
    ):
        build(THREE_TURNS, rebuild=True)


# ------------------------------------------------------------------------------------ usage and offsets


def _record(usage: tuple[int, int, int, int] | None) -> cortex.CortexStepGeneratorMetadata:
    if usage is None:
        return cortex.CortexStepGeneratorMetadata(step_indices=[1])
    inp, out, cw, cr = usage
    stats = common.ModelUsageStats(input_tokens=inp, output_tokens=out, cache_write_tokens=cw, cache_read_tokens=cr)
    return cortex.CortexStepGeneratorMetadata(chat_model=cortex.ChatModelMetadata(model_uid="M", usage=stats))


@pytest.mark.parametrize("first", [None, (0, 0, 0, 0)])
def test_a_record_without_usage_does_not_hide_the_records_after_it(first: tuple[int, int, int, int] | None) -> None:
    window = ls.GetCascadeTrajectoryGeneratorMetadataResponse(
        generator_metadata=[_record(first), _record((10, 2, 3, 4)), _record((1, 1, 0, 0))]
    )
    usage = parse_generator_metadata(window)
    assert usage is not None
    assert (usage.input_tokens, usage.output_tokens, usage.cache_write_tokens, usage.cache_read_tokens) == (11, 3, 3, 4)
    assert (usage.entry_count, usage.has_usage) == (3, True)


def test_undecodable_metadata_is_reported_as_such() -> None:
    with pytest.raises(GeneratorMetadataError, match=r"^undecodable generator metadata: "):
        parse_generator_metadata(b"\xff")


def test_a_zero_float_offset_is_known() -> None:
    assert known_offset(0.0) == 0
    assert isinstance(known_offset(0.0), int)


@pytest.mark.parametrize(("counts", "expected"), [((5, 1, 2), 15), ((1, 5, 2), 15), ((1, 2, 5), 15), ((0, 0, 0), 10)])
def test_the_step_cursor_advances_by_the_largest_count(counts: tuple[int, int, int], expected: int) -> None:
    assert next_step_offset(10, *counts) == expected


def test_a_boolean_step_offset_is_not_a_number_and_falls_back_to_the_reused_one() -> None:
    assert offsets_to_store(True, 3, 7) == (7, 3)
    assert offsets_to_store(False, None, 7) == (7, None)
    assert offsets_to_store(0, 3, 7) == (0, 3)
