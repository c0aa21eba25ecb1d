"""The kit's IMG model (conformance/models/img.py): how it renders a history turn, parses the switches,
and decides what a correct build of a conversation carries (seed 000, engine.md section 1.B).

Expected values are worked out by hand from the seed's algorithm; every image is one of the kit's
PNGs, so ``img<N>`` names the block it came from.
"""

from __future__ import annotations

from typing import Any

import pytest

from conformance.models.img import (
    MARKER_RE,
    PLACEHOLDER,
    PLANNER_DEFAULT,
    PLANNER_NO_TOOL,
    Slot,
    current_text,
    env_limit,
    is_image_like,
    model,
    position_of,
    render_body,
    render_line,
    summary,
    without_history_images,
)
from conformance.models.js_text import utf16_units
from tests.conformance.models.model_img_support import assistant, b64, case, img, no_drops, refused, text, user

MARK = "[Image #{} attached to this request \u2014 from an earlier turn]"

# ---------------------------------------------------------------------------- rendering a turn


@pytest.mark.parametrize(
    ("value", "units"),
    [("", 0), ("abc", 3), ("\u00e9\u4e2d", 2), ("\U0001f600", 2), ("a\U0001d518b", 4)],
)
def test_the_history_budget_unit_is_utf16_code_units(value: str, units: int) -> None:
    assert utf16_units(value) == units


@pytest.mark.parametrize(
    ("block", "image_like"),
    [
        ({"type": "image"}, True),
        ({"type": "image_url"}, True),
        ({"type": "input_image"}, True),
        ({"type": "document"}, True),
        ({"type": "file"}, True),
        ({"type": "input_file"}, True),
        ({"type": "IMAGE"}, True),
        ({"type": "Document"}, True),
        ({"type": "text", "text": "hi"}, False),
        ({"type": "video"}, False),
        ({"type": 3}, False),
        ({}, False),
        ({"type": "custom", "source": {"type": "base64"}}, True),
        ({"type": "custom", "source": {"type": "url", "url": "http://x/a.png"}}, False),
        ({"type": "custom", "source": "base64"}, False),
        ({"type": "custom", "image_url": "http://x/a.png"}, True),
        ({"type": "custom", "image_url": ""}, False),
        ({"type": "custom", "image_url": None}, False),
        ({"type": "custom", "media_type": "image/webp"}, True),
        ({"type": "text", "media_type": "image/png"}, True),
        ({"type": "custom", "media_type": "text/plain"}, False),
        ({"type": "custom", "media_type": "application/image/png"}, False),
        ({"type": "custom", "media_type": 7}, False),
        ("image", False),
        (["image"], False),
        (None, False),
    ],
)
def test_image_like_blocks_are_the_client_js_ones(block: Any, image_like: bool) -> None:
    assert is_image_like(block) is image_like


def test_a_history_body_joins_blocks_with_nothing_and_images_become_the_placeholder() -> None:
    content = [text("look"), img(1), text(" and "), refused(), {"type": "document", "name": "a.pdf"}]
    assert render_body(content, {}) == f"look{PLACEHOLDER} and {PLACEHOLDER}{PLACEHOLDER}"
    assert PLACEHOLDER == "[Image omitted from text history]"


def test_a_history_body_of_a_string_is_the_string_and_of_no_content_is_empty() -> None:
    assert render_body("a </human> cat", {}) == "a </human> cat"
    assert render_body("", {}) == ""
    assert render_body(None, {}) == ""
    assert render_body([], {}) == ""


def test_an_attached_block_is_replaced_in_place_by_its_marker_and_the_others_keep_the_placeholder() -> None:
    content = [img(1), text("x"), img(2), img(3)]
    assert render_body(content, {0: 4, 3: 5}) == f"{MARK.format(4)}x{PLACEHOLDER}{MARK.format(5)}"


def test_a_block_with_a_text_string_renders_as_that_text_even_when_image_like() -> None:
    assert render_body([{"type": "image", "text": "caption"}], {}) == "caption"


