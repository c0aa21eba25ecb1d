"""History images in the Cascade prompt builder (seed 000): attach, bound, count, drop.

The seed's named tests (test/cascade-image-history.test.js) are reproduced at the builder level
under their own names; the one that needs a live resume (the rebuilt cascade) lives with the client,
and here the builder-level half of it checks that a rebuild equals the fresh build.
"""

from __future__ import annotations

import base64
import logging

import pytest

from engine.config import HistoryImageLimits
from engine.media.gate import MAX_SIZE, ImageSettings, ImageVerdicts
from engine.prompt.build import INTRO, Message, PromptBuild, build_cascade_prompt, truncation_note
from engine.prompt.extract import IMAGE_PLACEHOLDER
from engine.prompt.metrics import DropCounts, ImageHistoryMetrics
from tests.engine.prompt_support import (
    CLAUDE,
    DROP_SUFFIX,
    FILE_ID_BLOCK,
    IMG_A,
    IMG_B,
    IMG_C,
    LOGGER,
    MARKER,
    PLAIN_MODEL,
    PROBE_BASELINE_TEXT,
    PROBE_FIXED_TEXT,
    FakeFetcher,
    b64_image,
    build,
    data_url_image,
    drop_lines,
    png,
    png_b64,
    probe_messages,
    text_block,
    url_image,
)
from tests.support.imagegen import count_decodes, jpeg_header_only, padded_png, solid

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


# --- the decode guard and exact limits, for history images as for the current turn ------------


def _undecodable() -> dict[str, str]:
    """Truncated PNGs and a bare JPEG header: every header reader finds a size, nothing decodes."""
    return {
        "png-100x100-60": base64.b64encode(solid(100, 100)[:60]).decode(),
        "png-2000x1500-300": base64.b64encode(solid(2000, 1500)[:300]).decode(),
        "jpeg-header-24": base64.b64encode(jpeg_header_only(64, 48)).decode(),
    }


@pytest.mark.invariant("IMG-7")
@pytest.mark.invariant("IMG-4")
def test_undecodable_images_never_reach_field_6_from_the_current_turn_or_from_history(
    caplog: pytest.LogCaptureFixture,
) -> None:
    bad = _undecodable()
    fetcher = FakeFetcher({"https://img.test/cut.png": bad["png-2000x1500-300"]})
    blocks = [
        b64_image(bad["png-100x100-60"]),
        data_url_image(bad["jpeg-header-24"]),
        url_image("https://img.test/cut.png"),
    ]
    current = build([Message("user", [text_block("now"), *blocks, b64_image(IMG_A)])], fetcher=fetcher)
    assert current.images == (png(IMG_A),)
    messages = [
        Message("user", [text_block("before"), *blocks, b64_image(IMG_A)]),
        Message("assistant", "ok"),
        Message("user", "now"),
    ]
    metrics = ImageHistoryMetrics()
    with caplog.at_level(logging.WARNING):
        history = build(messages, fetcher=fetcher, metrics=metrics)
    assert history.images == (png(IMG_A),)
    assert history.drops == DropCounts(unextractable=3)
    assert f"<human>\nbefore{IMAGE_PLACEHOLDER * 3}{MARKER.format(n=1)}\n</human>" in history.text
    assert metrics.snapshot()["dropped_by_reason"]["unextractable"] == 3
    assert sum(m.startswith("Image skipped: undecodable: ") for m in caplog.messages) == 3 + 3
    assert drop_lines(caplog) == [
        "cascade_image_history_dropped count=3 (cap=0 bytes=0 truncated=0 no_vision=0 unextractable=3) turns=3 "
        "attached=1" + DROP_SUFFIX
    ]


