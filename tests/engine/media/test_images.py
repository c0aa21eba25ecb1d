"""The image gate: sniffing, header dimensions, settings, data URLs and the shrink pipeline, on real
Pillow-encoded images and hand-built hostile headers."""

from __future__ import annotations

import base64
import io

import pytest
from hypothesis import given
from hypothesis import strategies as st
from PIL import Image

import engine.media.gate as images_mod
from engine.media.gate import (
    IMAGE_JPEG_QUALITY,
    IMAGE_MAX_BYTES,
    IMAGE_MAX_LONG_SIDE,
    MAX_BASE64_LEN,
    MAX_DECODE_PIXELS,
    MAX_REDIRECTS,
    MAX_SIZE,
    MIME_OK,
    MIN_JPEG_QUALITY,
    MIN_LONG_SIDE,
    DataUrlError,
    ImageData,
    ImageSettings,
    ShrinkOutcome,
    ShrinkResult,
    b64decode_lenient,
    decoded_size,
    parse_data_url,
    parse_generic_data_url,
    read_dimensions,
    shrink_image,
    sniff_base64,
    sniff_format,
)
from tests.support.imagegen import (
    FORMATS,
    FORMATS_MIME,
    b64,
    bomb_png,
    dims_of,
    encode,
    gradient,
    jpeg_with_far_sof,
    noise,
    solid,
)

# --- constants and settings ---------------------------------------------------------------------


def test_constants_match_the_baseline() -> None:
    assert MAX_SIZE == 5 * 1024 * 1024
    assert MAX_BASE64_LEN == 6_990_607  # ceil(MAX_SIZE * 4 / 3) + 100
    assert MAX_REDIRECTS == 3
    assert frozenset({"image/png", "image/jpeg", "image/webp", "image/gif"}) == MIME_OK
    assert (IMAGE_MAX_LONG_SIDE, IMAGE_MAX_BYTES, IMAGE_JPEG_QUALITY) == (1568, 400_000, 85)
    assert MAX_DECODE_PIXELS == 40 * 1024 * 1024
    assert (MIN_JPEG_QUALITY, MIN_LONG_SIDE) == (60, 128)


def test_settings_from_env_defaults_and_overrides() -> None:
    assert ImageSettings.from_env({}) == ImageSettings()
    env = {
        "WINDSURFAPI_IMAGE_MAX_LONG_SIDE": "1024",
        "WINDSURFAPI_IMAGE_MAX_BYTES": " 250000",
        "WINDSURFAPI_IMAGE_JPEG_QUALITY": "70abc",
    }
    assert ImageSettings.from_env(env) == ImageSettings(max_long_side=1024, max_bytes=250_000, jpeg_quality=70)


@pytest.mark.parametrize("raw", ["0", "-5", "abc", "", "  ", "0x10", "+0"])
def test_settings_from_env_accept_positive_ints_only(raw: str) -> None:
    env = dict.fromkeys(
        ("WINDSURFAPI_IMAGE_MAX_LONG_SIDE", "WINDSURFAPI_IMAGE_MAX_BYTES", "WINDSURFAPI_IMAGE_JPEG_QUALITY"), raw
    )
    assert ImageSettings.from_env(env) == ImageSettings()


def test_settings_reject_non_positive_values() -> None:
    with pytest.raises(ValueError, match="max_bytes"):
        ImageSettings(max_bytes=0)
    with pytest.raises(ValueError, match="jpeg_quality"):
        ImageSettings(jpeg_quality=True)


# --- sniffing and header dimensions -------------------------------------------------------------


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_sniff_real_images(fmt: str) -> None:
    raw = solid(33, 17, FORMATS[fmt])
    assert sniff_format(raw) == fmt
    assert sniff_base64(b64(raw)) == fmt


@pytest.mark.parametrize(
    "raw",
    [b"", b"\x89PN", b"\x89PNG\r\n\x1a", b"\xff\xd8\x00\x00", b"GIF88a", b"RIFF\0\0\0\0WEBQ", b"%PDF-1.4", b"hello"],
)
def test_sniff_rejects_near_misses(raw: bytes) -> None:
    assert sniff_format(raw) is None


