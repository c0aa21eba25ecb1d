"""REQ: requests as the client sent them. REQ-2's cases: an answer cut by ``stop``, and requests a
gateway cannot serve as asked (each carrying one such parameter or nothing to answer)."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st

from conformance.strategies.text import unicode_text
from conformance.targets import Target

Case = dict[str, Any]

# Each unservable parameter with the values that ask for something the LS cannot do.
_UNSERVABLE: dict[str, st.SearchStrategy[Any]] = {
    "n": st.integers(2, 8),
    "logprobs": st.just(True),
    "top_logprobs": st.integers(0, 20),
    "seed": st.integers(-(2**31), 2**31 - 1),
    "frequency_penalty": st.sampled_from([-2.0, -0.5, 0.25, 1, 2.0]),
    "presence_penalty": st.sampled_from([-2.0, -0.5, 0.25, 1, 2.0]),
    "logit_bias": st.dictionaries(st.integers(0, 100_000).map(str), st.integers(-100, 100), min_size=1, max_size=3),
}
# Conversations with nothing to answer: the last message as it goes (the first user message is tagged).
_NOTHING_TO_ANSWER: dict[str, list[dict[str, Any]]] = {
    "ends with the assistant": [{"role": "assistant", "content": "Anything else?"}],
    "empty user text": [{"role": "user", "content": ""}],
    "whitespace user text": [{"role": "user", "content": " \n\t "}],
    "empty parts": [{"role": "user", "content": [{"type": "text", "text": ""}]}],
}


@st.composite
def _answer_and_stops(draw: st.DrawFn) -> tuple[list[str], list[str]]:
    """An answer in 1-6 pieces (frames), and 1-4 stop sequences: most taken from the answer itself, many
    across the boundary of two pieces, some that never occur."""
    pieces = draw(st.lists(unicode_text(min_size=1, max_size=30), min_size=1, max_size=6))
    text = "".join(pieces)
    inside = st.integers(0, len(text) - 1).flatmap(
        lambda start: st.integers(start + 1, min(len(text), start + 6)).map(lambda end: text[start:end])
    )
    absent = unicode_text(min_size=1, max_size=6).filter(lambda s: s not in text)
    kinds = [inside, absent]
    ends = [sum(len(p) for p in pieces[: i + 1]) for i in range(len(pieces) - 1)]  # where one frame meets the next
    if ends:
        across = st.sampled_from(ends).flatmap(
            lambda end: st.tuples(st.integers(1, min(3, end)), st.integers(1, min(3, len(text) - end))).map(
                lambda before_after: text[end - before_after[0] : end + before_after[1]]
            )
        )
        kinds = [across, across, *kinds]
    stops = draw(st.lists(st.one_of(*kinds), min_size=1, max_size=4))
    return pieces, stops


@st.composite
def _probe(draw: st.DrawFn, kind: str) -> Case:
    """One request a gateway cannot serve as asked, of ``kind``: a parameter name, ``unknown model`` or
    ``nothing to answer``."""
    if kind in _UNSERVABLE:
        return {"kind": "parameter", "parameter": {kind: draw(_UNSERVABLE[kind])}}
    if kind == "nothing to answer":
        return {"kind": kind, "ending": draw(st.sampled_from(sorted(_NOTHING_TO_ANSWER)))}
    return {"kind": kind}


PROBE_KINDS = (*sorted(_UNSERVABLE), "unknown model", "nothing to answer")


@st.composite
def parameter_cases(draw: st.DrawFn, target: Target) -> Case:
    """A request with ``stop`` against an answer in several frames, then one request of every kind a gateway
    cannot serve as asked (so each kind is judged in every example), streamed or not."""
    pieces, stops = draw(_answer_and_stops())
    return {
        "prompt": draw(unicode_text(min_size=1, max_size=30)),
        "stream": draw(st.booleans()),
        "pieces": pieces,
        "stop": stops[0] if len(stops) == 1 and draw(st.booleans()) else stops,
        "probes": [draw(_probe(kind)) for kind in PROBE_KINDS],
        "probes_stream": draw(st.booleans()),
    }


def nothing_to_answer(ending: str) -> list[dict[str, Any]]:
    """The messages a "nothing to answer" case ends its conversation with, after its first user message
    (an empty user message follows an answer, so the conversation is otherwise well formed)."""
    last = dict(_NOTHING_TO_ANSWER[ending][0])
    return [last] if last["role"] == "assistant" else [{"role": "assistant", "content": "Sure."}, last]


# Argument values no JSON encoder escapes differently (no quotes, backslashes, controls or <>&).
_PLAIN = st.text(
    st.characters(categories=("L", "N", "Zs"), exclude_characters="<>&\u2028\u2029"),
    min_size=1,
    max_size=20,
).filter(lambda s: s.strip() == s and s != "")


@st.composite
def _content(draw: st.DrawFn, text: str) -> Any:
    """``text`` as a message content: a string, or a parts array that splits it into text parts."""
    if len(text) < 2 or not draw(st.booleans()):
        return text
    cut = draw(st.integers(1, len(text) - 1))
    return [{"type": "text", "text": text[:cut]}, {"type": "text", "text": text[cut:]}]


@st.composite
def _tool_result(draw: st.DrawFn) -> str:
    """A tool result: short, or long (2-20 KB, past the 2000 characters a defect cut results at)."""
    if draw(st.booleans()):
        return draw(unicode_text(min_size=1, max_size=60))
    unit = draw(unicode_text(min_size=1, max_size=30))
    return "result begins|" + (unit + "|") * draw(st.integers(100, 700)) + "result ends"


@st.composite
def history_cases(draw: st.DrawFn, target: Target) -> Case:
    """A conversation of 1-3 earlier rounds and a current question. A round is a user message, then the
    assistant's answer with text or tool calls (each with a name and arguments) and their results; texts
    come as strings or parts arrays."""
    messages: list[dict[str, Any]] = []
    for round_ in range(draw(st.integers(1, 3))):
        messages.append({"role": "user", "content": draw(_content(draw(unicode_text(min_size=1, max_size=40))))})
        answer = draw(unicode_text(min_size=1, max_size=40))
        if not draw(st.booleans()):
            messages.append({"role": "assistant", "content": draw(_content(answer))})
            continue
        calls = [
            {
                "id": f"call_{round_}_{n}",
                "type": "function",
                "function": {
                    "name": draw(st.sampled_from(["read_file", "search", "run_tests", "lookup"])),
                    "arguments": json.dumps(
                        draw(st.dictionaries(st.sampled_from(["path", "query", "mode"]), _PLAIN, min_size=1)),
                        ensure_ascii=False,
                    ),
                },
            }
            for n in range(draw(st.integers(1, 2)))
        ]
        text = answer if draw(st.booleans()) else None
        messages.append({"role": "assistant", "content": text, "tool_calls": calls})
        for call in calls:
            result = draw(_tool_result())
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": draw(_content(result))})
    messages.append({"role": "user", "content": draw(_content(draw(unicode_text(min_size=1, max_size=40))))})
    return {"messages": messages}
