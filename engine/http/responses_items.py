"""Responses API items: checked and normalised input, lowered to chat messages, merged and served back.

The canonical item shapes this gateway stores (and ``GET /v1/responses/{id}/input_items`` serves
verbatim) are those of the OpenAI Responses API, every item with an ``id``:

* ``{"type": "message", "id", "role", "content": [parts]}``: ``role`` one of user, assistant,
  system, developer; a string content becomes one ``input_text`` part (``output_text`` for the
  assistant). Parts are ``input_text``, ``output_text`` (with ``annotations``), ``input_image``
  (``image_url``: a data URL or an http(s) URL) and ``refusal``; a ``text`` part (the store's own
  drop notice) is read like ``input_text``.
* ``{"type": "function_call", "id", "call_id", "name", "arguments"}``.
* ``{"type": "function_call_output", "id", "call_id", "output"}``: ``output`` a string or a list of
  ``input_text`` / ``input_image`` parts.

``reasoning`` items (a client echoing a previous ``output``) are accepted and dropped: reasoning is
never replayed upstream nor stored. An item the store gave a ``content`` it did not have (its drop
notice landed on a function call, say) keeps that text in front of what the item lowers to, so the
upstream model learns that turns were dropped.

Lowering (:func:`lower_items`) is for the upstream only: a ``function_call`` run becomes the
``tool_calls`` of the assistant message just before it (or of a new one with null content), a
``function_call_output`` a ``tool`` message, parts become chat parts. The caller's items are never
mutated.
"""

from __future__ import annotations

import copy
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from engine.http.errors import bad_request
from engine.store.trim import strip_notice

MESSAGE_ROLES = ("user", "assistant", "system", "developer")
_TEXT_PARTS = frozenset({"input_text", "output_text", "text"})
_OUTPUT_TYPES = frozenset({"function_call"})

Item = dict[str, Any]


def new_id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex}"


# ------------------------------------------------------------------------------------------ input


def normalize_input(value: object) -> list[Item]:
    """The request's ``input`` as canonical items (fresh objects, ids assigned), or a 400 naming the
    item at fault. A string is one user message."""
    if isinstance(value, str):
        return [_message("user", value, new_id("msg"))]
    if not isinstance(value, list) or not value:
        raise bad_request("'input' must be a string or a non-empty array of input items", param="input")
    items: list[Item] = []
    for index, raw in enumerate(value):
        item = _normalize_item(raw, f"input[{index}]")
        if item is not None:
            items.append(item)
    return items


def _normalize_item(raw: object, where: str) -> Item | None:
    if not isinstance(raw, dict):
        raise bad_request(f"{where} must be an object", param=where)
    kind = raw.get("type")
    if kind is None and "role" in raw:
        kind = "message"
    if kind == "message":
        return _normalize_message(raw, where)
    if kind == "function_call":
        call_id, name, arguments = raw.get("call_id"), raw.get("name"), raw.get("arguments")
        if not _nonempty(call_id) or not _nonempty(name) or not isinstance(arguments, str):
            raise bad_request(
                f"{where} must be {{type: function_call, call_id: string, name: string, arguments: string}}",
                param=where,
            )
        item = {"type": "function_call", "id": _item_id(raw, "fc", where), "call_id": call_id, "name": name}
        item["arguments"] = arguments
        return _keep_status(item, raw)
    if kind == "function_call_output":
        call_id, output = raw.get("call_id"), raw.get("output")
        if not _nonempty(call_id):
            raise bad_request(f"{where}.call_id must be a non-empty string", param=where)
        if not isinstance(output, str):
            output = _parts(output, "user", f"{where}.output", allow_output_text=False)
        item = {"type": "function_call_output", "id": _item_id(raw, "fco", where), "call_id": call_id}
        item["output"] = output
        return _keep_status(item, raw)
    if kind == "reasoning":
        return None
    raise bad_request(
        f"{where}.type must be message, function_call, function_call_output or reasoning, not {kind!r}",
        param=where,
    )


def _normalize_message(raw: Mapping[str, Any], where: str) -> Item:
    role = raw.get("role")
    if role not in MESSAGE_ROLES:
        raise bad_request(f"{where}.role must be one of {', '.join(MESSAGE_ROLES)}, not {role!r}", param=where)
    content = raw.get("content")
    if isinstance(content, str):
        return _keep_status(_message(role, content, _item_id(raw, "msg", where)), raw)
    parts = _parts(content, role, f"{where}.content", allow_output_text=True)
    return _keep_status({"type": "message", "id": _item_id(raw, "msg", where), "role": role, "content": parts}, raw)


def _message(role: str, text: str, item_id: str) -> Item:
    if role == "assistant":
        part: Item = {"type": "output_text", "text": text, "annotations": []}
    else:
        part = {"type": "input_text", "text": text}
    return {"type": "message", "id": item_id, "role": role, "content": [part]}


def _parts(value: object, role: str, where: str, *, allow_output_text: bool) -> list[Item]:
    if not isinstance(value, list):
        raise bad_request(f"{where} must be a string or an array of content parts", param=where)
    parts: list[Item] = []
    for index, part in enumerate(value):
        at = f"{where}[{index}]"
        if not isinstance(part, dict):
            raise bad_request(f"{at} must be an object", param=at)
        kind = part.get("type")
        if kind in ("input_text", "text") or (kind == "output_text" and allow_output_text):
            if not isinstance(part.get("text"), str):
                raise bad_request(f"{at}.text must be a string", param=at)
            parts.append(copy.deepcopy(part))
        elif kind == "refusal" and allow_output_text and isinstance(part.get("refusal"), str):
            parts.append(copy.deepcopy(part))
        elif kind == "input_image":
            url = part.get("image_url")
            if not isinstance(url, str) or not url.startswith(("data:", "http://", "https://")):
                raise bad_request(
                    f"{at}.image_url must be a data URL or an http(s) URL (file_id images are not supported)",
                    param=at,
                )
            parts.append(copy.deepcopy(part))
        else:
            allowed = (
                "input_text, output_text, refusal, input_image" if allow_output_text else "input_text, input_image"
            )
            raise bad_request(f"{at}.type must be one of {allowed}, not {kind!r}", param=at)
    return parts


