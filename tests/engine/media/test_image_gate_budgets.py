"""The image gate's budgets and its re-encode, pinned as whole decisions on real Pillow images: the
long-side cap, the base64-length budget and the decode-pixel budget at limit-1/limit/limit+1, the
exact JPEG a re-encode makes (engine.md 1.A.5: bilinear scale, baseline JPEG from q=85), and what the
gate does when the JPEG encoder refuses a decoded image."""

from __future__ import annotations

import pytest

from engine.media.gate import ImageData, ImageSettings, ShrinkOutcome, ShrinkResult, shrink_image
from tests.engine.media.image_gate_support import golden_jpeg, jpeg_encoder_refusal, noise_png, wrapped
from tests.support.imagegen import b64, bomb_png, dims_of, noise, solid

# --- the long-side cap --------------------------------------------------------------------------


@pytest.mark.parametrize(("fmt", "mime"), [("png", "image/png"), ("jpeg", "image/jpeg")])
@pytest.mark.parametrize("width", [39, 40])
def test_an_image_with_a_long_side_at_most_the_cap_is_kept_as_given(fmt: str, mime: str, width: int) -> None:
    raw = noise(width, 30, fmt.upper())
    result = shrink_image(ImageData(b64(raw), mime), ImageSettings(max_long_side=40))
    assert result == ShrinkResult(ShrinkOutcome.KEPT, ImageData(b64(raw), mime), None, fmt, width, 30, False)


@pytest.mark.parametrize(("fmt", "mime"), [("png", "image/png"), ("jpeg", "image/jpeg")])
def test_a_png_or_jpeg_one_pixel_past_the_cap_is_scaled_bilinearly_to_it(fmt: str, mime: str) -> None:
    raw = noise(41, 30, fmt.upper())
    result = shrink_image(ImageData(b64(raw), mime), ImageSettings(max_long_side=40))
    # 30 * 40/41 = 29.27 -> 29; a baseline JPEG at the default quality 85
    expected = ImageData(golden_jpeg(raw, (40, 29)), "image/jpeg")
    reason = "re-encoded long side 41px -> <=40px JPEG"
    assert result == ShrinkResult(ShrinkOutcome.RESIZED, expected, reason, fmt, 41, 30, False)


@pytest.mark.parametrize("quality", [1, 85, 100])
def test_the_reencode_encodes_at_the_configured_quality(quality: int) -> None:
    raw = noise(41, 30)
    result = shrink_image(ImageData(b64(raw), "image/png"), ImageSettings(max_long_side=40, jpeg_quality=quality))
    assert result.outcome is ShrinkOutcome.RESIZED
    assert result.image.base64_data == golden_jpeg(raw, (40, 29), quality)


@pytest.mark.parametrize("mode", ["RGBA", "L", "P"])
def test_a_non_rgb_image_is_reencoded_as_an_rgb_jpeg(mode: str) -> None:
    raw = noise_png(41, 30, mode)
    result = shrink_image(ImageData(b64(raw), "image/png"), ImageSettings(max_long_side=40))
    assert result.outcome is ShrinkOutcome.RESIZED
    assert result.image == ImageData(golden_jpeg(raw, (40, 29)), "image/jpeg")


@pytest.mark.parametrize(("width", "height", "scaled"), [(60, 1, (40, 1)), (1, 60, (1, 40))])
def test_a_one_pixel_thin_image_keeps_its_one_pixel_side(width: int, height: int, scaled: tuple[int, int]) -> None:
    raw = noise(width, height)
    result = shrink_image(ImageData(b64(raw), "image/png"), ImageSettings(max_long_side=40))
    assert result.outcome is ShrinkOutcome.RESIZED
    assert dims_of(result.image.base64_data) == scaled
    assert result.image.base64_data == golden_jpeg(raw, scaled)


# --- the base64-length budget ---------------------------------------------------------------------


