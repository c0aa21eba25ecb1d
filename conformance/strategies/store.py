"""STORE: conversations for the response store, in Chat or Responses shape, sized against its limits.

Every message carries its own token (:func:`conformance.models.store.token`) or call id, so the
kit can trace what the store kept. Sizes are drawn relative to the limits in force: the limits a
target always has (capability ``fixed_limits`` of ``store.open``, e.g. a gateway launched with
them), or limits the case draws itself.
"""

from __future__ import annotations

import json
import string
from typing import Any

from hypothesis import strategies as st

from conformance.models.js_text import utf16_units
from conformance.models.store import BYTE_NOTICE, TRUNCATION_MARKER, refusal_causes, token
from conformance.strategies.text import (
    UNIT_SHAPES,
    WIRE_SAFE_SHAPES,
    around,
    identifiers,
    json_values,
    text_of_units,
    unicode_text,
)
from conformance.targets import Target

Case = dict[str, Any]
Message = dict[str, Any]
SHAPES = ("chat", "responses")
# A 1x1 PNG: parts arrays carry an image beside their text.
_PIXEL = (
    "data:image/png;base64,"
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
)
_ENTRY_BYTES = (4096, 16384, 65536, 102400, 1048576)
#: Under this entry budget what a store must keep whole (ids, notices, markers, replacements) may not
#: fit, and seed 003 has a store refuse a write it cannot shrink further: there a refusal is not
#: judged (:func:`refusal_allowed`). Budgets under it are drawn down to one byte, the smallest a
#: store accepts.
TIGHT_BELOW = 4096
#: A notice as seed 003 words it: the budgets of :func:`both_limits_cases` that leave a noticed text
#: about a notice and a marker long are reckoned with it, in the seed's accounting (64 bytes a
#: message, 2 a UTF-16 unit, an answer's keys and parts arrays about 180 more).
_SEED_NOTICE = (
    "[... 1 earlier message(s) dropped by the response store to stay within RESPONSE_STORE_MAX_MESSAGES ...]\n\n"
)
_NOTICED_BYTES = 64 + 2 * (len(_SEED_NOTICE) + len(TRUNCATION_MARKER))
_ANSWER_BYTES = 64 + 180
#: Lengths in UTF-16 units around the content stage's floors, each floor, one under and one over it:
#: 83 (the marker: a string this long is never cut), 121 (the ``__truncated__`` document: a JSON
#: argument this long is never replaced) and 166 (a string this long or shorter that is over the
#: marker cannot be halved any shorter: seed 003 rejects the write instead). Three draws in four take
#: one of these, the fourth any length between the floors.
_TEXT_FLOORS = around(83, 166, 121)
_DOCUMENT_FLOORS = around(121, 83)
#: Over this fixed entry budget a newest message of those lengths fits: no floor case is drawn.
_FLOOR_BUDGET = 64 + 2 * max(_TEXT_FLOORS)
#: The largest entry budget the kit builds over-budget payloads for (up to three times the budget
#: each). Over it, argument and both-limits cases are drawn unbuilt (:func:`unbuilt_reason`): decided
#: before building, not after tens of megabytes per example.
MAX_BUILT_BUDGET = max(_ENTRY_BYTES)


def _fixed_limits(target: Target) -> dict[str, int] | None:
    fixed = target.capabilities("store.open").get("fixed_limits") if "store.open" in target.operations() else None
    return dict(fixed) if fixed else None


def limits_for(target: Target, budgets: st.SearchStrategy[int] | None = None) -> st.SearchStrategy[dict[str, int]]:
    """The store limits a case runs under: the target's fixed ones, else drawn, the entry budget from
    ``budgets`` (default: :data:`_ENTRY_BYTES`, where only what the case makes big has to shrink)."""
    fixed = _fixed_limits(target)
    if fixed:
        return st.just(fixed)
    budgets = st.sampled_from(_ENTRY_BYTES) if budgets is None else budgets
    return st.fixed_dictionaries({"max_messages": st.integers(1, 12), "max_entry_bytes": budgets})


def any_budget() -> st.SearchStrategy[int]:
    """Entry budgets from one byte up: the usual ones and, as often, one under :data:`TIGHT_BELOW`."""
    return st.one_of(st.sampled_from(_ENTRY_BYTES), st.integers(1, TIGHT_BELOW - 1))


