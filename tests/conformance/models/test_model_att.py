"""The kit's model of durable tool-result attachments (conformance/models/att.py, seed 002, ATT-1..7):
what each tool result must lower to, and the problems it reports for Responses ``input`` and Chat
``messages`` that break the lowering rules, for requests that stop being prefixes, and for views that
leak image bytes. Inputs are hand-built histories and wire requests; the answers come from the
catalogue's statements, not from running the module."""

from __future__ import annotations

from typing import Any

import pytest

from conformance.models.att import (
    OMITTED_NOTE,
    ExpectedResult,
    check_responses,
    data_url,
    expected_results,
    identity_problems,
    prefix_problems,
)
from tests.conformance.models.model_att_support import (
    GIF,
    GIF_URL,
    JPEG,
    JPEG_URL,
    PNG,
    PNG_URL,
    assistant,
    call,
    image,
    input_image,
    input_text,
    r_call,
    r_message,
    r_output,
    result,
    user,
)

# --- what a result lowers to ------------------------------------------------------------------


def test_an_attachment_lowers_to_a_data_url_of_its_mime_type_and_base64() -> None:
    assert data_url(image("image/webp", b"RIFF")) == "data:image/webp;base64,UklGRg=="


@pytest.mark.parametrize(
    ("item", "vision", "pruned", "want"),
    [
        pytest.param(result("c1", "Listed 3 files"), True, frozenset(), ("Listed 3 files", ()), id="summary-only"),
        pytest.param(
            result("c1", "Read a.txt", "one\ntwo"), True, frozenset(), ("Read a.txt\none\ntwo", ()), id="content"
        ),
        pytest.param(
            result("c1", "Read empty.txt", ""), True, frozenset(), ("Read empty.txt\n", ()), id="empty-content"
        ),
        pytest.param(
            result("c1", "Viewed", None, PNG, JPEG), True, frozenset(), ("Viewed", (PNG_URL, JPEG_URL)), id="images"
        ),
        pytest.param(
            result("c1", "Viewed", "2 images", GIF, PNG),
            True,
            frozenset(),
            ("Viewed\n2 images", (GIF_URL, PNG_URL)),
            id="images-keep-attachment-order",
        ),
        pytest.param(
            result("c1", "Viewed", "detail", PNG, JPEG),
            False,
            frozenset(),
            ("Viewed\ndetail\n[2 image attachment(s) omitted: model does not support images]", ()),
            id="no-vision-notes-the-count",
        ),
        pytest.param(
            result("c1", "Viewed", None, PNG),
            False,
            frozenset(),
            ("Viewed\n[1 image attachment(s) omitted: model does not support images]", ()),
            id="no-vision-one-image",
        ),
        pytest.param(result("c1", "Read", "text"), False, frozenset(), ("Read\ntext", ()), id="no-vision-no-images"),
        pytest.param(
            result("c1", "Viewed", "detail", PNG), True, frozenset({"c1"}), ("Viewed", ()), id="pruned-is-summary"
        ),
        pytest.param(
            result("c1", "Viewed", "detail", PNG), False, frozenset({"c1"}), ("Viewed", ()), id="pruned-has-no-note"
        ),
        pytest.param(
            result("c1", "Viewed", "detail", PNG),
            True,
            frozenset({"c2"}),
            ("Viewed\ndetail", (PNG_URL,)),
            id="pruning-another-result",
        ),
        pytest.param(
            {**result("c1", "Viewed"), "attachments": None}, True, frozenset(), ("Viewed", ()), id="null-attachments"
        ),
    ],
)
def test_a_tool_result_lowers_to_its_text_and_images(
    item: dict[str, Any], vision: bool, pruned: frozenset[str], want: tuple[str, tuple[str, ...]]
) -> None:
    assert expected_results([item], vision=vision, pruned=pruned) == [ExpectedResult("c1", *want)]


def test_only_tool_results_are_expected_and_in_history_order() -> None:
    history = [
        user("look at both"),
        assistant("viewing"),
        call("c2"),
        call("c1"),
        result("c2", "second", None, PNG),
        result("c1", "first"),
        assistant("done"),
        user("again"),
    ]
    assert expected_results(history, vision=True) == [
        ExpectedResult("c2", "second", (PNG_URL,)),
        ExpectedResult("c1", "first", ()),
    ]
    assert expected_results([user("hi"), assistant("hello")], vision=True) == []


