"""PDF extraction at its exact limits: the input-size boundary (raw and base64), tolerance of a damaged
xref table, and the warning each refusal logs."""

from __future__ import annotations

import base64
import logging
import math
from collections.abc import Callable

import pytest
from pypdf.errors import LimitReachedError

import engine.media.pdf_text as pdf_mod
from engine.media.pdf_text import PDF_LIMIT_TEXT, PdfText, extract_pdf_base64, extract_pdf_text
from tests.support.pdfgen import build_pdf

LIMIT = PdfText(PDF_LIMIT_TEXT, 0)
RAW = build_pdf(["Hello"])
B64 = base64.b64encode(RAW).decode("ascii")


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [record.getMessage() for record in caplog.records if record.name == "engine.images"]


def _base64_ceiling(max_bytes: int) -> int:
    """The longest base64 payload decoded in full for ``max_bytes`` of PDF (4/3 of it, plus one group)."""
    return math.ceil(max_bytes * 4 / 3) + 4


def test_a_pdf_of_exactly_the_input_cap_is_read(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pdf_mod, "PDF_MAX_INPUT_BYTES", len(RAW))
    assert extract_pdf_text(RAW) == PdfText("Hello", 1)
    monkeypatch.setattr(pdf_mod, "PDF_MAX_INPUT_BYTES", len(RAW) - 1)
    assert extract_pdf_text(RAW) == LIMIT


def test_a_base64_payload_up_to_the_ceiling_is_decoded_and_one_character_more_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(pdf_mod, "PDF_MAX_INPUT_BYTES", len(RAW))
    ceiling = _base64_ceiling(len(RAW))
    # Line breaks are no part of the decoded size: the payload at the ceiling is still the whole PDF.
    at_ceiling = B64 + "\n" * (ceiling - len(B64))
    assert extract_pdf_base64(at_ceiling) == PdfText("Hello", 1)
    assert extract_pdf_base64(at_ceiling + "\n") == LIMIT


def test_an_oversized_base64_payload_that_is_no_pdf_is_not_a_pdf(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pdf_mod, "PDF_MAX_INPUT_BYTES", 30)
    not_pdf = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\0" * 40).decode("ascii")
    assert len(not_pdf) > _base64_ceiling(30)
    assert extract_pdf_base64(not_pdf) is None


@pytest.mark.parametrize("payload", [B64, "\r\n" + B64, " \r\n\t" + B64, "\n" * 9 + B64, "JV\nBE\nRi" + B64[6:]])
def test_an_oversized_base64_pdf_is_refused_whatever_foreign_characters_it_holds(
    monkeypatch: pytest.MonkeyPatch, payload: str
) -> None:
    """The decoder skips line breaks and other foreign characters, so they do not hide the PDF header of
    a payload too large to decode: it is refused with the sentinel, like the same PDF decoded in full."""
    monkeypatch.setattr(pdf_mod, "PDF_MAX_INPUT_BYTES", 30)
    assert len(payload) > _base64_ceiling(30)
    assert extract_pdf_text(RAW) == LIMIT
    assert extract_pdf_base64(payload) == LIMIT


def test_a_pdf_with_a_damaged_xref_table_is_still_read() -> None:
    broken = RAW.replace(b"startxref\n", b"startxref\n1")
    assert broken != RAW
    assert extract_pdf_text(broken) == PdfText("Hello", 1)


def _explode_with(error: Exception) -> Callable[[object], str]:
    def explode(reader: object) -> str:
        raise error

    return explode


def test_each_safety_limit_logs_its_reason(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="engine.images"), monkeypatch.context() as patch:
        patch.setattr(pdf_mod, "PDF_MAX_INPUT_BYTES", len(RAW) - 1)
        assert extract_pdf_text(RAW) == LIMIT
        assert extract_pdf_base64(B64 + "\n" * 10) == LIMIT
    with caplog.at_level(logging.WARNING, logger="engine.images"), monkeypatch.context() as patch:
        patch.setattr(pdf_mod, "PDF_MAX_PAGES", 1)
        assert extract_pdf_text(build_pdf(["one", "two"])) == LIMIT
    with caplog.at_level(logging.WARNING, logger="engine.images"), monkeypatch.context() as patch:
        patch.setattr(pdf_mod, "PDF_MAX_TEXT_BYTES", 4)
        assert extract_pdf_text(RAW) == LIMIT
    with caplog.at_level(logging.WARNING, logger="engine.images"), monkeypatch.context() as patch:
        patch.setattr(pdf_mod, "_page_texts", _explode_with(LimitReachedError("declared stream length too large")))
        assert extract_pdf_text(RAW) == LIMIT
    assert _warnings(caplog) == [
        "PDF extraction failed: PDF size exceeds safety limit",
        "PDF extraction failed: PDF size exceeds safety limit",
        "PDF extraction failed: PDF page count 2 exceeds safety limit 1",
        "PDF extraction failed: PDF decoded content exceeds safety limit",
        "PDF extraction failed: PDF decoded content exceeds safety limit (declared stream length too large)",
    ]


def test_a_parser_failure_logs_the_parser_message_and_gives_none(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(pdf_mod, "_page_texts", _explode_with(KeyError("/Contents")))
    with caplog.at_level(logging.WARNING, logger="engine.images"):
        assert extract_pdf_text(RAW) is None
    assert _warnings(caplog) == ["PDF extraction failed: '/Contents'"]
