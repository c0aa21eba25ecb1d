"""A tool result with an image, through the HTTP front: the conversation, the request helpers and what the
fake saw on field 6 and in the prompt text. Shared by the session and family-branch tests."""

from __future__ import annotations

import base64
from typing import Any

import httpx

from engine.http.gateway import ServedGateway
from engine.sessions.items import ImageAttachment
from fakels.journal import JournalEntry
from tests.engine.http.conftest import KEY_A
from tests.engine.prompt_support import png_b64

PNG = png_b64(41, side=6)
PNG_BYTES = base64.b64decode(PNG)
DATA_URL = f"data:image/png;base64,{PNG}"
ATTACHMENT = ImageAttachment("image/png", PNG_BYTES)
TOOLS = [{"type": "function", "function": {"name": "ViewImage", "parameters": {"type": "object"}}}]
CALL_A = {"id": "call_a", "type": "function", "function": {"name": "ViewImage", "arguments": '{"path": "a.png"}'}}
IMAGE_CONTENT = [
    {"type": "text", "text": "Attached image a.png"},
    {"type": "image_url", "image_url": {"url": DATA_URL}},
]
RESULT_BLOCK = '<tool_result tool_call_id="call_a">\nAttached image a.png\n</tool_result>'


def chat(tool_content: Any, *later: dict[str, Any]) -> list[dict[str, Any]]:
    """A conversation whose tool result (``call_a``) is an earlier turn."""
    return [
        {"role": "user", "content": "look at a.png"},
        {"role": "assistant", "content": None, "tool_calls": [CALL_A]},
        {"role": "tool", "tool_call_id": "call_a", "content": tool_content},
        {"role": "assistant", "content": "a cat"},
        {"role": "user", "content": "what colour?"},
        *later,
    ]


def post(
    served: ServedGateway, path: str, body: dict[str, Any], *, key: str = KEY_A, session: str | None = None
) -> httpx.Response:
    headers = {"Authorization": f"Bearer {key}"} | ({"X-Session-Id": session} if session else {})
    return httpx.post(served.url + path, json=body, headers=headers, timeout=30)


def get_session(served: ServedGateway, session: str, *, key: str = KEY_A, start: object = None) -> httpx.Response:
    params = {} if start is None else {"start": str(start)}
    headers = {"Authorization": f"Bearer {key}"}
    return httpx.get(f"{served.url}/v1/sessions/{session}", params=params, headers=headers, timeout=30)


def field6(entry: JournalEntry) -> list[bytes]:
    assert entry.request is not None
    return [base64.b64decode(image["base64_data"]) for image in entry.request.get("images", [])]


def text(entry: JournalEntry) -> str:
    assert entry.request is not None
    return str(entry.request["items"][0]["text"])
