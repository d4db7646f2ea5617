"""glrec's PNG writer: rows filtered with NumPy, compressed by zlib-ng (``zlib-ng``).

It writes the dataset shards' lossless passes and the frames of ``.png`` sequences
(:mod:`glrec.encoders.png.encoder`). Rows filtered elsewhere (a shard worker's GPU:
:mod:`glrec.dataset.rendering.scanlines`) come as :class:`ScanLines` and are only deflated.

A PNG is the signature, an ``IHDR`` chunk, one ``IDAT`` chunk holding the zlib
stream of the filtered rows, and ``IEND``. Every row uses one filter,
``Up`` (each byte minus the byte above it): for rendered images it compresses
about as well as FFmpeg's per-row choice, and it is one vectorised subtraction.
zlib-ng compresses the whole image in one call that releases the GIL, so a dataset
worker's encode threads, and the PNG encoder's, run on every core. The bytes depend only on the array,
the level, the compressor's version and the CPU architecture (x86-64 and Arm may
choose other matches for the same pixels), never on threads, batch sizes, worker
counts or runs. ``benchmarks/png_encoders.py`` measured the candidates (FFmpeg
through PyAV, Pillow, imagecodecs, zlib-ng, libdeflate, ISA-L). ISA-L was the
fastest and was glrec's first choice, but on the H200 machine (AVX-512) it wrote other
bytes for the same rows now and then (one member in 800 samples, 16 workers
against one: the same pixels, the same length, other matches), so its output is not
a function of its input there; zlib-ng's is (``tests/dataset/test_dataset_png.py``).

``level`` is the spec's ``png_compression`` (0..9): zlib-ng's levels (0 stores; 1 is
its fastest, with larger files; the default 2 made files 14 % smaller than ISA-L's
at 3.1 times its time on the 2-core development machine).
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Callable
from typing import cast

import numpy as np

from ...errors import EncoderError
from .options import DEFAULT_LEVEL

__all__ = [
    "DEFAULT_LEVEL",
    "LEVELS",
    "ScanLines",
    "compress",
    "encode_png",
    "from_rows",
    "layout",
    "pixels",
    "png_rows",
]

SIGNATURE = b"\x89PNG\r\n\x1a\n"
#: The levels ``png_compression`` takes: zlib-ng's 0 (stored) to 9.
LEVELS = range(10)
#: PNG filter types (ISO 15948, 9.2).
FILTER_NONE, FILTER_SUB, FILTER_UP = 0, 1, 2

Compress = Callable[[bytes, int], bytes]


def compress(data: bytes, level: int) -> bytes:
    """A zlib stream of ``data`` at ``level`` (see the module docstring); the GIL is released while it runs."""
    from zlib_ng import zlib_ng  # a declared dependency; imported here so `import glrec` stays light

    return zlib_ng.compress(data, level)


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(data, zlib.crc32(kind)))


def layout(array: np.ndarray) -> tuple[int, int, int]:
    """(bit depth, PNG colour type, bytes per pixel) of an array PNG can hold as it is."""
    if array.dtype == np.uint8 and array.ndim == 2:
        return 8, 0, 1
    if array.dtype == np.uint16 and array.ndim == 2:
        return 16, 0, 2
    if array.dtype == np.uint8 and array.ndim == 3 and array.shape[2] == 3:
        return 8, 2, 3
    if array.dtype == np.uint8 and array.ndim == 3 and array.shape[2] == 4:
        return 8, 6, 4
    raise EncoderError(f"PNG takes (h, w) uint8/uint16 or (h, w, 3|4) uint8, not {array.dtype} {array.shape}.")


def png_rows(array: np.ndarray, filter_type: int = FILTER_UP) -> np.ndarray:
    """The filtered scanlines of ``array`` (each row: its filter byte, then its bytes), as one uint8 array.

    16-bit samples are big-endian, as PNG stores them. ``filter_type``: 0 None, 1 Sub, 2 Up.
    """
    _, _, bpp = layout(array)
    h = array.shape[0]
    raw = np.ascontiguousarray(array, dtype=array.dtype.newbyteorder(">")).view(np.uint8).reshape(h, -1)
    rows = np.empty((h, raw.shape[1] + 1), np.uint8)
    rows[:, 0] = filter_type
    body = rows[:, 1:]
    if filter_type == FILTER_UP:
        body[0] = raw[0]
        np.subtract(raw[1:], raw[:-1], out=body[1:])  # uint8 arithmetic wraps modulo 256, as PNG asks
    elif filter_type == FILTER_SUB:
        body[:, :bpp] = raw[:, :bpp]
        np.subtract(raw[:, bpp:], raw[:, :-bpp], out=body[:, bpp:])
    elif filter_type == FILTER_NONE:
        body[:] = raw
    else:
        raise EncoderError(f"PNG filter {filter_type} is not one of 0 (None), 1 (Sub), 2 (Up).")
    return rows


class ScanLines(np.ndarray):
    """An image's PNG scanlines, filtered already (Up, as :func:`png_rows` makes them, e.g. on the GPU by
    ``shaders/dataset_rows.comp``): an (h, 1 + w x bytes per pixel) uint8 array that knows its image's ``width``
    and ``kind`` (:func:`layout`). :meth:`png` deflates it as it is; :meth:`pixels` gives the image back."""

    width: int
    kind: tuple[int, int, int]

    @classmethod
    def of(cls, raw: np.ndarray, width: int, kind: tuple[int, int, int]) -> ScanLines:
        """The scanlines in the contiguous bytes ``raw`` of a ``width``-pixel image of ``kind``."""
        rows = raw.reshape(-1, 1 + width * kind[2]).view(cls)
        rows.width, rows.kind = width, kind
        return rows

    def __array_finalize__(self, obj: object) -> None:
        self.width = getattr(obj, "width", 0)
        self.kind = getattr(obj, "kind", (8, 0, 1))

    def png(self, level: int = DEFAULT_LEVEL) -> bytes:
        """The PNG file: the same bytes as :func:`encode_png` of :meth:`pixels`."""
        return from_rows(np.asarray(self), self.width, self.kind, level)

    def pixels(self) -> np.ndarray:
        """The image (what :func:`encode_png` would take): the Up filter undone, 16-bit samples native again."""
        rows = np.asarray(self)
        if not (rows[:, 0] == FILTER_UP).all():
            raise EncoderError("These PNG scanlines are not all Up-filtered.")
        raw = np.cumsum(rows[:, 1:], axis=0, dtype=np.uint8)  # uint8 sums wrap modulo 256, undoing the filter
        depth, _, bpp = self.kind
        h = rows.shape[0]
        if depth == 16:
            return raw.view(">u2").reshape(h, self.width).astype(np.uint16)
        return raw.reshape(h, self.width, bpp) if bpp > 1 else raw.reshape(h, self.width)


def pixels(array: np.ndarray) -> np.ndarray:
    """``array``'s image: the pixels of :class:`ScanLines`, any other array as it is."""
    return array.pixels() if isinstance(array, ScanLines) else array


