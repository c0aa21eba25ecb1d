"""The content model the prompt builder uses (client.js helpers + image.js ``extractImages``).

* ``is_image_like_block`` / ``safe_block_to_string`` / ``content_to_string`` render content for the
  text channel: image-like blocks become ``[Image omitted from text history]``, blocks carrying a
  long base64 ``data`` value become ``[Binary content omitted from text history]``, anything else is
  its ``JSON.stringify`` text. Blocks are joined with ``''``.
* ``extract_images`` turns one message's content into text plus field-6 images: text blocks append
  their text, images go through ``shrink_image`` (and URL images through the SSRF-guarded fetcher
  first), PDFs become marker-wrapped text. Images never appear in the returned text. Errors are
  logged on ``engine.media.gate`` and never raised. ``unextractable`` counts the image-like blocks that
  yielded no image (a PDF, a failed fetch or parse, an image that does not decode completely within
  the pixel budget or that the shrink pipeline dropped, a ``file_id``, an unhandled shape). The
  gate's verdicts are kept in the request's :class:`engine.media.gate.ImageVerdicts`, so the same bytes
  are decoded once per request.

Fidelity notes: block types are compared exactly (``'text'``, ``'image'``, ...) as in image.js, while
``is_image_like_block`` lower-cases the type as client.js does; ``input_image`` is image-like but not
extracted (responses.js normalises it first); a plain string inside a content list is kept by
``extract_images`` but rendered as a JSON string by ``content_to_string``, as in the baseline.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from engine.js import js_get, js_string, js_stringify, js_truthy
from engine.media.fetch import fetch_image_url
from engine.media.gate import (
    DataUrlError,
    ImageData,
    ImageSettings,
    ImageVerdicts,
    ShrinkOutcome,
    parse_data_url,
    parse_generic_data_url,
    shrink_image,
)
from engine.media.pdf_text import PDF_SCANNED_MARKER, PdfText, extract_pdf_base64, pdf_text_marker

log = logging.getLogger("engine.images")

Fetcher = Callable[[str], ImageData]
"""Fetches an http(s) image URL or raises; the default is the SSRF-guarded ``fetch_image_url``."""

IMAGE_PLACEHOLDER = "[Image omitted from text history]"
BINARY_PLACEHOLDER = "[Binary content omitted from text history]"
IMAGE_LIKE_TYPES = frozenset({"image", "image_url", "input_image", "document", "file", "input_file"})

_BINARY_DATA_RE = re.compile(r'"data"\s*:\s*"[A-Za-z0-9+/=]{128,}"')
_PDF_MIME = "application/pdf"


@dataclass(frozen=True)
class Extracted:
    text: str
    images: list[ImageData] = field(default_factory=list)
    unextractable: int = 0


def _or_empty(value: object) -> object:
    """``value || {}``-style access: falsy values read as nothing."""
    return value if js_truthy(value) else None


def is_image_like_block(block: object) -> bool:
    """``isImageLikeBlock`` (client.js): an image, image URL, document or file block, or a block that
    carries a base64 source, a truthy ``image_url``, or an ``image/*`` ``media_type``. Covers PDFs."""
    if not isinstance(block, Mapping):
        return False
    raw_type = block.get("type")
    block_type = js_string(raw_type).lower() if js_truthy(raw_type) else ""
    if block_type in IMAGE_LIKE_TYPES:
        return True
    if js_get(block.get("source"), "type") == "base64":
        return True
    if js_truthy(block.get("image_url")):
        return True
    media_type = block.get("media_type")
    return isinstance(media_type, str) and media_type.startswith("image/")


def safe_block_to_string(block: object) -> str:
    """``safeBlockToString`` (client.js): a string ``text`` wins, then the image placeholder, then the
    binary placeholder for a long base64 ``data`` value, else ``JSON.stringify(block ?? '')``."""
    text = js_get(block, "text")
    if isinstance(text, str):
        return text
    if is_image_like_block(block):
        return IMAGE_PLACEHOLDER
    raw = js_stringify("" if block is None else block)
    if raw is None:
        return ""
    if _BINARY_DATA_RE.search(raw):
        return BINARY_PLACEHOLDER
    return raw


def _is_list(content: object) -> bool:
    return isinstance(content, Sequence) and not isinstance(content, str | bytes | bytearray)


def content_to_string(content: object) -> str:
    """``contentToString`` (client.js): a string as is, a list block by block joined with ``''``,
    ``None`` as ``''``, anything else as its ``JSON.stringify`` text."""
    if isinstance(content, str):
        return content
    if _is_list(content):
        assert isinstance(content, Sequence)
        return "".join(safe_block_to_string(block) for block in content)
    if content is None:
        return ""
    return js_stringify(content) or ""


def _push_image(images: list[ImageData], image: ImageData, settings: ImageSettings, verdicts: ImageVerdicts) -> None:
    """``pushImage``: gate one image through ``shrink_image`` and keep it unless dropped."""
    if not image.base64_data:
        return
    decision = shrink_image(image, settings, verdicts)
    if decision.dropped:
        log.warning(
            "Image skipped: %s (format=%s, %sx%s)",
            decision.reason,
            decision.format or "unknown",
            decision.width or "?",
            decision.height or "?",
        )
        return
    if decision.outcome is ShrinkOutcome.RESIZED:
        log.info("Image re-encoded: %s", decision.reason)
    elif decision.oversize_dimensions:
        log.warning("Image oversized: %s", decision.reason)
    images.append(decision.image)


def _pdf(data: object) -> PdfText | None:
    return extract_pdf_base64(data) if isinstance(data, str) else None


def _pdf_or_scanned(pdf: PdfText | None, filename: str | None = None, what: str = "") -> str:
    if pdf is not None and pdf.text:
        log.info("PDF extracted%s: %d pages, %d chars", what, pdf.page_count, len(pdf.text))
        return pdf_text_marker(pdf, filename)
    return PDF_SCANNED_MARKER


def _mime_of(source: object) -> str:
    media_type = js_get(source, "media_type")
    return media_type.lower() if isinstance(media_type, str) else ""


class _Extractor:
    def __init__(self, fetcher: Fetcher, settings: ImageSettings, verdicts: ImageVerdicts) -> None:
        self.fetcher = fetcher
        self.settings = settings
        self.verdicts = verdicts
        self.images: list[ImageData] = []

    def push(self, image: ImageData) -> None:
        _push_image(self.images, image, self.settings, self.verdicts)

    def fetch(self, url: object) -> ImageData:
        if not isinstance(url, str):
            raise TypeError("image URL is not a string")
        return self.fetcher(url)

    def block(self, block: Mapping[object, object]) -> str:
        block_type = block.get("type")
        if block_type == "text":
            value = block.get("text")
            return js_string(value) if js_truthy(value) else ""
        if block_type == "document":
            return self.document(_or_empty(block.get("source")))
        if block_type == "image":
            return self.image(_or_empty(block.get("source")))
        if block_type == "image_url":
            return self.image_url(js_get(block.get("image_url"), "url"))
        if block_type in ("file", "input_file"):
            return self.file(_or_empty(block.get("file")))
        return ""

    def document(self, source: object) -> str:
        if _mime_of(source) == _PDF_MIME and js_truthy(js_get(source, "data")):
            return _pdf_or_scanned(_pdf(js_get(source, "data")))
        return ""

    def image(self, source: object) -> str:
        data = js_get(source, "data")
        if _mime_of(source) == _PDF_MIME and js_truthy(data):
            pdf = _pdf(data)
            return pdf_text_marker(pdf) if pdf is not None and pdf.text else ""
        source_type = js_get(source, "type")
        try:
            if (source_type == "base64" or not js_truthy(source_type)) and js_truthy(data):
                if not isinstance(data, str):
                    raise TypeError("image data is not a base64 string")
                media_type = js_get(source, "media_type")
                self.push(ImageData(data, js_string(media_type) if js_truthy(media_type) else "image/png"))
            elif source_type == "url" and js_truthy(js_get(source, "url")):
                self.push(self.fetch(js_get(source, "url")))
            else:
                log.warning("Image extraction failed: no usable image source")
        except Exception as exc:
            log.warning("Image extraction failed: %s", exc)
        return ""

    def image_url(self, raw_url: object) -> str:
        url = raw_url if js_truthy(raw_url) else ""
        try:
            if not isinstance(url, str):
                raise TypeError("image_url.url is not a string")
            if url.startswith("data:"):
                if url[:40].lower().startswith("data:" + _PDF_MIME):
                    parsed = parse_generic_data_url(url)
                    return _pdf_or_scanned(_pdf(parsed.base64_data), what=" (image_url data URL)") if parsed else ""
                self.push(parse_data_url(url))
            elif url.startswith(("https://", "http://")):
                self.push(self.fetch(url))
            else:
                log.warning("Image fetch failed: unsupported image URL %r", url[:40])
        except Exception as exc:  # DataUrlError, ImageFetchError, a custom fetcher's error
            log.warning("Image fetch failed: %s", exc)
        return ""

    def file(self, file: object) -> str:
        data_url = js_get(file, "file_data")
        if not js_truthy(data_url):
            data_url = js_get(file, "url")
        file_id = js_get(file, "file_id")
        if isinstance(data_url, str) and data_url.startswith("data:" + _PDF_MIME):
            try:
                parsed = parse_generic_data_url(data_url)
            except DataUrlError as exc:
                log.warning("PDF extraction failed: %s", exc)
                return ""
            if parsed is None or not parsed.base64_data:
                return ""
            filename = js_get(file, "filename")
            label = js_string(filename) if js_truthy(filename) else None
            return _pdf_or_scanned(_pdf(parsed.base64_data), label, " (OpenAI file block)")
        if js_truthy(data_url) and not js_truthy(file_id):
            log.warning("Unsupported file block data URL: %s...", js_string(data_url)[:40])
        elif js_truthy(file_id):
            log.warning("File block references file_id=%s — upload API not supported, skipping", js_string(file_id))
        return ""


def extract_images(
    content: object, *, fetcher: Fetcher | None, settings: ImageSettings, verdicts: ImageVerdicts | None = None
) -> Extracted:
    """``extractImages``: text plus field-6 images of one message's content. Never raises.

    ``fetcher=None`` means the default SSRF-guarded ``fetch_image_url`` (default ``FetchPolicy``).
    ``verdicts`` is the request's record of judged images (a fresh one for this call when omitted).
    """
    if not _is_list(content):
        return Extracted("" if content is None else js_string(content), [], 0)
    assert isinstance(content, Sequence)
    extractor = _Extractor(fetcher or fetch_image_url, settings, ImageVerdicts() if verdicts is None else verdicts)
    text: list[str] = []
    unextractable = 0
    for block in content:
        if isinstance(block, str) or not js_truthy(block):
            text.append(block if isinstance(block, str) else "")
            continue
        before = len(extractor.images)
        if isinstance(block, Mapping):
            try:
                text.append(extractor.block(block))
            except Exception as exc:  # a malformed block must never fail the request
                log.warning("Image extraction failed: %s", exc)
        if is_image_like_block(block) and len(extractor.images) == before:
            unextractable += 1
    return Extracted("".join(text), extractor.images, unextractable)
