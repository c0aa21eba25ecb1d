"""Trimming a conversation to the response store's limits (engine.md section 3, seed 003): the content stage
(JSON documents replaced whole, other strings halved), all stages together, and Hypothesis properties over
generated Chat and Responses conversations."""

from __future__ import annotations

import copy
import json
import logging
import operator
import types
from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from engine.js import utf16_len
from engine.store import trim as store_trim
from engine.store.trim import (
    ARGUMENTS_TRUNCATION_JSON,
    MAX_PASSES,
    NOTICE_PATTERN,
    TRUNCATION_MARKER,
    UNSHRINKABLE_KEYS,
    StoreWriteRejected,
    TrimOutcome,
    approx_bytes,
    dropped_turns_notice,
    looks_like_json_document,
    trim_content_to_fit,
    trim_for_store,
)
from tests.engine.store.store_trim_support import assistant_call, call, json_args, leading_notices, system, user

EXAMPLES = 40
M = TRUNCATION_MARKER
ATJ = ARGUMENTS_TRUNCATION_JSON


# ------------------------------------------------------------------------------------ trim_content_to_fit


def test_trim_content_at_the_limit_does_nothing_and_one_over_trims() -> None:
    messages = [user("x" * 1000)]
    total = approx_bytes(messages)
    for limit in (total, total + 1):
        kept, rewritten = trim_content_to_fit(messages, limit)
        assert rewritten == 0
        assert kept[0] is messages[0]
    kept, rewritten = trim_content_to_fit(messages, total - 1)
    assert rewritten == 1
    assert kept == [user("x" * 500 + M)]


@pytest.mark.invariant("STORE-1")
def test_a_json_arguments_slot_needs_more_than_121_units() -> None:
    at_floor = [assistant_call(json_args(121))]
    kept, rewritten = trim_content_to_fit(at_floor, 64)
    assert (rewritten, kept) == (0, at_floor), "121 units: the replacement would not be shorter"
    over = [assistant_call(json_args(122))]
    kept, rewritten = trim_content_to_fit(over, 64)
    assert rewritten == 1
    assert kept[0]["tool_calls"][0]["function"]["arguments"] == ATJ


@pytest.mark.invariant("STORE-3")
def test_a_plain_string_needs_more_than_83_units() -> None:
    at_floor = [user("x" * 83)]
    kept, rewritten = trim_content_to_fit(at_floor, 64)
    assert (rewritten, kept) == (0, at_floor), "stored over the cap: nothing left to cut"


@pytest.mark.invariant("STORE-3")
@pytest.mark.parametrize("units", [84, 120, 166])
def test_a_plain_string_that_halving_cannot_shrink_rejects_the_write(units: int) -> None:
    # max(1, units // 2) + 83 >= units for 84..166 units: the progress check refuses instead of growing it.
    messages = [user("x" * units)]
    snapshot = copy.deepcopy(messages)
    with pytest.raises(StoreWriteRejected) as caught:
        trim_content_to_fit(messages, 64)
    assert caught.value.reason == str(caught.value)
    assert f"its {units}-unit value would become {units // 2 + 83} units" in caught.value.reason
    assert "message 0, at ['content']" in caught.value.reason
    assert messages == snapshot


@pytest.mark.invariant("STORE-3")
def test_the_smallest_plain_string_halving_shrinks_is_167_units() -> None:
    messages = [user("x" * 167)]
    kept, rewritten = trim_content_to_fit(messages, approx_bytes(messages) - 1)
    assert rewritten == 1
    assert kept[0]["content"] == "x" * 83 + M
    assert len(kept[0]["content"]) == 166


@pytest.mark.invariant("STORE-3")
def test_a_rejection_is_raised_mid_trim_once_a_cut_value_cannot_shrink_again() -> None:
    # 300 -> 150 + 83 = 233 -> 116 + 83 = 199 -> 99 + 83 = 182 -> 91 + 83 = 174 -> 87 + 83 = 170 -> 85 + 83 = 168
    # -> 84 + 83 = 167 -> 83 + 83 = 166 -> 83 + 83: not shorter.
    with pytest.raises(StoreWriteRejected, match="its 166-unit value would become 166 units"):
        trim_content_to_fit([user("x" * 300)], 64)