@given(st.binary(max_size=64))
def test_sniff_never_raises_and_agrees_with_the_magic(raw: bytes) -> None:
    fmt = sniff_format(raw)
    expected = {
        "png": raw.startswith(b"\x89PNG\r\n\x1a\n"),
        "jpeg": len(raw) >= 4 and raw.startswith(b"\xff\xd8\xff"),
        "gif": raw[:6] in (b"GIF87a", b"GIF89a"),
        "webp": raw[:4] == b"RIFF" and raw[8:12] == b"WEBP",
    }
    assert fmt == next((name for name, hit in expected.items() if hit), None)
    assert sniff_base64(base64.b64encode(raw).decode()) == fmt


@pytest.mark.parametrize(
    ("fmt", "options"),
    [("PNG", {}), ("JPEG", {}), ("GIF", {}), ("WEBP", {"lossless": False}), ("WEBP", {"lossless": True})],
)
def test_header_dimensions_without_decoding(fmt: str, options: dict[str, object]) -> None:
    raw = encode(Image.new("RGB", (301, 77), (1, 2, 3)), fmt, **options)
    assert read_dimensions(b64(raw)) == (301, 77)


def test_header_dimensions_of_extended_webp() -> None:
    raw = encode(Image.new("RGBA", (300, 200), (1, 2, 3, 4)), "WEBP", lossless=False)
    assert raw[12:16] == b"VP8X"
    assert read_dimensions(b64(raw)) == (300, 200)


def test_header_dimensions_follow_the_bytes_not_the_hint() -> None:
    assert read_dimensions(b64(solid(10, 20, "JPEG")), "png") == (10, 20)
    assert read_dimensions(b64(b"garbage-garbage-garbage"), "png") is None
    assert read_dimensions("") is None


def test_lenient_base64_decoding_like_node() -> None:
    assert b64decode_lenient("aGVs\nbG8=") == b"hello"
    assert b64decode_lenient("aGVsbG8") == b"hello"  # missing padding
    assert b64decode_lenient("aGVsbG8=trailing") == b"hello"  # stops at '='
    assert b64decode_lenient("_-8") == base64.b64decode("/+8=")  # URL-safe alphabet
    assert b64decode_lenient("!!!") == b""


@given(st.text(alphabet="AZaz09+/-_=\n\r\t .!", max_size=80))
def test_decoded_size_is_what_lenient_decoding_makes_without_decoding(data: str) -> None:
    assert decoded_size(data) == len(b64decode_lenient(data))


# --- data URLs ------------------------------------------------------------------------------------


def test_parse_data_url() -> None:
    data = b64(solid(2, 2))
    assert parse_data_url(f"data:image/png;base64,{data}") == ImageData(data, "image/png")
    spaced = f" DATA:Image/PNG;BASE64,{data[:10]}\n {data[10:]}\t"
    assert parse_data_url(spaced) == ImageData(data, "image/png")
    assert parse_data_url("data:image/svg+xml;base64,PHN2Zz4=").mime_type == "image/svg+xml"


@pytest.mark.parametrize(
    "url",
    [
        "data:text/plain;base64,aGk=",
        "data:image/png,rawbytes",
        "data:image/png;base64,",
        "data:image/\u017fvg;base64,aGk=",  # LONG S never matches [a-z] case-insensitively (JS, no u flag)
        "http://example.com/a.png",
    ],
)
def test_parse_data_url_malformed(url: str) -> None:
    with pytest.raises(DataUrlError) as info:
        parse_data_url(url)
    assert info.value.reason == "malformed"


def test_parse_data_url_size_ceiling() -> None:
    at_limit = "A" * 6_990_507  # decodes to exactly MAX_SIZE bytes; one character more adds a byte
    assert decoded_size(at_limit) == MAX_SIZE
    assert len(parse_data_url("data:image/png;base64," + at_limit).base64_data) == 6_990_507
    with pytest.raises(DataUrlError) as info:
        parse_data_url("data:image/png;base64," + at_limit + "A")
    assert info.value.reason == "too_large"
    assert str(info.value) == f"Image data URL exceeds {MAX_SIZE} byte limit"


