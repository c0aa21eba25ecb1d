"""NO_TOOL emulation of OpenAI function tools: the preamble, tools validation and the markup parser."""

from __future__ import annotations

import hashlib
import itertools
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.chat.tool_markup import (
    ParsedToolCall,
    Segment,
    ToolMarkupParser,
    ToolSpecError,
    parse_tool_markup,
    tool_call_id,
    tool_preamble,
    validate_tools,
)

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather for a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}
CLOCK = {"type": "function", "function": {"name": "now"}}

CALL = '<tool_call>{"name": "get_weather", "arguments": {"city": "Zürich"}}</tool_call>'
MIXED = f'Let me check. {CALL}\nand also <tool_call>{{"name":"now"}}</tool_call> done 🌦'


def _feed_all(chunks: list[str], seed: str = "seed") -> list[Segment]:
    parser = ToolMarkupParser(seed)
    segments: list[Segment] = []
    for chunk in chunks:
        segments += parser.feed(chunk)
    return segments + parser.finish()


def _normalised(segments: list[Segment]) -> list[Segment]:
    """Adjacent text segments joined: how text is split across feeds is not part of the result."""
    out: list[Segment] = []
    for segment in segments:
        assert segment != "", "the parser never yields empty text"
        if isinstance(segment, str) and out and isinstance(out[-1], str):
            out[-1] += segment
        else:
            out.append(segment)
    return out


# ------------------------------------------------------------------------------------ parsing


def test_a_block_between_text_becomes_a_call_and_the_text_is_kept() -> None:
    visible, calls = parse_tool_markup(f"before {CALL} after", "req-1")
    assert visible == "before  after"
    assert calls == [ParsedToolCall(id=tool_call_id("req-1", 0), name="get_weather", arguments='{"city":"Zürich"}')]


def test_several_blocks_are_numbered_in_order() -> None:
    text = "".join(f'<tool_call>{{"name": "f{i}", "arguments": {{"i": {i}}}}}</tool_call>' for i in range(3))
    visible, calls = parse_tool_markup(text, "s")
    assert visible == ""
    assert [(c.name, c.arguments) for c in calls] == [("f0", '{"i":0}'), ("f1", '{"i":1}'), ("f2", '{"i":2}')]
    assert [c.id for c in calls] == [tool_call_id("s", i) for i in range(3)]
    assert len({c.id for c in calls}) == 3


def test_arguments_given_as_a_json_string_and_absent_arguments() -> None:
    text = '<tool_call>{"name": "a", "arguments": "{\\"x\\": [1, 2]}"}</tool_call><tool_call>{"name": "b"}</tool_call>'
    _, calls = parse_tool_markup(text)
    assert [(c.name, c.arguments) for c in calls] == [("a", '{"x":[1,2]}'), ("b", "{}")]


@pytest.mark.parametrize(
    "body",
    [
        "not json",
        '{"name": "f", "arguments": {"a": 1}',  # truncated
        '{"arguments": {}}',  # no name
        '{"name": "", "arguments": {}}',
        '{"name": 7, "arguments": {}}',
        '{"name": "f", "arguments": [1]}',
        '{"name": "f", "arguments": "[1]"}',  # string arguments that hold no object
        '{"name": "f", "arguments": "{oops"}',
        '{"name": "f", "arguments": null}',
        '["f", {}]',
        '{"name": "f", "arguments": {"x": NaN}}',
        '{"name": "f", "arguments": {"x": 1e999}}',
        '{"name": "f", "arguments": ' + "[" * 100_000 + "]" * 100_000 + "}",
    ],
)
def test_a_malformed_block_stays_visible_text(body: str) -> None:
    text = f"a <tool_call>{body}</tool_call> b"
    visible, calls = parse_tool_markup(text)
    assert calls == []
    assert visible == text


def test_a_malformed_block_does_not_use_up_an_id() -> None:
    _, calls = parse_tool_markup(f"<tool_call>nope</tool_call>{CALL}", "s")
    assert [c.id for c in calls] == [tool_call_id("s", 0)]


def test_unterminated_block_and_partial_tags_are_visible_at_finish() -> None:
    for text in ('x <tool_call>{"name": "f", "arguments": {}}', "x <tool_ca", "x <", "<tool_call>", "x </tool_call>"):
        assert parse_tool_markup(text) == (text, [])


def test_allowed_names_turn_an_unknown_function_into_text() -> None:
    text = f'{CALL}<tool_call>{{"name": "rm_rf"}}</tool_call>'
    visible, calls = parse_tool_markup(text, allowed_names={"get_weather"})
    assert [c.name for c in calls] == ["get_weather"]
    assert visible == '<tool_call>{"name": "rm_rf"}</tool_call>'


