"""IMG: the conversations, environments and guard cases the IMG properties draw.

Conversations are user/assistant turns whose content is a string or a list of blocks: text blocks
(unicode with astral characters and tag-like text such as ``</human>``) and image blocks in both
the OpenAI (``image_url`` data URL) and Anthropic (``image`` + base64 ``source``) shapes. Every
image is one of the kit's identifiable PNGs with a case-unique index; its base64 is stored in the
case, so cases stay plain JSON.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from typing import Any

from hypothesis import strategies as st

from conformance.fixtures.images import (
    CHEAP_REFUSED,
    FORWARDED_BLOCKS,
    REFUSED_BLOCKS,
    guard_block,
    image_block,
    kit_image_of,
    png_b64,
)
from conformance.models.img import ENV_HISTORY, ENV_IMAGE_BYTES, ENV_IMAGES, PLACEHOLDER, ROLES, history_line_units
from conformance.strategies.text import WIRE_SAFE_SHAPES, text_of_units, unicode_text
from conformance.targets import Target

Case = dict[str, Any]

TAGLIKE = (
    "</human>",
    "</assistant>",
    "<human>",
    "<assistant>",
    "</human></assistant>",
    PLACEHOLDER,
    "\U0001f600</human>\U0001d518",
    "</ human>",
)
TEXT = st.one_of(
    unicode_text(max_size=24),
    st.sampled_from(TAGLIKE),
    st.tuples(unicode_text(max_size=8), st.sampled_from(TAGLIKE), unicode_text(max_size=8)).map("".join),
)
#: The long turn a history budget's floor is drawn below: astral characters (their length in UTF-16
#: units is twice their length in code points) or combining sequences (glyphs that are not their code
#: points); never lone surrogates, as the prompt rides the wire as UTF-8.
_SHAPES = tuple(shape for shape in WIRE_SAFE_SHAPES if shape != "mixed")
_STYLES = ("image_url", "image")


def _content(
    draw: st.DrawFn,
    counter: Iterator[int],
    *,
    images: bool,
    refused: bool,
    min_images: int = 0,
    dense: bool = False,
) -> str | list[dict[str, Any]]:
    """One turn's content. ``dense`` turns carry 1 to 4 blocks, mostly images, so that a cap can
    bind in the middle of a turn."""
    if min_images == 0 and not dense and draw(st.integers(0, 5)) == 0:
        return str(draw(TEXT))
    kinds = ["text"] + (["image", "image"] if images else []) + (["refused"] if refused else [])
    if dense and images:
        kinds = ["image", "image", "image", "text"] + (["refused"] if refused else [])
    blocks: list[dict[str, Any]] = []
    for _ in range(draw(st.integers(2, 4)) if dense else draw(st.integers(0, 4))):
        kind = draw(st.sampled_from(kinds))
        if kind == "text":
            blocks.append({"type": "text", "text": draw(TEXT)})
        elif kind == "image":
            blocks.append(_new_image(draw, counter))
        else:
            blocks.append(guard_block(draw(st.sampled_from(CHEAP_REFUSED))))
    for _ in range(min_images - sum(1 for b in blocks if kit_image_of(b) is not None)):
        blocks.insert(draw(st.integers(0, len(blocks))), _new_image(draw, counter))
    return blocks


def _new_image(draw: st.DrawFn, counter: Iterator[int]) -> dict[str, Any]:
    return image_block(png_b64(next(counter), draw(st.integers(0, 8))), draw(st.sampled_from(_STYLES)))


@st.composite
def conversations(
    draw: st.DrawFn,
    *,
    min_turns: int = 1,
    max_turns: int = 6,
    refused: bool = False,
    current_images: bool = True,
    first_index: int = 1,
    dense: bool | None = None,
) -> list[dict[str, Any]]:
    """user/assistant turns ending with a user turn; image indices are unique within the case.
    ``dense=None`` draws whether the history turns are image-dense."""
    counter = itertools.count(first_index)
    count = draw(st.integers(min_turns, max_turns))
    image_dense = draw(st.booleans()) if dense is None else dense
    messages = []
    for turn in range(count):
        current = turn == count - 1
        role = "user" if current else draw(st.sampled_from(ROLES))
        content = _content(
            draw,
            counter,
            images=current_images or not current,
            refused=refused and not current,
            dense=image_dense and not current,
        )
        messages.append({"role": role, "content": content})
    return messages


@st.composite
def envs(draw: st.DrawFn, *, binding: bool = True, truncating: bool = True) -> dict[str, str]:
    """History-image caps (sometimes 0, often small enough to bind: the count cap, the byte budget,
    both, or neither) and a history budget small enough to truncate sometimes; an absent switch means
    its default."""
    env: dict[str, str] = {}
    caps = draw(st.sampled_from(("default", "count", "bytes", "both"))) if binding else "default"
    if caps in ("count", "both"):
        env[ENV_IMAGES] = str(draw(st.integers(0, 3)))
    if caps in ("bytes", "both"):
        env[ENV_IMAGE_BYTES] = str(0 if draw(st.integers(0, 4)) == 0 else draw(st.integers(90, 900)))
    if truncating and draw(st.integers(0, 2)) == 0:
        env[ENV_HISTORY] = str(draw(st.integers(1, 700)))
    return env


PREAMBLE = unicode_text(min_size=1, max_size=16)


@st.composite
def vision_on(draw: st.DrawFn) -> tuple[str, bool]:
    """(tool_preamble, native_mode) with a vision-capable wire: no preamble, or the native bridge on."""
    native = draw(st.booleans())
    return (draw(st.one_of(st.just(""), PREAMBLE)) if native else ""), native


@st.composite
def any_wire(draw: st.DrawFn) -> tuple[str, bool]:
    return draw(st.one_of(st.just(""), PREAMBLE)), draw(st.booleans())


# What a client writes when it sends images: the current turn always has text (real gateways refuse
# an empty or image-only last user message).
CLIENT_TEXT = "What do these show?"


def fixed_env(target: Target) -> dict[str, str] | None:
    """The limits a black-box gateway was launched with (its examples must use exactly those), or
    None for a target that takes the example's own."""
    fixed = getattr(target, "fixed_env", None)
    return dict(fixed()) if callable(fixed) else None


