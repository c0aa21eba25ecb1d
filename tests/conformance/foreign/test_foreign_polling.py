"""The foreign gateway double's ``FGW_POLLING`` switch (tests/support/foreigngw/polling.py): what each
window of polls found reaches the stream, reasoning included, and alternate turns find the channels in
opposite orders. The verdict rows that run it are in test_foreign_verdicts.py."""

from __future__ import annotations

import pytest

from tests.support.foreigngw.polling import WINDOW_POLLS, PollWindows
from tests.support.foreigngw.settings import SettingsError, load_settings


def _streamed(polling: bool, content_first: bool, polls: list[tuple[str, str]]) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    windows = PollWindows(
        lambda piece: out.append(("content", piece)),
        lambda piece: out.append(("reasoning", piece)),
        polling,
        content_first,
    )
    for thinking, text in polls:
        windows.found(thinking, text)
    windows.flush()
    return out


POLLS = [("think", ""), ("", '{"a": '), ("", "1}")]


def test_off_the_text_goes_out_as_each_poll_found_it_and_the_reasoning_not_at_all() -> None:
    assert _streamed(False, True, POLLS) == [("content", '{"a": '), ("content", "1}")]


@pytest.mark.parametrize(
    ("content_first", "expected"),
    [
        (False, [("reasoning", "think"), ("content", '{"a": '), ("content", "1}")]),
        (True, [("content", '{"a": '), ("reasoning", "think"), ("content", "1}")]),
    ],
)
def test_on_a_window_of_polls_goes_out_in_the_order_the_turn_finds_the_channels(
    content_first: bool, expected: list[tuple[str, str]]
) -> None:
    assert WINDOW_POLLS == 2
    assert _streamed(True, content_first, POLLS) == expected


def test_alternate_turns_find_the_channels_in_opposite_orders() -> None:
    orders = [PollWindows(print, print, True).content_first for _ in range(4)]
    assert [orders[k] != orders[k + 1] for k in range(3)] == [True, True, True], orders


def test_the_windows_are_the_same_on_every_run_whatever_the_order() -> None:
    polls = [("", "a"), ("", "b"), ("", "c"), ("", "d"), ("", "e")]
    assert [p for _, p in _streamed(True, True, polls)] == ["ab", "cd", "e"]
    assert [p for _, p in _streamed(True, False, polls)] == ["ab", "cd", "e"]


_BASE = {"FGW_PORT": "0"}


@pytest.mark.parametrize(("raw", "on"), [("", False), ("0", False), ("off", False), ("1", True), (" ON ", True)])
def test_the_switch_reads_on_and_off(raw: str, on: bool) -> None:
    assert load_settings({**_BASE, "FGW_POLLING": raw}).polling is on


def test_anything_else_is_a_setting_the_gateway_cannot_start_with() -> None:
    with pytest.raises(SettingsError, match="FGW_POLLING must be 1 or 0"):
        load_settings({**_BASE, "FGW_POLLING": "sometimes"})
