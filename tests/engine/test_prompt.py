"""The Cascade prompt builder (engine.prompt): layouts, budget, history images (seed 000), metrics.

The seed's named tests (test/cascade-image-history.test.js) are reproduced at the builder level
under their own names; the one that needs a live resume (the rebuilt cascade) lives with the client,
and here the builder-level half of it checks that a rebuild equals the fresh build. The probe of
engine.md section 1.A.2 is reproduced byte for byte where the fixed behaviour keeps it.
"""

from __future__ import annotations

import base64
import copy
import io
import json
import logging
import random
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from PIL import Image

from conformance.strategies import unicode_text
from engine.config import (
    DEFAULT_1M_HISTORY_BYTES,
    DEFAULT_HISTORY_BYTES,
    HistoryImageLimits,
    history_budget,
    js_parse_int,
    positive_int_env,
)
from engine.extract import IMAGE_PLACEHOLDER, content_to_string, is_image_like_block, safe_block_to_string
from engine.history import escape_history_tag
from engine.images import ImageData, ImageSettings
from engine.metrics import DropCounts, ImageHistoryMetrics, format_drop_log
from engine.prompt import INTRO, Message, PromptBuild, build_cascade_prompt, truncation_note
from engine.system_prompt import build_system_text, compact_system_prompt
from engine.utf16 import utf16_len

LOGGER = "engine.cascade"
CLAUDE = "claude-sonnet-4-6"
PLAIN_MODEL = "test-model"  # names no provider: no context line
MARKER = "[Image #{n} attached to this request \u2014 from an earlier turn]"
DROP_SUFFIX = (
    " \u2014 SendUserCascadeMessage carries images only as one flat message-level list (field 6), "
    "so these could not be replayed with their turn"
)
CONTEXT_CLAUDE = "[Context: The underlying model serving this request is claude-sonnet-4-6, developed by Anthropic.]"


# --- fixtures and helpers -------------------------------------------------------------------


@cache
def png_b64(seed: int, side: int = 3) -> str:
    """A small noise PNG, distinct per seed, as base64 (small enough to pass the shrink gate as is)."""
    rng = random.Random(seed)
    pixels = bytes(rng.randrange(256) for _ in range(side * side * 3))
    out = io.BytesIO()
    Image.frombytes("RGB", (side, side), pixels).save(out, format="PNG")
    return base64.b64encode(out.getvalue()).decode("ascii")


def b64_image(data: str) -> dict[str, Any]:
    return {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}}