@pytest.mark.parametrize(("size", "attached"), [(MAX_SIZE - 1, True), (MAX_SIZE, True), (MAX_SIZE + 1, False)])
@pytest.mark.invariant("IMG-7")
@pytest.mark.invariant("IMG-4")
def test_a_history_data_url_is_refused_one_decoded_byte_over_5_mib(size: int, attached: bool) -> None:
    data = base64.b64encode(padded_png(size)).decode()
    messages = [Message("user", [data_url_image(data)]), Message("assistant", "ok"), Message("user", "now")]
    result = build(messages, env={"CASCADE_MAX_HISTORY_IMAGE_BYTES": str(10**8)})
    assert result.images == ((png(data),) if attached else ())
    assert result.drops == (DropCounts() if attached else DropCounts(unextractable=1))
    current = build([Message("user", [data_url_image(data)])])
    assert current.images == result.images


@pytest.mark.parametrize(("cap", "attached"), [(2, 2), (3, 3), (4, 3)], ids=["one-over", "at", "one-under"])
@pytest.mark.invariant("IMG-3")
@pytest.mark.invariant("IMG-4")
def test_the_history_image_count_cap_is_exact(cap: int, attached: int) -> None:
    images = [png_b64(70 + i) for i in range(3)]
    messages = [
        Message("user", [b64_image(images[0])]),
        Message("assistant", [b64_image(images[1])]),
        Message("user", [b64_image(images[2])]),
        Message("assistant", "three"),
        Message("user", "now"),
    ]
    result = build(messages, env={"CASCADE_MAX_HISTORY_IMAGES": str(cap)})
    assert result.images == tuple(png(d) for d in images[3 - attached :])  # the newest ones
    assert (result.attached, result.drops) == (attached, DropCounts(cap=3 - attached))


@pytest.mark.parametrize(("delta", "attached"), [(-1, 2), (0, 3), (1, 3)], ids=["one-over", "at", "one-under"])
@pytest.mark.invariant("IMG-3")
@pytest.mark.invariant("IMG-4")
def test_the_history_image_byte_cap_is_exact_in_base64_characters(delta: int, attached: int) -> None:
    images = [png_b64(80 + i, side=4 + i) for i in range(3)]
    total = sum(len(d) for d in images)
    messages = [
        Message("user", [b64_image(images[0]), b64_image(images[1]), b64_image(images[2])]),
        Message("assistant", "three"),
        Message("user", "now"),
    ]
    result = build(messages, env={"CASCADE_MAX_HISTORY_IMAGE_BYTES": str(total + delta)})
    # Newest turn first, document order inside it: the last block is the one that no longer fits.
    assert result.images == tuple(png(d) for d in images[:attached])
    assert (result.attached, result.drops) == (attached, DropCounts(bytes=3 - attached))


@pytest.mark.invariant("IMG-7")
def test_each_distinct_image_is_decoded_once_per_request(monkeypatch: pytest.MonkeyPatch) -> None:
    loads = count_decodes(monkeypatch)
    messages = [
        Message("user", [text_block("a"), b64_image(IMG_A)]),
        Message("assistant", [data_url_image(IMG_A)]),
        Message("user", [text_block("b"), b64_image(IMG_A), b64_image(IMG_B)]),
    ]
    verdicts = ImageVerdicts()

    def resumed_build(*, rebuild: bool) -> PromptBuild:  # one request's builds share its verdicts
        return build_cascade_prompt(
            messages,
            model_uid=CLAUDE,
            is_resume=True,
            rebuild=rebuild,
            limits=HistoryImageLimits(),
            image_settings=ImageSettings(),
            fetcher=FakeFetcher(),
            env={},
            metrics=ImageHistoryMetrics(),
            verdicts=verdicts,
        )

    resumed = resumed_build(rebuild=False)
    assert resumed.images == (png(IMG_A), png(IMG_B))
    assert len(loads) == 2  # the same bytes twice in one turn: one decode
    rebuilt = resumed_build(rebuild=True)
    assert rebuilt.images == (png(IMG_A), png(IMG_B), png(IMG_A), png(IMG_A))
    assert len(loads) == 2  # the rebuild of the same request decodes nothing again
    assert build(messages).images == rebuilt.images  # a fresh request decides the same
    assert len(loads) == 4