def test_the_omission_note_names_the_count() -> None:
    assert OMITTED_NOTE.format(n=3) == "\n[3 image attachment(s) omitted: model does not support images]"


# --- Responses --------------------------------------------------------------------------------

TWO_IMAGES = ExpectedResult("c1", "Viewed\nboth", (PNG_URL, JPEG_URL))
TEXT_ONLY = ExpectedResult("c2", "Read", ())


def _responses(first_output: Any, second_output: Any = "Read", *extra: dict[str, Any]) -> list[Any]:
    return [
        r_message("user", "look"),
        r_call("c1"),
        r_call("c2"),
        r_output("c1", first_output),
        r_output("c2", second_output),
        r_message("assistant", "done"),
        *extra,
    ]


RIGHT_OUTPUT = [input_text("Viewed\nboth"), input_image(PNG_URL), input_image(JPEG_URL)]


def test_a_right_responses_input_has_no_problems() -> None:
    assert check_responses(_responses(RIGHT_OUTPUT), [TWO_IMAGES, TEXT_ONLY]) == []


def test_a_responses_input_built_from_the_model_of_its_history_has_no_problems() -> None:
    history = [user("look"), call("c1"), call("c2"), result("c1", "Viewed", "both", PNG, JPEG), result("c2", "Read")]
    assert check_responses(_responses(RIGHT_OUTPUT), expected_results(history, vision=True)) == []


def test_responses_outputs_that_answer_other_calls_are_the_only_problem_reported() -> None:
    request = [r_message("user", "look"), r_output("c1", "wrong"), input_image(PNG_URL)]
    assert check_responses(request, [TWO_IMAGES, TEXT_ONLY]) == [
        "function_call_output call ids ['c1'], history has ['c1', 'c2']"
    ]
    assert check_responses(_responses(RIGHT_OUTPUT)[::-1], [TWO_IMAGES, TEXT_ONLY]) == [
        "function_call_output call ids ['c2', 'c1'], history has ['c1', 'c2']"
    ]


@pytest.mark.parametrize(
    ("first", "second", "problem"),
    [
        pytest.param(
            RIGHT_OUTPUT,
            [input_text("Read")],
            "function_call_output c2: output should be the string 'Read', got "
            '\'[{"text": "Read", "type": "input_text"}]\'',
            id="text-only-result-as-a-list",
        ),
        pytest.param(
            RIGHT_OUTPUT,
            "Read\n",
            "function_call_output c2: output should be the string 'Read', got 'Read\\n'",
            id="text-only-result-wrong-string",
        ),
        pytest.param(
            "Viewed\nboth",
            "Read",
            "function_call_output c1: output should be input_text then 2 input_image, got 'Viewed\\nboth'",
            id="images-dropped",
        ),
        pytest.param(
            RIGHT_OUTPUT[:2],
            "Read",
            "function_call_output c1: output should be input_text then 2 input_image, got "
            + repr(
                '[{"text": "Viewed\\nboth", "type": "input_text"}, {"image_url": "'
                + PNG_URL
                + '", "type": "input_image"}]'
            ),
            id="one-image-missing",
        ),
        pytest.param(
            [*RIGHT_OUTPUT, input_image(PNG_URL)],
            "Read",
            "function_call_output c1: output should be input_text then 2 input_image, got "
            + repr('[{"text": "Viewed\\nboth", "type": "input_text"}, {"image_url": "' + PNG_URL + '", "ty')
            + "... (265 characters)",
            id="one-image-too-many",
        ),
        pytest.param(
            [input_text("Viewed"), input_image(PNG_URL), input_image(JPEG_URL)],
            "Read",
            "function_call_output c1: the first item should be input_text 'Viewed\\nboth', got "
            '\'{"text": "Viewed", "type": "input_text"}\'',
            id="text-without-content",
        ),
        pytest.param(
            [{"type": "output_text", "text": "Viewed\nboth"}, input_image(PNG_URL), input_image(JPEG_URL)],
            "Read",
            "function_call_output c1: the first item should be input_text 'Viewed\\nboth', got "
            '\'{"text": "Viewed\\\\nboth", "type": "output_text"}\'',
            id="text-of-the-wrong-type",
        ),
        pytest.param(
            ["Viewed\nboth", input_image(PNG_URL), input_image(JPEG_URL)],
            "Read",
            "function_call_output c1: the first item should be input_text 'Viewed\\nboth', got 'Viewed\\nboth'",
            id="text-as-a-bare-string",
        ),
        pytest.param(
            [input_text("Viewed\nboth"), input_image(PNG_URL), input_image(PNG_URL)],
            "Read",
            f"function_call_output c1: item 2 should be input_image {JPEG_URL!r}, got "
            + repr('{"image_url": "' + PNG_URL + '", "type": "input_image"}'),
            id="an-image-twice",
        ),
        pytest.param(
            [input_text("Viewed\nboth"), input_image(PNG_URL), {"type": "image_url", "image_url": JPEG_URL}],
            "Read",
            f"function_call_output c1: item 2 should be input_image {JPEG_URL!r}, got "
            + repr('{"image_url": "' + JPEG_URL + '", "type": "image_url"}'),
            id="image-of-the-wrong-type",
        ),
        pytest.param(
            [input_text("Viewed\nboth"), PNG_URL, input_image(JPEG_URL)],
            "Read",
            f"function_call_output c1: item 1 should be input_image {PNG_URL!r}, got {PNG_URL!r}",
            id="image-as-a-bare-url",
        ),
    ],
)
def test_a_wrong_function_call_output_is_reported(first: Any, second: Any, problem: str) -> None:
    assert check_responses(_responses(first, second), [TWO_IMAGES, TEXT_ONLY]) == [problem]