def test_an_escaped_close_tag_inside_a_string_is_part_of_the_arguments() -> None:
    text = '<tool_call>{"name": "write", "arguments": {"s": "<tool_call>x<\\/tool_call>"}}</tool_call>'
    _, calls = parse_tool_markup(text)
    assert json.loads(calls[0].arguments) == {"s": "<tool_call>x</tool_call>"}


def test_unicode_arguments_are_kept_unescaped() -> None:
    text = '<tool_call>{"name": "say", "arguments": {"t": "héllo 世界 \\ud83d\\ude00 🎉"}}</tool_call>'
    _, calls = parse_tool_markup(text)
    assert calls[0].arguments == '{"t":"héllo 世界 😀 🎉"}'


def test_text_is_passed_on_at_once_except_a_possible_opening_tag() -> None:
    parser = ToolMarkupParser("s")
    assert parser.feed("hello") == ["hello"]
    assert parser.feed(" wor<tool") == [" wor"]
    assert parser.feed("box> and <") == ["<toolbox> and "]
    assert parser.feed("tool_call>") == []
    assert parser.feed('{"name": "f"}</tool_cal') == []
    assert parser.feed("l> tail") == [ParsedToolCall(tool_call_id("s", 0), "f", "{}"), " tail"]
    assert parser.finish() == []
    assert parser.calls == 1


@pytest.mark.parametrize("text", [MIXED, CALL, f"<tool_call>oops</tool_call>{CALL}<tool_c"])
def test_every_split_into_two_and_three_feeds_gives_the_one_feed_result(text: str) -> None:
    whole = _normalised(_feed_all([text]))
    for i in range(len(text) + 1):
        assert _normalised(_feed_all([text[:i], text[i:]])) == whole, i
        for j in range(i, len(text) + 1, 7):
            assert _normalised(_feed_all([text[:i], text[i:j], text[j:]])) == whole, (i, j)


def test_one_character_per_feed_gives_the_one_feed_result() -> None:
    assert _normalised(_feed_all(list(MIXED))) == _normalised(_feed_all([MIXED]))


_PIECES = st.sampled_from(
    [CALL, "<tool_call>", "</tool_call>", "<tool_c", "</tool", "<", ">", "text ", "é", '{"name": "x"}', "\n"]
)


@given(pieces=st.lists(_PIECES, max_size=12), cuts=st.lists(st.integers(min_value=0, max_value=400), max_size=6))
def test_any_chunking_of_any_mix_gives_the_one_feed_result(pieces: list[str], cuts: list[int]) -> None:
    text = "".join(pieces)
    bounds = sorted({min(c, len(text)) for c in cuts} | {0, len(text)})
    chunks = [text[a:b] for a, b in itertools.pairwise(bounds)]
    whole = _feed_all([text])
    assert _normalised(_feed_all(chunks)) == _normalised(whole)
    visible = "".join(s for s in whole if isinstance(s, str))
    if not any(isinstance(s, ParsedToolCall) for s in whole):
        assert visible == text  # nothing is dropped
    assert len(visible) <= len(text)


def test_five_megabytes_of_arguments_in_small_feeds_come_back_whole() -> None:
    # How long it takes is a figure of benchmarks/bench_engine.py, not an assertion here.
    big = {"blob": "x" * 5_000_000, "n": [1, 2, 3]}
    text = "pre " + json.dumps({"name": "upload", "arguments": big}).join(["<tool_call>", "</tool_call>"]) + " post"
    parser = ToolMarkupParser("big")
    segments: list[Segment] = []
    for i in range(0, len(text), 1000):
        segments += parser.feed(text[i : i + 1000])
    segments += parser.finish()
    assert segments[0] == "pre "
    assert segments[-1] == " post"
    (call,) = [s for s in segments if isinstance(s, ParsedToolCall)]
    assert call.name == "upload"
    assert json.loads(call.arguments) == big


def test_many_blocks_in_one_feed_are_all_parsed() -> None:
    text = "<tool_call>bad</tool_call>" * 100_000 + CALL
    visible, calls = parse_tool_markup(text)
    assert len(visible) == len("<tool_call>bad</tool_call>") * 100_000
    assert len(calls) == 1


def test_tool_call_id_is_deterministic_and_depends_on_seed_and_index() -> None:
    assert tool_call_id("a", 0) == tool_call_id("a", 0)
    assert tool_call_id("a", 0).startswith("call_")
    assert len(tool_call_id("a", 0)) == len("call_") + 24
    assert len({tool_call_id("a", 0), tool_call_id("a", 1), tool_call_id("b", 0), tool_call_id("a\x001", 0)}) == 4
    assert tool_call_id("seed", 3) == "call_" + hashlib.sha256(b"seed\x003").hexdigest()[:24]


