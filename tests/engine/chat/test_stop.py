"""StopCut: the answer ends before the first stop sequence, however the text is split into pieces."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from engine.chat.stop import StopCut


def _cut(sequences: list[str], pieces: list[str]) -> tuple[str, bool]:
    cut = StopCut(sequences)
    delivered = "".join(cut.feed(piece) for piece in pieces) + cut.finish()
    return delivered, cut.hit


def _model(sequences: list[str], text: str) -> tuple[str, bool]:
    found = [i for i in (text.find(s) for s in sequences if s) if i >= 0]
    return (text[: min(found)], True) if found else (text, False)


def test_no_sequences_pass_everything_at_once() -> None:
    cut = StopCut([])
    assert (cut.active, cut.feed("abc"), cut.finish(), cut.hit) == (False, "abc", "", False)


def test_a_sequence_straddling_two_pieces_is_found() -> None:
    assert _cut(["END"], ["one E", "ND two"]) == ("one ", True)


def test_the_tail_is_held_back_until_it_cannot_start_a_sequence() -> None:
    cut = StopCut(["END"])
    assert cut.feed("abcEN") == "abc"  # "EN" may be the start of END: held (2 = len("END") - 1)
    assert cut.feed("x") == "E"  # "ENx" cannot start END at E; the last two stay held
    assert cut.finish() == "Nx"


def test_the_first_of_several_sequences_wins_and_nothing_follows() -> None:
    cut = StopCut(["zz", "b"])
    assert cut.feed("azzb") == "a"
    assert cut.hit
    assert (cut.feed("more"), cut.finish()) == ("", "")


def test_a_sequence_at_the_very_start_delivers_nothing() -> None:
    assert _cut(["\n"], ["\nrest"]) == ("", True)


def test_a_sequence_one_character_short_at_the_end_is_delivered() -> None:
    assert _cut(["ABC"], ["xx", "AB"]) == ("xxAB", False)


pieces = st.lists(st.text(alphabet="abc\n", max_size=6), max_size=8)
sequences = st.lists(st.text(alphabet="abc\n", min_size=1, max_size=4), min_size=1, max_size=4)


@given(sequences, pieces)
def test_any_split_delivers_the_text_before_the_first_sequence(stop: list[str], parts: list[str]) -> None:
    assert _cut(stop, parts) == _model(stop, "".join(parts))
