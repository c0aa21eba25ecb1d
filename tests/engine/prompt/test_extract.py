"""The content model: placeholders, contentToString parity, and extractImages per block type, with
real images, real PDFs and a real loopback image server."""

from __future__ import annotations

import base64
import logging
from functools import partial

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.media.fetch import FetchPolicy, ImageFetchError, fetch_image_url
from engine.media.gate import MAX_BASE64_LEN, MAX_SIZE, ImageData, ImageSettings
from engine.prompt.extract import (
    BINARY_PLACEHOLDER,
    IMAGE_PLACEHOLDER,
    Extracted,
    content_to_string,
    extract_images,
    is_image_like_block,
    safe_block_to_string,
)
from tests.support.image_server import ImageServer
from tests.support.imagegen import b64, gradient, jpeg_header_only, noise, padded_png, solid
from tests.support.pdfgen import pdf_b64

SETTINGS = ImageSettings()
PNG = b64(solid(6, 4))
JPEG = b64(solid(6, 4, "JPEG"))
SCANNED = "\n[PDF Document \u2014 no extractable text (scanned/image-only PDF)]\n"


class _Recorder:
    """A fetcher that records URLs and serves one image (or fails)."""

    def __init__(self, image: ImageData | None = None) -> None:
        self.image = image
        self.urls: list[str] = []

    def __call__(self, url: str) -> ImageData:
        self.urls.append(url)
        if self.image is None:
            raise RuntimeError("upstream exploded")
        return self.image


def _extract(content: object, fetcher: _Recorder | None = None, settings: ImageSettings = SETTINGS) -> Extracted:
    return extract_images(content, fetcher=fetcher or _Recorder(), settings=settings)


# --- placeholders and contentToString (client.js parity) ---------------------------------------


def test_placeholders_are_exact() -> None:
    assert IMAGE_PLACEHOLDER == "[Image omitted from text history]"
    assert len(IMAGE_PLACEHOLDER) == 33
    assert BINARY_PLACEHOLDER == "[Binary content omitted from text history]"


def test_image_base64_never_reaches_replayed_text() -> None:
    data = "iVBORw0KGgo" * 30
    text = content_to_string(
        [{"type": "text", "text": "look at this"}, {"type": "image", "source": {"type": "base64", "data": data}}]
    )
    assert text == "look at this" + IMAGE_PLACEHOLDER
    assert data not in text


def test_blocks_are_joined_without_a_separator() -> None:
    assert content_to_string([{"type": "text", "text": "look"}, {"type": "image_url", "image_url": {"url": "x"}}]) == (
        "look[Image omitted from text history]"
    )


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ([{"type": "audio", "data": "A" * 200}], BINARY_PLACEHOLDER),
        ([{"type": "audio", "data": "A" * 127}], '{"type":"audio","data":"' + "A" * 127 + '"}'),
        (
            [{"type": "audio", "data": "A" * 100 + "-" + "A" * 100}],
            '{"type":"audio","data":"' + "A" * 100 + "-" + "A" * 100 + '"}',
        ),
        ([{"kind": {"data": "B" * 128}}], BINARY_PLACEHOLDER),
        ([{"media_type": "image/png", "data": "AAAA"}], IMAGE_PLACEHOLDER),
        ([{"source": {"type": "base64", "media_type": "image/png", "data": "AAAA"}}], IMAGE_PLACEHOLDER),
        ([{"type": "IMAGE"}], IMAGE_PLACEHOLDER),
        ([{"type": ["image"]}], IMAGE_PLACEHOLDER),  # String(['image']) === 'image'
        ([{"type": "tool_result", "content": "beta"}], '{"type":"tool_result","content":"beta"}'),
        ([{"type": "image", "text": "caption"}], "caption"),  # a string text wins over the placeholder
        (["plain", None, 5, 1.0, True], '"plain"""51true'),
        ([{"b": 1, "2": 2, "1": "\u00e9"}], '{"1":"\u00e9","2":2,"b":1}'),
        ({"type": "text", "text": "hello"}, '{"type":"text","text":"hello"}'),
        (7, "7"),
        (None, ""),
        ("plain", "plain"),
        ([], ""),
    ],
)
def test_content_to_string_matches_the_baseline(content: object, expected: str) -> None:
    assert content_to_string(content) == expected


def test_safe_block_to_string_keeps_unknown_blocks_as_json() -> None:
    assert safe_block_to_string({"type": "tool_use", "input": {"q": 1.5}}) == '{"type":"tool_use","input":{"q":1.5}}'
    assert safe_block_to_string(None) == '""'