def write_of(case: Case) -> list[dict[str, Any]]:
    """The write ``case`` makes, as far as the kit knows it before the store answers: its messages and
    the answer's strings (in a message of their own; the target's items around them are its own)."""
    answer = case["answer"]
    said: dict[str, Any] = {"content": answer["text"]} if "text" in answer else dict(answer["tool_call"])
    return [*case["messages"], {"role": "assistant", **said}]


def refusal_allowed(case: Case) -> str | None:
    """Why a store may refuse to store ``case``, else None: its budget is under :data:`TIGHT_BELOW` and
    it holds a string a store could fail to shrink (:func:`conformance.models.store.refusal_causes`).
    A write without one is stored whatever its size (seed 003: "nothing is left to cut")."""
    budget = int(case["limits"]["max_entry_bytes"])
    if budget >= TIGHT_BELOW or not refusal_causes(write_of(case)):
        return None
    return (
        f"the store refused a write at an entry budget under {TIGHT_BELOW} bytes, where what it must keep whole may "
        "not fit; a store refuses a write it cannot shrink (seed 003)"
    )


def refusal_forbidden(case: Case) -> str:
    """Why the store must not refuse ``case`` (:func:`refusal_allowed` said None)."""
    if int(case["limits"]["max_entry_bytes"]) >= TIGHT_BELOW:
        return "the store rejected a conversation whose strings it could shrink"
    return (
        "the store rejected a write seed 003 keeps: none of its strings is longer than the 83-unit marker (or, a "
        "JSON-document argument, than the 121-unit document), so none is a candidate that could fail to shrink, and "
        "a store keeps such an entry even over its budget (nothing is left to cut)"
    )


def unbuilt_reason(case: Case) -> str | None:
    """Why ``case`` was left unbuilt (its limits are too big to exceed with a test payload), else None."""
    if not case.get("unbuilt"):
        return None
    budget = int(case["limits"]["max_entry_bytes"])
    return (
        f"the store's entry budget of {budget} bytes is over the {MAX_BUILT_BUDGET} bytes the kit builds payloads "
        "beyond: launch the gateway with a smaller one and say so (--store-limits max_messages=12,max_entry_bytes=64k)"
    )


def _unbuilt(limits: dict[str, int], shape: str) -> Case:
    return {"limits": limits, "shape": shape, "messages": [], "answer": {"text": ""}, "unbuilt": True}


def _shapes_taken(target: Target) -> list[str]:
    taken = target.capabilities("store.open").get("shapes") if "store.open" in target.operations() else None
    return [s for s in SHAPES if s in (taken or SHAPES)]


def shapes_for(target: Target) -> st.SearchStrategy[str]:
    return st.sampled_from(_shapes_taken(target))


class _Builder:
    """Messages of one shape, numbered in order (each number is the message's token).

    Responses items are written in the API's canonical form (``type``, ``id``, parts arrays, output
    text with ``annotations``), which a gateway has no reason to rewrite when it stores them."""

    def __init__(self, shape: str, parts: bool, images: bool = True) -> None:
        self.shape = shape
        self.parts = parts or shape == "responses"
        self.images = images  # a user's parts array shows an image beside its text
        self.messages: list[Message] = []
        self._calls = 0

    def _text(self, body: str) -> str:
        return token(len(self.messages)) + " " + body

    def _content(self, body: str, *, user: bool) -> Any:
        text = self._text(body)
        if not self.parts:
            return text
        image = user and self.images
        if self.shape == "chat":
            blocks: list[dict[str, Any]] = [{"type": "text", "text": text}]
            return blocks + ([{"type": "image_url", "image_url": {"url": _PIXEL}}] if image else [])
        if not user:
            return [{"type": "output_text", "text": text, "annotations": []}]
        pixel = [{"type": "input_image", "image_url": _PIXEL, "detail": "auto"}] if image else []
        return [{"type": "input_text", "text": text}, *pixel]

    def _message(self, role: str, content: Any) -> None:
        if self.shape == "chat":
            self.messages.append({"role": role, "content": content})
        else:
            self.messages.append(
                {"type": "message", "id": f"msg_m{len(self.messages)}", "role": role, "content": content}
            )

    def system(self, body: str) -> None:
        text = self._text(body)
        self._message("system", [{"type": "input_text", "text": text}] if self.shape == "responses" else text)

    def user(self, body: str) -> None:
        self._message("user", self._content(body, user=True))

    def assistant(self, body: str) -> None:
        self._message("assistant", self._content(body, user=False))

    def call(self, name: str, arguments: str, result: str) -> None:
        self._calls += 1
        call_id = f"call_{self._calls}_{len(self.messages)}"
        if self.shape == "chat":
            function = {"name": name, "arguments": arguments}
            calls = [{"id": call_id, "type": "function", "function": function}]
            self.messages.append({"role": "assistant", "content": None, "tool_calls": calls})
            self.messages.append({"role": "tool", "tool_call_id": call_id, "content": self._text(result)})
        else:
            call = {"type": "function_call", "id": f"fc_{call_id}", "call_id": call_id, "name": name}
            self.messages.append({**call, "arguments": arguments})
            output = {"type": "function_call_output", "id": f"fco_{call_id}", "call_id": call_id}
            self.messages.append({**output, "output": self._text(result)})


