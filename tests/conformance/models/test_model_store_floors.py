"""The STORE model at the content stage's floors (conformance/models/store.py, seed 003): lengths in
UTF-16 units, truncations that do not shrink, both stages' notices on one text and a notice cut into,
which writes a store may refuse (:func:`refusal_causes`) and which it must (:func:`must_refuse`). The
expected answers come from the seed's rules: a cut keeps half the units and adds the 83-unit marker, a
JSON document is replaced by the 121-unit ``__truncated__`` document, a candidate that cannot shrink
rejects the write, and a write with nothing left to cut is kept over its budget."""

from __future__ import annotations

from typing import Any

import pytest

from conformance.models.js_text import utf16_units
from conformance.models.store import (
    ARGUMENTS_TRUNCATION_JSON,
    BYTE_NOTICE,
    TRUNCATION_MARKER,
    Notice,
    cut_notices,
    must_refuse,
    notices_in,
    refusal_causes,
    token,
    trace,
)
from tests.conformance.models.model_store_support import call_item, notice, user

MARKER = TRUNCATION_MARKER
ASTRAL = "\U0001f600"  # one code point, two UTF-16 units


def _text(units: int, index: int = 0) -> str:
    text = f"{token(index)} "
    return text + "t" * (units - utf16_units(text))


def _json(units: int) -> str:
    document = '{"k":"' + "x" * (units - 8) + '"}'
    assert utf16_units(document) == units
    return document


def _system(index: int = 0, body: str = "be brief") -> dict[str, Any]:
    return {"role": "system", "content": f"{token(index)} {body}"}


def _answer(text: str, parts: bool = True) -> dict[str, Any]:
    content: Any = [{"type": "output_text", "text": text, "annotations": []}] if parts else text
    return {"type": "message", "id": "msg_1", "role": "assistant", "content": content}


# ----------------------------------------------------------------------------------- lengths


def test_lengths_are_javascripts_utf16_units() -> None:
    assert utf16_units("abc") == 3
    assert utf16_units(ASTRAL) == 2
    assert utf16_units("é⟦") == 2


@pytest.mark.parametrize(("units", "grew"), [(122, False), (121, True), (84, True)])
def test_a_json_document_replaced_by_a_document_as_long_or_longer_grew(units: int, grew: bool) -> None:
    traced = trace([call_item("c1", ARGUMENTS_TRUNCATION_JSON)], [call_item("c1", _json(units))])
    assert bool(traced.grown()) is grew
    if grew:
        assert traced.grown()[0].endswith(
            f"a truncation that does not shrink the value ({units} UTF-16 units became 121)"
        )
        assert traced.json_argument_problems() == traced.grown()  # STORE-1 sees it too
        assert not traced.other_string_problems()


def test_a_document_counted_in_units_not_code_points_may_replace_fewer_code_points() -> None:
    original = '{"k":"' + ASTRAL * 60 + '"}'  # 68 code points, 128 units: over the document's 121
    traced = trace([call_item("c1", ARGUMENTS_TRUNCATION_JSON)], [call_item("c1", original)])
    assert [r.kind for r in traced.rewrites] == ["compacted"]
    assert not traced.problems


