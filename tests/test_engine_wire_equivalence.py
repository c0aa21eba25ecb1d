"""The IMG properties check ``engine.build_send_request``; this pins that the same build is what
the engine puts on the wire, so each of them also holds end to end through fakels's journal.

A conversation with images in history and in the current turn is played as one fresh turn
against fakels; the Send in the journal must carry exactly the built text, field-6 images and
planner mode.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings

from conformance.properties import Evidence
from conformance.properties.img import MODEL_UID, build, conversations, decode_send
from conformance.targets import Target, load_target
from fakels.server import FakeLSThread

TOKEN = "equivalence-token"


@pytest.fixture(scope="module")
def reference() -> Iterator[Target]:
    target = load_target(None)
    yield target
    target.close()


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeLSThread]:
    with FakeLSThread(csrf_token=TOKEN) as server:
        yield server


@pytest.mark.invariant("IMG-1")
@pytest.mark.invariant("IMG-2")
@settings(max_examples=15)
@given(messages=conversations(min_turns=1, max_turns=4))
def test_the_journaled_send_is_the_built_request(
    messages: list[dict[str, Any]], reference: Target, fake: FakeLSThread
) -> None:
    case = {"messages": messages, "tool_preamble": "", "native_mode": False, "env": {}}
    expected = build(reference, case, Evidence())
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
    assert on_wire.text == expected.text
    assert on_wire.images == expected.images, (on_wire.labels, expected.labels)
    assert on_wire.planner_mode == expected.planner_mode
