"""engine.http.responses_items as pure functions: input checked and normalised (exact 400 texts), chained
items merged, items lowered to chat messages, and a stored turn served back as output."""

from __future__ import annotations

import re
from typing import Any

import pytest

from engine.http.errors import ApiError
from engine.http.responses_items import lower_items, merge_chained, new_id, normalize_input, stored_output
from engine.store.trim import dropped_turns_notice

PNG_URL = "data:image/png;base64,AAAA"


def _refusal(value: object) -> tuple[int, str, str | None]:
    with pytest.raises(ApiError) as caught:
        normalize_input(value)
    return caught.value.status, caught.value.message, caught.value.param


# ------------------------------------------------------------------------------------------ ids


def test_a_new_id_is_the_prefix_and_32_hex_digits_and_never_repeats() -> None:
    first, second = new_id("resp"), new_id("resp")
    assert re.fullmatch(r"resp_[0-9a-f]{32}", first)
    assert first != second


# ------------------------------------------------------------------------------------------ input


def test_a_string_input_is_one_user_message_with_an_input_text_part() -> None:
    [item] = normalize_input("hi")
    assert re.fullmatch(r"msg_[0-9a-f]{32}", item["id"])
    assert item == {
        "type": "message",
        "id": item["id"],
        "role": "user",
        "content": [{"type": "input_text", "text": "hi"}],
    }


def test_string_contents_become_one_part_output_text_only_for_the_assistant() -> None:
    items = normalize_input(
        [
            {"role": "assistant", "content": "yes", "id": "a1"},
            {"type": "message", "role": "system", "content": "sys", "id": "s1"},
            {"role": "developer", "content": "dev", "id": "d1", "status": "completed"},
        ]
    )
    assert items == [
        {
            "type": "message",
            "id": "a1",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "yes", "annotations": []}],
        },
        {"type": "message", "id": "s1", "role": "system", "content": [{"type": "input_text", "text": "sys"}]},
        {
            "type": "message",
            "id": "d1",
            "role": "developer",
            "content": [{"type": "input_text", "text": "dev"}],
            "status": "completed",
        },
    ]


def test_parts_are_copied_not_shared_and_a_non_string_status_is_dropped() -> None:
    part: dict[str, Any] = {"type": "input_text", "text": "a", "extra": {"k": 1}}
    raw = {"role": "user", "content": [part, {"type": "text", "text": "b"}], "status": 3}
    [item] = normalize_input([raw])
    assert item["content"] == [part, {"type": "text", "text": "b"}]
    assert "status" not in item
    item["content"][0]["extra"]["k"] = 2
    assert part["extra"] == {"k": 1}


def test_every_kind_of_part_is_a_deep_copy() -> None:
    content: list[dict[str, Any]] = [
        {"type": "output_text", "text": "o", "annotations": [{"type": "url_citation"}]},
        {"type": "refusal", "refusal": "no", "extra": {"k": 1}},
        {"type": "input_image", "image_url": PNG_URL, "extra": {"k": 1}},
    ]
    [item] = normalize_input([{"role": "assistant", "content": content}])
    item["content"][0]["annotations"][0]["type"] = "changed"
    item["content"][1]["extra"]["k"] = 2
    item["content"][2]["extra"]["k"] = 2
    assert content == [
        {"type": "output_text", "text": "o", "annotations": [{"type": "url_citation"}]},
        {"type": "refusal", "refusal": "no", "extra": {"k": 1}},
        {"type": "input_image", "image_url": PNG_URL, "extra": {"k": 1}},
    ]


def test_assistant_parts_may_be_output_text_and_refusal_and_images_are_data_or_http_urls() -> None:
    content = [
        {"type": "output_text", "text": "o", "annotations": []},
        {"type": "refusal", "refusal": "no"},
        {"type": "input_image", "image_url": PNG_URL},
        {"type": "input_image", "image_url": "http://x/a.png"},
        {"type": "input_image", "image_url": "https://x/a.png"},
    ]
    [item] = normalize_input([{"role": "assistant", "content": content, "id": "m"}])
    assert item == {"type": "message", "id": "m", "role": "assistant", "content": content}