def data_url_image(data: str) -> dict[str, Any]:
    return {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{data}"}}


def url_image(url: str) -> dict[str, Any]:
    return {"type": "image_url", "image_url": {"url": url}}


def text_block(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


FILE_ID_BLOCK: dict[str, Any] = {"type": "file", "file": {"file_id": "file-123"}}


def png(data: str) -> ImageData:
    return ImageData(data, "image/png")


class FakeFetcher:
    """Serves the URLs it knows, raises for the rest, and records every call."""

    def __init__(self, images: Mapping[str, str] | None = None) -> None:
        self.images = dict(images or {})
        self.calls: list[str] = []

    def __call__(self, url: str) -> ImageData:
        self.calls.append(url)
        data = self.images.get(url)
        if data is None:
            raise OSError(f"fetch failed: {url}")
        return png(data)


def build(
    messages: Sequence[Message],
    *,
    env: Mapping[str, str] | None = None,
    metrics: ImageHistoryMetrics | None = None,
    fetcher: FakeFetcher | None = None,
    model_uid: str = CLAUDE,
    tool_preamble: str = "",
    native_mode: bool = False,
    is_resume: bool = False,
    rebuild: bool = False,
    display_model: str | None = None,
) -> PromptBuild:
    env = dict(env or {})
    return build_cascade_prompt(
        messages,
        model_uid=model_uid,
        tool_preamble=tool_preamble,
        native_mode=native_mode,
        is_resume=is_resume,
        rebuild=rebuild,
        limits=HistoryImageLimits.from_env(env),
        image_settings=ImageSettings(),
        fetcher=fetcher if fetcher is not None else FakeFetcher(),
        env=env,
        display_model=display_model,
        metrics=metrics if metrics is not None else ImageHistoryMetrics(),
    )


def drop_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.name == LOGGER and r.getMessage().startswith("cascade_image_history_dropped")
    ]


@contextmanager
def captured(logger: str = LOGGER, level: int = logging.INFO) -> Iterator[list[str]]:
    """Messages logged on ``logger`` inside the block (usable inside Hypothesis examples)."""
    messages: list[str] = []

    class _Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            messages.append(record.getMessage())

    target = logging.getLogger(logger)
    handler = _Collect(level)
    previous = target.level
    target.addHandler(handler)
    target.setLevel(level)
    try:
        yield messages
    finally:
        target.removeHandler(handler)
        target.setLevel(previous)


IMG_A = png_b64(1)
IMG_B = png_b64(2)
IMG_C = png_b64(3)


def probe_messages(image: str = IMG_A) -> list[Message]:
    """engine.md 1.A.2's probe: system "You are helpful.", a 3-turn conversation, an image in turn 1."""
    return [
        Message("system", "You are helpful."),
        Message("user", [text_block("look"), b64_image(image)]),
        Message("assistant", "a cat"),
        Message("user", "what colour?"),
    ]


PROBE_BASELINE_TEXT = (
    "The assistant is helpful.\n[Context: The underlying model serving this request is claude-sonnet-4-6, developed "
    "by Anthropic.]\n\nThe following is a multi-turn conversation. You MUST remember and use all information from "
    "prior turns.\n\n<human>\nlook[Image omitted from text history]\n</human>\n\n<assistant>\na cat\n</assistant>\n\n"
    "<human>\nwhat colour?\n</human>"
)
PROBE_FIXED_TEXT = PROBE_BASELINE_TEXT.replace(IMAGE_PLACEHOLDER, MARKER.format(n=1))


# --- seed 000's named tests, at the builder level ---------------------------------------------


@pytest.mark.invariant("IMG-1")
def test_carries_an_image_from_turn_1_of_a_3_turn_history_instead_of_a_placeholder(
    caplog: pytest.LogCaptureFixture,
) -> None:
    metrics = ImageHistoryMetrics()
    result = build(probe_messages(), metrics=metrics)
    assert result.text == PROBE_FIXED_TEXT
    assert IMAGE_PLACEHOLDER not in result.text
    assert result.images == (png(IMG_A),)
    assert (result.attached, result.drops) == (1, DropCounts())
    assert metrics.snapshot() == {
        "cascade_image_history_attached": 1,
        "cascade_image_history_dropped": 0,
        "dropped_by_reason": {"cap": 0, "bytes": 0, "truncated": 0, "no_vision": 0, "unextractable": 0},
    }
    assert drop_lines(caplog) == []
    assert result.planner_default  # no preamble and a non-empty field 6: DEFAULT, so the planner sees it


@pytest.mark.invariant("IMG-2")
def test_keeps_the_current_turn_image_first_and_numbers_the_historical_one_after_it() -> None:
    messages = [
        Message("user", [text_block("first"), b64_image(IMG_A)]),
        Message("assistant", "noted"),
        Message("user", [text_block("and this one?"), data_url_image(IMG_B)]),
    ]
    result = build(messages)
    assert result.images == (png(IMG_B), png(IMG_A))
    assert f"<human>\nfirst{MARKER.format(n=2)}\n</human>" in result.text
    assert MARKER.format(n=1) not in result.text
    assert result.text.endswith("\n\n<human>\nand this one?\n</human>")  # no marker in the current turn


@pytest.mark.invariant("IMG-3")
@pytest.mark.invariant("IMG-4")
def test_bounds_history_images_newest_first_and_counts_what_it_dropped(caplog: pytest.LogCaptureFixture) -> None:
    messages = [
        Message("user", [text_block("old"), b64_image(IMG_A)]),
        Message("assistant", "ok"),
        Message("user", [text_block("new"), b64_image(IMG_B)]),
        Message("assistant", "ok"),
        Message("user", "compare them"),
    ]
    metrics = ImageHistoryMetrics()
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        result = build(messages, env={"CASCADE_MAX_HISTORY_IMAGES": "1"}, metrics=metrics)
    assert result.images == (png(IMG_B),)
    assert f"<human>\nold{IMAGE_PLACEHOLDER}\n</human>" in result.text
    assert f"<human>\nnew{MARKER.format(n=1)}\n</human>" in result.text
    assert result.drops == DropCounts(cap=1)
    # The structured line of the seed, byte for byte.
    assert drop_lines(caplog) == [
        "cascade_image_history_dropped count=1 (cap=1 bytes=0 truncated=0 no_vision=0) turns=5 attached=1" + DROP_SUFFIX
    ]
    assert [r.levelno for r in caplog.records if r.getMessage().startswith("cascade_image_history_dropped")] == [
        logging.WARNING
    ]
    snap = metrics.snapshot()
    assert (snap["cascade_image_history_attached"], snap["cascade_image_history_dropped"]) == (1, 1)
    assert snap["dropped_by_reason"]["cap"] == 1


@pytest.mark.invariant("IMG-3")
def test_bounds_history_images_to_the_default_four_newest_in_chronological_order() -> None:
    images = [png_b64(10 + i) for i in range(6)]
    messages: list[Message] = []
    for i, data in enumerate(images):
        messages += [Message("user", [text_block(f"u{i}"), b64_image(data)]), Message("assistant", f"a{i}")]
    messages.append(Message("user", "which was first?"))
    result = build(messages)
    assert result.images == tuple(png(d) for d in images[2:])  # the 4 newest, oldest of them first
    for i in (0, 1):
        assert f"<human>\nu{i}{IMAGE_PLACEHOLDER}\n</human>" in result.text
    for n, i in enumerate(range(2, 6), start=1):
        assert f"<human>\nu{i}{MARKER.format(n=n)}\n</human>" in result.text
    assert result.drops == DropCounts(cap=2)


@pytest.mark.invariant("IMG-3")
@pytest.mark.invariant("IMG-4")
def test_honours_cascade_max_history_images_0_as_the_explicit_opt_out_still_counted(
    caplog: pytest.LogCaptureFixture,
) -> None:
    metrics = ImageHistoryMetrics()
    result = build(probe_messages(), env={"CASCADE_MAX_HISTORY_IMAGES": "0"}, metrics=metrics)
    # The baseline probe, byte for byte: the opt-out is the pre-fix text, but now counted.
    assert result.text == PROBE_BASELINE_TEXT
    assert result.images == ()
    assert result.drops == DropCounts(cap=1)
    assert metrics.snapshot()["cascade_image_history_dropped"] == 1
    assert drop_lines(caplog) == [
        "cascade_image_history_dropped count=1 (cap=1 bytes=0 truncated=0 no_vision=0) turns=3 attached=0" + DROP_SUFFIX
    ]
    assert not result.planner_default  # nothing in field 6, no preamble, no bridge: NO_TOOL as before


@pytest.mark.invariant("IMG-3")
def test_honours_cascade_max_history_image_bytes_0_as_an_opt_out_counted_as_bytes() -> None:
    result = build(probe_messages(), env={"CASCADE_MAX_HISTORY_IMAGE_BYTES": "0"})
    assert result.text == PROBE_BASELINE_TEXT
    assert result.drops == DropCounts(bytes=1)


@pytest.mark.invariant("IMG-4")
@pytest.mark.invariant("IMG-7")
def test_counts_history_images_dropped_because_a_truncated_turn_is_not_replayed_at_all(
    caplog: pytest.LogCaptureFixture,
) -> None:
    fetcher = FakeFetcher({"https://img.test/old.png": IMG_A})
    messages = [
        Message("user", [text_block("x" * 200), url_image("https://img.test/old.png"), b64_image(IMG_B)]),
        Message("assistant", "a" * 10),
        Message("user", "b" * 10),
        Message("assistant", "c" * 10),
        Message("user", "now"),
    ]
    # Lines: a3 = 35 units, u2 = 27, a1 = 35 -> 97 fit a budget of 100; turn 0 does not.
    with caplog.at_level(logging.INFO, logger=LOGGER):
        result = build(messages, env={"CASCADE_MAX_HISTORY_BYTES": "100"}, fetcher=fetcher, model_uid=PLAIN_MODEL)
    assert fetcher.calls == []  # never fetched only to be dropped
    assert result.images == ()
    assert result.drops == DropCounts(truncated=2)
    assert (result.coverage.dropped_turn_count, result.coverage.first_included_turn_index) == (1, 1)
    assert result.coverage.total_turns == 5
    assert result.text.startswith(truncation_note(1) + "\n\n" + INTRO + "\n\n<assistant>\naaaaaaaaaa\n</assistant>")
    assert "x" * 200 not in result.text
    messages_logged = [r.getMessage() for r in caplog.records if r.name == LOGGER]
    assert "Cascade: trimmed history at turn 0/5 (0KB kept, 1 turns dropped)" in messages_logged
    assert drop_lines(caplog) == [
        "cascade_image_history_dropped count=2 (cap=0 bytes=0 truncated=2 no_vision=0) turns=5 attached=0" + DROP_SUFFIX
    ]


@pytest.mark.invariant("IMG-5")
@pytest.mark.invariant("IMG-4")
def test_does_not_attach_history_images_when_the_planner_runs_without_vision_and_counts_them(
    caplog: pytest.LogCaptureFixture,
) -> None:
    fetcher = FakeFetcher({"https://img.test/h.png": IMG_C})
    messages = [
        Message("user", [text_block("see"), b64_image(IMG_A), url_image("https://img.test/h.png")]),
        Message("assistant", "seen"),
        Message("user", [text_block("and now"), b64_image(IMG_B)]),
    ]
    result = build(messages, tool_preamble="<tools>call f</tools>", fetcher=fetcher)
    assert result.images == (png(IMG_B),)  # the current turn keeps the baseline behaviour
    assert f"<human>\nsee{IMAGE_PLACEHOLDER}{IMAGE_PLACEHOLDER}\n</human>" in result.text
    assert result.drops == DropCounts(no_vision=2)
    assert fetcher.calls == []
    assert not result.planner_default  # history images never flip a NO_TOOL request
    assert drop_lines(caplog) == [
        "cascade_image_history_dropped count=2 (cap=0 bytes=0 truncated=0 no_vision=2) turns=3 attached=0" + DROP_SUFFIX
    ]
    # With only history images, the preamble still keeps the planner in NO_TOOL and field 6 empty.
    history_only = build([*messages[:2], Message("user", "and now")], tool_preamble="<tools/>", fetcher=fetcher)
    assert (history_only.images, history_only.planner_default) == ((), False)
    # The native bridge renders field 6: history images ride it.
    native = build(messages, native_mode=True, fetcher=fetcher)
    assert native.images == (png(IMG_B), png(IMG_A), png(IMG_C))
    assert native.planner_default


@pytest.mark.invariant("IMG-3")
def test_checks_the_image_count_cap_per_image_inside_one_turn() -> None:
    messages = [
        Message("user", [b64_image(IMG_A), text_block("|"), b64_image(IMG_B), text_block("|"), b64_image(IMG_C)]),
        Message("assistant", "three"),
        Message("user", "first two?"),
    ]
    result = build(messages, env={"CASCADE_MAX_HISTORY_IMAGES": "2"})
    assert result.images == (png(IMG_A), png(IMG_B))  # document order inside the turn
    assert f"<human>\n{MARKER.format(n=1)}|{MARKER.format(n=2)}|{IMAGE_PLACEHOLDER}\n</human>" in result.text
    assert result.drops == DropCounts(cap=1)


@pytest.mark.invariant("IMG-3")
def test_checks_the_image_byte_cap_per_image_inside_one_turn() -> None:
    big, small = png_b64(40, side=24), png_b64(41, side=2)
    assert len(big) > len(small) + 100
    messages = [
        Message("user", [b64_image(big), b64_image(small)]),
        Message("assistant", "two"),
        Message("user", "ok?"),
    ]
    result = build(messages, env={"CASCADE_MAX_HISTORY_IMAGE_BYTES": str(len(small) + 10)})
    assert result.images == (png(small),)  # the oversized one never rides the wire
    assert f"<human>\n{IMAGE_PLACEHOLDER}{MARKER.format(n=1)}\n</human>" in result.text
    assert result.drops == DropCounts(bytes=1)
    # Exactly at the cap fits.
    exact = build(messages, env={"CASCADE_MAX_HISTORY_IMAGE_BYTES": str(len(big) + len(small))})
    assert exact.images == (png(big), png(small))


@pytest.mark.invariant("IMG-6")
def test_a_rebuilt_history_equals_the_fresh_build_and_is_counted_once() -> None:
    messages = [
        Message("system", "You are terse."),
        Message("user", [text_block("x" * 300), b64_image(IMG_C)]),
        Message("assistant", "ok"),
        Message("user", [text_block("look"), b64_image(IMG_A)]),
        Message("assistant", "a cat"),
        Message("user", [text_block("and"), b64_image(IMG_B)]),
    ]
    env = {"CASCADE_MAX_HISTORY_BYTES": "250"}
    fresh_metrics, resumed_metrics = ImageHistoryMetrics(), ImageHistoryMetrics()
    fresh = build(messages, env=env, metrics=fresh_metrics)
    resumed = build(messages, env=env, metrics=resumed_metrics, is_resume=True)
    rebuilt = build(messages, env=env, metrics=resumed_metrics, is_resume=True, rebuild=True)
    assert rebuilt == fresh
    assert fresh.coverage.first_included_turn_index == 1
    assert truncation_note(1) in rebuilt.text
    assert rebuilt.images == (png(IMG_B), png(IMG_A))
    # The resume sends the newest turn only and counts nothing; the rebuild is the one counted build.
    assert (resumed.text, resumed.images, resumed.attached) == ("and", (png(IMG_B),), 0)
    assert resumed_metrics.snapshot() == fresh_metrics.snapshot()
    assert fresh_metrics.snapshot()["cascade_image_history_attached"] == 1


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


# --- other outcomes of history image blocks ---------------------------------------------------


@pytest.mark.invariant("IMG-4")
@pytest.mark.invariant("IMG-7")
def test_history_blocks_that_yield_no_image_are_counted_unextractable(caplog: pytest.LogCaptureFixture) -> None:
    pdf_text = {"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBERi0="}}
    messages = [
        Message("user", [text_block("files"), FILE_ID_BLOCK, pdf_text, url_image("https://img.test/404.png")]),
        Message("assistant", [text_block("and an image of mine"), data_url_image(IMG_A)]),
        Message("user", "summarise"),
    ]
    fetcher = FakeFetcher()
    result = build(messages, fetcher=fetcher)
    assert result.images == (png(IMG_A),)  # images inside assistant turns count too
    assert result.drops == DropCounts(unextractable=3)
    assert fetcher.calls == ["https://img.test/404.png"]
    assert f"<human>\nfiles{IMAGE_PLACEHOLDER * 3}\n</human>" in result.text
    assert f"<assistant>\nand an image of mine{MARKER.format(n=1)}\n</assistant>" in result.text
    assert drop_lines(caplog) == [
        "cascade_image_history_dropped count=3 (cap=0 bytes=0 truncated=0 no_vision=0 unextractable=3) turns=3 "
        "attached=1" + DROP_SUFFIX
    ]


