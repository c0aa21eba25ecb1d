"""IMG-1 and IMG-2 judge turn texts inside whatever framing a gateway puts around turns, modulo the
framing's escape of closing tags (``</human>`` written as ``<\\/human>``). A turn whose own text holds
``<\\/`` must be judged the same way on both sides: the reference, which is correct, must pass."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from conformance.fixtures.images import image_block, png_b64
from conformance.properties import properties
from conformance.runner import Status, replay_case
from conformance.targets import Target, load_target


@pytest.fixture(scope="module")
def reference() -> Iterator[Target]:
    target = load_target(None)
    yield target
    target.close()


def _turn(*parts: Any) -> dict[str, Any]:
    return {"role": "user", "content": list(parts)}


def _case(history_text: str, current: str) -> dict[str, Any]:
    images = [image_block(png_b64(index, 0), "image_url") for index in range(1, 5)]
    return {
        "messages": [
            _turn(images[0], {"type": "text", "text": history_text}, images[1]),
            _turn(images[2], images[3]),
            {"role": "user", "content": current},
        ],
        "env": {},
        "tool_preamble": "",
        "native_mode": False,
    }


@pytest.mark.parametrize("invariant_id", ["IMG-1", "IMG-2"])
@pytest.mark.parametrize(
    ("history_text", "current"),
    [
        ("plain", "<\\/"),  # found by the main job: a current turn of exactly these three characters
        ("a<\\/b", "done"),
        ("x</human>y", "<\\/human> and </human>"),
    ],
)
def test_turn_texts_holding_the_escape_are_judged_alike_on_both_sides(
    reference: Target, invariant_id: str, history_text: str, current: str
) -> None:
    result = replay_case(properties()[invariant_id], reference, _case(history_text, current))
    assert result.status == Status.PASS, result.message
