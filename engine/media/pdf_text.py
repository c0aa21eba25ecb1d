"""PDF text extraction for the text channel (pdf.js ``tryExtractPdf``), using pypdf.

A PDF never becomes a field-6 image: its only channel is extracted text wrapped in a marker.

Outcomes of ``extract_pdf_text`` (the baseline's, with pypdf doing the parsing):

* not a PDF (no ``%PDF-`` prefix), unreadable, or encrypted -> ``None``;
* no text layer -> ``PdfText("", 0)`` (the caller prints the scanned marker);
* a safety limit hit (more than ``PDF_MAX_PAGES`` pages, more than ``PDF_MAX_INPUT_BYTES`` of PDF,
  more than ``PDF_MAX_TEXT_BYTES`` of extracted text, or a pypdf decode limit) ->
  ``PdfText(PDF_LIMIT_TEXT, 0)``, the baseline's sentinel;
* otherwise ``PdfText(text, page_count)``: non-empty page texts, trimmed, joined by a blank line.

Deviation from pdf.js, on purpose: ``page_count`` is pypdf's page-tree count instead of a regex count
of ``/Type /Page`` in the raw bytes (which misses pages inside compressed object streams), and the
stream limits (200 streams, 5 MiB per stream, 25 MiB total) become a page cap and a text cap.
"""

from __future__ import annotations

import io
import logging
import math
import re
from typing import NamedTuple

from pypdf import PdfReader
from pypdf.errors import LimitReachedError

from engine.media.gate import b64decode_lenient

log = logging.getLogger("engine.images")

PDF_MAX_PAGES = 200
PDF_MAX_INPUT_BYTES = 25 * 1024 * 1024
PDF_MAX_TEXT_BYTES = 25 * 1024 * 1024
PDF_LIMIT_TEXT = "PDF 内容无法提取"
PDF_SCANNED_MARKER = "\n[PDF Document — no extractable text (scanned/image-only PDF)]\n"


# The first 8 base64 characters of a payload (6 bytes: room for the ``%PDF-`` header), skipping the
# foreign characters ``b64decode_lenient`` skips and ending at an ``=`` where it stops.
_HEAD = re.compile(r"(?:[^A-Za-z0-9+/_=-]*+[A-Za-z0-9+/_-]){0,8}")


class PdfText(NamedTuple):
    text: str
    page_count: int


class _PdfLimit(Exception):
    pass


def _limit(message: str) -> PdfText:
    log.warning("PDF extraction failed: %s", message)
    return PdfText(PDF_LIMIT_TEXT, 0)


def _page_texts(reader: PdfReader) -> str:
    pages: list[str] = []
    total = 0
    for page in reader.pages:
        text = page.extract_text().strip()
        if not text:
            continue
        total += len(text.encode("utf-8", "surrogatepass"))
        if total > PDF_MAX_TEXT_BYTES:
            raise _PdfLimit("PDF decoded content exceeds safety limit")
        pages.append(text)
    return "\n\n".join(pages)


def extract_pdf_text(raw: bytes) -> PdfText | None:
    """Text and page count of a PDF given as bytes. Never raises."""
    if raw[:5] != b"%PDF-":
        return None
    if len(raw) > PDF_MAX_INPUT_BYTES:
        return _limit("PDF size exceeds safety limit")
    try:
        reader = PdfReader(io.BytesIO(raw), strict=False)
        if reader.is_encrypted:
            log.warning("PDF extraction failed: encrypted PDF")
            return None
        page_count = len(reader.pages)
        if page_count > PDF_MAX_PAGES:
            return _limit(f"PDF page count {page_count} exceeds safety limit {PDF_MAX_PAGES}")
        text = _page_texts(reader)
    except _PdfLimit as exc:
        return _limit(str(exc))
    except LimitReachedError as exc:
        return _limit(f"PDF decoded content exceeds safety limit ({exc})")
    except Exception as exc:  # pypdf raises PdfReadError, ValueError, KeyError, ... on malformed files
        log.warning("PDF extraction failed: %s", exc)
        return None
    if not text.strip():
        log.warning("PDF has no extractable text layer (scanned/image-only PDF)")
        return PdfText("", 0)
    return PdfText(text, page_count)


def extract_pdf_base64(data: str) -> PdfText | None:
    """``tryExtractPdf``: the same for a base64 payload (decoded leniently, like ``Buffer.from``)."""
    if len(data) > math.ceil(PDF_MAX_INPUT_BYTES * 4 / 3) + 4:
        return _limit("PDF size exceeds safety limit") if _decoded_head(data).startswith(b"%PDF-") else None
    return extract_pdf_text(b64decode_lenient(data))


def _decoded_head(data: str) -> bytes:
    """The first bytes :func:`b64decode_lenient` makes of ``data``, without decoding the rest of it."""
    head = _HEAD.match(data)
    assert head is not None  # every string starts with 0 to 8 base64 characters
    return b64decode_lenient(head.group())


def pdf_text_marker(pdf: PdfText, filename: str | None = None) -> str:
    """``\\n[PDF Document — N page(s)]\\n<text>\\n``; with a filename ``[PDF Document "name" — ...``."""
    label = f' "{filename}"' if filename else ""
    return f"\n[PDF Document{label} — {pdf.page_count} page(s)]\n{pdf.text}\n"
