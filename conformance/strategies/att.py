"""ATT: session histories with tool rounds whose results carry images.

A history is a user message, then rounds: an optional assistant text, a parallel batch of tool calls
and their results (0-3 images each, image-only results, errors without images, unicode text), and
the assistant's answer. Image bytes are arbitrary (lowering never decodes them); their MIME types
are the four the engine accepts.
"""

from __future__ import annotations

import base64
import json
from typing import Any

from hypothesis import strategies as st

from conformance.strategies.text import identifiers, unicode_text
from conformance.targets import Target

Case = dict[str, Any]
Item = dict[str, Any]
MIME_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")


@st.composite
def attachments(draw: st.DrawFn, max_images: int = 3) -> list[dict[str, Any]]:
    count = draw(st.integers(0, max_images))
    return [
        {
            "type": "image",
            "payload": {
                "mime_type": draw(st.sampled_from(MIME_TYPES)),
                "data": base64.b64encode(draw(st.binary(min_size=1, max_size=96))).decode("ascii"),
            },
        }
        for _ in range(count)
    ]


@st.composite
def tool_round(draw: st.DrawFn, round_index: int) -> list[Item]:
    """An optional assistant text, a batch of 1-3 calls, their results (in call order or with the
    errors last, as an engine appends denied calls), then the answer."""
    items: list[Item] = []
    if draw(st.booleans()):
        items.append({"type": "message", "role": "assistant", "text": draw(unicode_text(max_size=30))})
    calls = []
    for index in range(draw(st.integers(1, 3))):
        call_id = f"call_{round_index}_{index}"
        arguments = json.dumps({"path": draw(identifiers()) + ".png"})
        calls.append(
            {"type": "tool_call", "call_id": call_id, "name": draw(identifiers("view_")), "arguments": arguments}
        )
    results = []
    for call in calls:
        result: Item = {"type": "tool_result", "call_id": call["call_id"], "summary": draw(unicode_text(max_size=40))}
        if draw(st.integers(0, 4)) == 0:
            result["is_error"] = True
        else:
            images = draw(attachments())
            if images:
                result["attachments"] = images
            if not images or draw(st.booleans()):
                result["content"] = draw(unicode_text(max_size=60))
        results.append(result)
    if draw(st.booleans()):
        results.sort(key=lambda r: bool(r.get("is_error")))
    items += calls + results
    items.append({"type": "message", "role": "assistant", "text": draw(unicode_text(max_size=30))})
    return items


@st.composite
def histories(draw: st.DrawFn, min_rounds: int = 1, max_rounds: int = 4) -> list[list[Item]]:
    """The rounds of one history, each a list of items (commit them round by round)."""
    count = draw(st.integers(min_rounds, max_rounds))
    rounds = [[{"type": "message", "role": "user", "text": draw(unicode_text(min_size=1, max_size=40))}]]
    for index in range(count):
        rounds.append(draw(tool_round(index)))
        if draw(st.booleans()):
            rounds[-1].append({"type": "message", "role": "user", "text": draw(unicode_text(max_size=30))})
    return rounds


@st.composite
def session_cases(draw: st.DrawFn, target: Target) -> Case:
    """A history and the model's vision; ``upstream`` for the checks that judge one lowering."""
    return {
        "vision": draw(st.booleans()) if draw(st.integers(0, 3)) == 0 else True,
        "rounds": draw(histories()),
        "upstream": draw(st.sampled_from(["responses", "chat"])),
    }


@st.composite
def durable_cases(draw: st.DrawFn, target: Target) -> Case:
    """A session case and, in about half of them, the round whose first commit has its session-log write
    fail (``fail_round``; null: none fails). Drawn whatever the target: one that cannot fail a log write
    commits the round once and the property says it did not judge that part."""
    case = draw(session_cases(target))
    return {**case, "fail_round": draw(st.none() | st.integers(0, len(case["rounds"]) - 1))}


@st.composite
def prune_cases(draw: st.DrawFn, target: Target) -> Case:
    """A history pruned once with nothing protected (every detailed result before the newest round is
    cleared), then built again without a prune, then compacted keeping the tail from ``retain``."""
    rounds = draw(histories(min_rounds=2))
    return {
        "vision": True,
        "rounds": rounds,
        "upstream": draw(st.sampled_from(["responses", "chat"])),
        "protected_tokens": 0,
        "retain_round": draw(st.integers(1, len(rounds) - 1)),
    }
