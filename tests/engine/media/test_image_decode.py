"""The decode guard and the exact image limits (issue 12 §3): only what decodes completely within the pixel
budget is forwarded, caps in decoded bytes and pixels at the limit, one over and one under, and the bound on
concurrent decodes."""

from __future__ import annotations

import pytest
from PIL import Image

import engine.media.decode as image_decode
import engine.media.gate as images_mod
from engine.media.gate import (
    MAX_BASE64_LEN,
    MAX_SIZE,
    DataUrlError,
    ImageData,
    ImageSettings,
    ShrinkOutcome,
    ShrinkResult,
    b64decode_lenient,
    parse_data_url,
    parse_generic_data_url,
    read_dimensions,
    shrink_image,
)
from tests.support.imagegen import (
    FORMATS,
    FORMATS_MIME,
    animated,
    b64,
    dims_of,
    gradient,
    jpeg_header_only,
    jpeg_with_far_sof,
    noise,
    padded_png,
    solid,
)


def _shrink(raw: bytes, mime: str = "image/png", settings: ImageSettings | None = None) -> ShrinkResult:
    return shrink_image(ImageData(b64(raw), mime), settings or ImageSettings())


# --- the decode guard: only what decodes completely within the budget is forwarded ------------


@pytest.mark.parametrize(
    ("width", "height", "keep"),
    [(100, 100, 60), (2000, 1500, 300)],
    ids=["100x100-first-60-bytes", "2000x1500-first-300-bytes"],
)
@pytest.mark.invariant("IMG-7")
def test_a_truncated_png_is_dropped_as_undecodable(width: int, height: int, keep: int) -> None:
    raw = solid(width, height)[:keep]
    assert read_dimensions(b64(raw)) == (width, height)  # the header alone looks fine
    result = _shrink(raw)
    assert result.outcome is ShrinkOutcome.DROPPED
    assert result.reason is not None
    assert result.reason.startswith("undecodable: ")
    assert (result.format, result.width, result.height) == ("png", width, height)


@pytest.mark.invariant("IMG-7")
def test_a_jpeg_header_without_a_scan_is_dropped_as_undecodable() -> None:
    raw = jpeg_header_only(64, 48)
    assert read_dimensions(b64(raw)) == (64, 48)
    result = _shrink(raw, "image/jpeg")
    assert result.outcome is ShrinkOutcome.DROPPED
    assert result.reason is not None
    assert result.reason.startswith("undecodable: ")