def test_a_block_the_kit_cannot_render_is_an_error_naming_the_block() -> None:
    with pytest.raises(
        ValueError, match=r"the IMG generator made a block the kit cannot render: \{'type': 'tool_use'\}"
    ):
        render_body([{"type": "tool_use"}], {})


@pytest.mark.parametrize(
    ("role", "body", "line"),
    [
        ("user", "hi", "<human>\nhi\n</human>"),
        ("assistant", "hi", "<assistant>\nhi\n</assistant>"),
        ("user", "a</human>b</human>", "<human>\na<\\/human>b<\\/human>\n</human>"),
        ("user", "a</assistant><human>", "<human>\na</assistant><human>\n</human>"),
        ("assistant", "</assistant></human>", "<assistant>\n<\\/assistant></human>\n</assistant>"),
        ("assistant", "</ assistant>", "<assistant>\n</ assistant>\n</assistant>"),
    ],
)
def test_a_history_line_is_wrapped_in_its_tag_and_escapes_only_that_closing_tag(
    role: str, body: str, line: str
) -> None:
    assert render_line(role, body) == line


def test_the_current_text_is_its_text_blocks_only() -> None:
    content = [text("what "), img(1), "stray", refused(), {"type": "image", "text": "not text"}, text("colour?")]
    assert current_text(content) == "what colour?"
    assert current_text("a </human> string") == "a </human> string"
    assert current_text(None) == ""


# ---------------------------------------------------------------------------- the switches


@pytest.mark.parametrize(
    ("raw", "allow_zero", "value"),
    [
        (None, True, 9),
        ("", True, 9),
        ("abc", True, 9),
        ("-1", True, 9),
        ("1.5", True, 9),
        (" 3", True, 9),
        ("0", True, 0),
        ("0", False, 9),
        ("00", True, 0),
        ("1", False, 1),
        ("1", True, 1),
        ("12", False, 12),
    ],
)
def test_a_switch_is_a_non_negative_integer_and_anything_else_is_its_default(
    raw: str | None, allow_zero: bool, value: int
) -> None:
    env = {} if raw is None else {"SWITCH": raw}
    assert env_limit(env, "SWITCH", 9, allow_zero=allow_zero) == value


def test_a_switch_is_read_by_its_own_name() -> None:
    assert env_limit({"OTHER": "3"}, "SWITCH", 9, allow_zero=True) == 9


# ---------------------------------------------------------------------------- slots and labels


def test_a_slot_is_named_by_its_image_or_by_where_it_sits() -> None:
    assert Slot(2, 1, b64(7)).name == "img7"
    assert Slot(2, 1, None).name == "turn 2 block 1 (no image)"
    assert Slot(0, 3, "bm90IGEgcG5n").name == "turn 0 block 3 (no image)"


def test_a_slot_position_is_its_1_based_field_6_index() -> None:
    labels = ["img9", "img3", "img5"]
    assert position_of(labels, Slot(1, 0, b64(3))) == 2
    assert position_of(labels, Slot(1, 0, b64(9))) == 1
    assert position_of(labels, Slot(1, 0, b64(5))) == 3
    assert position_of(labels, Slot(1, 0, b64(4))) is None
    assert position_of(["turn 1 block 0 (no image)"], Slot(1, 0, None)) is None


def test_removing_history_images_keeps_the_current_turn_and_everything_else() -> None:
    messages = [
        {"role": "system", "content": [text("sys"), img(9)]},
        user(text("look"), img(1), refused()),
        assistant(img(2)),
        {"role": "assistant", "content": "plain", "name": "bot"},
        user(text("now"), img(3)),
        {"role": "tool", "content": [img(4), text("out")]},
    ]
    assert without_history_images(messages) == [
        {"role": "system", "content": [text("sys")]},
        user(text("look")),
        assistant(),
        {"role": "assistant", "content": "plain", "name": "bot"},
        user(text("now"), img(3)),
        {"role": "tool", "content": [text("out")]},
    ]
    assert messages[1]["content"] == [text("look"), img(1), refused()], "the input is not modified"