def test_function_call_and_output_items_keep_their_fields_ids_and_status() -> None:
    items = normalize_input(
        [
            {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}", "id": "fc_1", "status": "done"},
            {"type": "function_call_output", "call_id": "c1", "output": "out", "id": "o1", "status": "completed"},
            {
                "type": "function_call_output",
                "call_id": "c1",
                "output": [{"type": "input_image", "image_url": PNG_URL}],
            },
            {"type": "reasoning", "summary": []},
            {"type": "function_call", "call_id": "c2", "name": "g", "arguments": ""},
        ]
    )
    assert items[0] == {
        "type": "function_call",
        "id": "fc_1",
        "call_id": "c1",
        "name": "f",
        "arguments": "{}",
        "status": "done",
    }
    assert items[1] == {
        "type": "function_call_output",
        "id": "o1",
        "call_id": "c1",
        "output": "out",
        "status": "completed",
    }
    assert re.fullmatch(r"fco_[0-9a-f]{32}", items[2]["id"])
    assert items[2]["output"] == [{"type": "input_image", "image_url": PNG_URL}]
    assert re.fullmatch(r"fc_[0-9a-f]{32}", items[3]["id"])
    assert [item["type"] for item in items] == [
        "function_call",
        "function_call_output",
        "function_call_output",
        "function_call",
    ]


def test_items_without_an_id_get_one_with_their_kinds_prefix() -> None:
    items = normalize_input(
        [
            {"role": "user", "content": "s"},
            {"role": "user", "content": [{"type": "input_text", "text": "p"}]},
            {"type": "function_call", "call_id": "c", "name": "f", "arguments": ""},
            {"type": "function_call_output", "call_id": "c", "output": ""},
        ]
    )
    prefixes = [item["id"].rsplit("_", 1)[0] for item in items]
    assert prefixes == ["msg", "msg", "fc", "fco"]
    assert all(re.fullmatch(r"[a-z]+_[0-9a-f]{32}", item["id"]) for item in items)


@pytest.mark.parametrize(
    "item",
    [
        {"type": "function_call", "call_id": "c", "name": "f", "arguments": "", "id": ""},
        {"type": "function_call_output", "call_id": "c", "output": "", "id": 1},
        {"role": "user", "content": [], "id": ""},
    ],
)
def test_a_given_id_must_be_a_non_empty_string_for_every_kind(item: dict[str, Any]) -> None:
    assert _refusal([{"role": "user", "content": "a"}, item]) == (
        400,
        "input[1].id must be a non-empty string",
        "input[1]",
    )


def test_reasoning_items_alone_normalise_to_nothing() -> None:
    assert normalize_input([{"type": "reasoning"}]) == []