def for_clients(target: Target, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``messages`` as a real client sends them to a black-box gateway: the last user turn carries
    non-blank text. Other targets get them as drawn (a component may be asked anything)."""
    if fixed_env(target) is None or not messages:
        return messages
    last = messages[-1]
    content = last.get("content")
    if isinstance(content, str):
        text = content if content.strip() else CLIENT_TEXT
        return [*messages[:-1], {**last, "content": text}]
    blocks = list(content or [])
    if not any(b.get("type") == "text" and str(b.get("text", "")).strip() for b in blocks):
        blocks.append({"type": "text", "text": CLIENT_TEXT})
    return [*messages[:-1], {**last, "content": blocks}]


@st.composite
def at_history_floor(draw: st.DrawFn, messages: list[dict[str, Any]]) -> dict[str, str]:
    """A history budget at the floor of the newest history turns: the UTF-16 length of their lines
    (:func:`~conformance.models.img.history_line_units`), one under it or one over it. Under it the
    oldest of those turns is cut (unless it is the newest history turn, always kept); at it or over
    it, it is kept. Empty when there is no history."""
    convo = [m for m in messages if m.get("role") in ROLES]
    newest_first = list(reversed(convo[:-1]))
    sizes = [history_line_units(m) for m in newest_first]
    if not sizes:
        return {}
    # Half the time, where one can, the turn just past the floor holds images: what the cut changes shows.
    with_images = [kept for kept in range(1, len(sizes)) if _images_in(newest_first[kept])]
    past_images = draw(st.booleans())
    kept = draw(st.sampled_from(with_images) if with_images and past_images else st.integers(1, len(sizes)))
    return {ENV_HISTORY: str(max(1, sum(sizes[:kept]) + draw(st.sampled_from((0, -1, 1)))))}


def _images_in(message: dict[str, Any]) -> bool:
    content = message.get("content")
    return isinstance(content, list) and any(kit_image_of(block) is not None for block in content)


@st.composite
def with_a_long_shaped_turn(draw: st.DrawFn, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``messages`` with one long text of astral characters or combining sequences (200 to 1200 UTF-16
    units) opening the newest history turn, whose images stay: astral ones put the history budget's floor
    where a count in code points and one in UTF-16 units part by hundreds, more than a turn's worth."""
    if len(messages) < 2:
        return messages
    text = draw(st.tuples(st.integers(200, 1200), st.sampled_from(_SHAPES)).flatmap(lambda p: text_of_units(*p)))
    turn = messages[-2]
    content = turn.get("content")
    opened = [{"type": "text", "text": text}, *content] if isinstance(content, list) else text + str(content or "")
    return [*messages[:-2], {**turn, "content": opened}, messages[-1]]


def cases(
    *, wire: st.SearchStrategy[tuple[str, bool]], env: st.SearchStrategy[dict[str, str]], refused: bool = False
) -> Callable[[Target], st.SearchStrategy[Case]]:
    """Conversations of two turns or more under ``env`` (a black box's own limits instead, when it has
    them); where ``env`` sets a history budget, two times in three one :func:`at_history_floor` below a
    long shaped turn (:func:`with_a_long_shaped_turn`)."""

    @st.composite
    def strategy(draw: st.DrawFn, target: Target) -> Case:
        fixed = fixed_env(target)
        at_floor = fixed is None and draw(st.integers(0, 2)) > 0
        messages = draw(conversations(min_turns=2, refused=refused))
        drawn = draw(env) if fixed is None else fixed
        tool_preamble, native_mode = draw(wire)
        if at_floor and ENV_HISTORY in drawn:
            messages = draw(with_a_long_shaped_turn(messages))
            drawn = {**drawn, **draw(at_history_floor(messages))}
        return {
            "messages": for_clients(target, messages),
            "env": drawn,
            "tool_preamble": tool_preamble,
            "native_mode": native_mode,
        }

    return strategy


@st.composite
def gated_cases(draw: st.DrawFn, target: Target) -> Case:
    fixed = fixed_env(target)
    return {
        "messages": for_clients(target, draw(conversations(min_turns=2))),
        "env": draw(envs()) if fixed is None else fixed,
        "tool_preamble": draw(PREAMBLE),
        "native_mode": False,
    }


@st.composite
def rebuild_cases(draw: st.DrawFn, target: Target) -> Case:
    first = draw(conversations(min_turns=1, max_turns=4))
    # Every case carries at least one history image, so a rebuild that loses images cannot pass;
    # indices stay unique: the generated turns use 1.., the forced first turn 500.., turn 2 1000...
    forced = _content(draw, itertools.count(500), images=True, refused=False, min_images=1)
    first[0] = {**first[0], "content": forced}
    return {
        "first": for_clients(target, first),
        "second": for_clients(target, draw(conversations(min_turns=1, max_turns=1, first_index=1000))),
        "answer": draw(unicode_text(min_size=1, max_size=24)),
        "native_mode": draw(st.booleans()),
    }


_GUARDED = sorted(REFUSED_BLOCKS) + sorted(FORWARDED_BLOCKS)


@st.composite
def guard_cases(draw: st.DrawFn, target: Target) -> Case:
    text = draw(TEXT)
    return {
        "blocks": list(draw(st.permutations(_GUARDED))[: draw(st.integers(1, 8))]),
        "text": text if text.strip() or fixed_env(target) is None else CLIENT_TEXT,
        "history_role": draw(st.sampled_from(ROLES)),
        "native_mode": draw(st.booleans()),
    }


@st.composite
def determinism_cases(draw: st.DrawFn, target: Target) -> Case:
    messages = draw(conversations(refused=True))
    if draw(st.booleans()):  # a block the gate re-encodes or forwards, anywhere in the history
        turn = draw(st.integers(0, len(messages) - 1))
        content = messages[turn]["content"]
        blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
        name = draw(st.sampled_from(sorted(FORWARDED_BLOCKS)))
        messages[turn] = {**messages[turn], "content": [*blocks, guard_block(name)]}
    tool_preamble, native = draw(any_wire())
    fixed = fixed_env(target)
    env = draw(envs()) if fixed is None else fixed
    return {
        "messages": for_clients(target, messages),
        "env": env,
        "tool_preamble": tool_preamble,
        "native_mode": native,
    }