@pytest.mark.invariant("IMG-7")
def test_history_url_images_go_through_the_default_ssrf_guard() -> None:
    messages = [
        Message("user", [url_image("http://127.0.0.1:9/x.png"), url_image("http://169.254.169.254/latest")]),
        Message("assistant", "ok"),
        Message("user", "now"),
    ]
    result = build_cascade_prompt(
        messages,
        model_uid=CLAUDE,
        limits=HistoryImageLimits(),
        image_settings=ImageSettings(),
        fetcher=None,  # the engine's SSRF-guarded fetcher
        env={},
        metrics=ImageHistoryMetrics(),
    )
    assert result.images == ()
    assert result.drops == DropCounts(unextractable=2)


@pytest.mark.invariant("IMG-7")
def test_extraction_stops_once_the_caps_are_exhausted() -> None:
    urls = [f"https://img.test/{i}.png" for i in range(4)]
    fetcher = FakeFetcher({url: png_b64(60 + i) for i, url in enumerate(urls)})
    messages = [
        Message("user", [url_image(urls[0]), url_image(urls[1])]),
        Message("assistant", "ok"),
        Message("user", [url_image(urls[2]), url_image(urls[3])]),
        Message("assistant", "ok"),
        Message("user", "now"),
    ]
    capped = build(messages, env={"CASCADE_MAX_HISTORY_IMAGES": "1"}, fetcher=fetcher)
    assert fetcher.calls == [urls[2]]  # newest turn first, document order; nothing fetched after the cap
    assert capped.drops == DropCounts(cap=3)
    fetcher.calls.clear()
    one = len(png_b64(62))
    spent = build(messages, env={"CASCADE_MAX_HISTORY_IMAGE_BYTES": str(one)}, fetcher=fetcher)
    assert fetcher.calls == [urls[2]]
    assert spent.drops == DropCounts(bytes=3)