@pytest.mark.parametrize(
    ("block", "expected"),
    [
        ({"type": "image"}, True),
        ({"type": "Image_URL"}, True),
        ({"type": "input_image"}, True),
        ({"type": "document"}, True),
        ({"type": "file"}, True),
        ({"type": "input_file"}, True),
        ({"type": "text", "image_url": {"url": "x"}}, True),
        ({"image_url": {}}, True),  # an empty object is truthy in JS
        ({"image_url": ""}, False),
        ({"image_url": 0}, False),
        ({"source": {"type": "base64"}}, True),
        ({"source": {"type": "url"}}, False),
        ({"source": "base64"}, False),
        ({"media_type": "image/webp"}, True),
        ({"media_type": "Image/webp"}, False),
        ({"media_type": ["image/"]}, False),
        ({"type": "text", "text": "x"}, False),
        ({"type": "tool_result"}, False),
        ("image", False),
        (None, False),
        (["image"], False),
        (5, False),
    ],
)
def test_is_image_like_block(block: object, expected: bool) -> None:
    assert is_image_like_block(block) is expected


_scalars = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12)
_json = st.recursive(
    _scalars,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3),
    max_leaves=12,
)
_block_keys = st.sampled_from(["type", "text", "source", "image_url", "media_type", "data", "file", "x"])
_type_values = st.sampled_from(["image", "IMAGE", "image_url", "input_image", "document", "file", "input_file", "text"])
_blocks = st.dictionaries(_block_keys, _json | _type_values | st.just("image/png"), max_size=5)


def _oracle(block: dict[str, object]) -> bool:
    """The rule stated independently: image-ish type (case-insensitive), a base64 source, a JS-truthy
    image_url, or a media_type string starting with image/."""
    raw_type = block.get("type")
    type_text = raw_type.lower() if isinstance(raw_type, str) else None
    if isinstance(raw_type, list) and len(raw_type) == 1 and isinstance(raw_type[0], str):
        type_text = raw_type[0].lower()
    image_types = {"image", "image_url", "input_image", "document", "file", "input_file"}
    source = block.get("source")
    image_url = block.get("image_url")
    truthy_url = image_url not in (None, False, 0, "") and not (isinstance(image_url, float) and image_url != image_url)
    media_type = block.get("media_type")
    return (
        type_text in image_types
        or (isinstance(source, dict) and source.get("type") == "base64")
        or truthy_url
        or (isinstance(media_type, str) and media_type.startswith("image/"))
    )


@given(_blocks)
def test_is_image_like_block_agrees_with_the_rules(block: dict[str, object]) -> None:
    assert is_image_like_block(block) is _oracle(block)


@given(_json)
def test_content_to_string_never_raises(content: object) -> None:
    assert isinstance(content_to_string(content), str)
    assert isinstance(content_to_string([content, content]), str)


# --- extractImages: shapes ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "text"),
    [("hello", "hello"), (None, ""), (5, "5"), ({"type": "text", "text": "x"}, "[object Object]"), (True, "true")],
)
def test_non_list_content_is_stringified(content: object, text: str) -> None:
    assert _extract(content) == Extracted(text, [], 0)


def test_text_blocks_strings_and_falsy_blocks() -> None:
    content = ["a", None, 0, "", False, {"type": "text", "text": "b"}, {"type": "text", "text": 7}, {"type": "text"}]
    assert _extract(content) == Extracted("ab7", [], 0)


def test_unknown_blocks_add_nothing() -> None:
    content = [{"type": "input_text", "text": "dropped"}, {"type": "tool_result", "content": "x"}, [1], 3]
    assert _extract(content) == Extracted("", [], 0)


def test_base64_image_block() -> None:
    block = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}}
    result = _extract([{"type": "text", "text": "see"}, block])
    assert result == Extracted("see", [ImageData(PNG, "image/png")], 0)


def test_source_without_type_and_missing_media_type_default_to_png() -> None:
    result = _extract([{"type": "image", "source": {"data": PNG}}])
    assert result.images == [ImageData(PNG, "image/png")]


def test_declared_mime_is_corrected_from_the_bytes() -> None:
    block = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": JPEG}}
    assert _extract([block]).images == [ImageData(JPEG, "image/jpeg")]


def test_image_url_data_url() -> None:
    result = _extract([{"type": "image_url", "image_url": {"url": f"data:image/jpeg;base64,{JPEG}"}}])
    assert result == Extracted("", [ImageData(JPEG, "image/jpeg")], 0)