def test_every_wrong_output_and_part_is_reported() -> None:
    first = [input_text("Viewed"), input_image(JPEG_URL), input_image(PNG_URL)]
    problems = check_responses(_responses(first, None), [TWO_IMAGES, TEXT_ONLY])
    assert problems == [
        "function_call_output c1: the first item should be input_text 'Viewed\\nboth', got "
        '\'{"text": "Viewed", "type": "input_text"}\'',
        f"function_call_output c1: item 1 should be input_image {PNG_URL!r}, got "
        + repr('{"image_url": "' + JPEG_URL + '", "type": "input_image"}'),
        f"function_call_output c1: item 2 should be input_image {JPEG_URL!r}, got "
        + repr('{"image_url": "' + PNG_URL + '", "type": "input_image"}'),
        "function_call_output c2: output should be the string 'Read', got 'null'",
    ]
    wrong_shapes = check_responses(_responses("Viewed\nboth", [input_text("Read")]), [TWO_IMAGES, TEXT_ONLY])
    assert [p.split(":")[0] for p in wrong_shapes] == ["function_call_output c1", "function_call_output c2"]


def test_outputs_after_a_text_only_one_are_still_checked() -> None:
    request = [r_call("c2"), r_call("c1"), r_output("c2", "Read"), r_output("c1", "Viewed\nboth")]
    assert check_responses(request, [TEXT_ONLY, TWO_IMAGES]) == [
        "function_call_output c1: output should be input_text then 2 input_image, got 'Viewed\\nboth'"
    ]


def test_an_image_outside_a_function_call_output_is_a_separate_image_message() -> None:
    injected = {"role": "user", "content": [{"type": "input_image", "image_url": PNG_URL}]}
    problems = check_responses(_responses(RIGHT_OUTPUT, "Read", injected), [TWO_IMAGES, TEXT_ONLY])
    assert problems == [
        "input[6] (user) carries an image: "
        + repr('{"content": [{"image_url": "' + PNG_URL + '", "type": "input_image"}], "role": "user"}')
    ]
    message = r_message("user", f"see {JPEG_URL}")
    assert check_responses([message, *_responses(RIGHT_OUTPUT)], [TWO_IMAGES, TEXT_ONLY]) == [
        "input[0] (message) carries an image: "
        + repr(
            '{"content": [{"text": "see ' + JPEG_URL + '", "type": "input_text"}], "role": "user", "type": "message"}'
        )
    ]


def test_text_naming_images_without_a_data_url_is_no_image() -> None:
    mention = r_message("user", "data:image/png is a mime type; base64, too")
    assert check_responses([mention, *_responses(RIGHT_OUTPUT)], [TWO_IMAGES, TEXT_ONLY]) == []