def test_halving_keeps_max_1_half_of_the_utf16_length() -> None:
    kept, _ = trim_content_to_fit([user("abcdefghij" * 100)], approx_bytes([user("x" * 1000)]) - 1)
    assert kept[0]["content"] == ("abcdefghij" * 100)[:500] + M


@pytest.mark.invariant("STORE-3")
def test_halving_never_splits_a_surrogate_pair() -> None:
    emoji = "😀" * 1000  # 2000 units, keep 1000 = 500 whole characters
    kept, _ = trim_content_to_fit([user(emoji)], approx_bytes([user(emoji)]) - 1)
    assert kept[0]["content"] == "😀" * 500 + M
    odd = "a" + "😀" * 1000  # 2001 units, keep 1000: "a" and 499 characters (999 units), never half a pair
    kept, _ = trim_content_to_fit([user(odd)], approx_bytes([user(odd)]) - 1)
    assert kept[0]["content"] == "a" + "😀" * 499 + M
    pairs = "a" + "\ud83d\ude00" * 1000  # the same pairs held as separate code points
    kept, _ = trim_content_to_fit([user(pairs)], approx_bytes([user(pairs)]) - 1)
    assert kept[0]["content"] == "a" + "\ud83d\ude00" * 499 + M
    kept, rewritten = trim_content_to_fit([user("é" * 300 + "😀" * 3000)], 1500)
    content = kept[0]["content"]
    assert rewritten > 1
    assert content.endswith(M)
    assert "\ud83d" not in content
    assert "\ude00" not in content


def test_halving_an_astral_string_across_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(store_trim, "_CHUNK", 7)
    text = ("ab😀" * 50_000)[:100_001]
    kept, _ = trim_content_to_fit([user(text)], approx_bytes([user(text)]) - 1)
    prefix = kept[0]["content"][: -len(M)]
    keep = utf16_len(text) // 2
    assert text.startswith(prefix)
    assert keep - 1 <= utf16_len(prefix) <= keep


def test_repeated_cuts_keep_a_prefix_of_the_original_and_one_marker() -> None:
    text = "".join(f"{i:05d}" for i in range(10_000))  # 50 000 distinct-looking characters
    kept, rewritten = trim_content_to_fit([user(text)], 1000)
    content = kept[0]["content"]
    assert rewritten > 3
    assert content.count(M) == 1
    assert content.endswith(M)
    assert text.startswith(content[: -len(M)])
    assert approx_bytes(kept) <= 1000


def test_the_biggest_slot_goes_first_and_ties_go_to_the_first_in_document_order() -> None:
    messages = [user("a" * 1000), user([{"type": "text", "text": "b" * 1000}]), user("c" * 1800)]
    total = approx_bytes(messages)
    kept, rewritten = trim_content_to_fit(messages, total - 1)
    assert rewritten == 1
    assert kept[2]["content"] == "c" * 900 + M
    assert kept[:2] == messages[:2]
    saved = 2 * (1800 - 983)
    kept, rewritten = trim_content_to_fit(messages, total - saved - 1)  # then a and b (1000 each) tie
    assert rewritten == 2
    assert kept[0]["content"] == "a" * 500 + M, "on a tie the first in document order is cut"
    assert kept[1] is messages[1]