def test_url_sources_go_through_the_fetcher_once_each() -> None:
    fetcher = _Recorder(ImageData(PNG, "image/png"))
    content = [
        {"type": "image", "source": {"type": "url", "url": "https://img.example/a.png"}},
        {"type": "image_url", "image_url": {"url": "http://img.example/b.png"}},
        {"type": "image", "source": {"type": "base64", "data": PNG}},
        {"type": "text", "text": "t"},
    ]
    result = _extract(content, fetcher)
    assert fetcher.urls == ["https://img.example/a.png", "http://img.example/b.png"]
    assert result == Extracted("t", [ImageData(PNG, "image/png")] * 3, 0)


def test_images_never_appear_in_the_text() -> None:
    big = b64(noise(40, 40))
    content = [
        {"type": "text", "text": "a"},
        {"type": "image", "source": {"type": "base64", "data": big}},
        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{big}"}},
    ]
    result = _extract(content)
    assert result.text == "a"
    assert len(result.images) == 2


# --- extractImages: what yields no image is counted and logged ----------------------------------


def test_a_failed_fetch_is_logged_and_counted(caplog: pytest.LogCaptureFixture) -> None:
    content = [
        {"type": "image", "source": {"type": "url", "url": "https://img.example/a.png"}},
        {"type": "image_url", "image_url": {"url": "https://img.example/b.png"}},
    ]
    with caplog.at_level(logging.WARNING, logger="engine.images"):
        result = _extract(content, _Recorder(None))
    assert result == Extracted("", [], 2)
    assert "Image extraction failed: upstream exploded" in caplog.messages
    assert "Image fetch failed: upstream exploded" in caplog.messages


def test_an_oversized_data_url_is_logged_not_raised(caplog: pytest.LogCaptureFixture) -> None:
    url = "data:image/png;base64," + "A" * (MAX_BASE64_LEN + 1)
    with caplog.at_level(logging.WARNING, logger="engine.images"):
        result = _extract([{"type": "image_url", "image_url": {"url": url}}])
    assert result == Extracted("", [], 1)
    assert "Image fetch failed: Image data URL exceeds 5242880 byte limit" in caplog.messages


@pytest.mark.parametrize(
    "block",
    [
        {"type": "image_url", "image_url": {"url": "data:text/plain;base64,aGk="}},
        {"type": "image_url", "image_url": {"url": "ftp://x/y.png"}},
        {"type": "image_url", "image_url": "https://img.example/a.png"},  # a bare string: image_url.url is undefined
        {"type": "image_url", "image_url": {"url": 5}},
        {"type": "image", "source": {"type": "file", "file_id": "f"}},
        {"type": "image", "source": {"type": "base64", "data": 12345}},
        {"type": "image", "source": {"type": "base64", "data": ""}},
        {"type": "input_image", "image_url": "data:image/png;base64," + PNG},
        {"type": "document", "source": {"media_type": "text/plain", "data": "aGk="}},
    ],
)
def test_image_like_blocks_without_an_image_are_counted(block: dict[str, object]) -> None:
    result = _extract([block])
    assert result.images == []
    assert result.unextractable == 1


@pytest.mark.invariant("IMG-7")
def test_a_shrink_dropped_image_is_skipped_logged_and_counted(caplog: pytest.LogCaptureFixture) -> None:
    gif = b64(noise(64, 64, "GIF"))
    with caplog.at_level(logging.WARNING, logger="engine.images"):
        result = _extract([{"type": "image", "source": {"data": gif}}], settings=ImageSettings(max_base64_len=100))
    assert result == Extracted("", [], 1)
    assert any(
        m.startswith("Image skipped: base64 length") and m.endswith("(format=gif, 64x64)") for m in caplog.messages
    )


@pytest.mark.invariant("IMG-7")
def test_a_resized_image_is_attached_and_logged(caplog: pytest.LogCaptureFixture) -> None:
    wide = b64(gradient(2000, 50))
    with caplog.at_level(logging.INFO, logger="engine.images"):
        result = _extract([{"type": "image", "source": {"data": wide}}])
    assert [img.mime_type for img in result.images] == ["image/jpeg"]
    assert result.unextractable == 0
    assert "Image re-encoded: re-encoded long side 2000px -> <=1568px JPEG" in caplog.messages