def short_texts() -> st.SearchStrategy[str]:
    return unicode_text(max_size=12)


@st.composite
def json_document(draw: st.DrawFn, size: int, *, ascii_body: bool = False) -> str:
    """A JSON object (or array) of about ``size`` characters: a file write with a long body, unicode
    keys and values (``ascii_body``: an ASCII body, so ``size`` is close to its rendered length), often
    pretty-printed or with JSON whitespace before it."""
    seed = draw(
        st.text(string.printable, min_size=1, max_size=8) if ascii_body else unicode_text(min_size=1, max_size=8)
    )
    body = (seed * (size // max(1, len(seed)) + 1))[:size]
    value: Any = {"path": "/work/" + draw(identifiers()) + ".txt", "content": body, "meta": draw(json_values())}
    if draw(st.booleans()):
        value = [value]
    lead = draw(st.sampled_from(["", " ", "\n  ", "\t", "\r\n"]))
    indent = draw(st.sampled_from([None, None, 2]))
    return lead + json.dumps(value, ensure_ascii=draw(st.booleans()), indent=indent)


def _argument_size(draw: st.DrawFn, limits: dict[str, int]) -> tuple[int, bool]:
    """Most big arguments are over the entry budget; some are 0.55-0.9 of it (ASCII, so the size is what
    is rendered): cut in half once, they fit, so the first cut is the one kept, whatever its shape."""
    if draw(st.booleans()):
        return _size(limits, draw(st.floats(0.55, 0.9))), True
    return _size(limits, draw(st.floats(1.2, 3.0))), False


@st.composite
def plain_arguments(draw: st.DrawFn, size: int) -> str:
    """Arguments that are not a JSON document (a gateway must not treat them as one)."""
    seed = draw(unicode_text(min_size=1, max_size=8))
    return "path=/tmp/" + draw(identifiers()) + "\n" + (seed * (size // max(1, len(seed)) + 1))[:size]


def _size(limits: dict[str, int], factor: float) -> int:
    return max(200, int(limits["max_entry_bytes"] * factor))


def _text_answer(build: _Builder, body: str) -> dict[str, Any]:
    """The model's answer, the newest turn: its token follows the conversation's."""
    return {"text": token(len(build.messages)) + " " + body}


@st.composite
def argument_cases(draw: st.DrawFn, target: Target, plain: bool = False) -> Case:
    """STORE-1/2: a short conversation with tool rounds, some arguments small, some bigger than the
    entry budget, and one more call whose arguments are bigger than the budget, a JSON document
    (``plain``: plain text, for STORE-3), the answer (the newest turn, which a store keeps); half the
    time the client's own history carries that call in its last tool round too."""
    limits = draw(limits_for(target, any_budget()))
    shape = draw(shapes_for(target))
    if limits["max_entry_bytes"] > MAX_BUILT_BUDGET:
        return _unbuilt(limits, shape)
    build = _Builder(shape, parts=draw(st.booleans()))
    if draw(st.booleans()):
        build.system(draw(short_texts()))
    build.user(draw(short_texts()))
    for _ in range(draw(st.integers(0, 2))):
        small = json.dumps(draw(st.dictionaries(identifiers(), json_values(), max_size=3)))
        build.call(draw(identifiers()), small, "ok")
    if draw(st.booleans()):
        size, ascii_body = _argument_size(draw, limits)
        build.call(draw(identifiers("write_")), draw(json_document(size, ascii_body=ascii_body)), draw(short_texts()))
    build.user(draw(short_texts()))
    size, ascii_body = _argument_size(draw, limits)
    arguments = draw(plain_arguments(size) if plain else json_document(size, ascii_body=ascii_body))
    call = {"name": draw(identifiers("write_")), "arguments": arguments}
    if draw(st.booleans()):  # drawn last, so the examples drawn before it stay as they were
        # The client's own tool history (chat tool_calls, Responses function_call items) carries the big
        # call too, as clients send it in every request: a gateway that delivers none of the LS's proposed
        # calls (tool calls only from its own markup) is judged on these.
        build.call(call["name"], arguments, draw(short_texts()))
        build.user(draw(short_texts()))
    return {"limits": limits, "shape": shape, "messages": build.messages, "answer": {"tool_call": call}}


def crowded(limits: dict[str, int]) -> bool:
    """A cap so big against the entry budget (a gateway at its defaults: 400 messages, 100 KB) that only
    the smallest messages keep a conversation over the cap under the budget: :func:`count_cases` then
    draws one-to-three-letter ASCII texts and no images."""
    return (
        limits["max_messages"] > _CROWDED_FROM and limits["max_messages"] * _ROOMY_MESSAGE > limits["max_entry_bytes"]
    )


#: Caps up to this are drawn as always (the cases' own caps go up to 12), and so are caps whose budget
#: leaves this many bytes a message.
_CROWDED_FROM = 12
_ROOMY_MESSAGE = 1024


@st.composite
def count_cases(draw: st.DrawFn, target: Target, parts: bool | None = None, lead_up_to_cap: bool = False) -> Case:
    """STORE-4/5/6: short messages and the answer, around the message cap (one under, at, one over,
    a few over), sometimes opened by system messages, up to the whole cap; the smallest messages
    under a :func:`crowded` cap."""
    limits = draw(limits_for(target))
    shape = draw(shapes_for(target))
    total = limits["max_messages"] + draw(st.sampled_from([-1, 0, 1, 1, 2, 5]))
    size = max(1, total - 1)  # the answer is the last message
    lead = draw(st.integers(0, size - 1 if lead_up_to_cap else min(3, size - 1)))
    small = crowded(limits)
    build = _Builder(shape, parts=draw(st.booleans()) if parts is None else parts, images=not small)
    texts = st.text(string.ascii_letters, min_size=1, max_size=3) if small else short_texts()
    for _ in range(lead):
        build.system(draw(texts))
    while len(build.messages) < size - 1:
        if draw(st.booleans()):
            build.user(draw(texts))
        else:
            build.assistant(draw(texts))
    build.user(draw(texts))  # a turn answers a user message
    return {"limits": limits, "shape": shape, "messages": build.messages, "answer": _text_answer(build, "answer")}


def plain_argument_cases(target: Target) -> st.SearchStrategy[Case]:
    """STORE-3: plain-text arguments over the budget (:func:`argument_cases`), and, two times in three
    when the limits allow one, strings at the content stage's floors (:func:`floor_cases`)."""
    plain = argument_cases(target, plain=True)
    fixed = _fixed_limits(target)
    if fixed and fixed["max_entry_bytes"] > _FLOOR_BUDGET:
        return plain
    return st.one_of(plain, floor_cases(target), floor_cases(target))


@st.composite
def floor_cases(draw: st.DrawFn, target: Target) -> Case:
    """STORE-3: a short system message (it keeps the byte stage's notice), short turns, and an answer
    that is a text or JSON-document arguments of 82 to 167 UTF-16 units (:data:`_TEXT_FLOORS`), under a
    budget that newest message exceeds on its own, so the content stage reaches it. The text (a JSON
    document's body) is of one of :data:`~conformance.strategies.text.UNIT_SHAPES`; astral characters
    are about half as many code points as units, so a store that measures code points misses a
    candidate it must refuse. Lone surrogates only where the limits are the
    case's own (a gateway launched with fixed ones gets the answer through the fake LS's UTF-8 wire).

    Seed 003 keeps such a write when no string can be rewritten shorter (a text of at most 83 units,
    arguments of at most 121: a truncation never grows a value, and a text led by a notice keeps the
    notice, so it is no candidate either), rewrites a document of 122 units, and rejects the write when
    the text has 84 to 166 units (halving it would not shrink it)."""
    fixed = _fixed_limits(target)
    shape = draw(shapes_for(target))
    build = _Builder(shape, parts=False, images=False)  # an image's data URL is a string over the floor
    build.system(draw(short_texts()))
    for _ in range(draw(st.integers(0, 2))):
        (build.user if draw(st.booleans()) else build.assistant)(draw(short_texts()))
    build.user(draw(short_texts()))
    answer: dict[str, Any]
    made_of = draw(st.sampled_from(WIRE_SAFE_SHAPES if fixed else UNIT_SHAPES))
    if draw(st.booleans()):
        units = draw(_at_a_floor(_TEXT_FLOORS, 84, 166))
        head = token(len(build.messages)) + " "
        answer = {"text": draw(text_of_units(units, made_of, head))}
    else:
        units = draw(_at_a_floor(_DOCUMENT_FLOORS, 84, 121))
        arguments = draw(_json_of_units(units, made_of))
        answer = {"tool_call": {"name": draw(identifiers("write_")), "arguments": arguments}}
    size = len(build.messages) + 1
    limits = fixed or {
        "max_messages": draw(st.integers(size, 12)),
        "max_entry_bytes": draw(st.integers(1, 64 + 2 * units - 1)),
    }
    return {"limits": limits, "shape": shape, "messages": build.messages, "answer": answer}


@st.composite
def _at_a_floor(draw: st.DrawFn, floors: tuple[int, ...], low: int, high: int) -> int:
    """One of ``floors`` three times in four, else a length from ``low`` to ``high``."""
    return draw(st.sampled_from(floors)) if draw(st.integers(0, 3)) else draw(st.integers(low, high))


@st.composite
def _json_of_units(draw: st.DrawFn, units: int, shape: str) -> str:
    """A JSON document (a file write, an object or an array of one, maybe led by JSON whitespace) of
    ``units`` UTF-16 units, its body of ``shape`` (the usual mix: letters, digits and punctuation no
    JSON string escapes)."""
    lead = draw(st.sampled_from(["", " ", "\n  "]))
    array = draw(st.booleans())
    opening = lead + ("[" if array else "") + '{"path":"/tmp/' + draw(identifiers())[:12] + '.txt","content":"'
    closing = '"}' + ("]" if array else "")
    room = max(0, units - len(opening) - len(closing))
    if shape != "mixed":
        return opening + draw(text_of_units(room, shape)) + closing
    seed = draw(st.text(string.ascii_letters + string.digits + " .,:", min_size=1, max_size=8))
    return opening + (seed * (room // len(seed) + 1))[:room] + closing


def parts_cases(target: Target) -> st.SearchStrategy[Case]:
    return count_cases(target, parts=True)


def newest_cases(target: Target) -> st.SearchStrategy[Case]:
    return count_cases(target, lead_up_to_cap=True)


@st.composite
def both_limits_cases(draw: st.DrawFn, target: Target) -> Case:
    """STORE-7: over the message cap and over the byte budget at once: short turns, a user message
    bigger than the budget, and the answer (the newest turn, the one the store serves back).

    When the limits are the case's own, a third of the cases open with a long system message, which
    a byte stage keeps and puts its notice on, and get a budget that leaves it about a notice and a
    marker long: there halving it must keep the notice whole (one that cuts it drops turns silently);
    and, when the target takes Chat messages, a third lead one text with both stages' notices
    (:func:`_both_notices_case`)."""
    own = _fixed_limits(target) is None
    kinds = ["over", "noticed_head", "both_notices"] if own else ["over"]
    if "chat" not in _shapes_taken(target):
        kinds = kinds[:2]
    kind = draw(st.sampled_from(kinds))
    if kind == "both_notices":
        return draw(_both_notices_case())
    noticed_head = kind == "noticed_head"
    limits = draw(limits_for(target, any_budget()))
    shape = draw(shapes_for(target))
    if limits["max_entry_bytes"] > MAX_BUILT_BUDGET:
        return _unbuilt(limits, shape)
    build = _Builder(shape, parts=draw(st.booleans()))
    filler = draw(unicode_text(min_size=1, max_size=8))

    def long_text() -> str:
        long = draw(st.integers(200, 2000)) if noticed_head else _size(limits, draw(st.floats(0.3, 2.5)))
        return (filler * (long // len(filler) + 1))[:long]

    if noticed_head or draw(st.booleans()):
        build.system(long_text() if noticed_head or draw(st.booleans()) else draw(short_texts()))
    over = limits["max_messages"] + draw(st.integers(1, 4))
    while len(build.messages) < over - 2:
        build.user(draw(short_texts()))
    big = _size(limits, draw(st.floats(1.2, 2.5)))
    build.user((filler * (big // len(filler) + 1))[:big])
    answer = _text_answer(build, long_text() if not noticed_head and draw(st.booleans()) else draw(short_texts()))
    if noticed_head:
        room = _NOTICED_BYTES + _ANSWER_BYTES + 2 * len(answer["text"])
        limits = {**limits, "max_entry_bytes": room + draw(st.sampled_from(range(-48, 48)))}
    return {"limits": limits, "shape": shape, "messages": build.messages, "answer": answer}


def _count_notice(count: int) -> str:
    return _SEED_NOTICE.replace("[... 1 ", f"[... {count} ", 1)


@st.composite
def _both_notices_case(draw: st.DrawFn) -> Case:
    """Chat turns with a system message in the middle, a cap that keeps it as the first message (the
    count stage's notice goes on it) and a budget that keeps it as the byte stage's head (its notice
    goes on it too, before the other): one text led by both notices, 43 to 83 UTF-16 units besides
    (of any of :data:`~conformance.strategies.text.UNIT_SHAPES`), so no store cuts it. The budget is
    one a halving of that text would fit in if it kept only the first notice whole (within the 126 or
    more bytes two such halvings take off, in the seed's accounting): a store that does not keep both
    notices whole cuts the second one there."""
    build = _Builder("chat", parts=False, images=False)
    by_count = draw(st.integers(1, 3))
    for _ in range(by_count):
        build.user(draw(short_texts()))
    units = draw(st.integers(43, 83))
    build.system(draw(text_of_units(units - len(token(by_count) + " "), draw(st.sampled_from(UNIT_SHAPES)))))
    by_bytes = draw(st.integers(0, 2))
    for _ in range(by_bytes):
        (build.user if draw(st.booleans()) else build.assistant)(draw(short_texts()))
    answer_text = token(len(build.messages) + 1) + " " + draw(short_texts())
    byte_notice = len(BYTE_NOTICE.format(count=by_bytes + 1))
    noticed = byte_notice + len(_count_notice(by_count)) + units
    once = noticed // 2 + len(TRUNCATION_MARKER)
    twice = max(byte_notice, once // 2) + len(TRUNCATION_MARKER)
    # The entry after both stages, in the seed's accounting (64 bytes a message, 2 a UTF-16 unit; the
    # system role and the answer's keys as the reference charges them).
    entry = 64 + 2 * (len("system") + noticed) + _ANSWER_BYTES + 2 * utf16_units(answer_text)
    budget = entry - draw(st.integers(8, 2 * (noticed - twice) - 8))
    build.user("u" * budget)  # over the budget on its own: the byte stage drops it and all before it but the head
    answer = _text_answer(build, answer_text.split(" ", 1)[1])
    limits = {"max_messages": by_bytes + 3, "max_entry_bytes": budget}
    return {"limits": limits, "shape": "chat", "messages": build.messages, "answer": answer}


@st.composite
def ownership_cases(draw: st.DrawFn, target: Target) -> Case:
    """STORE-8: a small turn the owner (caller 0) stores; the other caller tries to read and delete it."""
    limits = draw(limits_for(target))
    shape = draw(shapes_for(target))
    build = _Builder(shape, parts=draw(st.booleans()))
    build.user(draw(short_texts()))
    if draw(st.booleans()):
        build.call(draw(identifiers()), json.dumps({"q": draw(short_texts())}), draw(short_texts()))
        build.user(draw(short_texts()))
    answer = _text_answer(build, draw(short_texts()))
    return {"limits": limits, "shape": shape, "messages": build.messages, "answer": answer}