@pytest.mark.parametrize("fmt", sorted(FORMATS))
@pytest.mark.invariant("IMG-7")
def test_an_image_cut_anywhere_in_its_pixel_data_is_never_forwarded(fmt: str) -> None:
    raw = noise(64, 48, FORMATS[fmt])
    result = _shrink(raw[: len(raw) * 2 // 3], FORMATS_MIME[fmt])
    assert result.outcome is ShrinkOutcome.DROPPED
    assert result.reason is not None
    assert result.reason.startswith("undecodable: ")


# --- exact limits: decoded bytes and pixels -----------------------------------------------------


def _data_url_payload(raw: bytes, style: str) -> str:
    data = b64(raw)
    if style == "unpadded":
        return data.rstrip("=")
    if style == "wrapped":  # MIME-style lines: the whitespace is no part of the size
        return "\r\n".join(data[i : i + 76] for i in range(0, len(data), 76))
    return data


@pytest.mark.parametrize("style", ["padded", "unpadded", "wrapped"])
@pytest.mark.parametrize(("size", "accepted"), [(MAX_SIZE - 1, True), (MAX_SIZE, True), (MAX_SIZE + 1, False)])
@pytest.mark.invariant("IMG-7")
def test_the_data_url_cap_counts_decoded_bytes_exactly(size: int, accepted: bool, style: str) -> None:
    raw = b"\x89PNG\r\n\x1a\n" + b"\0" * (size - 8)
    url = "data:image/png;base64," + _data_url_payload(raw, style)
    if accepted:
        assert b64decode_lenient(parse_data_url(url).base64_data) == raw
        generic = parse_generic_data_url(url.replace("image/png", "application/pdf"))
        assert generic is not None
        assert b64decode_lenient(generic.base64_data) == raw
    else:
        with pytest.raises(DataUrlError) as info:
            parse_data_url(url)
        assert (info.value.reason, str(info.value)) == ("too_large", f"Image data URL exceeds {MAX_SIZE} byte limit")
        with pytest.raises(DataUrlError):
            parse_generic_data_url(url.replace("image/png", "application/pdf"))


@pytest.mark.parametrize(
    ("size", "outcome"),
    [(MAX_SIZE - 1, ShrinkOutcome.KEPT), (MAX_SIZE, ShrinkOutcome.KEPT), (MAX_SIZE + 1, ShrinkOutcome.RESIZED)],
)
@pytest.mark.invariant("IMG-7")
def test_the_gate_byte_cap_counts_decoded_bytes_exactly(size: int, outcome: ShrinkOutcome) -> None:
    raw = padded_png(size)
    result = _shrink(raw)
    assert result.outcome is outcome
    if outcome is ShrinkOutcome.KEPT:
        assert result.image == ImageData(b64(raw), "image/png")
    else:  # one byte over: never forwarded as is, re-encoded to a small JPEG
        assert result.image.mime_type == "image/jpeg"
        assert dims_of(result.image.base64_data) == (4, 4)


@pytest.mark.invariant("IMG-7")
def test_whitespace_in_a_base64_source_is_no_part_of_its_size() -> None:
    raw = padded_png(MAX_SIZE)
    wrapped = _data_url_payload(raw, "wrapped")
    assert len(wrapped) > MAX_BASE64_LEN
    result = shrink_image(ImageData(wrapped, "image/png"))
    assert result.outcome is ShrinkOutcome.KEPT
    assert result.image == ImageData(b64(raw), "image/png")  # forwarded as the bytes that were decoded


BUDGET = 100 * 100  # 73 x 137 = 10001: one pixel over


@pytest.mark.parametrize(
    ("width", "height", "kept"), [(99, 101, True), (100, 100, True), (73, 137, False)], ids=["under", "at", "over"]
)
@pytest.mark.parametrize("far_sof", [False, True], ids=["header", "pillow-parsed"])
@pytest.mark.invariant("IMG-7")
def test_the_pixel_budget_is_exact(width: int, height: int, kept: bool, far_sof: bool) -> None:
    raw = solid(width, height, "JPEG")
    if far_sof:  # the header probe cannot see the size: only the decoder's parse decides
        raw = jpeg_with_far_sof(raw)
        assert read_dimensions(b64(raw)) is None
    result = _shrink(raw, "image/jpeg", ImageSettings(max_decode_pixels=BUDGET))
    if kept:
        assert result.outcome is ShrinkOutcome.KEPT
    else:
        assert result.outcome is ShrinkOutcome.DROPPED
        assert result.reason is not None
        assert result.reason.startswith("decompression bomb: ")


@pytest.mark.parametrize(("width", "height", "kept"), [(100, 100, True), (73, 137, False)], ids=["at", "over"])
@pytest.mark.invariant("IMG-7")
def test_the_engine_budget_decides_not_pillows_own_limit(
    monkeypatch: pytest.MonkeyPatch, width: int, height: int, kept: bool
) -> None:
    # Pillow's process-wide limit far below the engine's budget: it must neither refuse an image
    # within the budget (DecompressionBombError above 2 x MAX_IMAGE_PIXELS) nor decide the bomb.
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 1000)
    settings = ImageSettings(max_decode_pixels=BUDGET, max_long_side=50)
    result = _shrink(gradient(width, height), settings=settings)
    if kept:
        assert result.outcome is ShrinkOutcome.RESIZED
        assert read_dimensions(result.image.base64_data) == (50, 50)
    else:
        assert result.outcome is ShrinkOutcome.DROPPED
        assert result.reason == "decompression bomb: 73x137 pixels exceeds the decode budget of 10000"


@pytest.mark.parametrize("fmt", ["GIF", "WEBP"])
@pytest.mark.parametrize(("budget", "kept"), [(301, True), (300, True), (299, False)])
@pytest.mark.invariant("IMG-7")
def test_every_frame_of_an_animation_counts_against_the_pixel_budget(fmt: str, budget: int, kept: bool) -> None:
    raw = animated(10, 10, 3, fmt)  # 3 frames of 100 pixels
    result = _shrink(raw, FORMATS_MIME[fmt.lower()], ImageSettings(max_decode_pixels=budget))
    if kept:
        assert result.outcome is ShrinkOutcome.KEPT
        assert result.image.base64_data == b64(raw)
    else:
        assert result.outcome is ShrinkOutcome.DROPPED
        assert result.reason is not None
        assert result.reason.startswith("decompression bomb: 3 frames of 10x10 pixels")


# --- bounded concurrent decodes ---------------------------------------------------------------


def test_the_concurrent_decode_limit_defaults_to_4_and_reads_its_env() -> None:
    assert image_decode.DEFAULT_MAX_CONCURRENT_DECODES == 4
    assert image_decode.max_concurrent_decodes({}) == 4
    assert image_decode.max_concurrent_decodes({"CASCADE_MAX_CONCURRENT_DECODES": "2"}) == 2
    for raw in ("0", "-1", "x"):
        assert image_decode.max_concurrent_decodes({"CASCADE_MAX_CONCURRENT_DECODES": raw}) == 4
    with pytest.raises(ValueError, match="limit"):
        image_decode.DecodeSlots(0)


@pytest.mark.invariant("IMG-7")
def test_concurrent_decodes_never_exceed_the_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    import threading

    limit, callers = 3, 24
    slots = image_decode.DecodeSlots(limit)
    monkeypatch.setattr(images_mod, "DECODE_SLOTS", slots)
    real_decode = image_decode.decode_image
    release = threading.Event()
    lock = threading.Lock()
    inside = [0, 0]  # now, peak: counted by the hook itself, inside the decode

    def hook(*args: object, **kwargs: object) -> object:
        with lock:
            inside[0] += 1
            inside[1] = max(inside[1], inside[0])
        try:
            assert release.wait(30)
            return real_decode(*args, **kwargs)  # type: ignore[arg-type]
        finally:
            with lock:
                inside[0] -= 1

    monkeypatch.setattr(images_mod, "decode_image", hook)
    images = [b64(noise(16, 16, "PNG", seed)) for seed in range(callers)]
    results: list[ShrinkResult] = []
    threads = [
        threading.Thread(target=lambda d=data: results.append(shrink_image(ImageData(d, "image/png"))))
        for data in images
    ]
    for thread in threads:
        thread.start()
    try:
        # Every caller is either decoding or queued for a slot; none can be anywhere else.
        state = slots.wait_until(lambda s: s.active + s.waiting == callers or s.active > limit, timeout=30)
        assert state is not None, slots.state()
        assert (state.active, state.waiting) == (limit, callers - limit)
        assert inside[0] == limit
    finally:
        release.set()
        for thread in threads:
            thread.join(30)
    assert inside[1] == slots.state().peak == limit
    assert slots.state().active == slots.state().waiting == 0
    assert sorted(r.image.base64_data for r in results) == sorted(images)