def test_no_drop_line_and_no_counts_for_a_history_without_images(caplog: pytest.LogCaptureFixture) -> None:
    metrics = ImageHistoryMetrics()
    build([Message("user", "a"), Message("assistant", "b"), Message("user", "c")], metrics=metrics)
    assert drop_lines(caplog) == []
    assert metrics.snapshot()["cascade_image_history_attached"] == 0
    assert metrics.snapshot()["cascade_image_history_dropped"] == 0


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
    from engine import metrics as process_metrics

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


# --- properties -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    messages: tuple[Message, ...]
    urls: dict[str, str]  # fetchable URL -> base64
    env: dict[str, str]
    tool_preamble: str
    native_mode: bool

    def fetcher(self) -> FakeFetcher:
        return FakeFetcher(self.urls)

    def build(self, metrics: ImageHistoryMetrics | None = None, **kwargs: Any) -> PromptBuild:
        return build(
            self.messages,
            env=self.env,
            metrics=metrics,
            fetcher=kwargs.pop("fetcher", None) or self.fetcher(),
            model_uid=PLAIN_MODEL,
            tool_preamble=self.tool_preamble,
            native_mode=self.native_mode,
            **kwargs,
        )

    @property
    def convo(self) -> list[Message]:
        return [m for m in self.messages if m.role in ("user", "assistant")]


