"""Engine limits pinned at the limit, one under and one over, in the unit each is stated in, where the
existing tests pinned only one or two of the three (docs/boundaries.md is the audit of every limit).

Everything here runs the real part in process: clocks are injected (ManualClock, the polling loop's own
sleep), nothing waits on wall time.
"""

from __future__ import annotations

import base64
import io
from typing import Any

import pytest
from PIL import Image

from engine.cascade.client import MAX_REJECTION_RETRIES
from engine.cascade.errors import CascadeStallError, ResumeRejectedError
from engine.cascade.polling import PollSettings
from engine.cascade.spawn import OUTPUT_TAIL_LINES, _failure_message
from engine.cascade.trajectory import ERROR_TEXT_LIMIT, read_step
from engine.chat.ledger import LATENCY_WINDOW, Ledger
from engine.chat.tool_markup import ToolSpecError, validate_tools
from engine.js import js_stringify, utf16_len
from engine.media import pdf_text
from engine.media.gate import IMAGE_MAX_LONG_SIDE, ImageData, ImageSettings, ShrinkOutcome, shrink_image
from engine.media.pdf_text import PDF_LIMIT_TEXT, PDF_MAX_PAGES, PdfText, extract_pdf_text
from engine.model_catalogue import ModelCatalogue
from engine.prompt.build import Message as PromptMessage
from engine.prompt.extract import BINARY_PLACEHOLDER, safe_block_to_string
from engine.reuse.fingerprint import META_STRIP_MAX_CHARS, strip_meta_tags
from engine.reuse.pool import DEFAULT_MAX_ENTRIES, DEFAULT_TTL_S, ONE_HOUR_CACHE_TTL_HINT_S, ConversationPool, PoolEntry
from engine.sessions.items import History, Item, Message, ToolCall
from engine.sessions.pruning import PruneConfig, decide_prune, prune_savings
from engine.sessions.views import SUMMARY_CAP, VIEW_MAX_BYTES, VIEW_MAX_ITEMS, cap_text, exploration_view, view_bytes
from engine.store import ENTRY_BYTES_FLOOR, TENANT_BYTES_FLOOR, StoreLimits
from engine.store.trim import MAX_PASSES, approx_bytes, cap_entry_bytes, dropped_turns_notice, trim_content_to_fit
from fakels.clock import ManualClock
from fakels.scenario import Fault, Scenario, Turn
from fakels.server import FakeLSThread
from fakels.steps import error_step
from tests.engine.cascade_support import SEND_RPC, CountingRebuild, Harness, answer
from tests.engine.polling_support import RUNNING, FakeTime, Script, Step, planner, run
from tests.engine.prompt_support import PLAIN_MODEL, build
from tests.engine.session_support import detailed, history_of_view_size, tail
from tests.support.pdfgen import build_pdf

LIMIT_IDS = ["limit-1", "limit", "limit+1"]


# ------------------------------------------------------------------------------------------- conversation pool


def pool_entry() -> PoolEntry:
    return PoolEntry("c1", session_id="s", api_key="k1", ls_address="127.0.0.1:1")


@pytest.mark.parametrize(("idle", "alive"), [(-1, True), (0, True), (1, False)], ids=LIMIT_IDS)
def test_a_pool_entry_lives_exactly_the_default_ttl(idle: float, alive: bool) -> None:
    clock = ManualClock(10_000.0)
    pool = ConversationPool(clock=clock.now)
    assert pool.ttl_s == DEFAULT_TTL_S == 1800.0
    pool.checkin("fp", pool_entry())
    clock.advance(DEFAULT_TTL_S + idle)
    assert (pool.checkout("fp") is not None) == alive


@pytest.mark.parametrize(("idle", "alive"), [(-1, True), (0, True), (1, False)], ids=LIMIT_IDS)
def test_a_pool_entry_with_the_one_hour_cache_hint_lives_exactly_the_hint(idle: float, alive: bool) -> None:
    clock = ManualClock(10_000.0)
    pool = ConversationPool(clock=clock.now)
    pool.checkin("fp", pool_entry(), ttl_hint_s=ONE_HOUR_CACHE_TTL_HINT_S)
    clock.advance(ONE_HOUR_CACHE_TTL_HINT_S + idle)
    assert (pool.checkout("fp") is not None) == alive


