"""The IMG properties check ``engine.build_send_request``; this applies the same statements to the
Send the engine actually puts on the wire, read back from fakels's journal: each property also
holds end to end.

A conversation with images in history and in the current turn is played as one fresh turn
against fakels; the journaled Send is judged against the kit's own model of the build (not
against the engine's request builder, which would compare the engine with itself).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings

from conformance.fixtures.images import png_index
from conformance.models.img import MODEL_UID, model, position_of
from conformance.properties.img import check_lines, decode_send
from conformance.strategies.img import conversations
from conformance.targets import Target, load_target
from fakels.server import FakeLSThread
from tests.support.fake_ls import StartFakeLs

TOKEN = "equivalence-token"


@pytest.fixture(scope="module")
def reference() -> Iterator[Target]:
    target = load_target(None)
    yield target
    target.close()


@pytest.fixture(scope="module")
def fake(start_module_fake_ls: StartFakeLs) -> FakeLSThread:
    return start_module_fake_ls(csrf_token=TOKEN)


@pytest.mark.invariant("IMG-1")
@pytest.mark.invariant("IMG-2")
@settings(max_examples=15)
@given(messages=conversations(min_turns=2, max_turns=5))
def test_the_journaled_send_keeps_img_1_and_img_2(
    messages: list[dict[str, Any]], reference: Target, fake: FakeLSThread
) -> None:
    case = {"messages": messages, "tool_preamble": "", "native_mode": False, "env": {}}
    expected = model(case)
    since = len(fake.journal)
    reference.call(
        "engine.play_turns",
        ls_address=fake.address,
        csrf_token=TOKEN,
        model_uid=MODEL_UID,
        native_mode=False,
        turns=[messages],
    )
    sends = [e for e in fake.journal.entries("SendUserCascadeMessage", since=since) if not e.rejected]
    assert len(sends) == 1
    on_wire = decode_send(sends[0].raw)
    labels = on_wire.labels
    current = [f"img{png_index(i)}" for i in expected.current_images]
    assert labels[: expected.k] == current, f"field 6 on the wire must start with {current}; it is {labels}"
    for slot in expected.attached:
        assert (slot.image, "image/png") in on_wire.images[expected.k :], f"{slot.name} missing on the wire: {labels}"
    check_lines(on_wire, expected, lambda slot: position_of(labels, slot))