def test_removing_history_images_with_no_conversation_turn_strips_every_message() -> None:
    no_turn = [{"role": "system", "content": [img(1)]}, {"role": "developer", "content": [img(2), text("d")]}]
    assert without_history_images(no_turn) == [
        {"role": "system", "content": []},
        {"role": "developer", "content": [text("d")]},
    ]
    assert without_history_images([]) == []


# ---------------------------------------------------------------------------- the history budget

# Lines of a 10-character body: <human> 17 + 10 = 27 units, <assistant> 25 + 10 = 35 units.
_TEN = [user(text("a" * 10), img(1)), assistant("b" * 10), user("c" * 10), user("now")]
# turn 0 renders "aaaaaaaaaa[Image omitted from text history]": 17 + 43 = 60 units.


@pytest.mark.parametrize(
    ("budget", "first_included"),
    [
        ("122", 0),  # 27 + 35 + 60: every history turn fits exactly
        ("121", 1),
        ("62", 1),  # turns 2 and 1 exactly
        ("61", 2),
        ("27", 2),
        ("1", 2),  # the newest history turn is kept even when it alone overruns the budget
    ],
)
def test_the_history_budget_keeps_turns_newest_first_and_always_the_newest(budget: str, first_included: int) -> None:
    expected = model(case(*_TEN, env={"CASCADE_MAX_HISTORY_BYTES": budget}))
    assert expected.first_included == first_included
    assert [(s.turn, s.block) for s in expected.truncated] == ([(0, 1)] if first_included else [])
    assert expected.drops["truncated"] == (1 if first_included else 0)


def test_a_budget_that_cuts_the_middle_turn_drops_every_older_turn_even_when_they_would_fit() -> None:
    messages = [user("x"), assistant("b" * 100), user("c"), user("now")]
    assert model(case(*messages, env={"CASCADE_MAX_HISTORY_BYTES": "100"})).first_included == 2


def test_the_history_budget_counts_an_astral_character_twice() -> None:
    messages = [user("\U0001f600" * 5), assistant("x"), user("now")]  # lines of 27 and 26 units
    assert model(case(*messages, env={"CASCADE_MAX_HISTORY_BYTES": "53"})).first_included == 0
    assert model(case(*messages, env={"CASCADE_MAX_HISTORY_BYTES": "52"})).first_included == 1


def test_the_history_budget_counts_the_escaped_line() -> None:
    messages = [user("</human>"), assistant("x"), user("now")]  # lines of 17 + 9 = 26 and 26 units
    assert model(case(*messages, env={"CASCADE_MAX_HISTORY_BYTES": "52"})).first_included == 0
    assert model(case(*messages, env={"CASCADE_MAX_HISTORY_BYTES": "51"})).first_included == 1


@pytest.mark.parametrize("raw", ["0", "none", "-5"])
def test_an_unusable_history_budget_is_the_default_of_600_000_units(raw: str) -> None:
    messages = [user("a" * 300_000), assistant("b" * 299_950), user("now")]  # 300 017 + 299 975 units
    assert model(case(*messages, env={"CASCADE_MAX_HISTORY_BYTES": raw})).first_included == 0
    assert model(case(*messages)).first_included == 0
    longer = [user("a" * 300_000), assistant("b" * 299_960), user("now")]  # 600 002 units
    assert model(case(*longer, env={"CASCADE_MAX_HISTORY_BYTES": raw})).first_included == 1


def test_only_user_and_assistant_messages_are_turns() -> None:
    messages = [
        {"role": "system", "content": [img(9)]},
        user(img(1)),
        {"role": "tool", "content": [img(8)]},
        assistant("ok"),
        {"role": "developer", "content": "dev"},
        user("now"),
    ]
    expected = model(case(*messages))
    assert [m["role"] for m in expected.convo] == ["user", "assistant", "user"]
    assert [s.name for s in expected.replayed] == ["img1"]
    assert expected.field6 == ["img1"]


# ---------------------------------------------------------------------------- which history images ride field 6


