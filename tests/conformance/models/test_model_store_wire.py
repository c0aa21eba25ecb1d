"""The STORE model through the wire: what a gateway stored, read from the prompt it replays when a turn
continues the entry, whatever framing it puts around the turns."""

from __future__ import annotations

from typing import Any

import pytest

from conformance.models.store import ARGUMENTS_TRUNCATION_JSON, TRUNCATION_MARKER, token
from conformance.models.store_wire import Replayed, call_arguments

ARGS = '{"path": "/work/a.txt", "content": "' + "x" * 120 + '"}'


def message(index: int, role: str = "user", body: str = "hi") -> dict[str, Any]:
    return {"role": role, "content": f"{token(index)} {body}"}


def call(arguments: str) -> dict[str, Any]:
    return {"type": "function_call", "call_id": "c1", "name": "write", "arguments": arguments}


SUBMITTED = [message(0, "system"), message(1), message(2, "assistant"), call(ARGS), message(4), message(5)]


def framed(*lines: str) -> str:
    return "You are FGW.\nIdentity: foreigngw/1.0\n\n" + "\n\n".join(lines) + "\n\nUser: [case 0123456789ab] go on"


def test_the_kept_messages_are_those_whose_token_is_replayed_in_order() -> None:
    text = framed(f"{token(0)} hi", f"User: {token(4)} hi", f"User: {token(5)} hi")
    replayed = Replayed(text, SUBMITTED)
    assert replayed.tokened() == [0, 1, 2, 4, 5]  # the call carries an id, not a token
    assert replayed.kept() == [0, 4, 5]
    assert replayed.order_problem() is None


def test_a_token_is_matched_whole() -> None:
    twelve = [message(i) for i in range(13)]
    replayed = Replayed(framed(f"User: {token(12)} hi"), twelve)
    assert replayed.kept() == [12]  # ⟦m1⟧ is no part of ⟦m12⟧


def test_messages_replayed_out_of_order_are_a_problem() -> None:
    replayed = Replayed(framed(f"User: {token(4)} hi", f"User: {token(1)} hi"), SUBMITTED)
    assert replayed.order_problem() == "the replayed messages are out of order: [4, 1]"


@pytest.mark.parametrize(
    ("lines", "counts"),
    [
        ([f"User: [... 3 earlier message(s) dropped by the response store to stay within X]\n\n{token(4)} hi"], [3]),
        ([f"User: {token(4)} hi"], []),
        (
            [
                "[... 1 earlier message(s) dropped by the response store]",
                "[... 2 earlier message(s) dropped by the response store]",
            ],
            [1, 2],
        ),
    ],
)
def test_notices_are_found_anywhere_in_the_framing(lines: list[str], counts: list[int]) -> None:
    assert Replayed(framed(*lines), SUBMITTED).notice_counts() == counts


@pytest.mark.parametrize(
    ("replayed_call", "fate"),
    [
        (f"Assistant called write({ARGS})", "whole"),
        (f"Assistant called write({ARGS[:200]}{TRUNCATION_MARKER})", "whole"),
        (f"Assistant called write({ARGS[:60]}{TRUNCATION_MARKER})", "cut"),
        (f"Assistant called write({ARGS[:40]})", "cut"),
        (f"Assistant called write({ARGS[:39]})", "absent"),  # under the probe: not told from chance
        (f"Assistant called write({ARGS[:39]}{TRUNCATION_MARKER})", "cut"),  # ... unless the marker follows it
        (f"Assistant called write({ARGS[:1]}{TRUNCATION_MARKER})", "cut"),  # a store that cuts by bytes keeps one
        (f"Assistant called write(x{TRUNCATION_MARKER})", "absent"),  # the marker after another value's start
        (f"Assistant called write({ARGUMENTS_TRUNCATION_JSON})", "compacted"),
        ("Assistant called write()", "absent"),
    ],
)
def test_an_arguments_value_is_whole_cut_compacted_or_absent(replayed_call: str, fate: str) -> None:
    assert Replayed(framed(f"User: {token(1)} hi", replayed_call), SUBMITTED).argument_fate(ARGS) == fate


def test_the_cut_marker_is_seen_without_its_leading_blank_line() -> None:
    assert Replayed(framed(f"x{TRUNCATION_MARKER.strip()}"), SUBMITTED).has_cut_marker
    assert not Replayed(framed("x"), SUBMITTED).has_cut_marker


def test_call_arguments_of_both_shapes() -> None:
    chat = {"role": "assistant", "content": None, "tool_calls": [{"function": {"name": "w", "arguments": "{}"}}]}
    assert call_arguments([message(0), call(ARGS), chat, {"role": "tool", "content": "ok"}]) == [ARGS, "{}"]


PLAIN = "path=/tmp/a\n" + "y" * 200


@pytest.mark.parametrize(
    ("submitted", "replayed_calls", "replaced"),
    [
        # A JSON document under the budget compacted to fit the entry, the plain text cut: no plain text replaced
        # (the verdict foreigngw's correct store once got wrongly).
        ([call(ARGS), call(PLAIN)], [ARGUMENTS_TRUNCATION_JSON, PLAIN[:60] + TRUNCATION_MARKER], False),
        ([call(PLAIN)], [ARGUMENTS_TRUNCATION_JSON], True),  # the plain text replaced by the document
        ([call(ARGS), call(PLAIN)], [ARGUMENTS_TRUNCATION_JSON, ARGUMENTS_TRUNCATION_JSON], True),  # both
        ([call(ARGS), call(PLAIN)], [ARGS, ARGUMENTS_TRUNCATION_JSON], True),  # the document is there whole
        ([call(ARGS), call(PLAIN)], [ARGS, PLAIN], False),
    ],
)
def test_plain_text_replaced_by_the_truncated_document_is_told_from_a_compacted_json_document(
    submitted: list[dict[str, Any]], replayed_calls: list[str], replaced: bool
) -> None:
    lines = [f"Assistant called write({arguments})" for arguments in replayed_calls]
    assert Replayed(framed(f"User: {token(1)} hi", *lines), submitted).compacted_more_than_json() is replaced
