"""Inbound images and PDFs: the image gate (sniffing, data URLs, shrinking to budget), full decodes
under a process-wide bound, the loopback-guarded URL fetcher, and PDF text for the text channel.
"""

from __future__ import annotations

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

__all__ = [
    "PDF_SCANNED_MARKER",
    "DataUrlError",
    "ImageData",
    "ImageSettings",
    "ImageVerdicts",
    "PdfText",
    "ShrinkOutcome",
    "extract_pdf_base64",
    "fetch_image_url",
    "parse_data_url",
    "parse_generic_data_url",
    "pdf_text_marker",
    "shrink_image",
]