def test_an_image_of_an_earlier_turn_is_attached_after_the_current_ones_and_marked_in_place() -> None:
    expected = model(
        case(
            user(text("look"), img(3)),
            assistant("a cat"),
            user(text("what "), img(1, style="image_url"), text("colour?"), img(2)),
        )
    )
    assert expected.current_images == [b64(1), b64(2)]
    assert expected.k == 2
    assert expected.current_text == "what colour?"
    assert expected.field6 == ["img1", "img2", "img3"]
    assert expected.drops == no_drops()
    lines = expected.bodies(lambda slot: position_of(expected.field6, slot))
    assert lines == [f"look{MARK.format(3)}", "a cat"]
    assert MARKER_RE.findall("".join(lines)) == ["3"]


def test_a_current_block_that_is_no_kit_image_is_not_a_current_image() -> None:
    expected = model(case(user("hi"), user(refused(), img(4), {"type": "document"})))
    assert expected.current_images == [b64(4)]
    assert model(case(user("only a string"))).current_images == []


def test_history_images_are_attached_oldest_turn_first_in_document_order() -> None:
    expected = model(
        case(
            user(img(1), text("t"), img(2)),
            assistant(img(3)),
            user(img(4)),
            user(text("now"), img(5)),
        )
    )
    assert [(s.turn, s.block) for s in expected.attached] == [(0, 0), (0, 2), (1, 0), (2, 0)]
    assert expected.field6 == ["img5", "img1", "img2", "img3", "img4"]
    assert summary(expected) == {
        "first_included": 0,
        "vision": True,
        "current": ["img5"],
        "history_attached": ["img1", "img2", "img3", "img4"],
        "drops": no_drops(),
    }


def test_by_default_four_history_images_are_attached_and_the_last_one_reached_is_counted_cap() -> None:
    expected = model(case(user(img(1), img(2)), assistant(img(3)), user(img(4), img(5)), user(text("now"), img(6))))
    assert expected.field6 == ["img6", "img1", "img3", "img4", "img5"]
    assert expected.drops == no_drops(cap=1)


@pytest.mark.parametrize(
    ("cap", "attached", "drops"),
    [
        ("0", [], no_drops(cap=4)),
        ("1", ["img4"], no_drops(cap=3)),  # the newest turn wins, its first block first
        ("2", ["img4", "img5"], no_drops(cap=2)),  # the cap binds inside one turn
        ("3", ["img3", "img4", "img5"], no_drops(cap=1)),
        ("4", ["img1", "img3", "img4", "img5"], no_drops()),
        ("x", ["img1", "img3", "img4", "img5"], no_drops()),
    ],
)
def test_the_count_cap_takes_the_newest_turn_first_and_counts_the_rest_cap(
    cap: str, attached: list[str], drops: dict[str, int]
) -> None:
    messages = [user(img(1)), assistant(img(3)), user(img(4), img(5)), user("now")]
    expected = model(case(*messages, env={"CASCADE_MAX_HISTORY_IMAGES": cap}))
    assert [s.name for s in expected.attached] == attached
    assert expected.drops == drops


def test_the_count_cap_comes_before_the_byte_budget_and_before_extraction() -> None:
    messages = [user(refused(), img(1)), user("now")]
    env = {"CASCADE_MAX_HISTORY_IMAGES": "0", "CASCADE_MAX_HISTORY_IMAGE_BYTES": "0"}
    assert model(case(*messages, env=env)).drops == no_drops(cap=2)


def test_a_block_that_yields_no_image_is_counted_unextractable_and_takes_no_slot() -> None:
    messages = [user({"type": "document", "title": "a.pdf"}, img(1)), assistant(refused()), user("now")]
    expected = model(case(*messages, env={"CASCADE_MAX_HISTORY_IMAGES": "1"}))
    assert [s.name for s in expected.history] == ["turn 0 block 0 (no image)", "img1", "turn 1 block 0 (no image)"]
    assert [s.name for s in expected.attached] == ["img1"]
    assert expected.drops == no_drops(unextractable=2)
    assert expected.bodies(lambda slot: position_of(expected.field6, slot)) == [
        f"{PLACEHOLDER}{MARK.format(1)}",
        PLACEHOLDER,
    ]