# Image kinds are repeated so most histories carry several images.
KINDS = ("text", "tool", "b64", "b64", "data_url", "data_url", "url_ok", "url_ok", "url_fail", "file_id")
# (tool_preamble, native_mode): vision on the wire, NO_TOOL without vision, the native bridge.
MODES = (("", False), ("<tools>f(x)</tools>", False), ("", True))


@st.composite
def cases(draw: st.DrawFn) -> Case:
    seeds = iter(range(1000, 2000))
    urls: dict[str, str] = {}

    def block(kind: str) -> Any:
        if kind == "text":
            return text_block(draw(unicode_text(max_size=30)))
        if kind == "tool":
            args = json.dumps({"path": draw(unicode_text(max_size=12))}, ensure_ascii=False)
            return text_block(f'<tool_call>{{"name": "read", "arguments": {args}}}</tool_call>')
        if kind == "file_id":
            return FILE_ID_BLOCK
        seed = next(seeds)
        data = png_b64(seed, side=2 + seed % 7)
        if kind == "b64":
            return b64_image(data)
        if kind == "data_url":
            return data_url_image(data)
        if kind == "url_ok":
            urls[f"https://img.test/{seed}.png"] = data
            return url_image(f"https://img.test/{seed}.png")
        return url_image(f"https://img.test/missing/{seed}.png")

    messages: list[Message] = []
    if draw(st.booleans()):
        messages.append(Message("system", draw(unicode_text(max_size=40))))
    for _ in range(draw(st.integers(1, 7))):
        if draw(st.integers(0, 7)) == 0:
            messages.append(Message("tool", draw(unicode_text(max_size=10))))
        role = draw(st.sampled_from(("user", "assistant")))
        kinds = draw(st.lists(st.sampled_from(KINDS), max_size=4))
        content: Any = draw(unicode_text(max_size=60)) if not kinds else [block(kind) for kind in kinds]
        messages.append(Message(role, content))
    env: dict[str, str] = {}
    for name, values in (
        ("CASCADE_MAX_HISTORY_BYTES", (None, "1", "120", "400", "2000")),
        ("CASCADE_MAX_HISTORY_IMAGES", (None, "0", "1", "2", "3")),
        ("CASCADE_MAX_HISTORY_IMAGE_BYTES", (None, "0", "200", "600", "1500")),
    ):
        value = draw(st.sampled_from(values))
        if value is not None:
            env[name] = value
    tool_preamble, native_mode = draw(st.sampled_from(MODES))
    return Case(tuple(messages), urls, env, tool_preamble, native_mode)