@pytest.mark.parametrize(("units", "grew"), [(167, False), (166, True), (100, True)])
def test_a_halving_that_does_not_shrink_grew_the_value(units: int, grew: bool) -> None:
    original = _text(units)
    halved = original[: units // 2] + MARKER
    traced = trace([user(0, halved[5:])], [user(0, original[5:])])
    assert bool(traced.grown()) is grew
    assert bool(traced.other_string_problems()) is grew


def test_a_rewrite_that_is_no_truncation_is_not_counted_as_grown() -> None:
    traced = trace([user(0, "x" * 500)], [user(0, "hello")])
    assert traced.other_string_problems()
    assert traced.grown() == []


# ----------------------------------------------------------------------------------- notices


def _both(count: int, by_bytes: int) -> str:
    return BYTE_NOTICE.format(count=by_bytes) + notice(count)


@pytest.mark.parametrize("as_block", [False, True])
def test_both_stages_notices_leading_one_text_are_both_found_and_taken_off(as_block: bool) -> None:
    submitted = [user(0), user(1), _system(2), user(3), user(4)]
    if as_block:
        content: Any = [
            {"type": "text", "text": BYTE_NOTICE.format(count=2)},
            {"type": "text", "text": notice(2)},
            {"type": "text", "text": f"{token(2)} be brief"},
        ]
        submitted[2] = {"role": "system", "content": [content[2]]}
    else:
        content = _both(2, 2) + f"{token(2)} be brief"
    stored = [{"role": "system", "content": content}, submitted[4]]
    traced = trace(stored, submitted)
    assert traced.origins == [2, 4]
    assert traced.notices == [Notice(0, 2, as_block), Notice(0, 2, as_block)]
    assert not traced.problems
    assert notices_in(stored) == traced.notices
    assert cut_notices(stored) == []


def test_two_notices_in_one_text_block_are_both_found() -> None:
    stored = [{"role": "user", "content": [{"type": "text", "text": _both(1, 3)}, {"type": "text", "text": "x"}]}]
    assert notices_in(stored) == [Notice(0, 3, True), Notice(0, 1, True)]


@pytest.mark.parametrize("kept", [1, 5, 11, len(notice(2)) - 3])
def test_a_text_whose_second_notice_was_cut_is_a_cut_notice(kept: int) -> None:
    text = BYTE_NOTICE.format(count=2) + notice(2)[:kept] + MARKER
    stored = [{"role": "system", "content": text}]
    assert notices_in(stored) == [Notice(0, 2, False)]
    [found] = cut_notices(stored)
    assert found.startswith("stored message 0: after 1 whole notice(s), its text goes on with the start of another")
    assert repr(notice(2)[:kept] + MARKER) in found


@pytest.mark.parametrize("short", [1, 2])
def test_a_notice_cut_short_of_its_blank_line_is_closed_by_the_markers_and_still_whole(short: int) -> None:
    stored = [{"role": "system", "content": BYTE_NOTICE.format(count=2) + notice(2)[:-short] + MARKER}]
    assert notices_in(stored) == [Notice(0, 2, False), Notice(0, 2, False)]
    assert cut_notices(stored) == []


def test_a_notice_cut_with_no_notice_left_whole_is_a_cut_notice() -> None:
    assert cut_notices([{"role": "user", "content": notice(3)[:20] + MARKER}])
    block = {"type": "input_text", "text": notice(3)[:8] + MARKER}
    assert cut_notices([{"role": "user", "content": [block]}])


@pytest.mark.parametrize(
    "content",
    [
        _both(2, 2) + MARKER,  # a noticed text cut to its notices and the marker: notices whole
        _both(2, 2) + f"{token(0)} be" + MARKER,
        notice(2) + "[see above]" + MARKER,  # its own text opens with a bracket
        "[... a quoted bracket" + MARKER,
        MARKER,
        notice(2)[:20],  # no marker: not a cut
        None,
        [{"type": "image_url", "image_url": {"url": notice(2)[:10] + MARKER}}],
    ],
)
def test_what_is_no_cut_notice(content: Any) -> None:
    assert cut_notices([{"role": "user", "content": content}, "not an object"]) == []


# ----------------------------------------------------------------------------------- refusals


def test_only_strings_over_the_marker_that_are_not_documents_or_keys_may_cause_a_refusal() -> None:
    messages: list[Any] = [
        _system(0, "s" * 60),
        {"role": "user", "content": [{"type": "text", "text": _text(83, 1)}]},
        call_item("c" * 100, _json(500), name="n" * 100),
        {"role": "user", "content": [{"type": "text", "text": _text(84, 3)}]},
        {"role": "user", "content": "é" * 42 + ASTRAL * 21},  # 84 code points, 84 units... and 105
        {"type": "function_call", "call_id": "c2", "name": "f", "arguments": "path=" + "p" * 80},
    ]
    assert refusal_causes(messages) == [
        "/2/call_id",  # seed 003 does not keep call_id whole (the engine does)
        "/3/content/0/text",
        "/4/content",
        "/5/arguments",
    ]
    assert refusal_causes(messages[:2]) == []


def _limits(budget: int, cap: int = 12) -> dict[str, int]:
    return {"max_messages": cap, "max_entry_bytes": budget}


@pytest.mark.parametrize("units", [84, 100, 121, 165, 166])
def test_a_newest_text_that_cannot_shrink_over_the_budget_on_its_own_must_be_refused(units: int) -> None:
    write = [_system(0), user(1), _answer(_text(units, 2))]
    budget = 64 + 2 * units - 1
    proof = must_refuse(write, _limits(budget))
    assert proof is not None
    assert f"costs at least {64 + 2 * units} bytes on its own" in proof
    assert f"its {units}-unit text" in proof
    assert f"halved, it keeps {units // 2} units and gains the 83-unit marker: {units // 2 + 83} units" in proof
    assert must_refuse(write, _limits(budget + 1)) is None  # it could fit: a store may keep it


@pytest.mark.parametrize("units", [83, 167, 400])
def test_a_newest_text_that_is_no_candidate_or_can_shrink_proves_nothing(units: int) -> None:
    assert must_refuse([_system(0), _answer(_text(units, 1))], _limits(1)) is None


def test_a_notice_may_join_a_string_newest_text_without_a_system_head() -> None:
    """Without a leading system message the byte stage's notice goes on the first message it keeps:
    the newest, whose string text then opens with the notice and can be cut down to it and the marker
    (and kept over the budget); a notice beside a text in a parts array is a block of its own."""
    text = _text(150, 1)
    assert must_refuse([user(0), _answer(text, parts=False)], _limits(10)) is None
    assert must_refuse([user(0), _answer(text)], _limits(10)) is not None
    assert must_refuse([_system(0), _answer(text, parts=False)], _limits(10)) is not None


def test_a_write_over_the_cap_or_led_by_a_notice_proves_nothing() -> None:
    write = [_system(0), user(1), _answer(_text(150, 2))]
    assert must_refuse(write, _limits(10, cap=2)) is None  # the count stage's notice may join the text
    assert must_refuse(write, _limits(10, cap=3)) is not None
    noticed = [_system(0), _answer(notice(1) + "t" * 50)]
    assert must_refuse(noticed, _limits(10)) is None
    assert must_refuse(write[2:], _limits(10)) is None


def test_other_candidates_must_leave_the_content_stage_a_pass_for_the_newest_text() -> None:
    """Seed 003 stores an entry over its budget when its 64 passes run out: every other candidate's
    halvings (each halves its excess over 166 units) and documents are counted against them."""
    few = [_system(0), *[user(i, "w" * 1000) for i in range(1, 4)], _answer(_text(150, 4))]
    assert must_refuse(few, _limits(10)) is not None
    many = [_system(0), *[user(i, "w" * 1000) for i in range(1, 11)], _answer(_text(150, 11))]
    assert must_refuse(many, _limits(10, cap=12)) is None
    documents = [_system(0), *[call_item(f"c{i}", _json(200)) for i in range(60)], _answer(_text(150, 61))]
    assert must_refuse(documents, _limits(10, cap=100)) is None