def test_the_byte_budget_is_base64_characters_and_an_image_that_fits_exactly_is_attached() -> None:
    newest, older = b64(2, 8), b64(1, 2)
    messages = [user(img(1, 2)), assistant(img(2, 8)), user("now")]
    both = str(len(newest) + len(older))
    assert [s.name for s in model(case(*messages, env={"CASCADE_MAX_HISTORY_IMAGE_BYTES": both})).attached] == [
        "img1",
        "img2",
    ]
    short = model(case(*messages, env={"CASCADE_MAX_HISTORY_IMAGE_BYTES": str(len(newest) + len(older) - 1)}))
    assert [s.name for s in short.attached] == ["img2"]
    assert short.drops == no_drops(bytes=1)
    only_newest = model(case(*messages, env={"CASCADE_MAX_HISTORY_IMAGE_BYTES": str(len(newest) - 1)}))
    assert [s.name for s in only_newest.attached] == ["img1"], "an image that overruns is skipped, a smaller one fits"
    assert only_newest.drops == no_drops(bytes=1)


def test_a_spent_byte_budget_counts_every_later_block_bytes_without_extracting_it() -> None:
    messages = [user(refused()), assistant(img(2)), user("now")]
    expected = model(case(*messages, env={"CASCADE_MAX_HISTORY_IMAGE_BYTES": str(len(b64(2)))}))
    assert [s.name for s in expected.attached] == ["img2"]
    assert expected.drops == no_drops(bytes=1)
    zero = model(case(*messages, env={"CASCADE_MAX_HISTORY_IMAGE_BYTES": "0"}))
    assert zero.attached == []
    assert zero.drops == no_drops(bytes=2)


def test_an_unusable_byte_budget_is_the_default() -> None:
    messages = [user(img(1)), user("now")]
    assert [s.name for s in model(case(*messages, env={"CASCADE_MAX_HISTORY_IMAGE_BYTES": "-1"})).attached] == ["img1"]


def test_the_byte_budget_binds_inside_one_turn_per_image_and_adds_up_what_was_attached() -> None:
    assert [len(b64(1, 8)), len(b64(4, 8)), len(b64(2)), len(b64(3)), len(b64(5))] == [380, 376, 96, 96, 96]
    messages = [user(img(1, 8), img(4, 8), img(2), img(3), img(5)), user("now")]
    expected = model(case(*messages, env={"CASCADE_MAX_HISTORY_IMAGE_BYTES": "192"}))
    assert [s.name for s in expected.attached] == ["img2", "img3"]
    assert expected.drops == no_drops(bytes=3), "two overrun the budget, the last finds it spent"


def test_images_of_turns_the_budget_cut_are_truncated_and_never_attached() -> None:
    messages = [user(img(1), refused()), assistant("b" * 50), user(text("c"), img(2)), user("now")]
    expected = model(case(*messages, env={"CASCADE_MAX_HISTORY_BYTES": "60"}))
    assert expected.first_included == 2
    assert [s.name for s in expected.truncated] == ["img1", "turn 0 block 1 (no image)"]
    assert [s.name for s in expected.replayed] == ["img2"]
    assert [s.name for s in expected.history] == ["img1", "turn 0 block 1 (no image)", "img2"]
    assert expected.field6 == ["img2"]
    assert expected.drops == no_drops(truncated=2)
    assert expected.bodies(lambda slot: position_of(expected.field6, slot)) == [f"c{MARK.format(1)}"]


# ---------------------------------------------------------------------------- the vision gate and the planner mode


def test_with_a_tool_preamble_and_no_bridge_every_replayed_image_is_no_vision() -> None:
    messages = [user(img(1), refused()), assistant("b" * 50), user(img(2)), user(text("now"), img(3))]
    expected = model(case(*messages, env={"CASCADE_MAX_HISTORY_BYTES": "30"}, tool_preamble="tools"))
    assert expected.vision is False
    assert expected.field6 == ["img3"]
    assert expected.attached == []
    assert expected.drops == no_drops(no_vision=1, truncated=2)
    assert expected.planner_mode == PLANNER_NO_TOOL
    assert expected.bodies(lambda slot: position_of(expected.field6, slot)) == [PLACEHOLDER]


