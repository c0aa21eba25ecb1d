"""Properties of the Cascade prompt builder over generated conversations with history images."""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conformance.strategies import unicode_text
from engine.config import HistoryImageLimits, history_budget
from engine.js import utf16_len
from engine.prompt.build import Message, PromptBuild
from engine.prompt.extract import content_to_string, is_image_like_block, safe_block_to_string
from engine.prompt.history import escape_history_tag
from engine.prompt.metrics import DropCounts, ImageHistoryMetrics, format_drop_log
from engine.prompt.system import build_system_text
from tests.engine.prompt_support import (
    FILE_ID_BLOCK,
    MARKER,
    PLAIN_MODEL,
    FakeFetcher,
    b64_image,
    build,
    captured,
    data_url_image,
    png_b64,
    text_block,
    url_image,
)

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
