"""IMG judges where images go, not the words a gateway writes for one it rightly leaves out: a turn's
text is found with any placeholder of the gateway's own wording, but never with a marker (the words
that say an image is attached) in its place (conformance/properties/img.py)."""

from __future__ import annotations

import pytest

from conformance.models.img import MARKER, PLACEHOLDER
from conformance.properties.img import _turn_text

BODY = f"look {PLACEHOLDER} and {PLACEHOLDER}."


@pytest.mark.parametrize(
    ("prompt", "found"),
    [
        (f"<human>\nlook {PLACEHOLDER} and {PLACEHOLDER}.\n</human>", True),  # the seed's wording
        ("User: look [image] and [image].", True),  # the gateway's own
        ("User: look  and .", True),  # nothing at all stands for them
        ("User: look [image not shown]\n and (an image).", True),  # a placeholder of two lines
        (f"User: look {MARKER.format(n=1)} and [image].", False),  # says an image is attached: it is not
        (f"User: look [image] and {MARKER.format(n=2)}.", False),
        ("User: look [image] or [image].", False),  # the turn's own words differ
    ],
)
def test_any_placeholder_but_a_marker_stands_for_an_image_left_out(prompt: str, found: bool) -> None:
    assert (_turn_text(BODY).search(prompt) is not None) is found


def test_a_body_without_placeholders_is_found_as_it_is() -> None:
    assert _turn_text("a (b) [c] *d*").search("x a (b) [c] *d* y") is not None
    assert _turn_text("a (b) [c] *d*").search("x a b [c] *d* y") is None