def test_parse_generic_data_url() -> None:
    assert parse_generic_data_url("data:application/pdf;base64,JVBERi0=") == ImageData("JVBERi0=", "application/pdf")
    assert parse_generic_data_url("data:;base64,JVBERi0=") is None
    with pytest.raises(DataUrlError):
        parse_generic_data_url("data:application/pdf;base64," + "A" * (MAX_BASE64_LEN + 1))


# --- shrink: kept ---------------------------------------------------------------------------------


def _shrink(raw: bytes, mime: str = "image/png", settings: ImageSettings | None = None) -> ShrinkResult:
    return shrink_image(ImageData(b64(raw), mime), settings or ImageSettings())


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_small_images_are_kept_byte_for_byte(fmt: str) -> None:
    raw = solid(40, 30, FORMATS[fmt])
    result = _shrink(raw, FORMATS_MIME[fmt])
    assert result.outcome is ShrinkOutcome.KEPT
    assert result.image == ImageData(b64(raw), FORMATS_MIME[fmt])
    assert (result.format, result.width, result.height, result.reason) == (fmt, 40, 30, None)


def test_magic_bytes_override_the_declared_mime() -> None:
    assert _shrink(solid(4, 4, "JPEG"), "image/png").image.mime_type == "image/jpeg"
    assert _shrink(solid(4, 4, "PNG"), "IMAGE/GIF").image.mime_type == "image/png"
    assert _shrink(solid(4, 4, "PNG"), "").image.mime_type == "image/png"


def test_undetectable_bytes_are_refused_whatever_the_declared_mime() -> None:
    for declared in ("Image/HEIC", "image/png", ""):
        result = shrink_image(ImageData(b64(b"not an image at all"), declared))
        assert result.outcome is ShrinkOutcome.DROPPED, declared
        assert result.reason == "not a PNG, JPEG, GIF or WebP image (magic bytes); refused"


# --- shrink: re-encode ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def big_noise() -> bytes:
    """1400x1300 RGB noise: over the 5 MiB base64 ceiling as a PNG."""
    return noise(1400, 1300, "PNG", compress_level=1)


@pytest.fixture(scope="module")
def big_result(big_noise: bytes) -> ShrinkResult:
    return _shrink(big_noise)


@pytest.mark.invariant("IMG-7")
def test_a_byte_oversized_image_is_reencoded_under_the_ceiling(big_noise: bytes, big_result: ShrinkResult) -> None:
    assert len(b64(big_noise)) > MAX_BASE64_LEN
    assert big_result.outcome is ShrinkOutcome.RESIZED
    assert big_result.image.mime_type == "image/jpeg"
    assert sniff_base64(big_result.image.base64_data) == "jpeg"
    assert len(big_result.image.base64_data) <= IMAGE_MAX_BYTES
    expected = f"re-encoded {len(b64(big_noise))}B -> {len(big_result.image.base64_data)}B JPEG (was byte-oversized)"
    assert big_result.reason == expected
    assert max(dims_of(big_result.image.base64_data)) <= IMAGE_MAX_LONG_SIDE


@pytest.mark.invariant("IMG-8")
def test_reencoding_is_deterministic(big_noise: bytes, big_result: ShrinkResult) -> None:
    assert _shrink(big_noise) == big_result


@pytest.mark.invariant("IMG-7")
def test_a_long_side_over_the_cap_is_reencoded_within_budget() -> None:
    raw = gradient(2000, 100)
    result = _shrink(raw)
    assert result.outcome is ShrinkOutcome.RESIZED
    assert result.reason == "re-encoded long side 2000px -> <=1568px JPEG"
    assert dims_of(result.image.base64_data) == (1568, 78)  # Math.round(100 * 0.784) = 78


def test_reencode_steps_quality_then_long_side_from_the_original(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[tuple[int, int], int]] = []
    real = images_mod._encode_jpeg

    def spy(img: Image.Image, quality: int) -> str:
        calls.append((img.size, quality))
        return real(img, quality)

    monkeypatch.setattr(images_mod, "_encode_jpeg", spy)
    raw = noise(400, 200, "PNG")
    result = _shrink(raw, settings=ImageSettings(max_long_side=300, max_bytes=1, max_base64_len=10**7))
    assert result.outcome is ShrinkOutcome.RESIZED
    sides = []
    for size, _ in calls:
        if max(size) not in sides:
            sides.append(max(size))
    assert sides == [300, 240, 192, 154, 128]  # *0.8 rounded half up, floor 128
    assert [q for _, q in calls] == [85, 75, 65, 60] * 5
    assert calls[4][0] == (240, 120)