# ------------------------------------------------------------------------------------ preamble


def test_no_tools_gives_no_preamble() -> None:
    assert tool_preamble([], None) == ""
    assert tool_preamble([], "auto") == ""


def test_preamble_lists_each_function_in_order_with_compact_parameters() -> None:
    text = tool_preamble([WEATHER, CLOCK], "auto")
    assert text == tool_preamble([WEATHER, CLOCK], "auto")
    weather, clock = text.index("Function: get_weather"), text.index("Function: now")
    assert weather < clock
    assert "Description: Current weather for a city." in text
    params = '{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}'
    assert f"Parameters: {params}" in text
    assert 'Parameters: {"type":"object","properties":{}}' in text  # parameters omitted
    assert '<tool_call>{"name": "NAME", "arguments": {...}}</tool_call>' in text
    assert "several blocks" in text
    assert tool_preamble([CLOCK, WEATHER], "auto").index("Function: now") < tool_preamble(
        [CLOCK, WEATHER], "auto"
    ).index("Function: get_weather")


@pytest.mark.parametrize(
    ("choice", "rule"),
    [
        (None, "only when it helps"),
        ("auto", "only when it helps"),
        ("none", "do not call any function"),
        ("required", "must call at least one function"),
        ({"type": "function", "function": {"name": "now"}}, "must call the function now"),
    ],
)
def test_preamble_states_the_tool_choice(choice: object, rule: str) -> None:
    assert rule in tool_preamble([WEATHER, CLOCK], choice)


def test_the_preambles_own_example_markup_parses() -> None:
    text = tool_preamble([WEATHER], "auto")
    example = next(line for line in text.splitlines() if line.startswith("<tool_call>"))
    _, calls = parse_tool_markup(example.replace("{...}", '{"city": "Oslo"}'))
    assert [(c.name, c.arguments) for c in calls] == [("NAME", '{"city":"Oslo"}')]


# ------------------------------------------------------------------------------------ validation


def _fn(**function: Any) -> dict[str, Any]:
    return {"type": "function", "function": function}


@pytest.mark.parametrize(
    ("tools", "choice"),
    [
        (None, None),
        (None, "none"),
        ([], "auto"),
        ([WEATHER, CLOCK], "required"),
        ([WEATHER], {"type": "function", "function": {"name": "get_weather"}}),
        ([_fn(name="a-b_C9", parameters={}, description="", strict=True)], None),
        ([_fn(name="x" * 64)], "none"),
    ],
)
def test_valid_tools_pass(tools: object, choice: object) -> None:
    validate_tools(tools, choice)


@pytest.mark.parametrize(
    ("tools", "choice", "message"),
    [
        ({"type": "function"}, None, "tools must be an array"),
        ("get_weather", None, "tools must be an array"),
        (["get_weather"], None, r"tools\[0\] must be an object"),
        ([{"type": "code_interpreter"}], None, r"tools\[0\]\.type must be 'function'"),
        ([{"type": "function"}], None, r"tools\[0\]\.function must be an object"),
        ([_fn(description="no name")], None, "name must be a non-empty string"),
        ([_fn(name="")], None, "name must be a non-empty string"),
        ([_fn(name=3)], None, "name must be a non-empty string"),
        ([_fn(name="has space")], None, "must match"),
        ([_fn(name="x" * 65)], None, "must match"),
        ([_fn(name="ünï")], None, "must match"),
        ([WEATHER, CLOCK, WEATHER], None, r"tools\[2\]: duplicate function name 'get_weather'"),
        ([_fn(name="f", parameters=[])], None, "parameters must be an object"),
        ([_fn(name="f", parameters="{}")], None, "parameters must be an object"),
        ([_fn(name="f", description=5)], None, "description must be a string"),
        ([WEATHER], "always", "tool_choice must be 'none', 'auto', 'required' or a function"),
        ([WEATHER], 1, "tool_choice object must be"),
        ([WEATHER], {"type": "tool", "function": {"name": "get_weather"}}, "tool_choice object must be"),
        ([WEATHER], {"type": "function"}, "tool_choice.function.name must be a non-empty string"),
        ([WEATHER], {"type": "function", "function": {"name": "now"}}, "'now', which is not in tools"),
        (None, "required", "'required' requires tools"),
        ([], {"type": "function", "function": {"name": "now"}}, "requires tools"),
    ],
)
def test_malformed_tools_are_rejected_with_a_clear_message(tools: object, choice: object, message: str) -> None:
    with pytest.raises(ToolSpecError, match=message):
        validate_tools(tools, choice)
    assert issubclass(ToolSpecError, ValueError)


