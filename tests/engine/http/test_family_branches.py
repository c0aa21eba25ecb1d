"""Rules that depend on the model or the mode, checked through the HTTP front for every value the
engine knows (issue 13 §2, "every branch of a family rule"): each catalogue model's uid, provider
context line, vision and credit on the wire and in the ledger; each planner mode (tool preamble or
native bridge, with and without tools) in the Send's planner config."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from engine.model_catalogue import ModelCatalogue, ModelInfo
from engine.sessions.lowering import OMITTED_NOTE
from fakels.server import FakeLSThread
from tests.engine.http.conftest import KEY_A, MODEL, play, sends, serve
from tests.engine.http.session_support import IMAGE_CONTENT, PNG_BYTES, TOOLS, chat, field6, post, text

MODELS = list(ModelCatalogue.default())

# What each built-in model's prompt must open with; a model added to the catalogue must be added here.
CONTEXT_LINES: dict[str, str | None] = {
    "claude-sonnet-4-6": "claude-sonnet-4-6, developed by Anthropic",
    "claude-opus-4-1": "claude-opus-4-1, developed by Anthropic",
    "gpt-5": "gpt-5, developed by OpenAI",
    "gemini-2.5-pro": "gemini-2.5-pro, developed by Google",
    "swe-1": "swe 1, developed by Windsurf",
    "cascade-base": None,  # its label names no provider
}


def test_every_catalogue_model_has_an_expected_context_line() -> None:
    assert sorted(CONTEXT_LINES) == sorted(model.name for model in MODELS)


def _ledger(url: str) -> dict[str, Any]:
    answer = httpx.get(url + "/v1/ledger", headers={"Authorization": f"Bearer {KEY_A}"}, timeout=30)
    assert answer.status_code == 200, answer.text
    document: dict[str, Any] = answer.json()
    return document


@pytest.mark.parametrize("model", MODELS, ids=[model.name for model in MODELS])
def test_each_model_gets_its_uid_context_line_vision_and_credit(fake: FakeLSThread, model: ModelInfo) -> None:
    served = serve(fake)
    try:
        play(fake, {"chunks": [{"text": "red"}]}, {"chunks": [{"text": "again"}]})
        body = {"model": model.name, "messages": chat(IMAGE_CONTENT)}
        first = post(served, "/v1/chat/completions", body)
        assert first.status_code == 200, first.text
        (send,) = sends(fake)
        assert send.request is not None
        planner = send.request["cascade_config"]["planner_config"]
        assert (planner["requested_model_uid"], planner["plan_model_uid"]) == (model.uid, model.uid)
        prompt = text(send)
        context = CONTEXT_LINES[model.name]
        if context is None:
            assert "[Context:" not in prompt
        else:
            assert prompt.startswith(f"[Context: The underlying model serving this request is {context}.]\n\n")
        # The earlier turn's tool image: on the wire for a vision model, a note in its place otherwise.
        assert field6(send) == ([PNG_BYTES] if model.vision else [])
        assert (OMITTED_NOTE.format(n=1) in prompt) is (not model.vision)
        after_miss = _ledger(served.url)
        assert after_miss["credits"] == model.credit
        row = {"model": model.name, "success": True, "cache_served": False, "credit": model.credit}
        assert after_miss["rows"][-1] == row

        question = {"model": model.name, "messages": [{"role": "user", "content": "hi"}]}
        fresh = post(served, "/v1/chat/completions", question)
        assert fresh.status_code == 200, fresh.text
        repeated = post(served, "/v1/chat/completions", question)
        assert repeated.json()["choices"][0]["message"]["content"] == "again"
        assert len(sends(fake)) == 2, "the repeated question reached the LS: no cache hit"
        after_hit = _ledger(served.url)
        assert after_hit["credits"] == 2 * model.credit
        assert after_hit["rows"][-1]["cache_served"] is True
        assert after_hit["rows"][-1]["credit"] == 0.0
    finally:
        served.stop()


@pytest.mark.parametrize(
    ("native", "tools", "mode", "sections"),
    [
        (False, False, "CONVERSATIONAL_PLANNER_MODE_NO_TOOL", {"tool_calling_section"}),
        (False, True, "CONVERSATIONAL_PLANNER_MODE_NO_TOOL", {"additional_instructions_section"}),
        (True, False, "CONVERSATIONAL_PLANNER_MODE_DEFAULT", set()),
        (True, True, "CONVERSATIONAL_PLANNER_MODE_DEFAULT", set()),
    ],
    ids=["preamble-mode-no-tools", "preamble-mode-tools", "native-no-tools", "native-tools"],
)
def test_each_planner_mode_on_the_wire(
    fake: FakeLSThread, native: bool, tools: bool, mode: str, sections: set[str]
) -> None:
    served = serve(fake, native_mode=native)
    try:
        play(fake, {"chunks": [{"text": "ok"}]})
        body: dict[str, Any] = {"model": MODEL, "messages": [{"role": "user", "content": "go"}]}
        if tools:
            body["tools"] = TOOLS
        answer = post(served, "/v1/chat/completions", body)
        assert answer.status_code == 200, answer.text
        (send,) = sends(fake)
        assert send.request is not None
        planner = send.request["cascade_config"]["planner_config"]
        conversational = planner["conversational"]
        assert conversational["planner_mode"] == mode
        assert set(conversational) - {"planner_mode"} == sections
        if "additional_instructions_section" in sections:
            assert "ViewImage" in conversational["additional_instructions_section"]["content"]
        if native:
            assert set(planner["tool_config"]) >= {"run_command", "view_file", "list_dir", "tool_allowlist"}
        else:
            assert "tool_config" not in planner
    finally:
        served.stop()
