"""Hand-built ATT histories (the kit's JSON items, as conformance/strategies/att.py generates them) and
the wire shapes a right gateway lowers them to (OpenAI Responses ``input`` items, Chat ``messages``),
for the unit tests of conformance/models/att.py."""

from __future__ import annotations

import base64
from typing import Any

Json = dict[str, Any]

PNG_BYTES = b"\x89PNG1"
JPEG_BYTES = b"\xff\xd8JPG2"
GIF_BYTES = b"GIF89a3"


def b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode("ascii")


def image(mime_type: str, raw: bytes) -> Json:
    """One attachment of a tool result."""
    return {"type": "image", "payload": {"mime_type": mime_type, "data": b64(raw)}}


def url(mime_type: str, raw: bytes) -> str:
    """The data URL the attachment ``image(mime_type, raw)`` lowers to."""
    return f"data:{mime_type};base64,{b64(raw)}"


PNG = image("image/png", PNG_BYTES)
JPEG = image("image/jpeg", JPEG_BYTES)
GIF = image("image/gif", GIF_BYTES)
PNG_URL = url("image/png", PNG_BYTES)
JPEG_URL = url("image/jpeg", JPEG_BYTES)
GIF_URL = url("image/gif", GIF_BYTES)


def user(text: str) -> Json:
    return {"type": "message", "role": "user", "text": text}


def assistant(text: str) -> Json:
    return {"type": "message", "role": "assistant", "text": text}


def call(call_id: str) -> Json:
    return {"type": "tool_call", "call_id": call_id, "name": "view_image", "arguments": '{"path": "a.png"}'}


def result(call_id: str, summary: str, content: str | None = None, *attachments: Json) -> Json:
    item: Json = {"type": "tool_result", "call_id": call_id, "summary": summary}
    if content is not None:
        item["content"] = content
    if attachments:
        item["attachments"] = list(attachments)
    return item


# --- OpenAI Responses ``input`` items ---------------------------------------------------------


def r_message(role: str, text: str) -> Json:
    kind = "output_text" if role == "assistant" else "input_text"
    return {"type": "message", "role": role, "content": [{"type": kind, "text": text}]}


def r_call(call_id: str) -> Json:
    return {"type": "function_call", "call_id": call_id, "name": "view_image", "arguments": '{"path": "a.png"}'}


def r_output(call_id: str, output: Any) -> Json:
    return {"type": "function_call_output", "call_id": call_id, "output": output}


def input_text(text: str) -> Json:
    return {"type": "input_text", "text": text}


def input_image(data_url: str) -> Json:
    return {"type": "input_image", "image_url": data_url}


# --- OpenAI Chat ``messages`` -----------------------------------------------------------------


def c_message(role: str, content: Any) -> Json:
    return {"role": role, "content": content}


def c_calls(*call_ids: str) -> Json:
    calls = [{"id": c, "type": "function", "function": {"name": "view_image", "arguments": "{}"}} for c in call_ids]
    return {"role": "assistant", "content": None, "tool_calls": calls}


def c_tool(call_id: str, content: Any) -> Json:
    return {"role": "tool", "content": content, "tool_call_id": call_id}


def c_images(*data_urls: str) -> Json:
    """The user message that follows a run of tool messages with the run's images."""
    return {"role": "user", "content": [{"type": "image_url", "image_url": {"url": u}} for u in data_urls]}
