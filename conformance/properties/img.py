"""IMG: images of replayed turns (seed 000), checked on the Send a target builds.

Every property asks ``engine.build_send_request`` (IMG-6 also ``engine.play_turns`` against a
fakels the check starts itself) and reads the request bytes with the kit's own decoder: the prompt
is ``items[0].text``, field 6 is ``images``, the planner mode is
``cascade_config.planner_config.conversational.planner_mode``.

The kit states its own expectation; no engine code computes it. Conversations are generated from
user/assistant turns whose content is a string or a list of blocks: text blocks (unicode with astral
characters and tag-like text such as ``</human>``) and image blocks in both the OpenAI
(``image_url`` data URL) and Anthropic (``image`` + base64 ``source``) shapes. Every image is a small
PNG generated for the case whose first pixel row encodes a case-unique index, so a field-6 entry
names the block it came from (``img7``). Its base64 is stored in the case, so cases stay plain JSON.

The kit's model of a build (engine.md section 1.B, the seed's algorithm):

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

Not observable through the operations, so not checked here: the structured drop log line and the
process-wide counters (IMG-4), that extraction stops before fetching an image that would be dropped
(IMG-7), and the engine-internal count of the rebuilt build (IMG-6; what is checked is that the
resume attempt's own build counts nothing and that exactly one rebuilt Send follows a rejection).
"""

from __future__ import annotations

import base64
import hashlib
import io
import itertools
import json
import random
import re
import struct
import zlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from hypothesis import strategies as st
from PIL import Image

from conformance.properties import Case, Evidence, invariant_property
from conformance.strategies import unicode_text
from conformance.targets import Target
from fakels.decoder import decode
from fakels.rpcs import RPCS
from fakels.scenario import Chunk, Scenario, Turn
from fakels.server import FakeLSThread

# ---------------------------------------------------------------------------- the kit's constants

