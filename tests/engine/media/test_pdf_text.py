"""PDF text extraction on real (hand-built and pypdf-written) PDFs: markers, limits, refusals."""

from __future__ import annotations

import base64
import logging

import pytest
from pypdf.errors import LimitReachedError

import engine.media.pdf_text as pdf_mod
from engine.media.pdf_text import (
    PDF_LIMIT_TEXT,
    PDF_MAX_PAGES,
    PDF_SCANNED_MARKER,
    PdfText,
    extract_pdf_base64,
    extract_pdf_text,
    pdf_text_marker,
)
from tests.support.pdfgen import build_pdf, encrypted_pdf, pdf_b64


def test_text_and_page_count() -> None:
    assert extract_pdf_text(build_pdf(["Hello PDF"])) == PdfText("Hello PDF", 1)


def test_pages_are_trimmed_and_joined_by_a_blank_line_skipping_empty_ones() -> None:
    result = extract_pdf_text(build_pdf(["  first page  ", "", "third (page)"]))
    assert result == PdfText("first page\n\nthird (page)", 3)


def test_base64_input_is_decoded_leniently() -> None:
    data = pdf_b64(["Wrapped"])
    wrapped = "\n".join(data[i : i + 76] for i in range(0, len(data), 76))
    assert extract_pdf_base64(wrapped) == PdfText("Wrapped", 1)


@pytest.mark.parametrize("raw", [b"", b"%PDF", b"hello world", b"\x89PNG\r\n\x1a\n", b" %PDF-1.4"])
def test_the_pdf_prefix_is_required(raw: bytes) -> None:
    assert extract_pdf_text(raw) is None


def test_a_malformed_pdf_gives_none(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="engine.images"):
        assert extract_pdf_text(b"%PDF-1.4\nnot really a pdf") is None
    assert any(r.getMessage().startswith("PDF extraction failed:") for r in caplog.records)


def test_a_pdf_without_a_text_layer_is_scanned(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="engine.images"):
        assert extract_pdf_text(build_pdf(["", ""])) == PdfText("", 0)
    assert "PDF has no extractable text layer (scanned/image-only PDF)" in caplog.messages


def test_an_encrypted_pdf_is_refused_gracefully(caplog: pytest.LogCaptureFixture) -> None:
    raw = encrypted_pdf()
    assert raw.startswith(b"%PDF-")
    with caplog.at_level(logging.WARNING, logger="engine.images"):
        assert extract_pdf_text(raw) is None
    assert "PDF extraction failed: encrypted PDF" in caplog.messages


def test_the_page_cap() -> None:
    at_cap = extract_pdf_text(build_pdf([f"p{i}" for i in range(PDF_MAX_PAGES)]))
    assert at_cap is not None
    assert at_cap.page_count == PDF_MAX_PAGES
    assert extract_pdf_text(build_pdf(["x"] * (PDF_MAX_PAGES + 1))) == PdfText(PDF_LIMIT_TEXT, 0)


def test_the_text_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pdf_mod, "PDF_MAX_TEXT_BYTES", 10)
    assert extract_pdf_text(build_pdf(["12345", "67890"])) == PdfText("12345\n\n67890", 2)
    assert extract_pdf_text(build_pdf(["12345", "678901"])) == PdfText(PDF_LIMIT_TEXT, 0)


def test_the_input_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    raw = build_pdf(["x"])
    monkeypatch.setattr(pdf_mod, "PDF_MAX_INPUT_BYTES", len(raw) - 1)
    assert extract_pdf_text(raw) == PdfText(PDF_LIMIT_TEXT, 0)
    assert extract_pdf_base64(base64.b64encode(raw).decode()) == PdfText(PDF_LIMIT_TEXT, 0)
    assert extract_pdf_base64(base64.b64encode(b"x" * len(raw)).decode()) is None


def test_a_pypdf_decode_limit_is_the_safety_sentinel(monkeypatch: pytest.MonkeyPatch) -> None:
    def explode(reader: object) -> str:
        raise LimitReachedError("declared stream length too large")

    monkeypatch.setattr(pdf_mod, "_page_texts", explode)
    assert extract_pdf_text(build_pdf(["x"])) == PdfText(PDF_LIMIT_TEXT, 0)


def test_markers_are_exact() -> None:
    pdf = PdfText("Hello", 2)
    assert pdf_text_marker(pdf) == "\n[PDF Document \u2014 2 page(s)]\nHello\n"
    assert pdf_text_marker(pdf, "report.pdf") == '\n[PDF Document "report.pdf" \u2014 2 page(s)]\nHello\n'
    assert PDF_SCANNED_MARKER == "\n[PDF Document \u2014 no extractable text (scanned/image-only PDF)]\n"
    assert PDF_LIMIT_TEXT == "PDF \u5185\u5bb9\u65e0\u6cd5\u63d0\u53d6"
