"""Chat turns through the engine against fakels: fresh, resumed, and rebuilt after an expiry."""

from __future__ import annotations

import base64
import io
from typing import Any

import pytest
from PIL import Image, ImageFile

from engine.cascade.client import CascadeClient, LsEndpoint
from engine.cascade.polling import PollSettings
from engine.conversation import ConversationEngine, TurnOptions
from engine.reuse.pool import ConversationPool
from fakels.scenario import Chunk, Scenario, Turn, Usage
from fakels.server import FakeLSThread
from tests.support.fake_ls import StartFakeLs

TOKEN = "conversation-test-token"
OPTIONS = TurnOptions(api_key="k", model_uid="claude-sonnet-4-6")


def _png() -> str:
    out = io.BytesIO()
    Image.new("RGB", (8, 8), (200, 10, 10)).save(out, format="PNG")
    return base64.b64encode(out.getvalue()).decode("ascii")


@pytest.fixture
def fake(start_fake_ls: StartFakeLs) -> FakeLSThread:
    scenario = Scenario(
        turns=(
            Turn(chunks=(Chunk(text="a red square"),), records=(None, Usage(input_tokens=5, output_tokens=2))),
            Turn(chunks=(Chunk(text="it is red"),), records=(None,), expire_after=True),
        )
    )
    return start_fake_ls(csrf_token=TOKEN, scenario=scenario)


def _engine(fake: FakeLSThread) -> tuple[ConversationEngine, CascadeClient]:
    client = CascadeClient(LsEndpoint(fake.address, TOKEN), poll=PollSettings(poll_interval_s=0.002))
    return ConversationEngine(client, ConversationPool()), client


def test_fresh_then_resumed_then_rebuilt_after_expiry(fake: FakeLSThread) -> None:
    engine, client = _engine(fake)
    image = {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{_png()}"}}
    conversation: list[dict[str, Any]] = [
        {"role": "user", "content": [{"type": "text", "text": "what is this?"}, image]}
    ]
    with client:
        first = engine.run(conversation, OPTIONS)
        conversation += [{"role": "assistant", "content": first.result.text}, {"role": "user", "content": "colour?"}]
        second = engine.run(conversation, OPTIONS)
        conversation += [{"role": "assistant", "content": second.result.text}, {"role": "user", "content": "sure?"}]
        third = engine.run(conversation, OPTIONS)

    assert first.resumed_from is None
    assert first.result.text == "a red square"
    assert second.resumed_from is not None
    assert second.result.cascade_id == first.result.cascade_id
    # Records without usage still advance the window: 2 records in turn 1, so turn 2 asks from 2.
    metadata_offsets = [
        e.request.get("generator_metadata_offset", 0)
        for e in fake.journal.entries()
        if e.method == "GetCascadeTrajectoryGeneratorMetadata" and e.request is not None
    ]
    assert metadata_offsets[:2] == [0, 2]
    # Turn 3 resumes an expired cascade: rejected, restarted fresh, history rebuilt with the turn-1 image.
    assert third.result.reuse_entry_invalidated
    assert third.result.history_rebuilt
    assert third.result.cascade_id != first.result.cascade_id
    sends = fake.journal.requests("SendUserCascadeMessage")
    rebuilt = sends[-1]
    assert rebuilt["cascade_id"] == third.result.cascade_id
    assert "[Image #1 attached to this request — from an earlier turn]" in rebuilt["items"][0]["text"]
    assert [img["base64_data"] for img in rebuilt["images"]] == [_png()]
    rejected = [e for e in fake.journal.entries("SendUserCascadeMessage") if e.rejected]
    assert [e.status for e in rejected] == ["NOT_FOUND"]
    assert rejected[0].request is not None
    assert rejected[0].request["items"][0]["text"] == "sure?", "the resume sends the newest turn only"


@pytest.mark.invariant("IMG-7")
def test_a_rebuilt_turn_does_not_decode_again_what_its_resume_decoded(
    fake: FakeLSThread, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine, client = _engine(fake)
    image = {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{_png()}"}}
    conversation: list[dict[str, Any]] = [{"role": "user", "content": [{"type": "text", "text": "this?"}, image]}]
    loads: list[tuple[int, int]] = []
    real_load = ImageFile.ImageFile.load

    def counting_load(self: ImageFile.ImageFile) -> object:
        loads.append(self.size)
        return real_load(self)

    with client:
        first = engine.run(conversation, OPTIONS)
        conversation += [{"role": "assistant", "content": first.result.text}, {"role": "user", "content": "colour?"}]
        second = engine.run(conversation, OPTIONS)
        conversation += [
            {"role": "assistant", "content": second.result.text},
            {"role": "user", "content": [{"type": "text", "text": "same?"}, image]},
        ]
        monkeypatch.setattr(ImageFile.ImageFile, "load", counting_load)
        third = engine.run(conversation, OPTIONS)
    # The resume decoded the current image; the rebuild replays it and the history copy of the same
    # bytes: one request, one decode.
    assert third.result.history_rebuilt
    assert [img["base64_data"] for img in fake.journal.requests("SendUserCascadeMessage")[-1]["images"]] == [
        _png(),
        _png(),
    ]
    assert loads == [(8, 8)]