@pytest.mark.invariant("STORE-1")
@pytest.mark.invariant("STORE-2")
def test_json_arguments_are_replaced_whole_in_every_shape() -> None:
    big = json.dumps({"content": "x" * 5000})
    messages: list[dict[str, Any]] = [
        {"role": "assistant", "content": None, "tool_calls": [call(big, "call_a", "write")]},
        {"type": "function_call", "id": "fc_1", "call_id": "call_b", "name": "write", "arguments": big},
        {"role": "assistant", "content": [{"type": "function_call", "call_id": "c", "name": "w", "arguments": big}]},
        {"role": "assistant", "content": None, "function_call": {"name": "w", "arguments": "\u2028 " + big}},
    ]
    kept, rewritten = trim_content_to_fit(messages, 1000)
    assert rewritten == 4
    assert kept[0]["tool_calls"][0] == call(ATJ, "call_a", "write")
    assert kept[1] == {"type": "function_call", "id": "fc_1", "call_id": "call_b", "name": "write", "arguments": ATJ}
    assert kept[2]["content"][0] == {"type": "function_call", "call_id": "c", "name": "w", "arguments": ATJ}
    assert kept[3]["function_call"] == {"name": "w", "arguments": ATJ}


@pytest.mark.invariant("STORE-3")
def test_non_json_arguments_keep_the_prefix_cut() -> None:
    for arguments in ("\u200b{" + "x" * 1000, "x" * 1001, "  path=" + "y" * 995):
        kept, rewritten = trim_content_to_fit([assistant_call(arguments)], approx_bytes([assistant_call("")]) + 1200)
        stored = kept[0]["tool_calls"][0]["function"]["arguments"]
        assert rewritten == 1
        assert stored == arguments[: len(arguments) // 2] + M


def test_a_non_json_arguments_cut_to_only_whitespace_is_then_treated_as_a_document() -> None:
    # The kept prefix is all spaces, so the marker's "[" now leads: the next pass replaces it whole.
    arguments = " " * 1000 + "plain"
    first_cut = " " * 502 + M
    kept, rewritten = trim_content_to_fit([assistant_call(arguments)], approx_bytes([assistant_call(first_cut)]))
    assert rewritten == 1
    assert kept[0]["tool_calls"][0]["function"]["arguments"] == first_cut
    kept, rewritten = trim_content_to_fit([assistant_call(arguments)], 100)
    assert rewritten == 2
    assert kept[0]["tool_calls"][0]["function"]["arguments"] == ATJ


def test_a_string_in_a_list_is_keyed_by_its_index_never_a_json_slot() -> None:
    document = json.dumps({"a": "x" * 1000})
    kept, _ = trim_content_to_fit([{"role": "user", "arguments": [document]}], approx_bytes([user("")]) + 1300)
    assert kept[0]["arguments"] == [document[: len(document) // 2] + M]


@pytest.mark.parametrize("key", sorted(UNSHRINKABLE_KEYS))
def test_an_unshrinkable_key_is_spared_even_when_it_is_the_largest_field(key: str) -> None:
    message = {"role": "user", "content": "hi", key: "k" * 5000} if key != "role" else {"role": "r" * 5000}
    kept, _ = trim_content_to_fit([message], 64)
    assert kept[0][key] == message[key]
    if key != "role":
        with pytest.raises(StoreWriteRejected):  # then the 90-unit content is the biggest slot
            trim_content_to_fit([{**message, "content": "x" * 100}], 64)


def test_strings_up_to_container_depth_5_are_slots_and_deeper_ones_are_not() -> None:
    def message(levels: int) -> dict[str, Any]:
        node: Any = {"leaf": "x" * 1000}
        for _ in range(levels):
            node = {"k": node}
        return {"role": "user", "content": [node]}

    # content list: depth 1; its item: depth 2; three more dicts reach depth 5
    kept, rewritten = trim_content_to_fit([message(3)], approx_bytes([message(3)]) - 1)
    assert rewritten > 0
    assert kept[0]["content"][0]["k"]["k"]["k"]["leaf"].endswith(M)
    kept, rewritten = trim_content_to_fit([message(4)], 64)
    assert (rewritten, kept) == (0, [message(4)]), "past depth 5 nothing is charged or cut"


def test_a_responses_function_call_output_is_cut_like_content() -> None:
    item = {"type": "function_call_output", "call_id": "call_1", "output": "o" * 10_000}
    kept, _ = trim_content_to_fit([item], 2000)
    assert kept[0]["call_id"] == "call_1"
    assert kept[0]["output"].endswith(M)
    assert approx_bytes(kept) <= 2000


def test_an_uncharged_slot_can_be_cut_without_counting_toward_the_fit() -> None:
    # A listed tool call's extra keys are slots (the mirror's walk) but not charged (the mirror's approxBytes).
    extended = {**call("{}"), "extra": "e" * 5000}
    messages = [{"role": "assistant", "content": "c" * 3000, "tool_calls": [extended]}]
    limit = approx_bytes(messages) - 1000
    kept, rewritten = trim_content_to_fit(messages, limit)
    assert rewritten == 2, "the extra key was cut first (biggest) and saved nothing, then the content"
    assert kept[0]["tool_calls"][0]["extra"] == "e" * 2500 + M
    assert kept[0]["content"] == "c" * 1500 + M
    assert approx_bytes(kept) <= limit


def test_content_trimming_stops_after_64_passes() -> None:
    parts = [{"type": "text", "text": f"{i:02d}" + "x" * 998} for i in range(70)]
    kept, rewritten = trim_content_to_fit([user(parts)], 64)
    assert rewritten == MAX_PASSES
    texts = [part["text"] for part in kept[0]["content"]]
    assert all(text.endswith(M) for text in texts[:64])
    assert texts[64:] == [p["text"] for p in parts[64:]]


@pytest.mark.invariant("STORE-6")
def test_content_trimming_copies_only_the_containers_on_the_path() -> None:
    untouched = user("small")
    image = {"type": "image_url", "image_url": {"url": "u"}}
    target = {"role": "user", "content": [image, {"type": "text", "text": "t" * 10_000}]}
    messages = [untouched, target]
    snapshot = copy.deepcopy(messages)
    kept, _ = trim_content_to_fit(messages, 2000)
    assert messages == snapshot
    assert kept[0] is untouched
    assert kept[1] is not target
    assert kept[1]["content"] is not target["content"]
    assert kept[1]["content"][0] is image
    assert kept[1]["content"][1]["text"].endswith(M)


def test_trim_content_to_fit_accepts_any_mapping_and_returns_dicts() -> None:
    frozen = types.MappingProxyType({"role": "user", "content": "x" * 1000})
    kept, rewritten = trim_content_to_fit([frozen], 1500)
    assert rewritten > 0
    assert type(kept[0]) is dict
    assert frozen["content"] == "x" * 1000


# ------------------------------------------------------------------------------------ trim_for_store


def test_trim_for_store_runs_the_three_stages_in_order(caplog: pytest.LogCaptureFixture) -> None:
    messages = [system("S")] + [user(f"u{i} " + "x" * 200) for i in range(20)] + [assistant_call("y" * 50_000)]
    with caplog.at_level(logging.WARNING, logger="engine.response_store"):
        outcome = trim_for_store(messages, max_messages=10, max_entry_bytes=5000)
    assert isinstance(outcome, TrimOutcome)
    assert outcome.dropped_by_count == 12
    assert outcome.dropped_by_bytes == 8
    assert outcome.rewritten_slots > 0
    assert len(outcome.messages) == 2
    assert outcome.messages[0]["content"] == dropped_turns_notice(8, "bytes") + "S"
    assert outcome.warnings == (
        "[response-store] dropped 12 message(s) to fit RESPONSE_STORE_MAX_MESSAGES",
        "[response-store] dropped 8 message(s) to fit RESPONSE_STORE_MAX_BYTES",
    )
    assert tuple(r.getMessage() for r in caplog.records) == outcome.warnings
    assert approx_bytes(outcome.messages) <= 5000


def test_trim_for_store_of_nothing_is_nothing() -> None:
    assert trim_for_store([], max_messages=1, max_entry_bytes=1) == TrimOutcome([], 0, 0, 0, ())


@pytest.mark.parametrize(
    ("limits", "message"),
    [
        ({"max_messages": 0, "max_entry_bytes": 10}, "max_messages must be an integer of at least 1, got 0"),
        ({"max_messages": 1, "max_entry_bytes": -5}, "max_entry_bytes must be an integer of at least 1, got -5"),
        ({"max_messages": False, "max_entry_bytes": 10}, "max_messages must be .* got False"),
    ],
)
def test_trim_for_store_rejects_bad_limits(limits: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        trim_for_store([user("a")], **limits)


def test_trim_for_store_names_the_message_that_is_not_a_mapping() -> None:
    with pytest.raises(ValueError, match="message 1 is a str, not a mapping"):
        trim_for_store([user("a"), "b"], max_messages=5, max_entry_bytes=100)  # type: ignore[list-item]
    with pytest.raises(ValueError, match="messages must be a sequence of mappings, got str"):
        trim_for_store("ab", max_messages=5, max_entry_bytes=100)  # type: ignore[arg-type]


@pytest.mark.invariant("STORE-3")
def test_trim_for_store_raises_a_rejection_after_logging_the_drops() -> None:
    # The count notice lands on the system message; the 100-unit string is the one that cannot shrink.
    messages = [system("s"), user("old"), user("x" * 100)]
    with pytest.raises(StoreWriteRejected):
        trim_for_store(messages, max_messages=2, max_entry_bytes=64)
    assert messages == [system("s"), user("old"), user("x" * 100)]


# ------------------------------------------------------------------------------------ properties

_SPACES = st.text(alphabet=" \t\n\ufeff\u00a0\u2028\u3000", max_size=3)
_SHORT = st.text(max_size=30)
_LONG = st.builds(operator.mul, st.text(min_size=1, max_size=3), st.integers(30, 2500))
_TEXT = st.one_of(_SHORT, _SHORT, _LONG)
_JSON_ARGS = st.builds(
    lambda pad, doc: pad + json.dumps(doc, ensure_ascii=False),
    _SPACES,
    st.dictionaries(st.text(max_size=4), _TEXT, max_size=3) | st.lists(_TEXT, max_size=3),
)
_PLAIN_ARGS = st.builds(operator.add, _SPACES, st.builds(operator.add, st.sampled_from(["x", "path=", "é"]), _TEXT))
_ARGS = st.one_of(_JSON_ARGS, _PLAIN_ARGS)
_PART = st.one_of(
    st.builds(lambda t: {"type": "text", "text": t}, _TEXT),
    st.builds(lambda t: {"type": "input_text", "text": t}, _TEXT),
    st.builds(lambda a: {"type": "function_call", "call_id": "c1", "name": "f", "arguments": a}, _ARGS),
    st.builds(lambda u: {"type": "image_url", "image_url": {"url": u}}, _TEXT),
)
_CONTENT = st.one_of(_TEXT, st.lists(_PART, max_size=3), st.none())
_MESSAGE = st.one_of(
    st.builds(
        lambda r, c: {"role": r, "content": c}, st.sampled_from(["system", "user", "assistant", "developer"]), _CONTENT
    ),
    st.builds(
        lambda c, calls: {"role": "assistant", "content": c, "tool_calls": calls},
        _CONTENT,
        st.lists(st.builds(lambda a: call(a, "call_x", "fn"), _ARGS), min_size=1, max_size=2),
    ),
    st.builds(lambda a: {"type": "function_call", "call_id": "c1", "name": "f", "arguments": a}, _ARGS),
    st.builds(lambda o: {"type": "function_call_output", "call_id": "c1", "output": o}, _TEXT),
    st.builds(lambda c: {"role": "tool", "tool_call_id": "call_x", "content": c}, _TEXT),
)


@st.composite
def _conversations(draw: st.DrawFn) -> list[dict[str, Any]]:
    bodies = [system(draw(_TEXT)) for _ in range(draw(st.integers(0, 3)))]
    bodies += draw(st.lists(_MESSAGE, min_size=0 if bodies else 1, max_size=12))
    return [{"id": f"m{i}", **body} for i, body in enumerate(bodies)]  # "id" is never rewritten: it maps back


def _parses(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def _check_string(out: str, original: str, key: Any) -> None:
    if key == "arguments" and looks_like_json_document(original):
        assert out in (original, ATJ), f"JSON arguments spliced: {out[:60]!r}"
        if out == ATJ or _parses(original):
            json.loads(out)  # stored arguments parse whenever the original did
        return
    if out == original or (key == "arguments" and out == ATJ):
        return
    assert out.endswith(M), f"{out[:60]!r} was changed without the marker"
    assert original.startswith(out[: -len(M)]), f"{out[:60]!r} is not a cut of the original"
    assert out.count(M) == original.count(M) + 1 or original.endswith(M)
    assert utf16_len(out) < utf16_len(original), "a truncation grew the value"


def _check_value(out: Any, original: Any, key: Any) -> None:
    if isinstance(original, str):
        assert isinstance(out, str)
        _check_string(out, original, key)
    elif isinstance(original, list | tuple):
        assert isinstance(out, list)
        assert len(out) == len(original)
        for index, (a, b) in enumerate(zip(out, original, strict=True)):
            _check_value(a, b, index)
    elif isinstance(original, Mapping):
        assert isinstance(out, dict)
        assert list(out) == list(original)
        for name in original:
            _check_value(out[name], original[name], name)
    else:
        assert out == original


def _check_content(out: Any, original: Any, notices: Sequence[str]) -> None:
    if isinstance(original, str):
        bases = [original] + [n + original for n in notices] + [a + b + original for a in notices for b in notices]
        for base in bases:
            try:
                _check_string(out, base, "content")
                return
            except AssertionError:
                continue
        raise AssertionError(f"content {out[:80]!r} is neither the original nor a noticed or cut copy")
    if isinstance(original, list | tuple):
        blocks = list(out)
        while len(blocks) > len(original) and blocks[0] in [{"type": "text", "text": n} for n in notices]:
            blocks.pop(0)
        _check_value(blocks, original, "content")
        return
    assert out == original or out in notices


def _carries_notice(message: Mapping[str, Any]) -> bool:
    content = message.get("content")
    if isinstance(content, str):
        return NOTICE_PATTERN.match(content) is not None
    if isinstance(content, list) and content and isinstance(content[0], Mapping):
        return NOTICE_PATTERN.match(str(content[0].get("text", ""))) is not None
    return False


def _slots_left(messages: Sequence[Mapping[str, Any]]) -> bool:
    """An independent oracle of the mirror's shrinkableSlots: is any string left that a pass could cut?"""

    def walk(node: Any, depth: int) -> bool:
        if depth > 5:
            return False
        items = enumerate(node) if isinstance(node, list) else node.items() if isinstance(node, Mapping) else []
        for key, value in items:
            if isinstance(value, str):
                if key in UNSHRINKABLE_KEYS:
                    continue
                floor = 121 if key == "arguments" and looks_like_json_document(value) else 83
                notices = len(leading_notices(value)) if key in ("content", "text") else 0
                if notices:  # kept whole: the shortest cut is the notices and the marker
                    floor = notices + 83
                if utf16_len(value) > floor:
                    return True
            elif walk(value, depth + 1):
                return True
        return False

    return any(walk(message, 0) for message in messages)


def _check_outcome(
    original: list[dict[str, Any]], outcome: TrimOutcome, max_messages: int, max_entry_bytes: int
) -> None:
    out = outcome.messages
    assert len(out) <= max_messages
    assert len(out) + outcome.dropped_by_count + outcome.dropped_by_bytes == len(original)
    by_id = {message["id"]: message for message in original}
    order = [message["id"] for message in out]
    assert order == sorted(order, key=lambda ident: int(ident[1:])), "kept messages are out of order"
    notices = []
    if outcome.dropped_by_count:
        notices.append(dropped_turns_notice(outcome.dropped_by_count, "messages"))
    if outcome.dropped_by_bytes:
        notices.append(dropped_turns_notice(outcome.dropped_by_bytes, "bytes"))
    for message in out:
        source = by_id[message["id"]]
        assert set(message) - {"content"} == set(source) - {"content"}
        for key, value in source.items():
            if key != "content":
                _check_value(message[key], value, key)
        if "content" in message:
            _check_content(message["content"], source.get("content"), notices)
    if notices and outcome.rewritten_slots == 0:
        assert any(_carries_notice(message) for message in out), "messages were dropped silently"
    warned = [w for w in outcome.warnings if w.endswith("RESPONSE_STORE_MAX_MESSAGES")]
    assert len(warned) == (1 if outcome.dropped_by_count else 0)
    if any(message.get("role") != "system" for message in original):
        assert out[-1]["id"] == original[-1]["id"], "the newest message was dropped"
        exempt = (max_messages == 1 and outcome.dropped_by_count) or (outcome.dropped_by_bytes and len(out) == 1)
        if not exempt and outcome.rewritten_slots == 0:
            assert out[-1] is original[-1], "the newest turn was rewritten for a notice"
    if approx_bytes(out) > max_entry_bytes and outcome.rewritten_slots < MAX_PASSES:
        assert not _slots_left(out), "stored over the cap with something left to cut"


@pytest.mark.invariant("STORE-1")
@pytest.mark.invariant("STORE-3")
@pytest.mark.invariant("STORE-4")
@pytest.mark.invariant("STORE-5")
@pytest.mark.invariant("STORE-6")
@settings(max_examples=EXAMPLES)
@given(conversation=_conversations(), max_messages=st.integers(1, 10), max_entry_bytes=st.integers(64, 30_000))
def test_every_trim_keeps_the_invariants(
    conversation: list[dict[str, Any]], max_messages: int, max_entry_bytes: int
) -> None:
    snapshot = copy.deepcopy(conversation)
    try:
        outcome = trim_for_store(conversation, max_messages=max_messages, max_entry_bytes=max_entry_bytes)
    except StoreWriteRejected as rejected:
        event("rejected")
        reason = rejected.reason
        assert "cannot shrink" in reason
    else:
        event(f"dropped by count: {bool(outcome.dropped_by_count)}, by bytes: {bool(outcome.dropped_by_bytes)}")
        event(f"content rewritten: {bool(outcome.rewritten_slots)}")
        _check_outcome(conversation, outcome, max_messages, max_entry_bytes)
    assert conversation == snapshot, "the caller's conversation was mutated"


_HIGH, _LOW = "\ud83d", "\ude00"
_SURROGATE_TEXT = st.lists(
    st.sampled_from(["a", "é", "😀", _HIGH, _LOW, _HIGH + _LOW, "中"]), min_size=84, max_size=400
).map("".join)


@pytest.mark.invariant("STORE-3")
@settings(max_examples=EXAMPLES)
@given(text=st.one_of(st.text(min_size=84, max_size=600), _SURROGATE_TEXT))
def test_one_cut_keeps_the_most_whole_code_points_that_fit_half(text: str) -> None:
    units = utf16_len(text)
    assert approx_bytes([{"content": text}]) == 64 + 2 * units
    try:
        kept, rewritten = trim_content_to_fit([{"content": text}], 64 + 2 * units - 1)
    except StoreWriteRejected:
        assert units <= 168, "halving a value this long always shrinks it"
        return
    assert rewritten == 1
    content = kept[0]["content"]
    prefix, rest = content[: -len(M)], text[len(content) - len(M) :]
    keep = max(1, units // 2)
    assert content.endswith(M)
    assert text.startswith(prefix)
    assert utf16_len(prefix) <= keep
    assert not (prefix.endswith(_HIGH) and rest.startswith(_LOW)), "a surrogate pair was split"
    following = rest[:2] if rest.startswith(_HIGH + _LOW) else rest[:1]
    assert utf16_len(prefix + following) > keep, "a whole code point that fits was dropped"
