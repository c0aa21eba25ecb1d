"""ATT: the kit's model of durable tool-result attachments (seed 002, yoi.md §3, §9).

Histories are the kit's own JSON items (``conformance.operations`` types them); from them the kit
knows, without asking any engine, what each tool result must lower to:

* its text: the summary, or summary + newline + content; a pruned result is its summary alone;
* its images: one data URL per attachment, in attachment order (none once pruned, none without
  vision, where the text ends with the omission note instead);
* Responses: ``function_call_output.output`` is that text as a string without images, else
  ``[input_text, input_image...]``, and no other item carries an image;
* Chat: the tool message carries the text only; after each maximal run of tool results one user
  message holds the run's images, in order; tool calls are answered by the tool messages directly
  after them.

Checks return a list of problems (empty: it holds), so a property can report every one.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

OMITTED_NOTE = "\n[{n} image attachment(s) omitted: model does not support images]"
_DATA_URL = re.compile(r"data:image/[A-Za-z0-9.+-]+;base64,")


@dataclass(frozen=True)
class ExpectedResult:
    call_id: str
    text: str
    images: tuple[str, ...]  # data URLs


def data_url(attachment: Mapping[str, Any]) -> str:
    payload = attachment["payload"]
    return f"data:{payload['mime_type']};base64,{payload['data']}"


def expected_results(
    items: Sequence[Mapping[str, Any]], *, vision: bool, pruned: frozenset[str] = frozenset()
) -> list[ExpectedResult]:
    """What each tool result of ``items`` must lower to, in history order."""
    out = []
    for item in items:
        if item.get("type") != "tool_result":
            continue
        cleared = item["call_id"] in pruned
        text = item["summary"]
        if not cleared and item.get("content") is not None:
            text += "\n" + item["content"]
        images = () if cleared else tuple(data_url(a) for a in item.get("attachments") or ())
        if images and not vision:
            text += OMITTED_NOTE.format(n=len(images))
            images = ()
        out.append(ExpectedResult(item["call_id"], text, images))
    return out


def check_responses(request: Sequence[Any], expected: Sequence[ExpectedResult]) -> list[str]:
    """The Responses rules over ``request`` (the ``input`` items)."""
    problems: list[str] = []
    outputs = [i for i in request if isinstance(i, Mapping) and i.get("type") == "function_call_output"]
    if [o.get("call_id") for o in outputs] != [e.call_id for e in expected]:
        problems.append(
            f"function_call_output call ids {[o.get('call_id') for o in outputs]}, history has "
            f"{[e.call_id for e in expected]}"
        )
        return problems
    for output, want in zip(outputs, expected, strict=True):
        got = output.get("output")
        where = f"function_call_output {want.call_id}"
        if not want.images:
            if got != want.text:
                problems.append(f"{where}: output should be the string {_short(want.text)}, got {_short(got)}")
            continue
        if not isinstance(got, list) or len(got) != 1 + len(want.images):
            problems.append(
                f"{where}: output should be input_text then {len(want.images)} input_image, got {_short(got)}"
            )
            continue
        head = got[0] if isinstance(got[0], Mapping) else {}
        if head.get("type") != "input_text" or head.get("text") != want.text:
            problems.append(f"{where}: the first item should be input_text {_short(want.text)}, got {_short(got[0])}")
        for index, (part, url) in enumerate(zip(got[1:], want.images, strict=True), start=1):
            if not isinstance(part, Mapping) or part.get("type") != "input_image" or part.get("image_url") != url:
                problems.append(f"{where}: item {index} should be input_image {_short(url)}, got {_short(part)}")
    for index, item in enumerate(request):
        if isinstance(item, Mapping) and item.get("type") != "function_call_output" and _DATA_URL.search(_dump(item)):
            problems.append(f"input[{index}] ({item.get('type') or item.get('role')}) carries an image: {_short(item)}")
    return problems


def check_chat(request: Sequence[Any], expected: Sequence[ExpectedResult]) -> list[str]:
    """The Chat rules over ``request`` (the ``messages``)."""
    problems: list[str] = []
    tools = [m for m in request if isinstance(m, Mapping) and m.get("role") == "tool"]
    answered = [t.get("tool_call_id") for t in tools]
    if answered != [e.call_id for e in expected]:
        problems.append(f"tool messages answer {answered}, history has {[e.call_id for e in expected]}")
        return problems
    for message, want in zip(tools, expected, strict=True):
        if _text_of(message.get("content")) != want.text:
            problems.append(
                f"tool message {want.call_id}: text {_short(message.get('content'))}, want {_short(want.text)}"
            )
        if _DATA_URL.search(_dump(message)):
            problems.append(f"tool message {want.call_id} carries an image")
    problems += _check_runs(request, expected)
    problems += _check_pairing(request)
    return problems


def _check_runs(request: Sequence[Any], expected: Sequence[ExpectedResult]) -> list[str]:
    """After each maximal run of tool messages: one user message with the run's images in order, or
    none when the run has no image; no other message carries an image."""
    problems: list[str] = []
    by_id = {e.call_id: e for e in expected}
    index = 0
    seen_image_messages: set[int] = set()
    while index < len(request):
        if _role(request[index]) != "tool":
            index += 1
            continue
        start = index
        while index < len(request) and _role(request[index]) == "tool":
            index += 1
        urls = [url for m in request[start:index] for url in by_id[m["tool_call_id"]].images]
        follower = request[index] if index < len(request) else None
        follower_urls = _image_urls(follower) if _role(follower) == "user" else []
        if urls:
            if follower_urls != urls or _has_text_part(follower):
                problems.append(
                    f"after the tool run at messages[{start}:{index}] there should be one user message with "
                    f"{len(urls)} image(s) in order, got {_short(follower)}"
                )
            seen_image_messages.add(index)
        elif follower_urls:
            problems.append(f"a user image message follows the image-less tool run at messages[{start}:{index}]")
    for position, message in enumerate(request):
        if position not in seen_image_messages and _role(message) != "tool" and _DATA_URL.search(_dump(message)):
            problems.append(f"messages[{position}] carries an image no tool run explains")
    return problems


def _check_pairing(request: Sequence[Any]) -> list[str]:
    problems = []
    for index, message in enumerate(request):
        calls = message.get("tool_calls") if isinstance(message, Mapping) else None
        if not calls:
            continue
        ids = [c.get("id") if isinstance(c, Mapping) else None for c in calls]
        answers = []
        cursor = index + 1
        while cursor < len(request) and _role(request[cursor]) == "tool":
            answers.append(request[cursor].get("tool_call_id"))
            cursor += 1
        if sorted(map(str, answers)) != sorted(map(str, ids)):
            problems.append(f"the tool calls of messages[{index}] {ids} are answered directly after by {answers}")
    return problems


def prefix_problems(earlier: Sequence[Any], later: Sequence[Any]) -> list[str]:
    """``earlier`` must be an element-wise JSON prefix of ``later``."""
    if len(later) < len(earlier):
        return [f"the later request has {len(later)} items, fewer than the earlier {len(earlier)}"]
    for index, (a, b) in enumerate(zip(earlier, later, strict=False)):
        if _dump(a) != _dump(b):
            return [f"item {index} changed between requests: {_short(a)} became {_short(b)}"]
    return []


def identity_problems(expected: Sequence[Any], got: Sequence[Any]) -> list[str]:
    """``got`` must be ``expected`` byte for byte (as JSON text): where it is not, the first difference."""
    if json.dumps(got, ensure_ascii=False) == json.dumps(expected, ensure_ascii=False):
        return []
    common = min(len(expected), len(got))
    problems = prefix_problems(expected[:common], got[:common])
    if len(got) != len(expected):
        problems.insert(0, f"{len(expected)} items became {len(got)}")
    return problems or ["the same items, serialised differently (key order or escapes)"]


def base64_leaks(text: str, items: Sequence[Mapping[str, Any]], span: int = 12) -> list[str]:
    """Pieces (``span`` characters) of any attachment's base64 found in ``text``."""
    leaks = []
    for item in items:
        for attachment in item.get("attachments") or ():
            encoded = attachment["payload"]["data"]
            raw = base64.b64decode(encoded).decode("latin-1")
            for source, name in ((encoded, "base64"), (raw, "raw bytes")):
                if len(source) < span:
                    continue
                for start in range(0, len(source) - span + 1, max(1, span // 2)):
                    if source[start : start + span] in text:
                        leaks.append(f"{name} of {item['call_id']} at {start}")
                        break
    return leaks


def _role(message: Any) -> str | None:
    return message.get("role") if isinstance(message, Mapping) else None


def _image_urls(message: Any) -> list[str]:
    content = message.get("content") if isinstance(message, Mapping) else None
    if not isinstance(content, list):
        return []
    return [
        _url_of(part.get("image_url"))
        for part in content
        if isinstance(part, Mapping) and part.get("type") == "image_url"
    ]


def _url_of(image_url: Any) -> str:
    """The ``url`` of a Chat ``image_url`` object; anything else (a bare string included) is no URL."""
    return str(image_url.get("url")) if isinstance(image_url, Mapping) else "None"


def _has_text_part(message: Any) -> bool:
    content = message.get("content") if isinstance(message, Mapping) else None
    return isinstance(content, list) and any(isinstance(p, Mapping) and p.get("type") == "text" for p in content)


def _text_of(content: Any) -> str | None:
    if isinstance(content, str):
        return content
    if isinstance(content, list) and all(isinstance(p, Mapping) and p.get("type") == "text" for p in content):
        return "".join(str(p.get("text", "")) for p in content)
    return None


def _dump(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _short(value: Any) -> str:
    text = value if isinstance(value, str) else _dump(value)
    return repr(text) if len(text) <= 120 else repr(text[:100]) + f"... ({len(text)} characters)"
