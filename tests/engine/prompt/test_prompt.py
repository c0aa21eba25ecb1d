"""The Cascade prompt builder (engine.prompt.build): layouts, the history budget, configuration, metrics, cost.

The probe of engine.md section 1.A.2 is reproduced byte for byte where the fixed behaviour keeps it.
History images (seed 000) are in test_prompt_history_images.py, the properties in
test_prompt_properties.py.
"""

from __future__ import annotations

import logging
import threading
import time

import pytest

from engine.config import (
    DEFAULT_1M_HISTORY_BYTES,
    DEFAULT_HISTORY_BYTES,
    HistoryImageLimits,
    history_budget,
    positive_int_env,
)
from engine.js import js_parse_int, utf16_len
from engine.media.gate import ImageSettings
from engine.prompt import metrics as process_metrics
from engine.prompt.build import INTRO, Message, build_cascade_prompt, truncation_note
from engine.prompt.extract import IMAGE_PLACEHOLDER
from engine.prompt.history import escape_history_tag
from engine.prompt.metrics import DropCounts, ImageHistoryMetrics, format_drop_log
from engine.prompt.system import build_system_text, compact_system_prompt
from tests.engine.prompt_support import (
    CLAUDE,
    CONTEXT_CLAUDE,
    DROP_SUFFIX,
    IMG_A,
    LOGGER,
    MARKER,
    PLAIN_MODEL,
    FakeFetcher,
    b64_image,
    build,
    png,
    probe_messages,
    text_block,
)

# --- the probe and the baseline layouts -------------------------------------------------------


def test_single_turn_prepends_the_system_text_and_a_resume_sends_the_newest_turn_only() -> None:
    messages = [Message("system", "Be brief."), Message("user", [text_block("hi"), b64_image(IMG_A)])]
    single = build(messages)
    assert single.text == f"Be brief.\n{CONTEXT_CLAUDE}\n\nhi"
    assert single.images == (png(IMG_A),)
    assert single.planner_default
    assert single.coverage == build(messages, is_resume=True).coverage
    assert (single.coverage.total_turns, single.coverage.dropped_turn_count) == (1, 0)
    long = [*probe_messages(), Message("assistant", "red"), Message("user", "sure?")]
    resumed = build(long, is_resume=True)
    assert (resumed.text, resumed.images, resumed.drops, resumed.attached) == ("sure?", (), DropCounts(), 0)
    assert (resumed.coverage.dropped_turn_count, resumed.coverage.total_turns) == (0, 5)


def test_a_rebuild_of_a_single_turn_resume_changes_nothing_and_a_fresh_request_cannot_be_rebuilt() -> None:
    messages = [Message("system", "S"), Message("user", "only")]
    assert build(messages, is_resume=True, rebuild=True) == build(messages, is_resume=True)
    with pytest.raises(ValueError, match="rebuild"):
        build(probe_messages(), rebuild=True)


def test_an_assistant_last_message_is_still_wrapped_as_human_and_not_escaped() -> None:
    messages = [Message("user", "q"), Message("assistant", "prefill </human> here")]
    result = build(messages, model_uid=PLAIN_MODEL)
    assert result.text == f"{INTRO}\n\n<human>\nq\n</human>\n\n<human>\nprefill </human> here\n</human>"


def test_history_escapes_only_its_own_closing_tag() -> None:
    messages = [
        Message("user", "a</human>b</assistant>"),
        Message("assistant", "c</assistant>d</human>"),
        Message("user", "e</human>"),
    ]
    result = build(messages, model_uid=PLAIN_MODEL)
    assert result.text == (
        f"{INTRO}\n\n<human>\na<\\/human>b</assistant>\n</human>\n\n"
        "<assistant>\nc<\\/assistant>d</human>\n</assistant>\n\n<human>\ne</human>\n</human>"
    )
    assert escape_history_tag("</human></human>", "human") == "<\\/human><\\/human>"


def test_other_roles_are_dropped_and_system_contents_are_joined() -> None:
    messages = [
        Message("system", "  x-anthropic-billing-header: cc_version=1\nYou are A."),
        Message("developer", "dev text"),
        Message("user", "q1"),
        Message("tool", "tool output"),
        Message("system", [text_block("Rules. You are B.")]),
        Message("assistant", "r1"),
        Message("user", "q2"),
    ]
    result = build(messages, model_uid="MODEL_GPT_5")
    assert result.text == (
        "The assistant is A.\nRules. The assistant is B.\n"
        "[Context: The underlying model serving this request is gpt 5, developed by OpenAI.]\n\n"
        f"{INTRO}\n\n<human>\nq1\n</human>\n\n<assistant>\nr1\n</assistant>\n\n<human>\nq2\n</human>"
    )
    assert result.coverage.total_turns == 3


def test_system_compaction_keeps_to_the_documented_rewrites() -> None:
    assert compact_system_prompt("x-anthropic-billing-header: a=1\nX-Anthropic-Billing-Header: b\nkeep") == "keep"
    assert compact_system_prompt("keep\nx-anthropic-billing-header: a") == "keep"
    assert compact_system_prompt("not x-anthropic-billing-header: inline") == "not x-anthropic-billing-header: inline"
    assert compact_system_prompt("You are X. you are y!  You are z\nYou are w") == (
        "The assistant is X. you are y!  The assistant is z\nThe assistant is w"
    )
    assert compact_system_prompt("Hi You are not rewritten mid-sentence") == "Hi You are not rewritten mid-sentence"
    assert compact_system_prompt("\ufeff  You are padded \u3000") == "The assistant is padded"
    assert build_system_text([], model_uid=CLAUDE, display_model="Claude Sonnet") == (
        "[Context: The underlying model serving this request is Claude Sonnet, developed by Anthropic.]"
    )
    assert build_system_text([Message("system", "  ")], model_uid=PLAIN_MODEL) == ""
    assert build_system_text([], model_uid="deepseek-claude") == (
        "[Context: The underlying model serving this request is deepseek-claude, developed by Anthropic.]"
    )


def test_the_truncation_note_and_intro_are_exact() -> None:
    assert INTRO == (
        "The following is a multi-turn conversation. You MUST remember and use all information from prior turns."
    )
    assert truncation_note(3) == (
        "<truncation_note>The conversation above is truncated \u2014 3 earlier turns were dropped due to length "
        "limits. The user's original task and the most recent tool results are preserved. Do NOT ask the user to "
        "repeat their task; continue from the latest context.</truncation_note>"
    )


# --- the history budget (UTF-16 units) --------------------------------------------------------


def _budget_case(first: str) -> list[Message]:
    return [Message("user", first), Message("assistant", "b"), Message("user", "now")]


def test_the_budget_counts_utf16_units_so_an_astral_character_counts_two() -> None:
    # "<human>\n\U0001f600\n</human>" is 19 UTF-16 units (18 code points); "<assistant>\nb\n</assistant>" is 26.
    assert utf16_len("<human>\n\U0001f600\n</human>") == 19
    fits = build(_budget_case("\U0001f600"), env={"CASCADE_MAX_HISTORY_BYTES": "45"}, model_uid=PLAIN_MODEL)
    assert fits.coverage.first_included_turn_index == 0
    cut = build(_budget_case("\U0001f600"), env={"CASCADE_MAX_HISTORY_BYTES": "44"}, model_uid=PLAIN_MODEL)
    assert cut.coverage.first_included_turn_index == 1
    assert cut.text.startswith(truncation_note(1))
    # A BMP character of the same code-point length fits 44.
    bmp = build(_budget_case("\u00e9"), env={"CASCADE_MAX_HISTORY_BYTES": "44"}, model_uid=PLAIN_MODEL)
    assert bmp.coverage.first_included_turn_index == 0


def test_the_budget_counts_the_system_text() -> None:
    messages = [Message("system", "S" * 10), *_budget_case("x")]  # 18 + 26 + 10 = 54
    fits = build(messages, env={"CASCADE_MAX_HISTORY_BYTES": "54"}, model_uid=PLAIN_MODEL)
    cut = build(messages, env={"CASCADE_MAX_HISTORY_BYTES": "53"}, model_uid=PLAIN_MODEL)
    assert (fits.coverage.dropped_turn_count, cut.coverage.dropped_turn_count) == (0, 1)


def test_the_newest_history_turn_is_always_kept(caplog: pytest.LogCaptureFixture) -> None:
    messages = [
        Message("user", "u0"),
        Message("assistant", "a1"),
        Message("user", "u2"),
        Message("assistant", "y" * 1000),
        Message("user", "now"),
    ]
    with caplog.at_level(logging.INFO, logger=LOGGER):
        result = build(messages, env={"CASCADE_MAX_HISTORY_BYTES": "1"}, model_uid=PLAIN_MODEL)
    assert result.coverage.dropped_turn_count == 3
    assert result.coverage.first_included_turn_index == 3
    assert result.text == (
        f"{truncation_note(3)}\n\n{INTRO}\n\n<assistant>\n{'y' * 1000}\n</assistant>\n\n<human>\nnow\n</human>"
    )
    # The true dropped count (the baseline printed 1, the number of history turns kept).
    logged = [r.getMessage() for r in caplog.records]
    assert "Cascade: trimmed history at turn 2/5 (1KB kept, 3 turns dropped)" in logged


def test_markers_live_outside_the_budget() -> None:
    # The budget is decided on the placeholder body: the longer marker must not push the turn out.
    messages = [Message("user", [b64_image(IMG_A)]), Message("assistant", "b"), Message("user", "now")]
    placeholder_line = f"<human>\n{IMAGE_PLACEHOLDER}\n</human>"
    budget = utf16_len(placeholder_line) + 26
    result = build(messages, env={"CASCADE_MAX_HISTORY_BYTES": str(budget)}, model_uid=PLAIN_MODEL)
    assert result.coverage.dropped_turn_count == 0
    assert result.images == (png(IMG_A),)
    assert f"<human>\n{MARKER.format(n=1)}\n</human>" in result.text


