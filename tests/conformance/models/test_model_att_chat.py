"""The kit's Chat rules for durable tool-result attachments (conformance/models/att.py, ATT-4): tool
messages carry the result's text only, one user message with a run's images in order follows each
maximal run of tool messages (none after an image-less run), no other message carries an image, and
every assistant tool-call message is answered by the tool messages directly after it."""

from __future__ import annotations

from typing import Any

import pytest

from conformance.models.att import ExpectedResult, check_chat
from tests.conformance.models.model_att_support import (
    GIF_URL,
    JPEG_URL,
    PNG_URL,
    c_calls,
    c_images,
    c_message,
    c_tool,
)

TWO = ExpectedResult("c1", "Viewed", (PNG_URL, JPEG_URL))
NONE = ExpectedResult("c2", "Read", ())
ONE = ExpectedResult("c3", "Looked", (GIF_URL,))
EXPECTED = [TWO, NONE, ONE]


def _chat(
    first_images: dict[str, Any] | None = None, second_images: dict[str, Any] | None = None
) -> list[dict[str, Any]]:
    """Two rounds: c1 (two images) and c2 (none) in parallel, then c3 (one image)."""
    return [
        c_message("user", "look"),
        c_calls("c1", "c2"),
        c_tool("c1", "Viewed"),
        c_tool("c2", "Read"),
        first_images or c_images(PNG_URL, JPEG_URL),
        c_message("assistant", "ok"),
        c_calls("c3"),
        c_tool("c3", "Looked"),
        second_images or c_images(GIF_URL),
        c_message("assistant", "done"),
    ]


def _without(request: list[dict[str, Any]], *positions: int) -> list[dict[str, Any]]:
    return [m for i, m in enumerate(request) if i not in positions]


def test_right_chat_messages_have_no_problems() -> None:
    assert check_chat(_chat(), EXPECTED) == []


def test_one_image_message_holds_the_images_of_every_result_of_a_run_in_order() -> None:
    request = [
        c_message("user", "look"),
        c_calls("c1", "c2", "c3"),
        c_tool("c1", "Viewed"),
        c_tool("c2", "Read"),
        c_tool("c3", "Looked"),
        c_images(PNG_URL, JPEG_URL, GIF_URL),
    ]
    assert check_chat(request, EXPECTED) == []
    reordered = [*request[:5], c_images(GIF_URL, PNG_URL, JPEG_URL)]
    (problem,) = check_chat(reordered, EXPECTED)
    assert problem.startswith(
        "after the tool run at messages[2:5] there should be one user message with 3 image(s) in order, got "
    )


def test_tool_messages_answering_other_calls_are_the_only_problem_reported() -> None:
    request = _without(_chat(), 3)
    assert check_chat(request, EXPECTED) == ["tool messages answer ['c1', 'c3'], history has ['c1', 'c2', 'c3']"]
    assert check_chat([c_message("user", "hi")], [NONE]) == ["tool messages answer [], history has ['c2']"]


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        pytest.param("Read\n", "tool message c2: text 'Read\\n', want 'Read'", id="other-text"),
        pytest.param(None, "tool message c2: text 'null', want 'Read'", id="no-content"),
        pytest.param(
            [{"type": "text", "text": "Read"}, {"type": "refusal", "text": ""}],
            'tool message c2: text \'[{"text": "Read", "type": "text"}, {"text": "", "type": "refusal"}]\','
            " want 'Read'",
            id="a-part-that-is-not-text",
        ),
        pytest.param(["Read"], "tool message c2: text '[\"Read\"]', want 'Read'", id="a-bare-string-part"),
        pytest.param({"text": "Read"}, "tool message c2: text '{\"text\": \"Read\"}', want 'Read'", id="an-object"),
    ],
)
def test_a_tool_message_with_other_text_is_reported(content: Any, problem: str) -> None:
    request = _chat()
    request[3] = c_tool("c2", content)
    assert check_chat(request, EXPECTED) == [problem]


@pytest.mark.parametrize(
    "content",
    [
        pytest.param([{"type": "text", "text": "Re"}, {"type": "text", "text": "ad"}], id="text-parts-joined"),
        pytest.param([{"type": "text", "text": "Read"}, {"type": "text"}], id="a-part-without-text-adds-nothing"),
    ],
)
def test_a_tool_message_may_carry_its_text_as_text_parts(content: list[dict[str, str]]) -> None:
    request = _chat()
    request[3] = c_tool("c2", content)
    assert check_chat(request, EXPECTED) == []