def test_a_text_only_history_lowers_to_string_outputs() -> None:
    request = [r_call("c2"), r_output("c2", "Read")]
    assert check_responses(request, [TEXT_ONLY]) == []
    assert check_responses([r_message("user", "hi")], []) == []


# --- problem texts ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("wrong", "shown"),
    [
        pytest.param("é" * 120, repr("é" * 120), id="120-characters-shown-whole"),
        pytest.param("é" * 121, repr("é" * 100) + "... (121 characters)", id="121-characters-cut-at-100"),
    ],
)
def test_a_problem_shows_a_wrong_value_whole_up_to_120_characters(wrong: str, shown: str) -> None:
    problems = check_responses([r_output("c2", wrong)], [TEXT_ONLY])
    assert problems == [f"function_call_output c2: output should be the string 'Read', got {shown}"]


def test_a_problem_shows_non_ascii_json_as_written() -> None:
    problems = check_responses([r_output("c2", ["Lu ✓"])], [TEXT_ONLY])
    assert problems == ["function_call_output c2: output should be the string 'Read', got '[\"Lu ✓\"]'"]


# --- prefixes (ATT-6) -------------------------------------------------------------------------

EARLIER = [r_message("user", "look"), r_call("c1"), r_output("c1", "Read")]


def test_an_extended_or_equal_request_is_a_prefix() -> None:
    assert prefix_problems(EARLIER, EARLIER) == []
    assert prefix_problems(EARLIER, [*EARLIER, r_message("assistant", "done")]) == []
    assert prefix_problems([], EARLIER) == []


def test_key_order_inside_an_item_is_no_change() -> None:
    reordered = [dict(reversed(list(item.items()))) for item in EARLIER]
    assert prefix_problems(EARLIER, reordered) == []


def test_a_shorter_later_request_is_no_extension() -> None:
    assert prefix_problems(EARLIER, EARLIER[:1]) == ["the later request has 1 items, fewer than the earlier 3"]
    assert prefix_problems(EARLIER, []) == ["the later request has 0 items, fewer than the earlier 3"]


def test_the_first_changed_item_is_reported() -> None:
    later = [EARLIER[0], r_call("c2"), r_output("c1", "Read\nmore"), r_message("assistant", "done")]
    assert prefix_problems(EARLIER, later) == [
        "item 1 changed between requests: "
        '\'{"arguments": "{\\\\"path\\\\": \\\\"a.png\\\\"}", "call_id": "c1", "name": "view_image", '
        '"type": "function_call"}\' became '
        '\'{"arguments": "{\\\\"path\\\\": \\\\"a.png\\\\"}", "call_id": "c2", "name": "view_image", '
        '"type": "function_call"}\''
    ]
    cleared = [*EARLIER[:2], r_output("c1", "")]
    assert prefix_problems(EARLIER, cleared) == [
        'item 2 changed between requests: \'{"call_id": "c1", "output": "Read", "type": "function_call_output"}\''
        ' became \'{"call_id": "c1", "output": "", "type": "function_call_output"}\''
    ]


# --- identity (ATT-1) -------------------------------------------------------------------------


def test_only_the_same_json_text_is_identical() -> None:
    assert identity_problems(EARLIER, [dict(item) for item in EARLIER]) == []
    assert identity_problems([], []) == []
    reordered = [dict(reversed(list(item.items()))) for item in EARLIER]
    assert identity_problems(EARLIER, reordered) == ["the same items, serialised differently (key order or escapes)"]


def test_an_identity_problem_says_how_the_length_changed_and_where_the_items_first_differ() -> None:
    assert identity_problems(EARLIER[:1], EARLIER) == ["1 items became 3"]
    assert identity_problems(EARLIER, []) == ["3 items became 0"]
    cleared = [*EARLIER[:2], r_output("c1", "")]
    assert identity_problems(EARLIER, [*cleared, r_message("assistant", "done")]) == [
        "3 items became 4",
        'item 2 changed between requests: \'{"call_id": "c1", "output": "Read", "type": "function_call_output"}\''
        ' became \'{"call_id": "c1", "output": "", "type": "function_call_output"}\'',
    ]