def image_like(content: Any) -> list[tuple[int, Any]]:
    if content is None or isinstance(content, str):
        return []
    return [(i, block) for i, block in enumerate(content) if is_image_like_block(block)]


def source_image(block: Any, urls: Mapping[str, str]) -> str | None:
    """The base64 a generated block yields, or None for the blocks that yield no image."""
    if block.get("type") == "image":
        return str(block["source"]["data"])
    url = block.get("image_url", {}).get("url", "") if block.get("type") == "image_url" else ""
    if url.startswith("data:"):
        return url.split(",", 1)[1]
    return urls.get(url)


@dataclass(frozen=True)
class Expected:
    attached: list[tuple[int, int]]  # (turn, block), chronological
    drops: DropCounts
    fetched: list[str]


def oracle(case: Case, first_included: int) -> Expected:
    """The selection rule stated plainly: newest replayed turn first, document order, per-image caps."""
    convo = case.convo
    limits = HistoryImageLimits.from_env(case.env)
    replayed = range(len(convo) - 2, first_included - 1, -1)
    truncated = sum(len(image_like(convo[i].content)) for i in range(first_included))
    fetched = [b["image_url"]["url"] for _, b in image_like(convo[-1].content) if _is_http(b)]
    if not (case.native_mode or not case.tool_preamble):
        no_vision = sum(len(image_like(convo[i].content)) for i in replayed)
        return Expected([], DropCounts(truncated=truncated, no_vision=no_vision), fetched)
    picked: list[tuple[int, int]] = []
    spent = cap = over = unextractable = 0
    for turn in replayed:
        for index, block in image_like(convo[turn].content):
            if len(picked) >= limits.max_images:
                cap += 1
            elif spent >= limits.max_bytes:
                over += 1
            else:
                if _is_http(block):
                    fetched.append(block["image_url"]["url"])
                data = source_image(block, case.urls)
                if data is None:
                    unextractable += 1
                elif spent + len(data) > limits.max_bytes:
                    over += 1
                else:
                    picked.append((turn, index))
                    spent += len(data)
    drops = DropCounts(cap=cap, bytes=over, truncated=truncated, unextractable=unextractable)
    return Expected(sorted(picked), drops, fetched)