BAD_INPUT: list[tuple[object, str, str | None]] = [
    (None, "'input' must be a string or a non-empty array of input items", "input"),
    ([], "'input' must be a string or a non-empty array of input items", "input"),
    ({"role": "user"}, "'input' must be a string or a non-empty array of input items", "input"),
    (["hi"], "input[0] must be an object", "input[0]"),
    (
        [{"role": "user", "content": "a"}, {"type": "image"}],
        "input[1].type must be message, function_call, function_call_output or reasoning, not 'image'",
        "input[1]",
    ),
    (
        [{"content": "a"}],
        "input[0].type must be message, function_call, function_call_output or reasoning, not None",
        "input[0]",
    ),
    (
        [{"type": "message", "role": "tool", "content": "a"}],
        "input[0].role must be one of user, assistant, system, developer, not 'tool'",
        "input[0]",
    ),
    (
        [{"role": "user", "content": 5}],
        "input[0].content must be a string or an array of content parts",
        "input[0].content",
    ),
    ([{"role": "user", "content": ["x"]}], "input[0].content[0] must be an object", "input[0].content[0]"),
    (
        [{"role": "user", "content": [{"type": "input_text", "text": 1}]}],
        "input[0].content[0].text must be a string",
        "input[0].content[0]",
    ),
    (
        [{"role": "user", "content": [{"type": "text"}]}],
        "input[0].content[0].text must be a string",
        "input[0].content[0]",
    ),
    (
        [{"role": "assistant", "content": [{"type": "output_text", "text": None}]}],
        "input[0].content[0].text must be a string",
        "input[0].content[0]",
    ),
    (
        [{"role": "user", "content": [{"type": "output_text", "text": "x"}, {"type": "input_file"}]}],
        "input[0].content[1].type must be one of input_text, output_text, refusal, input_image, not 'input_file'",
        "input[0].content[1]",
    ),
    (
        [{"role": "assistant", "content": [{"type": "refusal", "refusal": 1}]}],
        "input[0].content[0].type must be one of input_text, output_text, refusal, input_image, not 'refusal'",
        "input[0].content[0]",
    ),
    (
        [{"role": "user", "content": [{"type": "input_image", "image_url": "file-1"}]}],
        "input[0].content[0].image_url must be a data URL or an http(s) URL (file_id images are not supported)",
        "input[0].content[0]",
    ),
    (
        [{"role": "user", "content": [{"type": "input_image", "file_id": "f"}]}],
        "input[0].content[0].image_url must be a data URL or an http(s) URL (file_id images are not supported)",
        "input[0].content[0]",
    ),
    ([{"role": "user", "content": "a", "id": ""}], "input[0].id must be a non-empty string", "input[0]"),
    ([{"role": "user", "content": "a", "id": 7}], "input[0].id must be a non-empty string", "input[0]"),
]
CALL_SHAPE = "must be {type: function_call, call_id: string, name: string, arguments: string}"
BAD_CALLS: list[dict[str, Any]] = [
    {"type": "function_call", "name": "f", "arguments": "{}"},
    {"type": "function_call", "call_id": "", "name": "f", "arguments": "{}"},
    {"type": "function_call", "call_id": "c", "name": "", "arguments": "{}"},
    {"type": "function_call", "call_id": "c", "arguments": "{}"},
    {"type": "function_call", "call_id": "c", "name": "f", "arguments": {}},
    {"type": "function_call", "call_id": "c", "name": "f"},
]


@pytest.mark.parametrize(("value", "message", "param"), BAD_INPUT)
def test_bad_input_is_a_400_naming_the_item(value: object, message: str, param: str | None) -> None:
    assert _refusal(value) == (400, message, param)


@pytest.mark.parametrize("call", BAD_CALLS)
def test_a_malformed_function_call_is_a_400_giving_its_shape(call: dict[str, Any]) -> None:
    assert _refusal([{"role": "user", "content": "a"}, call]) == (400, f"input[1] {CALL_SHAPE}", "input[1]")


@pytest.mark.parametrize("call_id", [None, "", 5])
def test_a_function_call_output_needs_a_call_id(call_id: object) -> None:
    item = {"type": "function_call_output", "output": "x"} | ({} if call_id is None else {"call_id": call_id})
    assert _refusal([item]) == (400, "input[0].call_id must be a non-empty string", "input[0]")


def test_a_function_call_output_takes_only_input_parts() -> None:
    item = {"type": "function_call_output", "call_id": "c", "output": [{"type": "output_text", "text": "x"}]}
    assert _refusal([item]) == (
        400,
        "input[0].output[0].type must be one of input_text, input_image, not 'output_text'",
        "input[0].output[0]",
    )
    assert _refusal([{"type": "function_call_output", "call_id": "c", "output": None}]) == (
        400,
        "input[0].output must be a string or an array of content parts",
        "input[0].output",
    )