@pytest.mark.parametrize(("count", "evicted"), [(-1, 0), (0, 0), (1, 1)], ids=LIMIT_IDS)
def test_the_pool_holds_exactly_the_default_max_entries(count: int, evicted: int) -> None:
    clock = ManualClock(10_000.0)
    pool = ConversationPool(clock=clock.now)
    assert pool.max_entries == DEFAULT_MAX_ENTRIES == 500
    for n in range(DEFAULT_MAX_ENTRIES + count):
        pool.checkin(f"fp{n}", PoolEntry(f"c{n}"))
        clock.advance(0.001)
    assert len(pool) == DEFAULT_MAX_ENTRIES + count - evicted
    assert pool.stats().evictions == evicted
    assert ("fp0" in pool) == (evicted == 0)  # the least recently checked in goes first


# ------------------------------------------------------------------------------------------- response store floors


@pytest.mark.parametrize(
    ("max_bytes", "entry_bytes"),
    [
        (4 * ENTRY_BYTES_FLOOR - 4, ENTRY_BYTES_FLOOR),
        (4 * ENTRY_BYTES_FLOOR, ENTRY_BYTES_FLOOR),
        (4 * ENTRY_BYTES_FLOOR + 4, ENTRY_BYTES_FLOOR + 1),
    ],
    ids=LIMIT_IDS,
)
def test_the_entry_byte_floor_gives_way_to_a_quarter_of_max_bytes_exactly(max_bytes: int, entry_bytes: int) -> None:
    """max_entry_bytes = max(64 KiB, max_bytes // 4): the floor rules up to 256 KiB, a quarter above."""
    assert StoreLimits(max_bytes=max_bytes).max_entry_bytes == entry_bytes


@pytest.mark.parametrize(
    ("max_bytes", "tenant_bytes"),
    [
        (64 * TENANT_BYTES_FLOOR - 64, TENANT_BYTES_FLOOR),
        (64 * TENANT_BYTES_FLOOR, TENANT_BYTES_FLOOR),
        (64 * TENANT_BYTES_FLOOR + 64, TENANT_BYTES_FLOOR + 1),
    ],
    ids=LIMIT_IDS,
)
def test_the_tenant_byte_floor_gives_way_to_a_64th_of_max_bytes_exactly(max_bytes: int, tenant_bytes: int) -> None:
    """min_tenant_bytes = max(256 KiB, max_bytes // 64): the floor rules up to 16 MiB, a 64th above."""
    assert StoreLimits(max_bytes=max_bytes).min_tenant_bytes == tenant_bytes


# ------------------------------------------------------------------------------------------- ledger


@pytest.mark.parametrize("offset", [-1, 0, 1], ids=LIMIT_IDS)
def test_the_latency_window_keeps_exactly_the_newest_200_samples(offset: int) -> None:
    ledger = Ledger(ModelCatalogue.default())
    recorded = LATENCY_WINDOW + offset
    for n in range(recorded):
        ledger.record_request("claude-sonnet-4-6", True, float(n + 1), None)
    latency = ledger.stats()["latency_ms"]
    kept = list(range(1, recorded + 1))[-LATENCY_WINDOW:]
    assert latency["samples"] == len(kept) == min(recorded, LATENCY_WINDOW)
    assert latency["avg"] == sum(kept) / len(kept)


# ------------------------------------------------------------------------------------------- session views


@pytest.mark.parametrize("length", [SUMMARY_CAP - 1, SUMMARY_CAP, SUMMARY_CAP + 1], ids=LIMIT_IDS)
def test_summaries_are_cut_only_over_240_characters(length: int) -> None:
    text = "☃" * length
    capped = cap_text(text)
    assert capped == (text if length <= SUMMARY_CAP else "☃" * (SUMMARY_CAP - 1) + "…")
    assert len(capped) == min(length, SUMMARY_CAP)