def _is_http(block: Any) -> bool:
    return block.get("type") == "image_url" and str(block["image_url"]["url"]).startswith("https://")


def oracle_first_included(case: Case) -> int:
    convo = case.convo
    sys_text = build_system_text([m for m in case.messages if m.role == "system"], model_uid=PLAIN_MODEL)
    budget = history_budget(PLAIN_MODEL, case.env)
    used = utf16_len(sys_text)
    for i in range(len(convo) - 2, -1, -1):
        tag = "human" if convo[i].role == "user" else "assistant"
        size = utf16_len(f"<{tag}>\n{escape_history_tag(content_to_string(convo[i].content), tag)}\n</{tag}>")
        if used + size > budget and i < len(convo) - 2:
            return i + 1
        used += size
    return 0


def current_images(case: Case) -> list[str]:
    convo = case.convo
    if not convo:
        return []
    found = (source_image(block, case.urls) for _, block in image_like(convo[-1].content))
    return [data for data in found if data is not None]


@pytest.mark.invariant("IMG-3")
@pytest.mark.invariant("IMG-5")
@pytest.mark.invariant("IMG-7")
@given(cases())
def test_property_selection_follows_the_bounds_newest_turn_first(case: Case) -> None:
    fetcher = case.fetcher()
    result = case.build(fetcher=fetcher)
    first_included = oracle_first_included(case)
    if len(case.convo) > 1:
        assert result.coverage.first_included_turn_index == first_included
        assert result.coverage.dropped_turn_count == first_included
    expected = oracle(case, first_included)
    limits = HistoryImageLimits.from_env(case.env)
    history = result.images[len(current_images(case)) :]
    assert len(history) <= limits.max_images
    assert sum(len(image.base64_data) for image in history) <= limits.max_bytes
    assert result.drops == expected.drops
    assert [image.base64_data for image in history] == [
        source_image(dict(image_like(case.convo[turn].content))[block], case.urls) for turn, block in expected.attached
    ]
    assert fetcher.calls == expected.fetched  # nothing fetched only to be dropped
    vision = case.native_mode or not case.tool_preamble
    if not vision:
        assert history == ()
    assert result.planner_default == (case.native_mode or (bool(result.images) and not case.tool_preamble))


