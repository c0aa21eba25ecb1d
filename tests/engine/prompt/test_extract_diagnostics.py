"""extractImages never raises, so what an operator sees of a block that yields nothing is its log line:
each failure path, its exact warning (or its silence), the PDF extraction record, the catch-all for a
block that breaks mid-way, and the once-per-call decode of the same bytes."""

from __future__ import annotations

import logging

import pytest

from engine.media.gate import ImageData, ImageSettings
from engine.prompt.extract import Extracted, content_to_string, extract_images
from tests.support.imagegen import b64, count_decodes, solid
from tests.support.pdfgen import pdf_b64

SETTINGS = ImageSettings()
PNG = b64(solid(6, 4))
NOT_AN_IMAGE = b64(b"plain text, no magic bytes here")
SCANNED = "\n[PDF Document \u2014 no extractable text (scanned/image-only PDF)]\n"
LONG_FTP = "ftp://files.example/a/very/long/path/to/the/image.png"
LONG_CSV = "data:text/csv;base64," + "Y" * 60


class _Recorder:
    """A fetcher that records the URLs it is asked for and serves nothing."""

    def __init__(self) -> None:
        self.urls: list[str] = []

    def __call__(self, url: str) -> ImageData:
        self.urls.append(url)
        raise RuntimeError("upstream exploded")


def _messages(caplog: pytest.LogCaptureFixture, level: int) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "engine.images" and r.levelno == level]


# (id, block, text, warnings): every block is image-like and yields no image, so each counts once.
_FAILURES: list[tuple[str, dict[str, object], str, list[str]]] = [
    (
        "url source whose url is not a string",
        {"type": "image", "source": {"type": "url", "url": 5}},
        "",
        ["Image extraction failed: image URL is not a string"],
    ),
    (
        "base64 source whose data is not a string",
        {"type": "image", "source": {"type": "base64", "data": 12345}},
        "",
        ["Image extraction failed: image data is not a base64 string"],
    ),
    (
        "source of another type",
        {"type": "image", "source": {"type": "file", "file_id": "f"}},
        "",
        ["Image extraction failed: no usable image source"],
    ),
    (
        "source of another type carrying data and a url",
        {"type": "image", "source": {"type": "file", "data": PNG, "url": "https://img.example/a.png"}},
        "",
        ["Image extraction failed: no usable image source"],
    ),
    (
        "unrecognised bytes declared as a non-gated type",
        {"type": "image", "source": {"type": "base64", "media_type": "image/bmp", "data": NOT_AN_IMAGE}},
        "",
        ["Image skipped: not a PNG, JPEG, GIF or WebP image (magic bytes); refused (format=unknown, ?x?)"],
    ),
    (
        "unrecognised bytes without a declared type are judged as png",
        {"type": "image", "source": {"data": NOT_AN_IMAGE}},
        "",
        ["Image skipped: not a PNG, JPEG, GIF or WebP image (magic bytes); refused (format=png, ?x?)"],
    ),
    (
        "image_url without a url",
        {"type": "image_url", "image_url": {}},
        "",
        ["Image fetch failed: unsupported image URL ''"],
    ),
    (
        "image_url whose url is not a string",
        {"type": "image_url", "image_url": {"url": 5}},
        "",
        ["Image fetch failed: image_url.url is not a string"],
    ),
    (
        "unsupported scheme, quoted to 40 characters",
        {"type": "image_url", "image_url": {"url": LONG_FTP}},
        "",
        ["Image fetch failed: unsupported image URL 'ftp://files.example/a/very/long/path/to/'"],
    ),
    (
        "malformed pdf data url in image_url",
        {"type": "image_url", "image_url": {"url": "data:application/pdf,not-base64"}},
        "",
        [],
    ),
    (
        "malformed pdf data url in a file block",
        {"type": "file", "file": {"file_data": "data:application/pdf,not-base64"}},
        "",
        [],
    ),
    ("file block with neither data nor id", {"type": "file", "file": {}}, "", []),
    (
        "file block with another data url and a file id",
        {"type": "file", "file": {"file_data": "data:text/csv;base64,YSxi", "file_id": "file-9"}},
        "",
        ["File block references file_id=file-9 \u2014 upload API not supported, skipping"],
    ),
    (
        "file block with another data url, quoted to 40 characters",
        {"type": "input_file", "file": {"file_data": LONG_CSV}},
        "",
        ["Unsupported file block data URL: " + LONG_CSV[:40] + "..."],
    ),
    (
        "document that is not a pdf",
        {"type": "document", "source": {"media_type": "text/plain", "data": "aGk="}},
        "",
        [],
    ),
    (
        "pdf document whose data is not a string",
        {"type": "document", "source": {"media_type": "application/pdf", "data": 12345}},
        SCANNED,
        [],
    ),
]