def test_preamble_validates_too() -> None:
    with pytest.raises(ToolSpecError, match="duplicate"):
        tool_preamble([CLOCK, CLOCK], None)


# ------------------------------------------------------------------------------------ exact texts

# The whole preamble the LS receives for WEATHER and CLOCK; it is hashed into the tool context digest, so
# any change to its wording is a change of behaviour.
_PREAMBLE_BODY = (
    "You can call the following functions. Each is given with its name, its description and the JSON Schema of "
    "its arguments.\n"
    "\n"
    "Function: get_weather\n"
    "Description: Current weather for a city.\n"
    'Parameters: {"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}\n'
    "\n"
    "Function: now\n"
    'Parameters: {"type":"object","properties":{}}\n'
    "\n"
    "To call a function, write exactly this markup, with the arguments as a JSON object matching the function's "
    "parameters:\n"
    '<tool_call>{"name": "NAME", "arguments": {...}}</tool_call>\n'
    "Write one <tool_call> block per call; to make several calls, write several blocks. Put nothing inside a block "
    "but that JSON object. Inside a JSON string write </tool_call> as <\\/tool_call>. The results of your calls "
    "are given to you in a later message.\n"
)


@pytest.mark.parametrize(
    ("choice", "last_line"),
    [
        (None, "Call a function only when it helps; otherwise answer in plain text."),
        ("auto", "Call a function only when it helps; otherwise answer in plain text."),
        ("none", "In this reply do not call any function: answer in plain text only, with no <tool_call> block."),
        ("required", "In this reply you must call at least one function."),
        (
            {"type": "function", "function": {"name": "now"}},
            "In this reply you must call the function now (at least one <tool_call> block naming it).",
        ),
    ],
)
def test_the_preamble_text_is_exactly_the_documented_layout(choice: object, last_line: str) -> None:
    assert tool_preamble([WEATHER, CLOCK], choice) == _PREAMBLE_BODY + last_line


def test_the_preamble_rejects_a_forced_function_that_is_not_in_tools() -> None:
    with pytest.raises(ToolSpecError) as caught:
        tool_preamble([WEATHER], {"type": "function", "function": {"name": "nope"}})
    assert str(caught.value) == "tool_choice names function 'nope', which is not in tools"


_NO_FORCED_NAME = "tool_choice.function.name must be a non-empty string"


@pytest.mark.parametrize(
    ("tools", "choice", "message"),
    [
        ({"type": "function"}, None, "tools must be an array"),
        ([{"type": "code_interpreter"}], None, "tools[0].type must be 'function', got 'code_interpreter'"),
        ([WEATHER, {"function": {}}], None, "tools[1].type must be 'function', got None"),
        ([WEATHER], "always", "tool_choice must be 'none', 'auto', 'required' or a function, got 'always'"),
        ([WEATHER], 1, "tool_choice object must be {'type': 'function', 'function': {'name': ...}}"),
        ([WEATHER], {"type": "function"}, _NO_FORCED_NAME),
        ([WEATHER], {"type": "function", "function": {"name": ""}}, _NO_FORCED_NAME),
        ([WEATHER], {"type": "function", "function": {"name": 5}}, _NO_FORCED_NAME),
    ],
)
def test_validation_errors_have_exact_messages(tools: object, choice: object, message: str) -> None:
    with pytest.raises(ToolSpecError) as caught:
        validate_tools(tools, choice)
    assert str(caught.value) == message


# ------------------------------------------------------------------------------------ finish and ids


def test_an_unterminated_block_fed_in_pieces_is_given_back_verbatim_at_finish() -> None:
    parser = ToolMarkupParser("s")
    pieces = ["a <tool_call>", '{"name": "f", "argu', 'ments": {"x": 1', "23456789012345"]
    out: list[Segment] = []
    for piece in pieces:
        out += parser.feed(piece)
    out += parser.finish()
    assert _normalised(out) == ["".join(pieces)]


def test_after_finish_nothing_is_held_and_the_parser_reads_plain_text_again() -> None:
    parser = ToolMarkupParser("s")
    assert parser.feed("x <tool_call>{") == ["x "]
    assert parser.finish() == ["<tool_call>{"]
    assert parser.finish() == []
    assert parser.feed("plain <tool") == ["plain "]
    assert parser.finish() == ["<tool"]


def test_parse_tool_markup_seeds_ids_with_the_empty_string_by_default() -> None:
    _, calls = parse_tool_markup(CALL)
    assert [c.id for c in calls] == ["call_" + hashlib.sha256(b"\x000").hexdigest()[:24]]