# ---------------------------------------------------------------------------------------- chaining


@pytest.mark.invariant("SCOPE-4")
def test_merging_keeps_the_stored_items_and_drops_replayed_calls_only() -> None:
    prior: list[dict[str, Any]] = [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "q"}]},
        {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c9", "output": "x"},
    ]
    new = [
        {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
        {"type": "function_call", "call_id": "c9", "name": "g", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "r"},
        {"type": "message", "role": "user", "content": "c1"},
    ]
    merged = merge_chained(prior, new)
    assert merged == [*prior, new[1], new[2], new[3]]
    merged[0]["content"][0]["text"] = "changed"
    assert prior[0]["content"] == [{"type": "input_text", "text": "q"}]


# ---------------------------------------------------------------------------------------- lowering


def test_lowering_joins_calls_to_the_assistant_before_them_and_results_become_tool_messages() -> None:
    items: list[dict[str, Any]] = [
        {"type": "message", "role": "system", "content": [{"type": "input_text", "text": "s"}]},
        {"role": "user", "content": "plain"},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "I call"}]},
        {"type": "function_call", "call_id": "c1", "name": "f", "arguments": '{"a":1}'},
        {"type": "function_call", "call_id": "c2", "name": "g", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "r1"},
        {"type": "function_call_output", "call_id": "c2", "output": [{"type": "input_text", "text": "r2"}]},
        {"type": "function_call", "call_id": "c3", "name": "h", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c3"},
        {"type": "message", "role": "user", "content": None},
    ]
    assert lower_items(items) == [
        {"role": "system", "content": [{"type": "text", "text": "s"}]},
        {"role": "user", "content": "plain"},
        {
            "role": "assistant",
            "content": [{"type": "text", "text": "I call"}],
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"a":1}'}},
                {"id": "c2", "type": "function", "function": {"name": "g", "arguments": "{}"}},
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "r1"},
        {"role": "tool", "tool_call_id": "c2", "content": [{"type": "text", "text": "r2"}]},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "c3", "type": "function", "function": {"name": "h", "arguments": "{}"}}],
        },
        {"role": "tool", "tool_call_id": "c3", "content": ""},
        {"role": "user", "content": []},
    ]


def test_a_call_after_a_user_message_opens_its_own_assistant_turn_and_missing_fields_lower_empty() -> None:
    items = [{"role": "user", "content": "q"}, {"type": "function_call"}, {"type": "function_call_output"}]
    assert lower_items(items) == [
        {"role": "user", "content": "q"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "", "type": "function", "function": {"name": "", "arguments": ""}}],
        },
        {"role": "tool", "tool_call_id": "", "content": ""},
    ]
    assert lower_items([{"content": "no role"}]) == [{"role": "user", "content": "no role"}]


def test_lowering_an_assistant_without_tool_calls_adds_the_key_only_when_a_call_joins() -> None:
    lowered = lower_items(
        [{"role": "assistant", "content": "a"}, {"type": "function_call", "call_id": "c", "name": "f"}]
    )
    assert lowered == [
        {
            "role": "assistant",
            "content": "a",
            "tool_calls": [{"id": "c", "type": "function", "function": {"name": "f", "arguments": ""}}],
        }
    ]


def test_parts_lower_to_chat_parts_and_unknown_parts_are_dropped() -> None:
    parts = [
        {"type": "input_text", "text": "a"},
        {"type": "output_text", "text": "b"},
        {"type": "text"},
        {"type": "refusal", "refusal": "no"},
        {"type": "refusal"},
        {"type": "input_image", "image_url": PNG_URL},
        {"type": "input_image"},
        "loose",
        {"type": "input_file", "file_id": "f"},
        {"type": "input_text", "text": "after"},
    ]
    [message] = lower_items([{"role": "user", "content": parts}])
    assert message["content"] == [
        {"type": "text", "text": "a"},
        {"type": "text", "text": "b"},
        {"type": "text", "text": ""},
        {"type": "text", "text": "no"},
        {"type": "text", "text": ""},
        {"type": "image_url", "image_url": {"url": PNG_URL}},
        {"type": "image_url", "image_url": {"url": ""}},
        {"type": "text", "text": "after"},
    ]


