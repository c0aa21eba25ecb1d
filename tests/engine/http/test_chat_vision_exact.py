"""A tool result's images are replaced by the omitted-images note only for a model without vision, with or
without a durable session: the model's vision flag reaches the lowering on both paths."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.sessions.lowering import OMITTED_NOTE
from fakels.server import FakeLSThread
from tests.engine.http.chat_exact_support import CSRF, chat, play, sends, sent_text
from tests.engine.http.responses_exact_support import gateway_client
from tests.engine.ls_requests_exact_support import image_block, png
from tests.support.fake_ls import StartFakeLs

VISION_MODEL = "claude-sonnet-4-6"
TEXT_MODEL = "swe-1"  # the catalogue's model without vision
CALL = {"id": "c1", "type": "function", "function": {"name": "screenshot", "arguments": "{}"}}
TOOLS = [{"type": "function", "function": {"name": "screenshot", "parameters": {"type": "object"}}}]


@pytest.fixture
def fake(start_fake_ls: StartFakeLs) -> FakeLSThread:
    return start_fake_ls(csrf_token=CSRF)


@pytest.mark.parametrize(("model", "omitted"), [(VISION_MODEL, False), (TEXT_MODEL, True)])
@pytest.mark.parametrize("session", [False, True], ids=["no-session", "durable-session"])
def test_a_tool_results_image_is_omitted_only_for_a_model_without_vision(
    fake: FakeLSThread, tmp_path: Path, model: str, omitted: bool, session: bool
) -> None:
    play(fake, {"chunks": [{"text": "seen"}]})
    messages = [
        {"role": "user", "content": "take a screenshot"},
        {"role": "assistant", "content": None, "tool_calls": [CALL]},
        {"role": "tool", "tool_call_id": "c1", "content": [{"type": "text", "text": "here"}, image_block(png())]},
    ]
    log = str(tmp_path / "sessions.log") if session else None
    with gateway_client(fake, session_log=log) as (_, client):
        client.headers.update({"X-Session-Id": "s-1"} if session else {})
        assert chat(client, {"model": model, "messages": messages, "tools": TOOLS}).status_code == 200
    note = OMITTED_NOTE.format(n=1)
    assert (note in sent_text(sends(fake)[0])) is omitted