def test_an_oversized_but_unreencodable_image_is_attached_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    wide = b64(solid(2000, 10, "GIF"))
    with caplog.at_level(logging.WARNING, logger="engine.images"):
        result = _extract([{"type": "image", "source": {"data": wide}}])
    assert result.images == [ImageData(wide, "image/gif")]
    assert "Image oversized: long side 2000px exceeds 1568px (GIF forwarded as-is)" in caplog.messages


# --- PDFs: text channel only ---------------------------------------------------------------------


def test_document_pdf_becomes_marker_text_and_counts_as_unextractable() -> None:
    block = {"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": pdf_b64(["Hi"])}}
    result = _extract([{"type": "text", "text": "read:"}, block])
    assert result == Extracted("read:\n[PDF Document \u2014 1 page(s)]\nHi\n", [], 1)


def test_scanned_and_invalid_documents_give_the_scanned_marker() -> None:
    scanned = {"type": "document", "source": {"media_type": "APPLICATION/PDF", "data": pdf_b64([""])}}
    invalid = {"type": "document", "source": {"media_type": "application/pdf", "data": b64(b"not a pdf")}}
    assert _extract([scanned, invalid]).text == SCANNED * 2


def test_image_block_with_pdf_media_type_gives_text_only_when_there_is_some() -> None:
    with_text = {"type": "image", "source": {"media_type": "application/pdf", "data": pdf_b64(["Inside"])}}
    scanned = {"type": "image", "source": {"media_type": "application/pdf", "data": pdf_b64([""])}}
    result = _extract([with_text, scanned])
    assert result == Extracted("\n[PDF Document \u2014 1 page(s)]\nInside\n", [], 2)


def test_image_url_pdf_data_url() -> None:
    url = "data:application/pdf;base64," + pdf_b64(["One", "Two"])
    result = _extract([{"type": "image_url", "image_url": {"url": url}}])
    assert result == Extracted("\n[PDF Document \u2014 2 page(s)]\nOne\n\nTwo\n", [], 1)
    scanned = _extract([{"type": "image_url", "image_url": {"url": "data:application/pdf;base64," + pdf_b64([""])}}])
    assert scanned.text == SCANNED


def test_openai_file_block_with_filename() -> None:
    file = {"filename": "report.pdf", "file_data": "data:application/pdf;base64," + pdf_b64(["Body"])}
    result = _extract([{"type": "file", "file": file}])
    assert result == Extracted('\n[PDF Document "report.pdf" \u2014 1 page(s)]\nBody\n', [], 1)
    unnamed = _extract([{"type": "input_file", "file": {"url": "data:application/pdf;base64," + pdf_b64(["B"])}}])
    assert unnamed.text == "\n[PDF Document \u2014 1 page(s)]\nB\n"
    scanned = {"filename": "scan.pdf", "file_data": "data:application/pdf;base64," + pdf_b64([""])}
    assert _extract([{"type": "file", "file": scanned}]).text == SCANNED


def test_file_ids_and_other_data_urls_are_logged_as_unsupported(caplog: pytest.LogCaptureFixture) -> None:
    content = [
        {"type": "file", "file": {"file_id": "file-123"}},
        {"type": "file", "file": {"file_data": "data:text/csv;base64,YSxi"}},
        {"type": "file", "file": {"file_data": "data:application/pdf;base64," + "A" * (MAX_BASE64_LEN + 1)}},
    ]
    with caplog.at_level(logging.WARNING, logger="engine.images"):
        result = _extract(content)
    assert result == Extracted("", [], 3)
    assert "File block references file_id=file-123 \u2014 upload API not supported, skipping" in caplog.messages
    assert "Unsupported file block data URL: data:text/csv;base64,YSxi..." in caplog.messages
    assert "PDF extraction failed: Data URL exceeds 5242880 byte limit" in caplog.messages


# --- the real fetcher, the same guard for every turn --------------------------------------------


@pytest.mark.invariant("IMG-7")
def test_the_default_fetcher_refuses_internal_urls(fresh: ImageServer, caplog: pytest.LogCaptureFixture) -> None:
    content = [
        {"type": "image_url", "image_url": {"url": fresh.url("/img.png")}},
        {"type": "image", "source": {"type": "url", "url": "http://169.254.169.254/latest/meta-data"}},
    ]
    with caplog.at_level(logging.WARNING, logger="engine.images"):
        result = extract_images(content, fetcher=None, settings=SETTINGS)
    assert result == Extracted("", [], 2)
    assert fresh.requests == []
    assert "Image fetch failed: Image URL targets a private/internal address" in caplog.messages