def test_a_stored_notice_on_a_call_or_result_is_kept_in_front_of_what_it_lowers_to() -> None:
    notice = dropped_turns_notice(2, "bytes")
    items: list[dict[str, Any]] = [
        {"role": "assistant", "content": "a"},
        {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}", "content": notice},
        {
            "type": "function_call_output",
            "call_id": "c1",
            "output": "r",
            "content": [{"type": "text", "text": notice}, {"type": "input_image", "image_url": "x"}, "junk"],
        },
        {
            "type": "function_call_output",
            "call_id": "c1",
            "output": [{"type": "input_text", "text": "p"}],
            "content": "N:",
        },
        {"type": "function_call_output", "call_id": "c1", "output": "q", "content": 5},
    ]
    assert lower_items(items) == [
        {"role": "assistant", "content": "a"},
        {
            "role": "assistant",
            "content": notice,
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}],
        },
        {"role": "tool", "tool_call_id": "c1", "content": notice + "r"},
        {
            "role": "tool",
            "tool_call_id": "c1",
            "content": [{"type": "text", "text": "N:"}, {"type": "text", "text": "p"}],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "q"},
    ]


def test_lowering_never_mutates_the_items() -> None:
    items: list[dict[str, Any]] = [
        {"role": "assistant", "content": "a"},
        {"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}"},
    ]
    lower_items(items)
    assert items == [
        {"role": "assistant", "content": "a"},
        {"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}"},
    ]


# ------------------------------------------------------------------------------------ served back


def test_the_served_output_is_the_trailing_answer_rebuilt_with_one_notice_stripped() -> None:
    notice = dropped_turns_notice(3, "messages")
    items: list[dict[str, Any]] = [
        {"type": "message", "id": "u1", "role": "user", "content": "q"},
        {"type": "message", "id": "a0", "role": "assistant", "content": "old"},
        {"type": "function_call_output", "id": "o1", "call_id": "c0", "output": "r"},
        {
            "type": "message",
            "id": "a1",
            "role": "assistant",
            "content": [
                {"type": "text", "text": notice},
                {"type": "output_text", "text": notice + "x"},
                {"type": "refusal", "refusal": "no"},
                {"type": "output_text", "text": 1},
            ],
            "status": "incomplete",
        },
        {"type": "function_call", "id": "fc1", "call_id": "c1", "name": "f", "arguments": "{}", "extra": 1},
        {"role": "assistant", "id": "a2", "content": "plain"},
    ]
    assert stored_output(items) == [
        {
            "type": "message",
            "id": "a1",
            "status": "incomplete",
            "role": "assistant",
            "content": [{"type": "output_text", "text": notice + "x", "annotations": []}],
        },
        {"type": "function_call", "id": "fc1", "call_id": "c1", "name": "f", "arguments": "{}", "status": "completed"},
        {
            "type": "message",
            "id": "a2",
            "status": "completed",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "plain", "annotations": []}],
        },
    ]


def test_a_turn_ending_with_a_user_message_serves_no_output() -> None:
    assert (
        stored_output([{"type": "message", "role": "assistant", "content": "a"}, {"role": "user", "content": "q"}])
        == []
    )
    assert stored_output([]) == []
    whole = stored_output([{"type": "message", "id": "a", "role": "assistant", "content": None}])
    assert whole[0]["content"] == [{"type": "output_text", "text": "", "annotations": []}]


def test_a_leading_function_call_opens_its_own_assistant_turn() -> None:
    call = {"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    items = [{"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}"}]
    assert lower_items(items) == [{"role": "assistant", "content": None, "tool_calls": [call]}]