@pytest.mark.invariant("IMG-2")
@pytest.mark.invariant("IMG-1")
@given(cases())
def test_property_marker_n_names_the_nth_field_6_image(case: Case) -> None:
    result = case.build()
    current = current_images(case)
    k = len(current)
    assert [image.base64_data for image in result.images[:k]] == current
    history = result.images[k:]
    convo = case.convo
    # Locate each history image's block: field 6 is chronological after the current images.
    where: dict[str, tuple[int, int]] = {}
    for turn in range(len(convo) - 1):
        for index, block in image_like(convo[turn].content):
            data = source_image(block, case.urls)
            if data is not None:
                where[data] = (turn, index)
    positions = [where[image.base64_data] for image in history]
    assert positions == sorted(positions)
    ordinal = {pos: k + 1 + n for n, pos in enumerate(positions)}
    for turn in {t for t, _ in positions}:
        message = convo[turn]
        tag = "human" if message.role == "user" else "assistant"
        body = "".join(
            MARKER.format(n=ordinal[(turn, i)]) if (turn, i) in ordinal else safe_block_to_string(block)
            for i, block in enumerate(message.content or [])
        )
        assert f"<{tag}>\n{escape_history_tag(body, tag)}\n</{tag}>" in result.text
    marker_count = result.text.count("attached to this request \u2014 from an earlier turn]")
    assert marker_count == len(history)


@pytest.mark.invariant("IMG-4")
@given(cases())
def test_property_every_history_image_is_attached_or_counted(case: Case) -> None:
    metrics = ImageHistoryMetrics()
    with captured() as logged:
        result = case.build(metrics=metrics)
    convo = case.convo
    seen = sum(len(image_like(m.content)) for m in convo[:-1])
    assert result.attached + result.drops.total == seen
    snap = metrics.snapshot()
    assert snap["cascade_image_history_attached"] == result.attached
    assert snap["cascade_image_history_dropped"] == result.drops.total
    assert dict(snap["dropped_by_reason"]) == result.drops.as_dict()
    lines = [line for line in logged if line.startswith("cascade_image_history_dropped")]
    if result.drops.total > 0:
        assert lines == [format_drop_log(result.drops, turns=len(convo), attached=result.attached)]
    else:
        assert lines == []


@pytest.mark.invariant("IMG-8")
@given(cases())
def test_property_the_same_conversation_builds_byte_identically(case: Case) -> None:
    original = copy.deepcopy(case.messages)
    first = case.build()
    second = build(
        copy.deepcopy(case.messages),
        env=dict(case.env),
        fetcher=case.fetcher(),
        model_uid=PLAIN_MODEL,
        tool_preamble=case.tool_preamble,
        native_mode=case.native_mode,
    )
    assert first.text == second.text
    assert first.images == second.images
    assert first == second
    assert case.messages == original  # building never mutates the caller's messages


@pytest.mark.invariant("IMG-6")
@given(cases())
def test_property_a_rebuild_carries_exactly_what_a_fresh_build_would(case: Case) -> None:
    fresh_metrics, rebuilt_metrics = ImageHistoryMetrics(), ImageHistoryMetrics()
    fresh = case.build(metrics=fresh_metrics)
    case.build(metrics=rebuilt_metrics, is_resume=True)
    rebuilt = case.build(metrics=rebuilt_metrics, is_resume=True, rebuild=True)
    if len(case.convo) > 1:
        assert rebuilt == fresh
        assert rebuilt_metrics.snapshot() == fresh_metrics.snapshot()  # counted once
    else:  # nothing to rebuild: the resume build stands
        assert rebuilt == case.build(is_resume=True)