MODEL_UID = "conformance-model"  # names no provider, so there is no context line and no system text
PLACEHOLDER = "[Image omitted from text history]"
MARKER = "[Image #{n} attached to this request \u2014 from an earlier turn]"
MARKER_RE = re.compile(r"\[Image #(\d+) attached to this request \u2014 from an earlier turn\]")
ENV_IMAGES = "CASCADE_MAX_HISTORY_IMAGES"
ENV_IMAGE_BYTES = "CASCADE_MAX_HISTORY_IMAGE_BYTES"
ENV_HISTORY = "CASCADE_MAX_HISTORY_BYTES"
DEFAULT_MAX_IMAGES = 4
DEFAULT_MAX_IMAGE_BYTES = 1_600_000
DEFAULT_HISTORY_BYTES = 600_000
MAX_BASE64_LEN = -(-5 * 1024 * 1024 * 4 // 3) + 100  # image.js: ceil(5 MiB * 4/3) + 100 base64 characters
IMAGE_LIKE_TYPES = frozenset({"image", "image_url", "input_image", "document", "file", "input_file"})
PLANNER_NO_TOOL = "CONVERSATIONAL_PLANNER_MODE_NO_TOOL"
ROLES = ("user", "assistant")

_SEND = RPCS["SendUserCascadeMessage"]
_SIGNATURE = 0xA5  # blue channel of an identity row

# ---------------------------------------------------------------------------- identifiable images


@cache
def png_b64(index: int, noise_rows: int) -> str:
    """An 8-pixel-wide PNG: row 0 encodes ``index`` (R = high byte, G = low byte, B = 0xA5), then
    ``noise_rows`` rows of noise seeded by the index (so sizes vary, 96 to about 380 base64 chars)."""
    rng = random.Random(index * 131 + noise_rows)
    pixels = [((index >> 8) & 0xFF, index & 0xFF, _SIGNATURE)] * 8
    pixels += [(rng.randrange(256), rng.randrange(256), rng.randrange(256)) for _ in range(8 * noise_rows)]
    image = Image.new("RGB", (8, noise_rows + 1))
    image.putdata(pixels)
    out = io.BytesIO()
    image.save(out, format="PNG")
    return base64.b64encode(out.getvalue()).decode("ascii")


def png_index(b64: str) -> int | None:
    """The index a :func:`png_b64` image encodes, or None for anything else."""
    try:
        raw = base64.b64decode(b64, validate=True)
        if not raw.startswith(b"\x89PNG\r\n\x1a\n"):
            return None
        with Image.open(io.BytesIO(raw), formats=("PNG",)) as image:
            if image.width != 8 or image.height > 64:
                return None
            rgb = image.convert("RGB")
            row = [rgb.getpixel((x, 0)) for x in range(8)]
    except Exception:
        return None
    first = row[0]
    if not isinstance(first, tuple) or any(pixel != first for pixel in row) or first[2] != _SIGNATURE:
        return None
    return int(first[0]) * 256 + int(first[1])


def label(b64: str, mime: str) -> str:
    """How reports name a field-6 entry: ``img7`` for the kit's images, a digest otherwise."""
    index = png_index(b64)
    if index is not None:
        return f"img{index}"
    return f"<{mime} {len(b64)} chars sha256:{hashlib.sha256(b64.encode()).hexdigest()[:10]}>"


def image_block(b64: str, style: str) -> dict[str, Any]:
    if style == "image_url":
        return {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{b64}"}}
    return {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": b64}}


def kit_image_of(block: Any) -> str | None:
    """The base64 of one of the kit's PNG blocks, or None for any other block."""
    if not isinstance(block, Mapping):
        return None
    data: Any = None
    if block.get("type") == "image_url":
        url = (block.get("image_url") or {}).get("url")
        if isinstance(url, str) and url.startswith("data:image/png;base64,"):
            data = url[len("data:image/png;base64,") :]
    elif block.get("type") == "image":
        source = block.get("source") or {}
        if source.get("type") == "base64" and source.get("media_type") == "image/png":
            data = source.get("data")
    if isinstance(data, str) and len(data) < 4096 and png_index(data) is not None:
        return data
    return None


# ---------------------------------------------------------------------------- blocks the guards see


def _url_block(url: str) -> dict[str, Any]:
    return {"type": "image_url", "image_url": {"url": url}}


def _source_url_block(url: str) -> dict[str, Any]:
    return {"type": "image", "source": {"type": "url", "url": url}}


def _b64_source(data: str, media_type: str) -> dict[str, Any]:
    return {"type": "image", "source": {"type": "base64", "media_type": media_type, "data": data}}


def _png_chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)


@cache
def bomb_png_b64(padding: int = 0) -> str:
    """A PNG whose header declares 100000 x 100000 pixels (far above any decode budget)."""
    header = _png_chunk(b"IHDR", struct.pack(">IIBBBBB", 100_000, 100_000, 8, 2, 0, 0, 0))
    idat = _png_chunk(b"IDAT", zlib.compress(b"\x00" * 64))
    raw = b"\x89PNG\r\n\x1a\n" + header + idat + _png_chunk(b"IEND", b"")
    return base64.b64encode(raw).decode("ascii") + "A" * padding


@cache
def wide_png_b64() -> str:
    """A real 1700 x 2 PNG: within the byte limits, above the long-side limit, so it is re-encoded."""
    rng = random.Random(1700)
    image = Image.new("RGB", (1700, 2))
    image.putdata([(rng.randrange(256), 40, 90) for _ in range(3400)])
    out = io.BytesIO()
    image.save(out, format="PNG")
    return base64.b64encode(out.getvalue()).decode("ascii")


@cache
def _tiny_gif_b64() -> str:
    out = io.BytesIO()
    Image.new("P", (2, 2), 1).save(out, format="GIF")
    return base64.b64encode(out.getvalue()).decode("ascii")


@cache
def _tiny_jpeg_b64() -> str:
    out = io.BytesIO()
    Image.new("RGB", (4, 4), (10, 200, 30)).save(out, format="JPEG", quality=80)
    return base64.b64encode(out.getvalue()).decode("ascii")


_OVER_5MB = MAX_BASE64_LEN + 16

# Blocks every guard must refuse, wherever they sit: they never produce a field-6 image.
REFUSED_BLOCKS: dict[str, Callable[[], dict[str, Any]]] = {
    "ssrf-loopback-v4": lambda: _url_block("http://127.0.0.1/a.png"),
    "ssrf-metadata-link-local": lambda: _url_block("http://169.254.169.254/x.png"),
    "ssrf-private-10": lambda: _url_block("http://10.0.0.1/x.png"),
    "ssrf-private-192-168": lambda: _url_block("https://192.168.1.1/x.png"),
    "ssrf-loopback-v6": lambda: _url_block("http://[::1]/x.png"),
    "ssrf-link-local-v6": lambda: _url_block("http://[fe80::1]/x.png"),
    "ssrf-v4-mapped-loopback": lambda: _url_block("http://[::ffff:127.0.0.1]/x.png"),
    "ssrf-this-network": lambda: _url_block("http://0.0.0.0/x.png"),
    "ssrf-cgnat": lambda: _url_block("http://100.64.0.1/x.png"),
    "ssrf-localhost-name": lambda: _url_block("http://localhost:8080/x.png"),
    "ssrf-source-url-loopback": lambda: _source_url_block("http://127.0.0.1:9/b.png"),
    "ssrf-source-url-metadata": lambda: _source_url_block("http://169.254.169.254/latest/meta-data"),
    "scheme-file": lambda: _url_block("file:///etc/passwd"),
    "scheme-ftp": lambda: _url_block("ftp://127.0.0.1/x.png"),
    "scheme-gopher": lambda: _url_block("gopher://127.0.0.1:70/_x"),
    "scheme-javascript": lambda: _url_block("javascript:alert(1)"),
    "payload-text-plain": lambda: _url_block("data:text/plain;base64,aGVsbG8gd29ybGQ="),
    "payload-octet-stream": lambda: _url_block("data:application/octet-stream;base64,AAECAwQFBgc="),
    "payload-empty-data-url": lambda: _url_block("data:image/png;base64,"),
    "over-5mb-data-url": lambda: _url_block("data:image/png;base64," + bomb_png_b64(_OVER_5MB)),
    "over-5mb-base64-source": lambda: _b64_source(bomb_png_b64(_OVER_5MB), "image/png"),
    "file-id-only": lambda: {"type": "file", "file": {"file_id": "file-conformance"}},
}

# Blocks the baseline gate forwards (as is, or re-encoded): the statement is only that a replayed
# turn forwards exactly what the current turn would.
FORWARDED_BLOCKS: dict[str, Callable[[], dict[str, Any]]] = {
    "bomb-header-data-url": lambda: _url_block("data:image/png;base64," + bomb_png_b64()),
    "bomb-header-base64-source": lambda: _b64_source(bomb_png_b64(), "image/png"),
    "non-image-bytes-labelled-png": lambda: _url_block("data:image/png;base64,bm90IGFuIGltYWdlIGF0IGFsbA=="),
    "non-image-media-type": lambda: _b64_source("aGVsbG8gd29ybGQ=", "text/plain"),
    "svg-data-url": lambda: _url_block("data:image/svg+xml;base64,PHN2Zy8+"),
    "wide-png-re-encoded": lambda: _url_block("data:image/png;base64," + wide_png_b64()),
    "jpeg-labelled-png": lambda: _b64_source(_tiny_jpeg_b64(), "image/png"),
    "gif": lambda: _url_block("data:image/gif;base64," + _tiny_gif_b64()),
    "kit-png": lambda: image_block(png_b64(4242, 2), "image"),
}

# The cheap refused blocks the general conversations mix into history turns (no 5 MB strings).
_CHEAP_REFUSED = tuple(name for name in REFUSED_BLOCKS if not name.startswith("over-5mb"))


def guard_block(name: str) -> dict[str, Any]:
    maker = REFUSED_BLOCKS.get(name) or FORWARDED_BLOCKS.get(name)
    if maker is None:
        raise KeyError(f"unknown guard block {name!r}")
    return maker()


# ---------------------------------------------------------------------------- the kit's model of a build


def utf16_len(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


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


def current_text(content: Any) -> str:
    """The current turn's text: its text blocks (images never appear in it)."""
    if isinstance(content, str):
        return content
    return "".join(
        block["text"] for block in _blocks(content) if isinstance(block, Mapping) and block.get("type") == "text"
    )


def _int_env(env: Mapping[str, str], name: str, default: int, *, allow_zero: bool) -> int:
    raw = env.get(name)
    if raw is None or not raw.isdigit():
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

    @property
    def k(self) -> int:
        return len(self.current_images)

    @property
    def history(self) -> list[Slot]:
        return self.truncated + self.replayed

    def lines(self, ordinal_of: Callable[[Slot], int | None]) -> list[str]:
        """The replayed turns' lines, oldest first, each attached block replaced by its marker."""
        lines = []
        for turn in range(self.first_included, len(self.convo) - 1):
            message = self.convo[turn]
            markers = {}
            for slot in self.replayed:
                if slot.turn == turn:
                    ordinal = ordinal_of(slot)
                    if ordinal is not None:
                        markers[slot.block] = ordinal
            lines.append(render_line(str(message["role"]), render_body(message.get("content"), markers)))
        return lines


def _slots(convo: Sequence[Mapping[str, Any]], turns: range) -> list[Slot]:
    slots = []
    for turn in turns:
        for position, block in enumerate(_blocks(convo[turn].get("content"))):
            if is_image_like(block):
                slots.append(Slot(turn, position, kit_image_of(block)))
    return slots


def model(case: Case) -> Model:
    messages = case["messages"]
    env: Mapping[str, str] = case.get("env", {})
    convo = [m for m in messages if m.get("role") in ROLES]
    last = convo[-1].get("content") if convo else ""
    current_images = [img for img in (kit_image_of(b) for b in _blocks(last)) if img is not None]
    vision = bool(case["native_mode"]) or not case["tool_preamble"]
    n = len(convo)
    budget = _int_env(env, ENV_HISTORY, DEFAULT_HISTORY_BYTES, allow_zero=False)
    first_included, used, kept = 0, 0, 0
    for turn in range(n - 2, -1, -1):
        size = utf16_len(render_line(str(convo[turn]["role"]), render_body(convo[turn].get("content"), {})))
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
    )
    drops = dict.fromkeys(("cap", "bytes", "truncated", "no_vision", "unextractable"), 0)
    drops["truncated"] = len(result.truncated)
    if not vision:
        drops["no_vision"] = len(result.replayed)
        result.drops = drops
        return result
    max_images = _int_env(env, ENV_IMAGES, DEFAULT_MAX_IMAGES, allow_zero=True)
    max_bytes = _int_env(env, ENV_IMAGE_BYTES, DEFAULT_MAX_IMAGE_BYTES, allow_zero=True)
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


# ---------------------------------------------------------------------------- what the target sent


@dataclass(frozen=True)
class Sent:
    text: str
    images: tuple[tuple[str, str], ...]  # (base64_data, mime_type), field-6 order
    planner_mode: Any
    attached: int | None = None
    drops: Mapping[str, int] | None = None

    @property
    def labels(self) -> list[str]:
        return [label(data, mime) for data, mime in self.images]

    def summary(self) -> dict[str, Any]:
        out: dict[str, Any] = {"text": self.text, "field6": self.labels, "planner_mode": self.planner_mode}
        if self.attached is not None:
            out |= {"attached": self.attached, "drops": dict(self.drops or {})}
        return out


def decode_send(raw: bytes) -> Sent:
    fields = decode(_SEND.request_type, raw).fields
    items = fields.get("items") or [{}]
    images = tuple((str(i.get("base64_data", "")), str(i.get("mime_type", ""))) for i in fields.get("images", []))
    conversational = fields.get("cascade_config", {}).get("planner_config", {}).get("conversational", {})
    return Sent(str(items[0].get("text", "")), images, conversational.get("planner_mode"))


def build(
    target: Target,
    case: Case,
    evidence: Evidence,
    *,
    name: str = "sent",
    messages: Sequence[Mapping[str, Any]] | None = None,
    is_resume: bool = False,
) -> Sent:
    result = target.call(
        "engine.build_send_request",
        messages=list(case["messages"] if messages is None else messages),
        model_uid=MODEL_UID,
        tool_preamble=case["tool_preamble"],
        native_mode=case["native_mode"],
        is_resume=is_resume,
        env=dict(case.get("env", {})),
    )
    sent = decode_send(base64.b64decode(result["request_b64"]))
    sent = Sent(sent.text, sent.images, sent.planner_mode, result["attached"], result["drops"])
    evidence.add(name, sent.summary())
    return sent


def position_of(labels: Sequence[str], slot: Slot) -> int | None:
    """1-based field-6 position of the slot's image, None when it is not there."""
    return labels.index(slot.name) + 1 if slot.image is not None and slot.name in labels else None


def check_lines(sent: Sent, expected: Model, ordinal_of: Callable[[Slot], int | None]) -> None:
    """Each replayed turn's line (markers in place of attached blocks) appears, oldest first, and the
    text ends with the current turn, unescaped and without markers."""
    if len(expected.convo) <= 1:
        assert sent.text == expected.current_text, (
            f"a one-turn conversation's prompt is its text {expected.current_text!r}; it is {sent.text!r}"
        )
        return
    at = 0
    for line in expected.lines(ordinal_of):
        found = sent.text.find(line, at)
        assert found >= 0, (
            f"a replayed turn is not in the prompt as expected (attached blocks as markers, the rest as "
            f"placeholders)\n  expected line: {line!r}\n  prompt from offset {at}: {sent.text[at:][:600]!r}"
        )
        at = found + len(line)
    tail = f"<human>\n{expected.current_text}\n</human>"
    ends = sent.text.endswith(tail) and sent.text.rfind(tail) >= at
    assert ends, (
        f"the prompt does not end with the current turn {tail!r} after the history; it ends {sent.text[-300:]!r}"
    )


# ---------------------------------------------------------------------------- strategies

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
_TEXT = st.one_of(
    unicode_text(max_size=24),
    st.sampled_from(TAGLIKE),
    st.tuples(unicode_text(max_size=8), st.sampled_from(TAGLIKE), unicode_text(max_size=8)).map("".join),
)
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
        return str(draw(_TEXT))
    kinds = ["text"] + (["image", "image"] if images else []) + (["refused"] if refused else [])
    if dense and images:
        kinds = ["image", "image", "image", "text"] + (["refused"] if refused else [])
    blocks: list[dict[str, Any]] = []
    for _ in range(draw(st.integers(2, 4)) if dense else draw(st.integers(0, 4))):
        kind = draw(st.sampled_from(kinds))
        if kind == "text":
            blocks.append({"type": "text", "text": draw(_TEXT)})
        elif kind == "image":
            blocks.append(_new_image(draw, counter))
        else:
            blocks.append(guard_block(draw(st.sampled_from(_CHEAP_REFUSED))))
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


_PREAMBLE = unicode_text(min_size=1, max_size=16)


@st.composite
def _vision_on(draw: st.DrawFn) -> tuple[str, bool]:
    """(tool_preamble, native_mode) with a vision-capable wire: no preamble, or the native bridge on."""
    native = draw(st.booleans())
    return (draw(st.one_of(st.just(""), _PREAMBLE)) if native else ""), native


@st.composite
def _any_wire(draw: st.DrawFn) -> tuple[str, bool]:
    return draw(st.one_of(st.just(""), _PREAMBLE)), draw(st.booleans())


def _cases(
    *, wire: st.SearchStrategy[tuple[str, bool]], env: st.SearchStrategy[dict[str, str]], refused: bool = False
) -> Callable[[Target], st.SearchStrategy[Case]]:
    def strategy(_target: Target) -> st.SearchStrategy[Case]:
        return st.tuples(conversations(min_turns=2, refused=refused), env, wire).map(
            lambda parts: {
                "messages": parts[0],
                "env": parts[1],
                "tool_preamble": parts[2][0],
                "native_mode": parts[2][1],
            }
        )

    return strategy


def _expected_summary(expected: Model) -> dict[str, Any]:
    return {
        "first_included": expected.first_included,
        "vision": expected.vision,
        "current": [f"img{png_index(i)}" for i in expected.current_images],
        "history_attached": [s.name for s in expected.attached],
        "drops": expected.drops,
    }


# ---------------------------------------------------------------------------- IMG-1


@invariant_property(
    "IMG-1",
    needs=("engine.build_send_request",),
    cases=_cases(wire=_vision_on(), env=envs()),
    max_examples=40,
)
def history_images_reach_field_6(target: Target, case: Case, evidence: Evidence) -> None:
    """Every history image within the bounds rides field 6 (byte-identical: the kit's PNGs are small
    enough to pass the gate untouched), and its block's placeholder is replaced by its marker."""
    expected = model(case)
    evidence.add("expected", _expected_summary(expected))
    sent = build(target, case, evidence)
    labels = sent.labels
    history_part = list(sent.images[expected.k :])
    for slot in expected.attached:
        assert slot.image is not None
        assert (slot.image, "image/png") in history_part, (
            f"{slot.name} (turn {slot.turn}, block {slot.block}) is within the bounds but is not in field 6 "
            f"after the current turn's {expected.k} image(s); field 6 is {labels}"
        )
    check_lines(sent, expected, lambda slot: position_of(labels, slot))


# ---------------------------------------------------------------------------- IMG-2


@invariant_property(
    "IMG-2",
    needs=("engine.build_send_request",),
    cases=_cases(wire=_vision_on(), env=envs(truncating=False)),
    max_examples=40,
)
def ordinals_name_field_6_positions(target: Target, case: Case, evidence: Evidence) -> None:
    """Current images are field 6 #1..k in document order and carry no marker; the history images
    the target attached follow oldest turn first; the markers read #k+1, #k+2, ... in the text, and
    the marker in place of a block names that block's image's field-6 position."""
    expected = model(case)
    evidence.add("expected", _expected_summary(expected))
    sent = build(target, case, evidence)
    labels = sent.labels
    current = [f"img{png_index(i)}" for i in expected.current_images]
    assert labels[: expected.k] == current, f"field 6 must start with the current images {current}; it is {labels}"
    chronological = {s.name: (s.turn, s.block) for s in expected.history if s.image is not None}
    history = labels[expected.k :]
    stray = [name for name in history if name not in chronological]
    assert not stray, f"field 6 after the current images holds {stray}, which are no history images; {labels}"
    ordered = sorted(history, key=lambda name: chronological[name])
    assert history == ordered, f"history images in field 6 are not oldest turn first: {history}, expected {ordered}"
    numbers = [int(n) for n in MARKER_RE.findall(sent.text)]
    wanted = list(range(expected.k + 1, len(labels) + 1))
    assert numbers == wanted, (
        f"the markers in the prompt read {numbers}; with {expected.k} current image(s) and {len(history)} history "
        f"image(s) in field 6 they must read {wanted}"
    )
    check_lines(sent, expected, lambda slot: position_of(labels, slot))


# ---------------------------------------------------------------------------- IMG-3


@invariant_property(
    "IMG-3",
    needs=("engine.build_send_request",),
    cases=_cases(wire=_vision_on(), env=envs()),
    max_examples=40,
)
def bounds_newest_turn_first(target: Target, case: Case, evidence: Evidence) -> None:
    """The attached history images are exactly the kit's greedy pick: newest turn first, document
    order inside a turn, each image checked against the count cap and the byte budget (0 disables),
    and every image the bounds refuse counted as ``cap`` or ``bytes``."""
    expected = model(case)
    evidence.add("expected", _expected_summary(expected))
    sent = build(target, case, evidence)
    history = sent.labels[expected.k :]
    wanted = [s.name for s in expected.attached]
    env = case["env"]
    assert history == wanted, (
        f"history images in field 6 are {history}; the bounds ({ENV_IMAGES}={env.get(ENV_IMAGES, 'default')}, "
        f"{ENV_IMAGE_BYTES}={env.get(ENV_IMAGE_BYTES, 'default')}, newest turn first, per image) allow {wanted}"
    )
    budget = _int_env(env, ENV_IMAGE_BYTES, DEFAULT_MAX_IMAGE_BYTES, allow_zero=True)
    spent = sum(len(data) for data, _ in sent.images[expected.k :])
    assert spent <= budget, f"{spent} base64 characters of history images exceed the budget of {budget}"
    got = {k: (sent.drops or {}).get(k) for k in ("cap", "bytes")}
    want = {k: expected.drops[k] for k in ("cap", "bytes")}
    assert got == want, f"drops by the bounds are {got}, expected {want}"
    assert sent.attached == len(wanted), f"attached={sent.attached}, expected {len(wanted)}"


# ---------------------------------------------------------------------------- IMG-4


@invariant_property(
    "IMG-4",
    needs=("engine.build_send_request",),
    cases=_cases(wire=_any_wire(), env=envs(), refused=True),
    max_examples=40,
)
def every_history_attachment_is_counted(target: Target, case: Case, evidence: Evidence) -> None:
    """attached plus every drop reason equals the image-like blocks of the history; attached equals
    the history images in field 6; truncated, no_vision and unextractable are what the kit expects."""
    expected = model(case)
    evidence.add("expected", _expected_summary(expected))
    sent = build(target, case, evidence)
    drops = dict(sent.drops or {})
    total = len(expected.history)
    assert sent.attached is not None
    counted = sent.attached + sum(drops.values())
    assert counted == total, (
        f"attached={sent.attached} + drops {drops} = {counted}, but the history has {total} image-like block(s): "
        f"some were {'lost' if counted < total else 'double-counted'}"
    )
    in_field_6 = len(sent.images) - expected.k
    assert sent.attached == in_field_6, (
        f"attached={sent.attached} but {in_field_6} history image(s) ride field 6 ({sent.labels[expected.k :]})"
    )
    for reason in ("truncated", "no_vision", "unextractable"):
        assert drops.get(reason) == expected.drops[reason], (
            f"drops[{reason}]={drops.get(reason)}, expected {expected.drops[reason]} "
            f"(first replayed turn {expected.first_included} of {len(expected.convo)}, vision={expected.vision})"
        )


# ---------------------------------------------------------------------------- IMG-5


def _without_history_images(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    convo_positions = [i for i, m in enumerate(messages) if m.get("role") in ROLES]
    current = convo_positions[-1] if convo_positions else -1
    out = []
    for i, message in enumerate(messages):
        content = message.get("content")
        if i != current and isinstance(content, list):
            content = [b for b in content if not is_image_like(b)]
        out.append({**message, "content": content})
    return out


@st.composite
def _gated_cases(draw: st.DrawFn, _target: Target) -> Case:
    return {
        "messages": draw(conversations(min_turns=2)),
        "env": draw(envs()),
        "tool_preamble": draw(_PREAMBLE),
        "native_mode": False,
    }


@invariant_property("IMG-5", needs=("engine.build_send_request",), cases=_gated_cases, max_examples=30)
def no_history_images_without_vision(target: Target, case: Case, evidence: Evidence) -> None:
    """With a tool preamble and no native bridge, field 6 holds only the current images, every
    image-like block of a replayed turn is counted no_vision, no marker appears, and the planner mode
    is the one of the same conversation with the history images removed."""
    expected = model(case)
    evidence.add("expected", _expected_summary(expected))
    sent = build(target, case, evidence)
    current = [f"img{png_index(i)}" for i in expected.current_images]
    assert sent.labels == current, f"without vision field 6 must be the current images {current}; it is {sent.labels}"
    assert sent.attached == 0, f"attached={sent.attached} without vision"
    drops = dict(sent.drops or {})
    assert drops.get("no_vision") == len(expected.replayed), (
        f"no_vision={drops.get('no_vision')}, but the replayed turns have {len(expected.replayed)} image-like block(s)"
    )
    assert drops.get("truncated") == len(expected.truncated), f"truncated={drops.get('truncated')}"
    assert not MARKER_RE.search(sent.text), f"a marker in a prompt without vision: {sent.text[:400]!r}"
    stripped = build(
        target, case, evidence, name="without history images", messages=_without_history_images(case["messages"])
    )
    assert sent.planner_mode == stripped.planner_mode, (
        f"history images flipped the planner mode: {sent.planner_mode} with them, {stripped.planner_mode} without"
    )


# ---------------------------------------------------------------------------- IMG-6

_LS_TOKEN = "conformance-img6-token"


@st.composite
def _rebuild_cases(draw: st.DrawFn, _target: Target) -> Case:
    first = draw(conversations(min_turns=1, max_turns=4))
    # Every case carries at least one history image, so a rebuild that loses images cannot pass;
    # indices stay unique: the generated turns use 1.., the forced first turn 500.., turn 2 1000...
    forced = _content(draw, itertools.count(500), images=True, refused=False, min_images=1)
    first[0] = {**first[0], "content": forced}
    return {
        "first": first,
        "second": draw(conversations(min_turns=1, max_turns=1, first_index=1000)),
        "answer": draw(unicode_text(min_size=1, max_size=24)),
        "native_mode": draw(st.booleans()),
    }


def _fresh(
    target: Target,
    messages: list[dict[str, Any]],
    native: bool,
    evidence: Evidence,
    name: str,
    *,
    is_resume: bool = False,
) -> Sent:
    case = {"messages": messages, "env": {}, "tool_preamble": "", "native_mode": native}
    return build(target, case, evidence, name=name, is_resume=is_resume)


def _same_send(what: str, got: Sent, want: Sent) -> None:
    assert got.text == want.text, (
        f"{what}: the prompt text differs\n  sent:     {got.text!r}\n  expected: {want.text!r}"
    )
    assert got.images == want.images, f"{what}: field 6 differs\n  sent:     {got.labels}\n  expected: {want.labels}"
    assert got.planner_mode == want.planner_mode, (
        f"{what}: planner mode {got.planner_mode}, expected {want.planner_mode}"
    )


@invariant_property(
    "IMG-6", needs=("engine.play_turns", "engine.build_send_request"), cases=_rebuild_cases, max_examples=20
)
def rebuild_equals_fresh(target: Target, case: Case, evidence: Evidence) -> None:
    """Turn 1 runs fresh on a cascade that then expires; turn 2 resumes it, is rejected as expired,
    and the target restarts. The one Send on the fresh cascade carries exactly what a fresh build of
    the whole conversation gives (text, field 6, planner mode); the resume attempt's own build counts
    nothing, so the rebuild is the request's only counted build."""
    scenario = Scenario(turns=(Turn(chunks=(Chunk(text=case["answer"]),), expire_after=True),))
    native = bool(case["native_mode"])
    with FakeLSThread(csrf_token=_LS_TOKEN, scenario=scenario) as ls:
        played = target.call(
            "engine.play_turns",
            ls_address=ls.address,
            csrf_token=_LS_TOKEN,
            model_uid=MODEL_UID,
            native_mode=native,
            turns=[case["first"], case["second"]],
        )["turns"]
        sends = ls.journal.entries("SendUserCascadeMessage")
    evidence.add("turns", played)
    evidence.add("sends", [f"{e.status} {(e.request or {}).get('cascade_id', '?')}" for e in sends])
    assert len(played) == 2, f"play_turns answered {len(played)} turns for 2"
    assert played[1]["resumed"], "turn 2 did not resume turn 1's cascade, so no resume could be rejected"
    rejected = [i for i, e in enumerate(sends) if e.rejected]
    assert len(rejected) == 1, (
        f"expected exactly one rejected Send (the resume of the expired cascade): {evidence.items['sends']}"
    )
    after = sends[rejected[0] + 1 :]
    assert len(after) == 1, f"after the rejected resume {len(after)} Sends went out; the rebuilt history goes out once"
    rebuilt = decode_send(after[0].raw)
    evidence.add("rebuilt", rebuilt.summary())
    rebuilt_cascade = (after[0].request or {}).get("cascade_id")
    assert rebuilt_cascade != (sends[rejected[0]].request or {}).get("cascade_id"), (
        "the rebuilt Send went to the expired cascade again"
    )
    conversation = [*case["first"], {"role": "assistant", "content": played[0]["text"]}, *case["second"]]
    evidence.add("conversation", conversation)
    fresh = _fresh(target, conversation, native, evidence, "fresh build")
    _same_send("the rebuilt Send vs a fresh build of the same conversation", rebuilt, fresh)
    _same_send(
        "turn 1's fresh Send vs a fresh build",
        decode_send(sends[0].raw),
        _fresh(target, list(case["first"]), native, evidence, "turn 1 build"),
    )
    resume = _fresh(target, conversation, native, evidence, "resume build", is_resume=True)
    _same_send("the rejected resume attempt vs a resume build", decode_send(sends[rejected[0]].raw), resume)
    counted_on_resume = (resume.attached, {k: v for k, v in (resume.drops or {}).items() if v})
    assert counted_on_resume == (0, {}), (
        f"a resume attempt's build counted history images (attached={resume.attached}, drops={resume.drops}); "
        "only the rebuild may count them"
    )


# ---------------------------------------------------------------------------- IMG-7


_GUARDED = sorted(REFUSED_BLOCKS) + sorted(FORWARDED_BLOCKS)


@st.composite
def _guard_cases(draw: st.DrawFn, _target: Target) -> Case:
    return {
        "blocks": list(draw(st.permutations(_GUARDED))[: draw(st.integers(1, 8))]),
        "text": draw(_TEXT),
        "history_role": draw(st.sampled_from(ROLES)),
        "native_mode": draw(st.booleans()),
    }


def _short(block: Mapping[str, Any]) -> str:
    text = json.dumps(block)
    return text if len(text) <= 200 else f"{text[:160]}... ({len(text)} chars)"


@invariant_property("IMG-7", needs=("engine.build_send_request",), cases=_guard_cases, max_examples=40)
def history_images_pass_the_same_guards(target: Target, case: Case, evidence: Evidence) -> None:
    """For each block: in the current turn of a one-turn conversation and in a replayed turn it gives
    the same field-6 bytes, or neither gives any. SSRF targets, non-http schemes, non-image payloads
    and payloads over 5 MB never produce a field-6 image and are counted unextractable in history."""
    base = {"env": {}, "tool_preamble": "", "native_mode": case["native_mode"]}
    for name in case["blocks"]:
        block = guard_block(name)
        evidence.add("block", f"{name}: {_short(block)}")
        content = [{"type": "text", "text": case["text"]}, block]
        alone = [{"role": "user", "content": content}]
        current = build(target, {**base, "messages": alone}, evidence, name="in the current turn")
        if case["history_role"] == "user":
            history = [{"role": "user", "content": content}, {"role": "assistant", "content": "ok"}]
        else:
            history = [{"role": "user", "content": "look"}, {"role": "assistant", "content": content}]
        messages = [*history, {"role": "user", "content": "next"}]
        replayed = build(target, {**base, "messages": messages}, evidence, name="in history")
        assert replayed.images == current.images, (
            f"{name}: the current turn gives field 6 {current.labels}, the same block in a replayed "
            f"{case['history_role']} turn gives {replayed.labels}"
        )
        drops = dict(replayed.drops or {})
        counted = (replayed.attached, (replayed.attached or 0) + sum(drops.values()))
        assert counted == (len(replayed.images), 1), (
            f"{name}: one history block, attached={replayed.attached}, drops={drops}, field 6 {replayed.labels}"
        )
        if name in REFUSED_BLOCKS:
            assert current.images == (), f"{name}: the guard let it through to field 6: {current.labels}"
            assert drops.get("unextractable") == 1, f"{name}: refused in history but drops are {drops}"


# ---------------------------------------------------------------------------- IMG-8


@st.composite
def _determinism_cases(draw: st.DrawFn, _target: Target) -> Case:
    messages = draw(conversations(refused=True))
    if draw(st.booleans()):  # a block the gate re-encodes or forwards, anywhere in the history
        turn = draw(st.integers(0, len(messages) - 1))
        content = messages[turn]["content"]
        blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
        name = draw(st.sampled_from(sorted(FORWARDED_BLOCKS)))
        messages[turn] = {**messages[turn], "content": [*blocks, guard_block(name)]}
    tool_preamble, native = draw(_any_wire())
    return {"messages": messages, "env": draw(envs()), "tool_preamble": tool_preamble, "native_mode": native}


@invariant_property("IMG-8", needs=("engine.build_send_request",), cases=_determinism_cases, max_examples=30)
def same_conversation_same_bytes(target: Target, case: Case, evidence: Evidence) -> None:
    """Two builds of the same conversation (independent copies) give byte-identical text, field 6
    and counters."""
    first = build(target, json.loads(json.dumps(case)), evidence, name="first build")
    second = build(target, json.loads(json.dumps(case)), evidence, name="second build")
    assert first.text == second.text, (
        f"the prompt text differs between two builds:\n  {first.text!r}\n  {second.text!r}"
    )
    assert first.images == second.images, f"field 6 differs between two builds: {first.labels} vs {second.labels}"
    assert (first.attached, first.drops) == (second.attached, second.drops), (
        f"counters differ between two builds: {first.attached} {first.drops} vs {second.attached} {second.drops}"
    )