def _item_id(raw: Mapping[str, Any], prefix: str, where: str) -> str:
    given = raw.get("id")
    if given is None:
        return new_id(prefix)
    if not _nonempty(given):
        raise bad_request(f"{where}.id must be a non-empty string", param=where)
    return str(given)


def _keep_status(item: Item, raw: Mapping[str, Any]) -> Item:
    status = raw.get("status")
    if isinstance(status, str):
        item["status"] = status
    return item


def _nonempty(value: object) -> bool:
    return isinstance(value, str) and bool(value)


# ---------------------------------------------------------------------------------------- chaining


def merge_chained(prior: Sequence[Mapping[str, Any]], new: Sequence[Item]) -> list[Item]:
    """mergeChainedMessages: the stored items, then the new input without the function calls whose
    ``call_id`` is already stored (a client that replays its tool round alongside the id)."""
    stored_calls = {item.get("call_id") for item in prior if item.get("type") == "function_call"}
    fresh = [item for item in new if not (item.get("type") == "function_call" and item.get("call_id") in stored_calls)]
    return [copy.deepcopy(dict(item)) for item in prior] + fresh


# ---------------------------------------------------------------------------------------- lowering


def lower_items(items: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Chat messages for the upstream turn (see the module docstring)."""
    messages: list[dict[str, Any]] = []
    open_calls = False  # the last message is an assistant turn that function calls may join
    for item in items:
        kind = item.get("type", "message")
        if kind == "function_call":
            call = {
                "id": str(item.get("call_id", "")),
                "type": "function",
                "function": {"name": str(item.get("name", "")), "arguments": str(item.get("arguments", ""))},
            }
            notice = _text_of(item.get("content"))
            if open_calls and not notice:
                messages[-1].setdefault("tool_calls", []).append(call)
            else:
                messages.append({"role": "assistant", "content": notice or None, "tool_calls": [call]})
            open_calls = True
            continue
        if kind == "function_call_output":
            output = item.get("output")
            content: Any = _chat_parts(output) if isinstance(output, list) else str(output or "")
            content = _prefixed(_text_of(item.get("content")), content)
            messages.append({"role": "tool", "tool_call_id": str(item.get("call_id", "")), "content": content})
            open_calls = False
            continue
        role = str(item.get("role", "user"))
        raw = item.get("content")
        lowered = raw if isinstance(raw, str) else _chat_parts(raw if isinstance(raw, list) else [])
        messages.append({"role": role, "content": lowered})
        open_calls = role == "assistant"
    return messages


def _chat_parts(parts: Sequence[Any]) -> list[dict[str, Any]]:
    lowered: list[dict[str, Any]] = []
    for part in parts:
        if not isinstance(part, Mapping):
            continue
        kind = part.get("type")
        if kind in _TEXT_PARTS:
            lowered.append({"type": "text", "text": str(part.get("text", ""))})
        elif kind == "refusal":
            lowered.append({"type": "text", "text": str(part.get("refusal", ""))})
        elif kind == "input_image":
            lowered.append({"type": "image_url", "image_url": {"url": str(part.get("image_url", ""))}})
    return lowered


def _prefixed(notice: str, content: Any) -> Any:
    if not notice:
        return content
    if isinstance(content, str):
        return notice + content
    return [{"type": "text", "text": notice}, *content]


def _text_of(content: object) -> str:
    """A content's text: a string, or its text parts joined with ``''`` (storedResponseBody)."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    texts = []
    for part in content:
        if isinstance(part, Mapping) and part.get("type") in _TEXT_PARTS and isinstance(part.get("text"), str):
            texts.append(part["text"])
    return "".join(texts)


# ------------------------------------------------------------------------------------ served back


def stored_output(items: Sequence[Mapping[str, Any]]) -> list[Item]:
    """The output of a stored turn, for ``GET /v1/responses/{id}``: the trailing run of assistant
    messages and function calls (after the last user message and the last tool result: the answer
    of the newest turn), each rebuilt in output shape. The message text is its text parts joined
    with ``''`` with exactly one leading drop notice stripped, so the store's bookkeeping is never
    served back as model output."""
    start = len(items)
    while start > 0 and _is_output(items[start - 1]):
        start -= 1
    return [_output_item(item) for item in items[start:]]


def _is_output(item: Mapping[str, Any]) -> bool:
    kind = item.get("type", "message")
    return kind in _OUTPUT_TYPES or (kind == "message" and item.get("role") == "assistant")


def _output_item(item: Mapping[str, Any]) -> Item:
    status = item.get("status", "completed")
    if item.get("type") == "function_call":
        return {
            "type": "function_call",
            "id": item.get("id"),
            "call_id": item.get("call_id"),
            "name": item.get("name"),
            "arguments": item.get("arguments"),
            "status": status,
        }
    text = strip_notice(_text_of(item.get("content")))
    return {
        "type": "message",
        "id": item.get("id"),
        "status": status,
        "role": "assistant",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }
