"""The IMG checks find each replayed turn's text inside whatever framing a gateway puts around turns
(conformance/properties/img.py, ``check_lines``): a block per turn with line breaks, every turn on one
line (``User: TEXT | Assistant: TEXT``), or tags with no line break at all (``<user>TEXT</user>``).
A search that found a turn's text only where a line break followed it (the reference's own framing)
failed IMG-1 and IMG-2 for a gateway framing turns on one line, with every turn in its prompt (issue 44)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from conformance.fixtures.images import image_block, png_b64
from conformance.models.img import MARKER, PLACEHOLDER, Model, Slot, model
from conformance.properties.img import Sent, check_lines

_PNG_1 = png_b64(1, 0)
_MESSAGES = [
    {"role": "user", "content": "first question"},
    {"role": "assistant", "content": [{"type": "text", "text": "answer one "}, image_block(_PNG_1, "image_url")]},
    {"role": "user", "content": [{"type": "text", "text": "look: "}, image_block(png_b64(2, 0), "image")]},
    {"role": "user", "content": "now what?"},
]
# Turn 1's image rides field 6 as #1; turn 2's is not attached (its placeholder in the gateway's own words).
_ATTACHED = MARKER.format(n=1)
_OWN_PLACEHOLDER = "[image not shown]"


def _expected() -> Model:
    return model({"messages": _MESSAGES, "env": {}, "tool_preamble": "", "native_mode": True})


def _ordinal(slot: Slot) -> int | None:
    return 1 if slot.turn == 1 else None


def _turns(render: Callable[[str, str], str], join: str) -> str:
    """The prompt a gateway framing each turn with ``render(role, text)``, turns joined by ``join``."""
    said = [
        ("user", "first question"),
        ("assistant", "answer one " + _ATTACHED),
        ("user", "look: " + _OWN_PLACEHOLDER),
        ("user", "now what?"),
    ]
    return "You are a gateway.\nIdentity: test/1.0\n\n" + join.join(render(role, text) for role, text in said)


FRAMINGS = {
    "multi-line": _turns(lambda role, text: f"{role.title()}: {text}", "\n\n"),
    "tagged blocks": _turns(lambda role, text: f"<{role}>\n{text}\n</{role}>", "\n"),
    "one line": _turns(lambda role, text: f"{role.title()}: {text}", " | "),
    "tags on one line": _turns(lambda role, text: f"<{role}>{text}</{role}>", ""),
}


@pytest.mark.parametrize("framing", list(FRAMINGS))
def test_every_replayed_turn_is_found_in_any_framing(framing: str) -> None:
    check_lines(Sent(FRAMINGS[framing], (), None), _expected(), _ordinal)


def test_a_one_line_prompt_holds_no_line_break_after_a_turn() -> None:
    # The framing the search must not depend on: no turn's text is followed by a line break.
    prompt = FRAMINGS["one line"]
    assert prompt.count("\n") == 3  # the head's only
    assert "first question | Assistant: answer one " + _ATTACHED + " | User: look: " in prompt


@pytest.mark.parametrize("framing", list(FRAMINGS))
def test_a_missing_turn_fails_in_any_framing(framing: str) -> None:
    prompt = FRAMINGS[framing].replace("answer one ", "answer two ")
    with pytest.raises(AssertionError, match="a replayed turn is not in the prompt"):
        check_lines(Sent(prompt, (), None), _expected(), _ordinal)


@pytest.mark.parametrize("framing", list(FRAMINGS))
def test_an_attached_image_left_as_a_placeholder_fails_in_any_framing(framing: str) -> None:
    prompt = FRAMINGS[framing].replace(_ATTACHED, PLACEHOLDER)
    with pytest.raises(AssertionError, match="a replayed turn is not in the prompt"):
        check_lines(Sent(prompt, (), None), _expected(), _ordinal)


def test_turns_out_of_order_fail() -> None:
    prompt = FRAMINGS["one line"]
    swapped = prompt.replace("first question", "@@").replace("look: ", "first question").replace("@@", "look: ")
    with pytest.raises(AssertionError, match="a replayed turn is not in the prompt"):
        check_lines(Sent(swapped, (), None), _expected(), _ordinal)


def test_the_current_turn_must_follow_the_replayed_ones() -> None:
    prompt = FRAMINGS["one line"].replace(" | User: now what?", "").replace("You are", "now what? You are")
    with pytest.raises(AssertionError, match="the current turn's text 'now what\\?' is not in the prompt after"):
        check_lines(Sent(prompt, (), None), _expected(), _ordinal)
