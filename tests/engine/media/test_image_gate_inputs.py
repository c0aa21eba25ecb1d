"""What the image gate makes of its input text: lenient base64 (Node's ``Buffer.from(s, 'base64')``
stops at the first ``=``), the data-URL parsers' errors, the declared MIME of an image the gate
refuses, and the per-request verdict cache's key."""

from __future__ import annotations

import pytest

from engine.media.gate import (
    MAX_SIZE,
    DataUrlError,
    ImageData,
    ImageSettings,
    ImageVerdicts,
    ShrinkOutcome,
    ShrinkResult,
    b64decode_lenient,
    decoded_size,
    parse_data_url,
    parse_generic_data_url,
    shrink_image,
)
from tests.support.imagegen import b64

REFUSED = "not a PNG, JPEG, GIF or WebP image (magic bytes); refused"
GARBAGE = b64(b"not an image at all")
AT_CAP = "A" * 6_990_507  # decodes to exactly MAX_SIZE bytes; one more character adds a byte

# --- lenient base64 -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "decoded"),
    [
        ("aGk=aGk=", b"hi"),  # everything after the first '=' is ignored, even more base64
        ("aGk=\n=aGVsbG8", b"hi"),
        ("aGVsbG8=aGk", b"hello"),
        ("=aGk=", b""),
        ("aGVsbG8", b"hello"),
    ],
)
def test_base64_ends_at_the_first_padding_character(data: str, decoded: bytes) -> None:
    assert b64decode_lenient(data) == decoded
    assert decoded_size(data) == len(decoded)


# --- data URLs ------------------------------------------------------------------------------------


@pytest.mark.parametrize("url", ["data:text/plain;base64,aGk=", "data:image/png,raw", "https://example.com/a.png"])
def test_a_url_that_is_no_image_data_url_is_malformed(url: str) -> None:
    with pytest.raises(DataUrlError) as info:
        parse_data_url(url)
    assert (info.value.reason, str(info.value)) == ("malformed", "not an image data URL")


def test_a_generic_data_url_is_capped_at_max_size_decoded_bytes() -> None:
    at_cap = parse_generic_data_url("data:Application/PDF;base64," + AT_CAP)
    assert at_cap == ImageData(AT_CAP, "application/pdf")
    with pytest.raises(DataUrlError) as info:
        parse_generic_data_url("data:application/pdf;base64," + AT_CAP + "A")
    assert (info.value.reason, str(info.value)) == ("too_large", f"Data URL exceeds {MAX_SIZE} byte limit")


# --- the declared MIME of a refused image ---------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "declared", "mime", "fmt"),
    [
        ("", "image/png", "image/png", "png"),
        ("", "", "image/png", "png"),  # no declared MIME means image/png
        (GARBAGE, "", "image/png", "png"),
        (GARBAGE, "Image/HEIC", "image/heic", None),
        (GARBAGE, "IMAGE/WEBP", "image/webp", "webp"),
    ],
)
def test_a_refused_image_keeps_its_text_and_its_lower_cased_declared_mime(
    data: str, declared: str, mime: str, fmt: str | None
) -> None:
    result = shrink_image(ImageData(data, declared))
    assert result == ShrinkResult(ShrinkOutcome.DROPPED, ImageData(data, mime), REFUSED, fmt, None, None, False)


# --- the verdict cache ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("first", "second"),
    [
        (ImageData("", "image/png"), ImageData("XXXX", "image/png")),
        (ImageData(GARBAGE, "image/heic"), ImageData(GARBAGE, "image/avif")),
        (ImageData(GARBAGE, ""), ImageData(GARBAGE, "XXXX")),
    ],
)
def test_each_image_text_and_declared_mime_gets_its_own_verdict(first: ImageData, second: ImageData) -> None:
    verdicts = ImageVerdicts()
    settings = ImageSettings()
    assert verdicts.decide(first, settings) == shrink_image(first, settings)
    assert verdicts.decide(second, settings) == shrink_image(second, settings)
    assert verdicts.decide(second, settings) != verdicts.decide(first, settings)