def encode_png(
    array: np.ndarray, level: int = DEFAULT_LEVEL, *, filter_type: int = FILTER_UP, deflate: Compress | None = None
) -> bytes:
    """A PNG of an (h, w) uint8/uint16 or (h, w, 3|4) uint8 array. Lossless; the same array gives the same bytes.

    ``level``: 0..9 (see the module docstring). ``deflate(data, level)``: another zlib-stream
    compressor (the benchmark's candidates); default :func:`compress`.

    >>> encode_png(np.zeros((2, 3), np.uint8))[:8] == SIGNATURE
    True
    """
    if level not in LEVELS and deflate is None:
        raise EncoderError(f"PNG compression level {level} is outside 0..9.")
    h, w = array.shape[:2]
    if h == 0 or w == 0:
        raise EncoderError(f"PNG cannot hold an empty {w}x{h} image.")
    return from_rows(png_rows(array, filter_type), w, layout(array), level, deflate)


def from_rows(
    rows: np.ndarray,
    width: int,
    kind: tuple[int, int, int],
    level: int = DEFAULT_LEVEL,
    deflate: Compress | None = None,
) -> bytes:
    """The PNG of filtered scanlines ``rows`` (:func:`png_rows`) of a ``width``-pixel image of ``kind``
    (:func:`layout`'s answer for it): the deflate, which releases the GIL, with the chunks around it."""
    depth, colour, _ = kind
    idat = (deflate or compress)(cast(bytes, rows.data), level)  # the buffer, not a copy
    ihdr = struct.pack(">IIBBBBB", width, rows.shape[0], depth, colour, 0, 0, 0)
    return SIGNATURE + _chunk(b"IHDR", ihdr) + _chunk(b"IDAT", idat) + _chunk(b"IEND", b"")