@pytest.mark.parametrize(("block", "text", "warnings"), [c[1:] for c in _FAILURES], ids=[c[0] for c in _FAILURES])
def test_a_block_that_yields_no_image_logs_exactly_why(
    block: dict[str, object], text: str, warnings: list[str], caplog: pytest.LogCaptureFixture
) -> None:
    fetcher = _Recorder()
    with caplog.at_level(logging.WARNING, logger="engine.images"):
        result = extract_images([block], fetcher=fetcher, settings=SETTINGS)
    assert result == Extracted(text, [], 1)
    assert _messages(caplog, logging.WARNING) == warnings
    assert fetcher.urls == []


@pytest.mark.parametrize(
    ("block", "record"),
    [
        (
            {"type": "document", "source": {"media_type": "application/pdf", "data": pdf_b64(["Hi"])}},
            "PDF extracted: 1 pages, 2 chars",
        ),
        (
            {"type": "image_url", "image_url": {"url": "data:application/pdf;base64," + pdf_b64(["One", "Two"])}},
            "PDF extracted (image_url data URL): 2 pages, 8 chars",
        ),
        (
            {"type": "file", "file": {"file_data": "data:application/pdf;base64," + pdf_b64(["Body"])}},
            "PDF extracted (OpenAI file block): 1 pages, 4 chars",
        ),
    ],
    ids=["document", "image_url", "file"],
)
def test_an_extracted_pdf_is_recorded_with_its_origin_pages_and_characters(
    block: dict[str, object], record: str, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="engine.images"):
        result = extract_images([block], fetcher=_Recorder(), settings=SETTINGS)
    assert result.text.startswith("\n[PDF Document \u2014 ")
    assert _messages(caplog, logging.INFO) == [record]


def test_a_block_that_breaks_mid_extraction_is_logged_and_the_others_are_kept(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # A file_id nested deeper than the recursion limit cannot be rendered for its log line.
    nested: list[object] = []
    for _ in range(5000):
        nested = [nested]
    content = [
        {"type": "text", "text": "before "},
        {"type": "file", "file": {"file_id": nested}},
        {"type": "text", "text": "after"},
    ]
    with caplog.at_level(logging.WARNING, logger="engine.images"):
        result = extract_images(content, fetcher=_Recorder(), settings=SETTINGS)
    assert result == Extracted("before after", [], 1)
    [warning] = _messages(caplog, logging.WARNING)  # the depth error's wording varies with where it hits
    assert warning.startswith("Image extraction failed: maximum recursion depth exceeded")


def test_the_same_bytes_are_decoded_once_per_call_whether_or_not_png_is_declared(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    loads = count_decodes(monkeypatch)
    content = [
        {"type": "image", "source": {"data": PNG}},  # the declared type defaults to image/png
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}},
        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}},
    ]
    result = extract_images(content, fetcher=_Recorder(), settings=SETTINGS)  # no verdicts: a fresh one
    assert result == Extracted("", [ImageData(PNG, "image/png")] * 3, 0)
    assert loads == [(6, 4)]


def test_a_value_json_cannot_express_renders_as_nothing() -> None:
    # JSON.stringify gives undefined for it, and undefined joins as ''.
    assert content_to_string(b"raw bytes") == ""
    assert content_to_string(["a", {1, 2}, "b"]) == '"a""b"'