@pytest.mark.parametrize("slack", [-1, 0, 1])
def test_the_base64_budget_holds_an_image_of_exactly_its_length(slack: int) -> None:
    raw = solid(4, 4)
    length = len(b64(raw))
    settings = ImageSettings(max_base64_len=length + slack)
    result = shrink_image(ImageData(b64(raw), "image/png"), settings)
    if slack >= 0:
        assert result == ShrinkResult(ShrinkOutcome.KEPT, ImageData(b64(raw), "image/png"), None, "png", 4, 4, False)
    else:  # the JPEG of a 4x4 image is longer than its PNG: still over, so dropped
        reached = len(golden_jpeg(raw, (4, 4)))
        reason = f"base64 length {length} exceeds limit {length - 1}; re-encode reached {reached} but still over limit"
        dropped = ShrinkResult(ShrinkOutcome.DROPPED, ImageData(b64(raw), "image/png"), reason, "png", 4, 4, False)
        assert result == dropped


def test_a_byte_oversized_image_whose_jpeg_fits_is_replaced_by_it() -> None:
    raw = noise(60, 40)
    length = len(b64(raw))
    result = shrink_image(ImageData(b64(raw), "image/png"), ImageSettings(max_base64_len=length - 1))
    shrunk = golden_jpeg(raw, (60, 40))
    assert len(shrunk) < length - 1
    reason = f"re-encoded {length}B -> {len(shrunk)}B JPEG (was byte-oversized)"
    assert result == ShrinkResult(ShrinkOutcome.RESIZED, ImageData(shrunk, "image/jpeg"), reason, "png", 60, 40, False)


def test_a_long_side_reencode_over_the_base64_budget_forwards_the_original() -> None:
    raw = solid(60, 10)  # a solid PNG is far shorter than any JPEG of it
    length = len(b64(raw))
    settings = ImageSettings(max_long_side=50, max_base64_len=length)
    result = shrink_image(ImageData(wrapped(b64(raw), 40), "image/png"), settings)
    reason = "long side 60px exceeds 50px (forwarded as-is; re-encode unavailable)"
    # forwarded as the canonical base64 of the bytes that decoded, without the line breaks
    assert result == ShrinkResult(ShrinkOutcome.KEPT, ImageData(b64(raw), "image/png"), reason, "png", 60, 10, True)


# --- the JPEG encoder refuses ---------------------------------------------------------------------


def test_a_wide_image_the_jpeg_encoder_refuses_is_forwarded_as_decoded() -> None:
    raw = solid(65_600, 1)
    result = shrink_image(ImageData(wrapped(b64(raw)), "IMAGE/PNG"), ImageSettings(max_long_side=65_550))
    reason = "long side 65600px exceeds 65550px (forwarded as-is; re-encode unavailable)"
    assert result == ShrinkResult(ShrinkOutcome.KEPT, ImageData(b64(raw), "image/png"), reason, "png", 65_600, 1, True)


def test_a_byte_oversized_image_the_jpeg_encoder_refuses_is_dropped_with_the_encoder_error() -> None:
    raw = solid(65_600, 1)
    settings = ImageSettings(max_long_side=70_000, max_base64_len=100)
    result = shrink_image(ImageData(b64(raw), "image/png"), settings)
    reason = f"base64 length {len(b64(raw))} exceeds limit 100 and re-encode failed: {jpeg_encoder_refusal(65_600)}"
    assert result == ShrinkResult(
        ShrinkOutcome.DROPPED, ImageData(b64(raw), "image/png"), reason, "png", 65_600, 1, False
    )


# --- a dropped image's size flag ------------------------------------------------------------------


@pytest.mark.parametrize("width", [39, 40, 41])
def test_a_dropped_image_is_flagged_oversize_only_past_the_long_side_cap(width: int) -> None:
    raw = bomb_png(width, 10)
    result = shrink_image(ImageData(b64(raw), "image/png"), ImageSettings(max_long_side=40, max_decode_pixels=100))
    reason = f"decompression bomb: {width}x10 pixels exceeds the decode budget of 100"
    assert result == ShrinkResult(
        ShrinkOutcome.DROPPED, ImageData(b64(raw), "image/png"), reason, "png", width, 10, width > 40
    )


def test_a_png_with_a_damaged_signature_is_refused_with_the_size_its_header_declares() -> None:
    raw = b"\x88" + solid(50, 20)[1:]  # no PNG magic: refused, but the IHDR still reads as the declared PNG
    result = shrink_image(ImageData(b64(raw), "image/png"), ImageSettings(max_long_side=40))
    reason = "not a PNG, JPEG, GIF or WebP image (magic bytes); refused"
    assert result == ShrinkResult(ShrinkOutcome.DROPPED, ImageData(b64(raw), "image/png"), reason, "png", 50, 20, True)
