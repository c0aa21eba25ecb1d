"""IMG: the kit's own model of what a correct build of a conversation must put on the wire (seed 000).

Written from engine.md section 1.B and the seed's algorithm, without calling any engine code:

* ``convo`` is the user/assistant messages; the last is the current turn, the rest is history;
* a history turn's text is its content with each image-like block rendered as the placeholder
  ``[Image omitted from text history]``; its line is ``<tag>\\n<body with </tag> escaped>\\n</tag>``;
* the history budget (``CASCADE_MAX_HISTORY_BYTES``, UTF-16 units, default 600 000) is filled newest
  turn first with those pre-marker lines, the newest history turn always kept; the model uid is one
  that names no provider and there is no system message, so nothing else counts;
* with vision on the wire (native mode, or no tool preamble) the replayed turns' image-like blocks
  are taken newest turn first, document order inside a turn: over the count cap
  (``CASCADE_MAX_HISTORY_IMAGES``, default 4) is ``cap``; once the byte budget
  (``CASCADE_MAX_HISTORY_IMAGE_BYTES``, base64 characters, default 1 600 000) is spent, ``bytes``;
  a block that yields no image is ``unextractable``; an image that would overrun the budget is
  ``bytes``; otherwise it is attached. Blocks of turns the budget cut are ``truncated``; without
  vision every block of the replayed turns is ``no_vision``;
* field 6 is the current turn's images (in document order), then the attached history images
  oldest turn first; each attached block's placeholder is replaced in place by
  ``[Image #N attached to this request — from an earlier turn]``, N its field-6 position.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from conformance.fixtures.images import kit_image_of, png_index
from conformance.models.js_text import utf16_units

Case = Mapping[str, Any]

MODEL_UID = "conformance-model"  # names no provider, so there is no context line and no system text
PLACEHOLDER = "[Image omitted from text history]"
MARKER = "[Image #{n} attached to this request \u2014 from an earlier turn]"
MARKER_RE = re.compile(r"\[Image #(\d+) attached to this request \u2014 from an earlier turn\]")
ENV_IMAGES = "CASCADE_MAX_HISTORY_IMAGES"
ENV_IMAGE_BYTES = "CASCADE_MAX_HISTORY_IMAGE_BYTES"
ENV_HISTORY = "CASCADE_MAX_HISTORY_BYTES"
# The gateway settings the IMG examples set: the only launch variables the kit compares with them.
EXAMPLE_LIMITS = frozenset({ENV_IMAGES, ENV_IMAGE_BYTES, ENV_HISTORY})
DEFAULT_MAX_IMAGES = 4
DEFAULT_MAX_IMAGE_BYTES = 1_600_000
DEFAULT_HISTORY_BYTES = 600_000
IMAGE_LIKE_TYPES = frozenset({"image", "image_url", "input_image", "document", "file", "input_file"})
PLANNER_NO_TOOL = "CONVERSATIONAL_PLANNER_MODE_NO_TOOL"
PLANNER_DEFAULT = "CONVERSATIONAL_PLANNER_MODE_DEFAULT"
ROLES = ("user", "assistant")


def is_image_like(block: Any) -> bool:
    """client.js ``isImageLikeBlock``: an image/document/file type, a base64 source, a truthy
    ``image_url`` or an ``image/*`` media type."""
    if not isinstance(block, Mapping):
        return False
    kind = block.get("type")
    if isinstance(kind, str) and kind.lower() in IMAGE_LIKE_TYPES:
        return True
    source = block.get("source")
    if isinstance(source, Mapping) and source.get("type") == "base64":
        return True
    if block.get("image_url"):
        return True
    media_type = block.get("media_type")
    return isinstance(media_type, str) and media_type.startswith("image/")


def _blocks(content: Any) -> list[Any]:
    return list(content) if isinstance(content, list) else []


def render_body(content: Any, markers: Mapping[int, int]) -> str:
    """A history turn's text: blocks joined with '', image-like ones as the placeholder, or as the
    marker of the field-6 position in ``markers`` (block position -> N)."""
    if isinstance(content, str):
        return content
    parts = []
    for position, block in enumerate(_blocks(content)):
        if position in markers:
            parts.append(MARKER.format(n=markers[position]))
        elif isinstance(block, Mapping) and isinstance(block.get("text"), str):
            parts.append(block["text"])
        elif is_image_like(block):
            parts.append(PLACEHOLDER)
        else:
            raise ValueError(f"the IMG generator made a block the kit cannot render: {block!r}")
    return "".join(parts)


def render_line(role: str, body: str) -> str:
    tag = "human" if role == "user" else "assistant"
    return f"<{tag}>\n" + body.replace(f"</{tag}>", f"<\\/{tag}>") + f"\n</{tag}>"


def history_line_units(message: Mapping[str, Any]) -> int:
    """What a history turn costs against the history budget: its pre-marker line, in UTF-16 units."""
    return utf16_units(render_line(str(message["role"]), render_body(message.get("content"), {})))


def current_text(content: Any) -> str:
    """The current turn's text: its text blocks (images never appear in it)."""
    if isinstance(content, str):
        return content
    return "".join(
        block["text"] for block in _blocks(content) if isinstance(block, Mapping) and block.get("type") == "text"
    )


def env_limit(env: Mapping[str, str], name: str, default: int, *, allow_zero: bool) -> int:
    raw = env.get(name)
    if raw is None or not raw.isascii() or not raw.isdigit():  # '²' is a digit to isdigit, not to int
        return default
    value = int(raw)
    return value if value > 0 or (allow_zero and value == 0) else default


@dataclass(frozen=True)
class Slot:
    """One image-like block of a history turn."""

    turn: int  # index in convo
    block: int  # position in that turn's content
    image: str | None  # the base64 the kit expects on the wire, or None when the block yields no image

    @property
    def name(self) -> str:
        index = png_index(self.image) if self.image is not None else None
        return f"img{index}" if index is not None else f"turn {self.turn} block {self.block} (no image)"


@dataclass
class Model:
    """What the kit expects of one fresh build."""

    convo: list[Mapping[str, Any]]
    first_included: int
    vision: bool
    current_images: list[str]
    current_text: str
    truncated: list[Slot]
    replayed: list[Slot]
    attached: list[Slot] = field(default_factory=list)  # chronological
    drops: dict[str, int] = field(default_factory=dict)
    native_mode: bool = False
    tool_preamble: str = ""

    @property
    def k(self) -> int:
        return len(self.current_images)

    @property
    def field6(self) -> list[str]:
        """Field 6 as labels: the current images, then the attached history images oldest first."""
        return [f"img{png_index(i)}" for i in self.current_images] + [s.name for s in self.attached]

    @property
    def planner_mode(self) -> str:
        """windsurf.js ``forceDefault``: DEFAULT with the native bridge, or with images in field 6
        and no tool preamble; NO_TOOL otherwise."""
        with_images = bool(self.current_images or self.attached)
        default = self.native_mode or (with_images and not self.tool_preamble)
        return PLANNER_DEFAULT if default else PLANNER_NO_TOOL

    @property
    def history(self) -> list[Slot]:
        return self.truncated + self.replayed

    def bodies(self, ordinal_of: Callable[[Slot], int | None]) -> list[str]:
        """The replayed turns' texts, oldest first, each attached block replaced by its marker."""
        bodies = []
        for turn in range(self.first_included, len(self.convo) - 1):
            markers = {}
            for slot in self.replayed:
                if slot.turn == turn:
                    ordinal = ordinal_of(slot)
                    if ordinal is not None:
                        markers[slot.block] = ordinal
            bodies.append(render_body(self.convo[turn].get("content"), markers))
        return bodies


def _slots(convo: Sequence[Mapping[str, Any]], turns: range) -> list[Slot]:
    slots = []
    for turn in turns:
        for position, block in enumerate(_blocks(convo[turn].get("content"))):
            if is_image_like(block):
                slots.append(Slot(turn, position, kit_image_of(block)))
    return slots


def model(case: Case) -> Model:
    """What a correct fresh build of ``case`` (messages, env, tool_preamble, native_mode) contains."""
    messages = case["messages"]
    env: Mapping[str, str] = case.get("env", {})
    convo = [m for m in messages if m.get("role") in ROLES]
    last = convo[-1].get("content") if convo else ""
    current_images = [img for img in (kit_image_of(b) for b in _blocks(last)) if img is not None]
    vision = bool(case["native_mode"]) or not case["tool_preamble"]
    n = len(convo)
    budget = env_limit(env, ENV_HISTORY, DEFAULT_HISTORY_BYTES, allow_zero=False)
    first_included, used, kept = 0, 0, 0
    for turn in range(n - 2, -1, -1):
        size = history_line_units(convo[turn])
        if used + size > budget and kept:
            first_included = turn + 1
            break
        used, kept, first_included = used + size, kept + 1, turn
    result = Model(
        convo=convo,
        first_included=first_included,
        vision=vision,
        current_images=current_images,
        current_text=current_text(last),
        truncated=_slots(convo, range(first_included)),
        replayed=_slots(convo, range(first_included, max(n - 1, first_included))),
        native_mode=bool(case["native_mode"]),
        tool_preamble=str(case["tool_preamble"]),
    )
    drops = dict.fromkeys(("cap", "bytes", "truncated", "no_vision", "unextractable"), 0)
    drops["truncated"] = len(result.truncated)
    if not vision:
        drops["no_vision"] = len(result.replayed)
        result.drops = drops
        return result
    max_images = env_limit(env, ENV_IMAGES, DEFAULT_MAX_IMAGES, allow_zero=True)
    max_bytes = env_limit(env, ENV_IMAGE_BYTES, DEFAULT_MAX_IMAGE_BYTES, allow_zero=True)
    picked: list[Slot] = []
    spent = 0
    newest_first = sorted(result.replayed, key=lambda s: (-s.turn, s.block))
    for slot in newest_first:
        if len(picked) >= max_images:
            drops["cap"] += 1
        elif spent >= max_bytes:
            drops["bytes"] += 1
        elif slot.image is None:
            drops["unextractable"] += 1
        elif spent + len(slot.image) > max_bytes:
            drops["bytes"] += 1
        else:
            picked.append(slot)
            spent += len(slot.image)
    result.attached = sorted(picked, key=lambda s: (s.turn, s.block))
    result.drops = drops
    return result


def position_of(labels: Sequence[str], slot: Slot) -> int | None:
    """1-based field-6 position of the slot's image, None when it is not there."""
    return labels.index(slot.name) + 1 if slot.image is not None and slot.name in labels else None


def summary(expected: Model) -> dict[str, Any]:
    return {
        "first_included": expected.first_included,
        "vision": expected.vision,
        "current": [f"img{png_index(i)}" for i in expected.current_images],
        "history_attached": [s.name for s in expected.attached],
        "drops": expected.drops,
    }


def without_history_images(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    convo_positions = [i for i, m in enumerate(messages) if m.get("role") in ROLES]
    current = convo_positions[-1] if convo_positions else -1
    out = []
    for i, message in enumerate(messages):
        content = message.get("content")
        if i != current and isinstance(content, list):
            content = [b for b in content if not is_image_like(b)]
        out.append({**message, "content": content})
    return out