def test_a_1m_model_uses_its_own_budget() -> None:
    assert history_budget("claude-sonnet-4-1m", {}) == DEFAULT_1M_HISTORY_BYTES
    assert history_budget("MODEL_CLAUDE_4_SONNET_1M", {}) == DEFAULT_1M_HISTORY_BYTES
    assert history_budget("gpt-1m-preview", {}) == DEFAULT_1M_HISTORY_BYTES
    assert history_budget("x1m", {}) == DEFAULT_HISTORY_BYTES
    assert history_budget("foo_1m\n", {}) == DEFAULT_HISTORY_BYTES  # JS $ is the very end
    assert history_budget("claude-1m", {"CASCADE_1M_HISTORY_BYTES": "123", "CASCADE_MAX_HISTORY_BYTES": "7"}) == 123
    assert history_budget("claude", {"CASCADE_1M_HISTORY_BYTES": "123", "CASCADE_MAX_HISTORY_BYTES": "7"}) == 7


# --- configuration and metrics ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("0", 0),
        ("7", 7),
        ("12abc", 12),
        (" \t7", 7),
        ("+5", 5),
        ("-0", 0),
        ("1e3", 1),
        ("0x10", 0),
        ("-1", None),
        ("abc", None),
        ("", None),
        ("\u0661", None),  # an Arabic-Indic digit is not a digit to parseInt
        ("9" * 400, None),  # Infinity is not finite
    ],
)
def test_history_image_switches_parse_as_non_negative_ints(raw: str, expected: int | None) -> None:
    """0 is accepted (the explicit opt-out); None means the default."""
    limits = HistoryImageLimits.from_env({"CASCADE_MAX_HISTORY_IMAGES": raw, "CASCADE_MAX_HISTORY_IMAGE_BYTES": raw})
    assert limits.max_images == (4 if expected is None else expected)
    assert limits.max_bytes == (1_600_000 if expected is None else expected)


def test_defaults_and_positive_int_env() -> None:
    assert HistoryImageLimits.from_env({}) == HistoryImageLimits(4, 1_600_000)
    assert positive_int_env({"X": "0"}, "X", 9) == 9
    assert positive_int_env({"X": "12abc"}, "X", 9) == 12
    assert js_parse_int("   -12.5") == -12
    assert js_parse_int("") is None
    with pytest.raises(ValueError, match="non-negative"):
        HistoryImageLimits(max_images=-1)


def test_metrics_snapshot_reset_and_the_drop_line_format() -> None:
    metrics = ImageHistoryMetrics()
    metrics.record(DropCounts(cap=1, bytes=2, truncated=3, no_vision=4, unextractable=5), turns=9, attached=6)
    assert metrics.snapshot() == {
        "cascade_image_history_attached": 6,
        "cascade_image_history_dropped": 15,
        "dropped_by_reason": {"cap": 1, "bytes": 2, "truncated": 3, "no_vision": 4, "unextractable": 5},
    }
    metrics.reset()
    assert metrics.snapshot()["cascade_image_history_dropped"] == 0
    assert format_drop_log(DropCounts(cap=1), turns=5, attached=1) == (
        "cascade_image_history_dropped count=1 (cap=1 bytes=0 truncated=0 no_vision=0) turns=5 attached=1" + DROP_SUFFIX
    )
    assert "(cap=0 bytes=0 truncated=0 no_vision=0 unextractable=2)" in format_drop_log(
        DropCounts(unextractable=2), turns=2, attached=0
    )


def test_metrics_are_thread_safe() -> None:
    metrics = ImageHistoryMetrics()

    def work() -> None:
        for _ in range(500):
            metrics.record(DropCounts(), turns=2, attached=1)

    threads = [threading.Thread(target=work) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert metrics.snapshot()["cascade_image_history_attached"] == 4000


def test_the_process_wide_metrics_are_the_default() -> None:
    process_metrics.reset()
    build_cascade_prompt(
        probe_messages(),
        model_uid=CLAUDE,
        limits=HistoryImageLimits(),
        image_settings=ImageSettings(),
        fetcher=FakeFetcher(),
        env={},
    )
    assert process_metrics.snapshot()["cascade_image_history_attached"] == 1
    process_metrics.reset()
    assert process_metrics.snapshot()["cascade_image_history_attached"] == 0


# --- cost ---------------------------------------------------------------------------------------


def test_a_10000_turn_history_builds_in_linear_time() -> None:
    def conversation(turns: int) -> list[Message]:
        out = [Message("user" if i % 2 == 0 else "assistant", f"turn {i} " + "w" * 50) for i in range(turns)]
        out[10] = Message("user", [text_block("img"), b64_image(IMG_A)])
        return out

    start = time.perf_counter()
    big = build(conversation(10_000), env={"CASCADE_MAX_HISTORY_BYTES": "100000000"})
    elapsed = time.perf_counter() - start
    assert big.coverage.dropped_turn_count == 0
    assert big.images == (png(IMG_A),)
    assert elapsed < 2.0, elapsed
    cut = build(conversation(10_000), env={"CASCADE_MAX_HISTORY_BYTES": "5000"})
    assert cut.coverage.dropped_turn_count > 9_000
    assert cut.drops == DropCounts(truncated=1)