@pytest.mark.invariant("IMG-7")
def test_url_images_are_fetched_through_the_guard_and_gated(fresh: ImageServer) -> None:
    fetcher = partial(fetch_image_url, policy=FetchPolicy(allow_loopback_for_tests=True, timeout=3.0))
    content = [
        {"type": "image_url", "image_url": {"url": fresh.url("/img.png")}},
        {"type": "image", "source": {"type": "url", "url": fresh.url("/redirect/1")}},
        {"type": "image_url", "image_url": {"url": fresh.url("/html")}},
        {"type": "image_url", "image_url": {"url": fresh.url("/announce-big")}},
    ]
    result = extract_images(content, fetcher=fetcher, settings=SETTINGS)
    png = base64.b64encode(fresh.png).decode("ascii")
    assert result == Extracted("", [ImageData(png, "image/png")] * 2, 2)
    assert [r.path for r in fresh.requests] == ["/img.png", "/redirect/1", "/redirect/0", "/html", "/announce-big"]


@pytest.mark.invariant("IMG-7")
def test_a_single_block_extraction_fetches_only_that_block() -> None:
    # The history selector extracts one block at a time and stops once its caps are spent, so a
    # block it never hands over is never fetched.
    fetcher = _Recorder(ImageData(PNG, "image/png"))
    blocks = [{"type": "image_url", "image_url": {"url": f"https://img.example/{i}.png"}} for i in range(3)]
    result = extract_images([blocks[2]], fetcher=fetcher, settings=SETTINGS)
    assert result.images == [ImageData(PNG, "image/png")]
    assert fetcher.urls == ["https://img.example/2.png"]


def test_an_image_fetch_error_subclass_is_what_the_default_fetcher_raises() -> None:
    with pytest.raises(ImageFetchError):
        fetch_image_url("http://127.0.0.1/x.png")


@pytest.mark.invariant("IMG-8")
def test_extraction_is_deterministic() -> None:
    content = [
        {"type": "text", "text": "x"},
        {"type": "image", "source": {"data": b64(gradient(1800, 40))}},
        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}},
        {"type": "document", "source": {"media_type": "application/pdf", "data": pdf_b64(["d"])}},
    ]
    assert _extract(content) == _extract(content)


@given(st.lists(_json | _blocks, max_size=5))
def test_extract_images_never_raises(content: list[object]) -> None:
    result = _extract(content, _Recorder(None))
    assert isinstance(result.text, str)
    assert result.unextractable <= sum(1 for block in content if is_image_like_block(block))
    assert len(result.images) + result.unextractable <= len(content)


# --- the decode guard and the exact 5 MiB cap, in extraction --------------------------------------


@pytest.mark.invariant("IMG-7")
@pytest.mark.invariant("IMG-4")
def test_undecodable_images_are_dropped_logged_and_counted_however_they_arrive(
    caplog: pytest.LogCaptureFixture,
) -> None:
    truncated = b64(solid(100, 100)[:60])
    header_only = b64(jpeg_header_only(64, 48))
    fetcher = _Recorder(ImageData(b64(solid(2000, 1500)[:300]), "image/png"))
    content = [
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": truncated}},
        {"type": "image_url", "image_url": {"url": f"data:image/jpeg;base64,{header_only}"}},
        {"type": "image_url", "image_url": {"url": "https://img.example/cut.png"}},
        {"type": "image", "source": {"type": "base64", "data": PNG}},
    ]
    with caplog.at_level(logging.WARNING, logger="engine.images"):
        result = _extract(content, fetcher)
    assert result == Extracted("", [ImageData(PNG, "image/png")], 3)
    skipped = [m for m in caplog.messages if m.startswith("Image skipped: undecodable: ")]
    assert [m.rsplit("(", 1)[1] for m in skipped] == [
        "format=png, 100x100)",
        "format=jpeg, 64x48)",
        "format=png, 2000x1500)",
    ]


@pytest.mark.parametrize(("size", "extracted"), [(MAX_SIZE - 1, 1), (MAX_SIZE, 1), (MAX_SIZE + 1, 0)])
@pytest.mark.invariant("IMG-7")
def test_a_data_url_image_is_refused_one_decoded_byte_over_5_mib(size: int, extracted: int) -> None:
    raw = padded_png(size)
    result = _extract([{"type": "image_url", "image_url": {"url": f"data:image/png;base64,{b64(raw)}"}}])
    assert (len(result.images), result.unextractable) == (extracted, 1 - extracted)
    if extracted:
        assert result.images == [ImageData(b64(raw), "image/png")]