@pytest.mark.parametrize("count", [VIEW_MAX_ITEMS - 1, VIEW_MAX_ITEMS, VIEW_MAX_ITEMS + 1], ids=LIMIT_IDS)
def test_an_exploration_page_holds_at_most_80_items(count: int) -> None:
    view = exploration_view(History([Message("user", "m") for _ in range(count)]))
    assert len(view["items"]) == min(count, VIEW_MAX_ITEMS)
    assert view["next"] == (VIEW_MAX_ITEMS if count > VIEW_MAX_ITEMS else None)


# ------------------------------------------------------------------------------------------- text caps


@pytest.mark.parametrize("offset", [-1, 0, 1], ids=LIMIT_IDS)
def test_meta_tags_are_stripped_up_to_the_cap_in_utf16_units(offset: int) -> None:
    head = "<summary>s</summary>"
    # An astral character is two UTF-16 units: the cap is counted in those, not in code points.
    body = "😀" * ((META_STRIP_MAX_CHARS + offset - len(head)) // 2) + "x" * ((META_STRIP_MAX_CHARS + offset) % 2)
    text = head + body
    assert utf16_len(text) == META_STRIP_MAX_CHARS + offset
    assert strip_meta_tags(text) == (body if offset <= 0 else text)


def _tool(name: str) -> list[dict[str, Any]]:
    return [{"type": "function", "function": {"name": name, "parameters": {"type": "object"}}}]


@pytest.mark.parametrize("length", [63, 64, 65], ids=LIMIT_IDS)
def test_a_tool_name_is_at_most_64_characters(length: int) -> None:
    if length <= 64:
        validate_tools(_tool("n" * length), None)
    else:
        with pytest.raises(ToolSpecError, match="must match"):
            validate_tools(_tool("n" * length), None)


@pytest.mark.parametrize("length", [ERROR_TEXT_LIMIT - 1, ERROR_TEXT_LIMIT, ERROR_TEXT_LIMIT + 1], ids=LIMIT_IDS)
def test_an_error_steps_text_is_cut_to_300_characters(length: int) -> None:
    text = "é" * length
    view = read_step(error_step(text + "\nsecond line"), 0)
    assert view.is_error
    assert view.error_text == text[:ERROR_TEXT_LIMIT]


@pytest.mark.parametrize("pages", [PDF_MAX_PAGES - 1, PDF_MAX_PAGES, PDF_MAX_PAGES + 1], ids=LIMIT_IDS)
def test_a_pdf_of_at_most_200_pages_is_read(pages: int) -> None:
    result = extract_pdf_text(build_pdf([f"p{i}" for i in range(pages)]))
    assert result is not None
    assert result.page_count == (pages if pages <= PDF_MAX_PAGES else 0)


# ------------------------------------------------------------------------------------------- polling


@pytest.mark.parametrize(("chars", "limit_s"), [(1499, 30.0), (1500, 35.0), (1501, 35.0)], ids=LIMIT_IDS)
def test_the_cold_stall_limit_grows_per_whole_1500_prompt_characters(chars: int, limit_s: float) -> None:
    assert PollSettings().cold_stall_limit(chars) == limit_s


@pytest.mark.parametrize(("chars", "stalls"), [(299, True), (300, False), (301, False)], ids=LIMIT_IDS)
def test_a_warm_stall_keeps_partial_text_of_at_least_300_characters(chars: int, stalls: bool) -> None:
    script = Script([([planner("x" * chars)], RUNNING)])
    if stalls:
        with pytest.raises(CascadeStallError, match="stalled after preamble"):
            run(script, FakeTime())
    else:
        assert run(script, FakeTime()).end_reason == "warm_stall"


@pytest.mark.parametrize(
    ("ceiling", "thinking", "pending"),
    [(45.0, "", False), (120.0, "hmm", False), (180.0, "", True)],
    ids=["warm-stall-text-s", "warm-stall-thinking-s", "warm-stall-tool-s"],
)
def test_a_warm_stall_ends_at_the_first_poll_past_its_ceiling(ceiling: float, thinking: str, pending: bool) -> None:
    """Polled once a second on the loop's own clock, the text first seen at the first poll (t = 1): still
    polling when the text has been quiet for exactly the ceiling, ended at the next poll."""
    time = FakeTime()
    settings = PollSettings(poll_interval_s=1.0, first_poll_interval_s=1.0)
    steps = [planner("x" * 300, thinking=thinking), *([Step(status=1)] if pending else [])]  # type: ignore[arg-type]
    outcome = run(Script([(steps, RUNNING)]), time, settings)
    assert outcome.end_reason == "warm_stall"
    assert time.now == 1.0 + ceiling + 1.0


def test_a_cold_stall_ends_at_the_first_poll_past_its_limit() -> None:
    time = FakeTime()
    with pytest.raises(CascadeStallError, match="no output after 30s"):
        run(
            Script([([], RUNNING)]), time, PollSettings(poll_interval_s=1.0, first_poll_interval_s=1.0), prompt_chars=10
        )
    assert time.now == 31.0


@pytest.mark.parametrize(("max_wait", "polls"), [(4.0, 4), (5.0, 5), (6.0, 6)], ids=LIMIT_IDS)
def test_the_max_wait_cap_ends_the_loop_at_exactly_max_wait_s(max_wait: float, polls: int) -> None:
    time = FakeTime()
    settings = PollSettings(
        poll_interval_s=1.0, first_poll_interval_s=1.0, max_wait_s=max_wait, cold_stall_base_s=100.0
    )
    outcome = run(Script([([], RUNNING)]), time, settings)
    assert (outcome.end_reason, time.now, outcome.polls) == ("max_wait", max_wait, polls)


# ------------------------------------------------------------------------------------------- images


def _png(width: int, height: int) -> ImageData:
    buffer = io.BytesIO()
    Image.new("RGB", (width, height), (40, 90, 160)).save(buffer, "PNG")
    return ImageData(base64.b64encode(buffer.getvalue()).decode(), "image/png")


@pytest.mark.parametrize(
    ("long_side", "outcome"),
    [
        (IMAGE_MAX_LONG_SIDE - 1, ShrinkOutcome.KEPT),
        (IMAGE_MAX_LONG_SIDE, ShrinkOutcome.KEPT),
        (IMAGE_MAX_LONG_SIDE + 1, ShrinkOutcome.RESIZED),
    ],
    ids=LIMIT_IDS,
)
def test_an_image_is_reencoded_only_past_the_1568_pixel_long_side(long_side: int, outcome: ShrinkOutcome) -> None:
    image = _png(long_side, 2)
    result = shrink_image(image, ImageSettings())
    assert result.outcome is outcome
    if outcome is ShrinkOutcome.KEPT:
        assert (result.image, result.reason) == (image, None)
    else:
        assert result.reason == f"re-encoded long side {long_side}px -> <=1568px JPEG"


@pytest.mark.parametrize("offset", [-1, 0, 1], ids=LIMIT_IDS)
def test_the_reencode_keeps_the_first_jpeg_that_fits_max_bytes_in_base64_characters(offset: int) -> None:
    """IMAGE_MAX_BYTES is a ceiling on the re-encoded JPEG's base64 length: a first encoding of exactly
    the ceiling is kept; one character over steps the quality down."""
    image = _png(IMAGE_MAX_LONG_SIDE + 1, 40)
    first = shrink_image(image, ImageSettings(max_bytes=10**9)).image.base64_data
    result = shrink_image(image, ImageSettings(max_bytes=len(first) + offset))
    assert result.outcome is ShrinkOutcome.RESIZED
    assert (result.image.base64_data == first) == (offset >= 0)
    assert len(result.image.base64_data) <= len(first) + offset


# ------------------------------------------------------------------------------------------- more caps


@pytest.mark.parametrize(("length", "binary"), [(127, False), (128, True), (129, True)], ids=LIMIT_IDS)
def test_a_data_value_of_128_base64_characters_or_more_is_binary(length: int, binary: bool) -> None:
    block = {"type": "audio", "data": "A" * length}
    assert (safe_block_to_string(block) == BINARY_PLACEHOLDER) == binary


@pytest.mark.parametrize("offset", [-1, 0, 1], ids=LIMIT_IDS)
def test_an_exploration_page_is_at_most_32_kib(offset: int) -> None:
    history = history_of_view_size(VIEW_MAX_BYTES + offset)
    view = exploration_view(history)
    assert len(view["items"]) == len(history.items) - (1 if offset > 0 else 0)
    assert view_bytes(view) <= VIEW_MAX_BYTES


@pytest.mark.parametrize(("min_savings", "fires"), [(499, True), (500, True), (501, False)], ids=LIMIT_IDS)
def test_pruning_fires_when_savings_reach_min_savings(min_savings: int, fires: bool) -> None:
    """The savings here are exactly 500 tokens; limit-1 is a min_savings one under them."""
    items: list[Item] = [ToolCall("c1", "Read", "{}"), detailed("c1", 300), ToolCall("c2", "Read", "{}")]
    items += [detailed("c2", 200), tail(50)]
    assert prune_savings(items, ["c1", "c2"]) == 500
    decided = decide_prune(History(items), PruneConfig(protected_tokens=50, min_savings=min_savings))
    assert decided == (["c1", "c2"] if fires else [])


@pytest.mark.parametrize("offset", [-1, 0, 1], ids=LIMIT_IDS)
def test_a_pdf_of_at_most_the_input_cap_is_read(monkeypatch: pytest.MonkeyPatch, offset: int) -> None:
    raw = build_pdf(["x"])
    monkeypatch.setattr(pdf_text, "PDF_MAX_INPUT_BYTES", len(raw) - offset)  # the PDF is limit-1 / limit / limit+1
    assert (extract_pdf_text(raw) == PdfText(PDF_LIMIT_TEXT, 0)) == (offset > 0)


@pytest.mark.parametrize(("second", "read"), [("6789", True), ("67890", True), ("678901", False)], ids=LIMIT_IDS)
def test_a_pdf_of_at_most_the_text_cap_is_read(monkeypatch: pytest.MonkeyPatch, second: str, read: bool) -> None:
    monkeypatch.setattr(pdf_text, "PDF_MAX_TEXT_BYTES", 10)  # the page texts are 9 / 10 / 11 bytes
    result = extract_pdf_text(build_pdf(["12345", second]))
    assert result == (PdfText(f"12345\n\n{second}", 2) if read else PdfText(PDF_LIMIT_TEXT, 0))


@pytest.mark.parametrize(("key", "index"), [("4294967293", True), ("4294967294", True), ("4294967295", False)])
def test_array_index_keys_end_at_2_to_the_32_minus_2(key: str, index: bool) -> None:
    """JS orders an object's array-index keys first, ascending; 2**32 - 1 is an ordinary string key."""
    rendered = js_stringify({"b": 1, key: 2})
    assert rendered == (f'{{"{key}":2,"b":1}}' if index else f'{{"b":1,"{key}":2}}')


@pytest.mark.parametrize(("rejections", "succeeds"), [(2, True), (3, True), (4, False)], ids=LIMIT_IDS)
def test_a_resume_is_retried_at_most_three_times(
    fake: FakeLSThread, harness: Harness, rejections: int, succeeds: bool
) -> None:
    """The first send is rejected, then each of MAX_REJECTION_RETRIES (3) retries may be: 2 or 3 rejections
    in all are survived, a 4th is the end."""
    assert MAX_REJECTION_RETRIES == 3
    faults = [Turn(fault=Fault("expired"))] * rejections
    fake.load_scenario(Scenario(turns=(answer("one"), *faults, answer("fresh"))))
    first = harness.turn("first")
    mark = harness.mark()
    if succeeds:
        assert harness.resume_from(first, "next", rebuild=CountingRebuild()).text == "fresh"
    else:
        with pytest.raises(ResumeRejectedError) as info:
            harness.resume_from(first, "next", rebuild=CountingRebuild())
        assert len(info.value.rejections) == MAX_REJECTION_RETRIES + 1
    assert sum(1 for e in harness.since(mark, SEND_RPC) if e.rejected) == rejections


@pytest.mark.parametrize(("budget", "dropped"), [(55, 0), (54, 0), (53, 1)], ids=LIMIT_IDS)
def test_the_history_budget_in_utf16_units_is_exact(budget: int, dropped: int) -> None:
    """The history is exactly 54 units (a system text of 10, a 18-unit human turn, a 26-unit assistant
    turn): a budget one over, at or one under it. Here limit-1 / limit+1 name the history's size."""
    messages = [PromptMessage(role, text) for role, text in (("system", "S" * 10), ("user", "x"), ("assistant", "b"))]
    messages.append(PromptMessage("user", "now"))
    result = build(messages, env={"CASCADE_MAX_HISTORY_BYTES": str(budget)}, model_uid=PLAIN_MODEL)
    assert result.coverage.dropped_turn_count == dropped


@pytest.mark.parametrize("lines", [OUTPUT_TAIL_LINES - 1, OUTPUT_TAIL_LINES, OUTPUT_TAIL_LINES + 1], ids=LIMIT_IDS)
def test_a_failed_ls_start_shows_at_most_its_last_20_output_lines(lines: int) -> None:
    output = "\n".join(f"line {n}" for n in range(1, lines + 1))
    message = _failure_message("/bin/ls-x", "127.0.0.1:1", "exited", 3, output, 5.0)
    shown = message.split("\n")[1:]
    assert shown == [f"  | line {n}" for n in range(max(1, lines - OUTPUT_TAIL_LINES + 1), lines + 1)]
    assert len(shown) == min(lines, OUTPUT_TAIL_LINES)


# ------------------------------------------------------------------------------------------- store trimming


def _system(text: str) -> dict[str, Any]:
    return {"role": "system", "content": text}


def _user(content: object) -> dict[str, Any]:
    return {"role": "user", "content": content}


@pytest.mark.parametrize("lead", [7, 8, 9], ids=LIMIT_IDS)
def test_the_byte_stage_keeps_at_most_8_leading_system_messages(lead: int) -> None:
    """One byte over the cap, the walk back from the newest drops the first message that does not fit:
    with at most 8 leading system messages they are all the kept head, so the big user message goes; a 9th
    is walked over like any other message, and it is the one dropped."""
    messages = [_system(f"s{i}") for i in range(lead)] + [_user("x" * 1000), _user("last")]
    kept, dropped = cap_entry_bytes(messages, approx_bytes(messages) - 1)
    assert dropped == 1
    contents = [str(m["content"]) for m in kept]
    gone = "s8" if lead > 8 else "x" * 1000
    assert gone not in [c.removeprefix(dropped_turns_notice(1, "bytes")) for c in contents]
    assert len(kept) == len(messages) - 1


@pytest.mark.parametrize("needed", [MAX_PASSES - 1, MAX_PASSES, MAX_PASSES + 1], ids=LIMIT_IDS)
def test_content_trimming_makes_at_most_64_passes(needed: int) -> None:
    """70 equal parts, each pass halves one and saves the same bytes: a cap that needs exactly 63 or 64
    passes is reached, one that needs 65 is not (the trimmer stops after 64)."""
    messages = [_user([{"type": "text", "text": f"{i:02d}" + "x" * 998} for i in range(70)])]
    total = approx_bytes(messages)
    one, _ = trim_content_to_fit(messages, total - 1)
    saved = total - approx_bytes(one)
    limit = total - needed * saved
    kept, passes = trim_content_to_fit(messages, limit)
    assert passes == min(needed, MAX_PASSES)
    assert (approx_bytes(kept) <= limit) == (needed <= MAX_PASSES)


@pytest.mark.parametrize(("levels", "flat"), [(3, False), (4, False), (5, True)], ids=LIMIT_IDS)
def test_approx_bytes_walks_containers_to_depth_4(levels: int, flat: bool) -> None:
    node: Any = {"leaf": "x" * 100}
    for _ in range(levels):
        node = {"k": node}
    assert approx_bytes([{"content": node}]) == 64 + (32 if flat else 200)


@pytest.mark.parametrize(("levels", "cut"), [(2, True), (3, True), (4, False)], ids=LIMIT_IDS)
def test_strings_in_containers_up_to_depth_5_are_trimmed(levels: int, cut: bool) -> None:
    """The content list is depth 1, its item depth 2; each level adds one: 3 levels put the leaf's
    container at depth 5."""
    node: Any = {"leaf": "x" * 1000}
    for _ in range(levels):
        node = {"k": node}
    message = _user([node])
    _, rewritten = trim_content_to_fit([message], approx_bytes([message]) - 1)
    assert (rewritten > 0) == cut