def test_an_empty_result_text_is_an_empty_tool_message() -> None:
    empty = ExpectedResult("c2", "", ())
    assert check_chat([c_calls("c2"), c_tool("c2", "")], [empty]) == []
    assert check_chat([c_calls("c2"), c_tool("c2", [])], [empty]) == []


def test_a_tool_message_carrying_an_image_is_reported() -> None:
    request = _chat()
    request[2] = {**c_tool("c1", "Viewed"), "image": PNG_URL}
    assert check_chat(request, EXPECTED) == ["tool message c1 carries an image"]
    request[2] = c_tool(
        "c1", [{"type": "text", "text": "Viewed"}, {"type": "image_url", "image_url": {"url": PNG_URL}}]
    )
    problems = check_chat(request, EXPECTED)
    assert [p.split(":")[0] for p in problems] == ["tool message c1", "tool message c1 carries an image"]


@pytest.mark.parametrize(
    ("first", "got"),
    [
        pytest.param(
            c_images(JPEG_URL, PNG_URL), '\'{"content": [{"image_url": {"url": "data:image/jpeg', id="out-of-order"
        ),
        pytest.param(c_images(PNG_URL), '\'{"content": [{"image_url": {"url": "data:image/png', id="one-missing"),
        pytest.param(
            c_images(PNG_URL, JPEG_URL, PNG_URL), '\'{"content": [{"image_url": {"url": "data:image/png', id="one-extra"
        ),
        pytest.param(
            {"role": "user", "content": [{"type": "text", "text": "images:"}, *c_images(PNG_URL, JPEG_URL)["content"]]},
            '\'{"content": [{"text": "images:"',
            id="with-a-text-part",
        ),
        pytest.param(
            {
                "role": "user",
                "content": [{"type": "image_url", "image_url": PNG_URL}, c_images(JPEG_URL)["content"][0]],
            },
            '\'{"content": [{"image_url": "data:image/png',
            id="url-not-an-object",
        ),
        pytest.param(
            {"role": "user", "content": [{"type": "image_url"}, c_images(JPEG_URL)["content"][0]]},
            '\'{"content": [{"type": "image_url"}',
            id="no-url",
        ),
        pytest.param(
            {"role": "assistant", "content": c_images(PNG_URL, JPEG_URL)["content"]},
            '\'{"content": [{"image_url": {"url": "data:image/png',
            id="not-a-user-message",
        ),
        pytest.param(c_message("user", "see above"), '\'{"content": "see above", "role": "user"}\'', id="text-only"),
    ],
)
def test_a_run_whose_images_do_not_follow_it_exactly_is_reported(first: dict[str, Any], got: str) -> None:
    (problem,) = check_chat(_chat(first_images=first), EXPECTED)
    assert problem.startswith(
        "after the tool run at messages[2:4] there should be one user message with 2 image(s) in order, got " + got
    )


def test_a_missing_image_message_is_reported_at_its_run() -> None:
    assert check_chat(_without(_chat(), 4), EXPECTED) == [
        "after the tool run at messages[2:4] there should be one user message with 2 image(s) in order, got "
        '\'{"content": "ok", "role": "assistant"}\''
    ]
    assert check_chat(_without(_chat(), 8, 9), EXPECTED) == [
        "after the tool run at messages[7:8] there should be one user message with 1 image(s) in order, got 'null'"
    ]


def test_images_of_two_runs_in_one_message_are_reported_at_both_runs() -> None:
    request = _without(_chat(first_images=c_images(PNG_URL, JPEG_URL, GIF_URL)), 8)
    assert [p.split(" there")[0] for p in check_chat(request, EXPECTED)] == [
        "after the tool run at messages[2:4]",
        "after the tool run at messages[7:8]",
    ]


def test_no_image_message_follows_an_image_less_run() -> None:
    text_only = [NONE]
    assert check_chat([c_calls("c2"), c_tool("c2", "Read"), c_message("user", "thanks")], text_only) == []
    assert check_chat([c_calls("c2"), c_tool("c2", "Read"), c_images(PNG_URL)], text_only) == [
        "a user image message follows the image-less tool run at messages[1:2]",
        "messages[2] carries an image no tool run explains",
    ]