def test_a_low_configured_quality_encodes_once_per_size(monkeypatch: pytest.MonkeyPatch) -> None:
    qualities: list[int] = []
    real = images_mod._encode_jpeg

    def spy(img: Image.Image, quality: int) -> str:
        qualities.append(quality)
        return real(img, quality)

    monkeypatch.setattr(images_mod, "_encode_jpeg", spy)
    _shrink(noise(200, 100), settings=ImageSettings(max_long_side=150, max_bytes=1, jpeg_quality=50))
    assert qualities == [50, 50]  # 150 -> 128


def test_a_reencode_still_over_the_ceiling_drops_the_image() -> None:
    raw = noise(300, 300, "PNG")
    result = _shrink(raw, settings=ImageSettings(max_base64_len=1000, max_bytes=500))
    assert result.outcome is ShrinkOutcome.DROPPED
    assert result.reason is not None
    assert "re-encode reached" in result.reason
    assert result.reason.endswith("but still over limit")
    assert result.image.base64_data == b64(raw)


@pytest.mark.invariant("IMG-7")
def test_byte_oversized_gif_is_dropped_without_reencode(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(images_mod, "_shrink_pixels", pytest.fail)
    raw = noise(64, 64, "GIF")
    result = _shrink(raw, "image/gif", ImageSettings(max_base64_len=100))
    assert result.outcome is ShrinkOutcome.DROPPED
    assert (
        result.reason == f"base64 length {len(b64(raw))} exceeds limit 100 and GIF is not re-encoded (may be animated)"
    )


def test_a_wide_gif_within_budget_is_forwarded_untouched(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(images_mod, "_shrink_pixels", pytest.fail)
    raw = solid(2000, 10, "GIF")
    result = _shrink(raw, "image/gif")
    assert result.outcome is ShrinkOutcome.KEPT
    assert result.image.base64_data == b64(raw)
    assert result.oversize_dimensions
    assert result.reason == "long side 2000px exceeds 1568px (GIF forwarded as-is)"


def test_webp_is_never_reencoded() -> None:
    wide = encode(Image.new("RGB", (2000, 10), (9, 9, 9)), "WEBP")
    kept = _shrink(wide, "image/webp")
    assert kept.outcome is ShrinkOutcome.KEPT
    assert kept.image.base64_data == b64(wide)
    assert kept.reason == "long side 2000px exceeds 1568px (forwarded as-is; re-encode unavailable)"
    big = noise(64, 64, "WEBP")
    dropped = _shrink(big, "image/webp", ImageSettings(max_base64_len=100))
    assert dropped.outcome is ShrinkOutcome.DROPPED
    assert dropped.reason is not None
    assert dropped.reason.endswith("re-encode failed: unsupported image format for re-encode (only PNG/JPEG)")


@pytest.mark.invariant("IMG-7")
def test_undecodable_oversized_data_is_dropped() -> None:
    raw = b"\x89PNG\r\n\x1a\n" + b"\x00" * 400
    result = _shrink(raw, settings=ImageSettings(max_base64_len=100))
    assert result.outcome is ShrinkOutcome.DROPPED
    assert result.reason is not None
    assert "re-encode failed" in result.reason


# --- decode bombs ---------------------------------------------------------------------------------


@pytest.fixture
def pillow_must_not_open(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> Image.Image:
        raise AssertionError("Pillow was asked to open a decode bomb")

    monkeypatch.setattr(Image, "open", refuse)


@pytest.mark.usefixtures("pillow_must_not_open")
@pytest.mark.invariant("IMG-7")
def test_a_decode_bomb_within_the_byte_budget_is_refused_without_decoding() -> None:
    raw = bomb_png(100_000, 100_000)
    result = _shrink(raw)
    assert (result.width, result.height) == (100_000, 100_000)
    assert result.outcome is ShrinkOutcome.DROPPED
    assert result.reason == ("decompression bomb: 100000x100000 pixels exceeds the decode budget of 41943040")


@pytest.mark.usefixtures("pillow_must_not_open")
@pytest.mark.invariant("IMG-7")
def test_a_byte_oversized_decode_bomb_is_dropped_without_decoding() -> None:
    raw = bomb_png(7000, 7000, padding=2000)  # 49 M pixels > 40 Mi budget
    result = _shrink(raw, settings=ImageSettings(max_base64_len=1000))
    assert result.outcome is ShrinkOutcome.DROPPED
    assert result.reason is not None
    assert result.reason.startswith("decompression bomb: 7000x7000 pixels")


@pytest.mark.invariant("IMG-7")
def test_the_budget_is_rechecked_on_the_size_pillow_parses() -> None:
    # The SOF sits past the 256 KiB header probe, so only Pillow's own header read sees the size.
    raw = jpeg_with_far_sof(solid(50, 40, "JPEG"))
    assert read_dimensions(b64(raw)) is None
    assert dims_of(b64(raw)) == (50, 40)
    result = _shrink(raw, "image/jpeg", ImageSettings(max_base64_len=1000, max_decode_pixels=1999))
    assert result.outcome is ShrinkOutcome.DROPPED
    assert result.reason is not None
    assert result.reason.endswith(
        "re-encode failed: decompression bomb: 50x40 pixels exceeds the decode budget of 1999"
    )


@pytest.mark.invariant("IMG-7")
def test_pillows_own_bomb_error_never_escapes() -> None:
    # 20000x20000 behind a far SOF: our header probe misses it, Pillow raises DecompressionBombError.
    raw = jpeg_with_far_sof(solid(50, 40, "JPEG"), sof_size=(20_000, 20_000))
    with pytest.raises(Image.DecompressionBombError), Image.open(io.BytesIO(raw)):
        pass
    result = _shrink(raw, "image/jpeg", ImageSettings(max_base64_len=1000))
    assert result.outcome is ShrinkOutcome.DROPPED
    assert result.reason is not None
    assert "re-encode failed" in result.reason


# --- properties -----------------------------------------------------------------------------------

_small_images = st.builds(
    lambda w, h, fmt, seed, textured: (noise(w, h, fmt, seed) if textured else solid(w, h, fmt), fmt),
    st.integers(1, 48),
    st.integers(1, 48),
    st.sampled_from(["PNG", "JPEG", "GIF", "WEBP"]),
    st.integers(0, 1000),
    st.booleans(),
)
_tight_settings = st.builds(
    ImageSettings,
    max_long_side=st.integers(1, 64),
    max_bytes=st.integers(1, 4000),
    jpeg_quality=st.integers(1, 100),
    max_base64_len=st.integers(1, 8000),
    max_decode_pixels=st.integers(1, 5000),
)


@given(_small_images, _tight_settings, st.sampled_from(["image/png", "image/jpeg", "", "text/plain"]))
@pytest.mark.invariant("IMG-7")
def test_shrink_never_passes_the_hard_ceiling(image: tuple[bytes, str], settings: ImageSettings, mime: str) -> None:
    raw, fmt = image
    result = shrink_image(ImageData(b64(raw), mime), settings)
    if result.outcome is not ShrinkOutcome.DROPPED:
        assert len(result.image.base64_data) <= settings.max_base64_len
    if result.outcome is ShrinkOutcome.RESIZED:
        assert result.image.mime_type == "image/jpeg"
        assert fmt in ("PNG", "JPEG")
        assert max(dims_of(result.image.base64_data)) <= max(settings.max_long_side, 1)
    if result.outcome is ShrinkOutcome.KEPT:
        assert result.image.base64_data == b64(raw)
    if fmt == "GIF":
        assert result.outcome is not ShrinkOutcome.RESIZED


@given(st.text(max_size=200), st.text(max_size=20))
def test_shrink_never_raises_on_arbitrary_payloads(data: str, mime: str) -> None:
    result = shrink_image(ImageData(data, mime), ImageSettings(max_base64_len=50))
    assert result.outcome in set(ShrinkOutcome)
