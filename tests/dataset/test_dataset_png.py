"""glrec's own PNG writer (row filter + zlib-ng): valid PNGs that two decoders read back exactly, same bytes."""

import hashlib
import io
import struct
import zlib
from concurrent.futures import ThreadPoolExecutor

import av
import numpy as np
import pytest
from PIL import Image

from glrec.encoders.png.writer import (
    FILTER_NONE,
    FILTER_SUB,
    FILTER_UP,
    LEVELS,
    SIGNATURE,
    ScanLines,
    encode_png,
    layout,
    png_rows,
)  # fmt: skip
from glrec.errors import EncoderError


def arrays():
    y, x = np.mgrid[0:120, 0:160]
    rgb = np.stack([(x * 3) % 256, (y * 2) % 256, ((x + y) // 3) % 256], -1).astype(np.uint8)
    rgb[30:70, 40:100] = (200, 10, 40)
    noise = np.random.default_rng(4).integers(0, 256, (37, 53, 3), dtype=np.uint8)
    return {
        "rgb": rgb,
        "noise": noise,  # odd sizes, nothing to compress
        "gray": rgb[..., 1].copy(),
        "depth16": ((x * 37 + y * 101) % 65536).astype(np.uint16),
        "ids16": (x // 40 + 300 * (y // 30)).astype(np.uint16),
        "one_row": rgb[:1].copy(),
        "one_col": rgb[:, :1].copy(),
        "view": rgb[::2, ::3],  # not contiguous
    }


def pillow(data: bytes, dtype) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(data))).astype(dtype)


def ffmpeg(data: bytes, array: np.ndarray) -> np.ndarray:
    """FFmpeg's PNG decoder (through PyAV), in the pixel format of the array."""
    with av.open(io.BytesIO(data), format="png_pipe") as container:
        frame = next(container.decode(video=0))
    fmt = {2: "gray16be" if array.dtype == np.uint16 else "gray", 3: "rgb24"}[array.ndim]
    out = frame.to_ndarray(format=fmt)
    return out.astype(np.uint16) if array.dtype == np.uint16 else out


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("name", sorted(arrays()))
def test_two_decoders_read_back_the_array(name, level):
    array = arrays()[name]
    data = encode_png(array, level)
    assert data[:8] == SIGNATURE
    assert np.array_equal(pillow(data, array.dtype), array)
    assert np.array_equal(ffmpeg(data, array), array)


@pytest.mark.parametrize("filter_type", [FILTER_NONE, FILTER_SUB, FILTER_UP])
def test_every_filter_decodes(filter_type):
    for array in arrays().values():
        assert np.array_equal(pillow(encode_png(array, filter_type=filter_type), array.dtype), array)


def test_chunks_are_well_formed():
    array = arrays()["depth16"]
    data = encode_png(array)
    pos, kinds = 8, []
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
        (crc,) = struct.unpack(">I", data[pos + 8 + length : pos + 12 + length])
        assert crc == zlib.crc32(kind + body), kind
        kinds.append(kind)
        pos += 12 + length
    assert kinds == [b"IHDR", b"IDAT", b"IEND"]
    assert struct.unpack(">IIBB", data[16:26]) == (160, 120, 16, 0)  # width, height, 16 bit, grey


def test_the_same_array_makes_the_same_bytes_on_any_thread():
    items = list(arrays().values()) * 4
    alone = [encode_png(a) for a in items]
    with ThreadPoolExecutor(4) as pool:
        assert list(pool.map(encode_png, items)) == alone


def test_bytes_are_pinned():
    """The default level's bytes of two fixed arrays (zlib-ng, x86-64: the 2-core development machine and the H200
    machine agree). A failure here on another machine means the compressor's output depends on the CPU or its
    version changed: shards from two machines would then differ in bytes (their pixels would not)."""
    a = arrays()
    got = [hashlib.sha256(encode_png(a[n])).hexdigest()[:16] for n in ("rgb", "depth16")]
    assert got == ["0e3d75fea0307a02", "ebce226abe935de2"]


def test_the_default_level_compresses_rendered_like_images():
    rgb = arrays()["rgb"]
    assert len(encode_png(rgb)) < rgb.nbytes / 4
    assert len(encode_png(rgb, 0)) > rgb.nbytes  # stored


@pytest.mark.parametrize(
    ("array", "words"),
    [
        (np.zeros((4, 4), np.float32), "PNG takes"),
        (np.zeros((4, 4, 2), np.uint8), "PNG takes"),
        (np.zeros((0, 4), np.uint8), "empty"),
    ],
)
def test_what_png_cannot_hold_is_refused(array, words):
    with pytest.raises(EncoderError, match=words):
        encode_png(array)


def test_a_level_outside_0_to_9_is_refused():
    with pytest.raises(EncoderError, match="outside 0..9"):
        encode_png(np.zeros((2, 2), np.uint8), 10)


@pytest.mark.parametrize("name", sorted(arrays()))
def test_scanlines_filtered_elsewhere_make_the_same_file_and_give_the_image_back(name):
    array = arrays()[name]
    lines = ScanLines.of(png_rows(array).ravel(), array.shape[1], layout(array))
    assert lines.shape == (array.shape[0], 1 + array.shape[1] * layout(array)[2])
    assert lines.png(2) == encode_png(array, 2)
    back = lines.pixels()
    assert back.dtype == array.dtype and np.array_equal(back, array)
    assert np.array_equal(pillow(lines.png(2), array.dtype), array)


def test_scanlines_with_another_filter_are_refused():
    array = arrays()["gray"]
    lines = ScanLines.of(png_rows(array, FILTER_SUB).ravel(), array.shape[1], layout(array))
    with pytest.raises(EncoderError, match="not all Up-filtered"):
        lines.pixels()