@pytest.mark.parametrize(
    ("tool_preamble", "native_mode", "vision"),
    [("", False, True), ("", True, True), ("tools", True, True), ("tools", False, False)],
)
def test_the_wire_has_vision_with_the_native_bridge_or_without_a_tool_preamble(
    tool_preamble: str, native_mode: bool, vision: bool
) -> None:
    expected = model(case(user(img(1)), user("now"), tool_preamble=tool_preamble, native_mode=native_mode))
    assert expected.vision is vision
    assert expected.field6 == (["img1"] if vision else [])
    assert expected.drops == (no_drops() if vision else no_drops(no_vision=1))


@pytest.mark.parametrize(
    ("history", "current", "tool_preamble", "native_mode", "mode"),
    [
        (user("a"), user("now"), "", False, PLANNER_NO_TOOL),
        (user("a"), user("now"), "tools", True, PLANNER_DEFAULT),
        (user("a"), user("now"), "", True, PLANNER_DEFAULT),
        (user("a"), user(img(1)), "", False, PLANNER_DEFAULT),
        (user(img(2)), user("now"), "", False, PLANNER_DEFAULT),
        (user("a"), user(img(1)), "tools", False, PLANNER_NO_TOOL),
        (user(img(2)), user("now"), "tools", False, PLANNER_NO_TOOL),
        (user(refused()), user("now"), "", False, PLANNER_NO_TOOL),
    ],
)
def test_the_planner_mode_is_default_with_the_bridge_or_with_field_6_images_and_no_preamble(
    history: dict[str, Any], current: dict[str, Any], tool_preamble: str, native_mode: bool, mode: str
) -> None:
    expected = model(case(history, current, tool_preamble=tool_preamble, native_mode=native_mode))
    assert expected.native_mode is native_mode
    assert expected.tool_preamble == tool_preamble
    assert expected.planner_mode == mode


def test_a_history_image_that_the_caps_refuse_does_not_flip_the_planner_mode() -> None:
    expected = model(case(user(img(2)), user("now"), env={"CASCADE_MAX_HISTORY_IMAGES": "0"}))
    assert expected.planner_mode == PLANNER_NO_TOOL
    assert PLANNER_NO_TOOL == "CONVERSATIONAL_PLANNER_MODE_NO_TOOL"
    assert PLANNER_DEFAULT == "CONVERSATIONAL_PLANNER_MODE_DEFAULT"


# ---------------------------------------------------------------------------- one-turn and empty conversations


def test_a_one_turn_conversation_has_no_history() -> None:
    expected = model(case(user(text("hi "), img(1), text("there"))))
    assert (expected.first_included, expected.history, expected.attached) == (0, [], [])
    assert expected.field6 == ["img1"]
    assert expected.current_text == "hi there"
    assert expected.bodies(lambda slot: 1) == []
    assert expected.drops == no_drops()


def test_a_conversation_ending_with_an_assistant_turn_takes_it_as_the_current_turn() -> None:
    expected = model(case(user(img(1)), assistant(text("pre"), img(2))))
    assert expected.current_images == [b64(2)]
    assert expected.current_text == "pre"
    assert expected.field6 == ["img2", "img1"]


def test_a_case_without_an_env_has_every_switch_at_its_default() -> None:
    messages = [user(img(1), img(2)), assistant(img(3)), user(img(4), img(5)), user("now")]
    expected = model({"messages": messages, "tool_preamble": "", "native_mode": False})
    assert [s.name for s in expected.attached] == ["img1", "img3", "img4", "img5"]
    assert expected.drops == no_drops(cap=1)


def test_a_conversation_without_turns_expects_an_empty_build() -> None:
    expected = model(case({"role": "system", "content": "sys"}))
    assert (expected.convo, expected.current_images, expected.current_text) == ([], [], "")
    assert (expected.history, expected.field6) == ([], [])
    assert expected.drops == no_drops()
