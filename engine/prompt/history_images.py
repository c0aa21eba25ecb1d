"""Which images of replayed turns ride field 6, in what order, and what was dropped (seed 000).

Selection walks the replayed turns **newest first** and each turn's image-like blocks in document
order. Both caps are checked per image: once ``max_images`` are attached every further block is a
``cap`` drop, once ``max_bytes`` base64 characters are spent every further block is a ``bytes`` drop,
and neither kind is extracted (so no URL is fetched only to be dropped). A block that is extracted
but yields no image is ``unextractable``; an image that would overrun the byte budget is a ``bytes``
drop. Image-like blocks of turns the history budget cut are ``truncated`` and never extracted; with
no vision on the wire every block of the replayed turns is ``no_vision``, also never extracted.

The attached images are then ordered **chronologically** (turn, then block) and numbered after the
current turn's ``k`` images, so marker ``#N`` names the N-th field-6 entry.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from engine.config import HistoryImageLimits
from engine.media.gate import ImageData
from engine.prompt.extract import is_image_like_block
from engine.prompt.history import HistoryEntry
from engine.prompt.messages import Content, Message
from engine.prompt.metrics import DropCounts

MARKER_TEMPLATE = "[Image #{ordinal} attached to this request \u2014 from an earlier turn]"

# Extracts one image-like block: its image, or None when it yields none.
BlockExtractor = Callable[[object], ImageData | None]


def history_image_marker(ordinal: int) -> str:
    return MARKER_TEMPLATE.format(ordinal=ordinal)


def image_like_blocks(content: Content) -> Iterator[tuple[int, object]]:
    """``(position, block)`` of each image-like block of a list content, in document order."""
    if content is None or isinstance(content, str):
        return
    for index, block in enumerate(content):
        if is_image_like_block(block):
            yield index, block


def count_image_like(content: Content) -> int:
    return sum(1 for _ in image_like_blocks(content))


@dataclass(frozen=True)
class AttachedImage:
    turn: int  # index in the conversation
    block: int  # index in that turn's content
    ordinal: int  # its 1-based position in field 6
    image: ImageData


@dataclass(frozen=True)
class ImageSelection:
    attached: tuple[AttachedImage, ...]  # chronological, ordinals ascending
    drops: DropCounts

    @property
    def images(self) -> tuple[ImageData, ...]:
        return tuple(item.image for item in self.attached)

    def markers_by_turn(self) -> dict[int, dict[int, str]]:
        """``{turn index: {block index: marker}}`` for the turns that had a block attached."""
        markers: dict[int, dict[int, str]] = {}
        for item in self.attached:
            markers.setdefault(item.turn, {})[item.block] = history_image_marker(item.ordinal)
        return markers


def select_history_images(
    entries: Sequence[HistoryEntry],
    truncated_turns: Sequence[Message],
    *,
    vision: bool,
    limits: HistoryImageLimits,
    extract_block: BlockExtractor,
    first_ordinal: int,
) -> ImageSelection:
    """Selects the history images for field 6.

    ``entries`` are the replayed turns (oldest first), ``truncated_turns`` the turns the history budget
    cut, ``first_ordinal`` the field-6 position of the first history image (current images + 1).
    """
    truncated = sum(count_image_like(message.content) for message in truncated_turns)
    if not vision:
        no_vision = sum(count_image_like(entry.content) for entry in entries)
        return ImageSelection((), DropCounts(truncated=truncated, no_vision=no_vision))

    cap = over_bytes = unextractable = 0
    spent = 0
    picked: list[tuple[int, int, ImageData]] = []
    for entry in reversed(entries):
        for index, block in image_like_blocks(entry.content):
            if len(picked) >= limits.max_images:
                cap += 1
                continue
            if spent >= limits.max_bytes:
                over_bytes += 1
                continue
            image = extract_block(block)
            if image is None:
                unextractable += 1
                continue
            size = len(image.base64_data)
            if spent + size > limits.max_bytes:
                over_bytes += 1
                continue
            picked.append((entry.index, index, image))
            spent += size
    picked.sort(key=lambda item: (item[0], item[1]))
    attached = tuple(
        AttachedImage(turn, block, first_ordinal + position, image)
        for position, (turn, block, image) in enumerate(picked)
    )
    drops = DropCounts(cap=cap, bytes=over_bytes, truncated=truncated, unextractable=unextractable)
    return ImageSelection(attached, drops)