def test_a_user_reply_in_text_parts_after_an_image_less_run_is_no_image_message() -> None:
    reply = c_message("user", [{"type": "text", "text": "thanks"}])
    assert check_chat([c_calls("c2"), c_tool("c2", "Read"), reply], [NONE]) == []


def test_a_run_at_the_very_start_of_the_messages_is_judged_like_any_other() -> None:
    assert check_chat([c_tool("c1", "Viewed"), c_images(PNG_URL, JPEG_URL)], [TWO]) == []
    assert check_chat([c_tool("c1", "Viewed"), c_message("user", "next")], [TWO]) == [
        "after the tool run at messages[0:1] there should be one user message with 2 image(s) in order, got "
        '\'{"content": "next", "role": "user"}\''
    ]


def test_without_vision_no_message_carries_an_image() -> None:
    blind = [ExpectedResult("c1", "Viewed\n[2 image attachment(s) omitted: model does not support images]", ())]
    request = [
        c_calls("c1"),
        c_tool("c1", "Viewed\n[2 image attachment(s) omitted: model does not support images]"),
        c_message("assistant", "I cannot see them"),
    ]
    assert check_chat(request, blind) == []
    assert check_chat([*request[:2], c_images(PNG_URL, JPEG_URL)], blind) == [
        "a user image message follows the image-less tool run at messages[1:2]",
        "messages[2] carries an image no tool run explains",
    ]


@pytest.mark.parametrize(
    ("stray", "position"),
    [
        pytest.param(c_images(GIF_URL), 0, id="an-image-message-before-any-run"),
        pytest.param(c_message("user", f"look at {PNG_URL}"), 0, id="a-data-url-in-user-text"),
        pytest.param(c_message("assistant", f"here: {GIF_URL}"), 0, id="a-data-url-in-assistant-text"),
    ],
)
def test_an_image_no_tool_run_explains_is_reported(stray: dict[str, Any], position: int) -> None:
    request = [stray, *_chat()]
    problems = check_chat(request, EXPECTED)
    assert problems == [f"messages[{position}] carries an image no tool run explains"]
    later = [*_chat(), stray]
    assert check_chat(later, EXPECTED) == ["messages[10] carries an image no tool run explains"]


def test_parallel_results_may_answer_their_calls_in_any_order() -> None:
    request = [c_calls("c1", "c2"), c_tool("c2", "Read"), c_tool("c1", "Viewed"), c_images(PNG_URL, JPEG_URL)]
    assert check_chat(request, [NONE, TWO]) == []


def test_tool_calls_must_be_answered_directly_after_them() -> None:
    split = [c_calls("c1", "c2"), c_tool("c2", "Read"), c_message("user", "wait"), c_tool("c1", "Viewed")]
    blind = [NONE, ExpectedResult("c1", "Viewed", ())]
    assert check_chat(split, blind) == [
        "the tool calls of messages[0] ['c1', 'c2'] are answered directly after by ['c2']"
    ]
    unanswered = [c_message("user", "look"), c_calls("c1")]
    assert check_chat(unanswered, []) == ["the tool calls of messages[1] ['c1'] are answered directly after by []"]
    late = [c_calls("c2"), c_message("assistant", "running"), c_tool("c2", "Read")]
    assert check_chat(late, [NONE]) == ["the tool calls of messages[0] ['c2'] are answered directly after by []"]


def test_a_message_with_an_empty_tool_call_list_needs_no_answer() -> None:
    request = [{"role": "assistant", "content": "hi", "tool_calls": []}, c_message("user", "ok")]
    assert check_chat(request, []) == []


def test_entries_that_are_not_messages_are_not_judged() -> None:
    request = [*_chat()[:4], "stray", *_chat()[4:]]
    problems = check_chat(request, EXPECTED)
    assert problems == [
        "after the tool run at messages[2:4] there should be one user message with 2 image(s) in order, got 'stray'",
        "messages[5] carries an image no tool run explains",
    ]


def test_a_tool_call_that_is_not_an_object_is_reported_not_a_crash() -> None:
    request = [{"role": "assistant", "content": None, "tool_calls": ["c2"]}, c_tool("c2", "Read")]
    assert check_chat(request, [NONE]) == ["the tool calls of messages[0] [None] are answered directly after by ['c2']"]
