"""Host frames as 8-bit values, written where a source wants them, with the conversion :mod:`.frames` documents.

One pass per frame where the frame is already ``uint8``; floats and 16-bit
values go through a scratch buffer kept between frames (no allocation per
frame).
"""

from __future__ import annotations

from typing import Any

import numpy as np


class Packer:
    """Converts frames into caller-given ``uint8`` destinations; keeps its scratch buffers between calls."""

    def __init__(self) -> None:
        self._scratch: dict[str, np.ndarray] = {}

    def into(self, dst: np.ndarray, src: np.ndarray) -> None:
        """Write ``src`` (any accepted dtype, any strides) into the ``uint8`` array ``dst`` of the same shape."""
        if src.dtype == np.uint8:
            np.copyto(dst, src)
        else:
            np.copyto(dst, self.whole(src, "colour"), casting="unsafe")

    def grey_into_rgba(self, dst: np.ndarray, src: np.ndarray) -> None:
        """Write a grey ``(H, W)`` frame into ``dst``, ``(H, W)`` little-endian uint32 RGBA words, opaque."""
        np.multiply(self.whole(src, "grey"), np.uint32(0x010101), out=dst, dtype=np.uint32, casting="unsafe")
        np.bitwise_or(dst, np.uint32(0xFF000000), out=dst)  # R = G = B, A = 255

    def whole(self, src: np.ndarray, role: str) -> np.ndarray:
        """``src`` as whole numbers 0..255 (``src`` itself for uint8, else a scratch array), rounded as documented."""
        if src.dtype == np.uint8:
            return src
        if src.dtype == np.uint16:  # round(v * 255 / 65535) = round(v / 257); 257 is odd, so there are no ties
            tmp = self._buffer(f"{role}-u4", src.shape, np.uint32)
            np.add(src, np.uint32(128), out=tmp, dtype=np.uint32)
            np.floor_divide(tmp, np.uint32(257), out=tmp)
            return tmp
        # float32 arithmetic (float64 for float64 frames), as the GPU path does it
        tmp = self._buffer(f"{role}-{src.dtype.name}", src.shape, np.float64 if src.dtype == np.float64 else np.float32)
        np.clip(src, 0.0, 1.0, out=tmp, casting="unsafe")
        np.multiply(tmp, 255.0, out=tmp)
        np.rint(tmp, out=tmp)  # halves to even, as GLSL's roundEven
        return tmp

    def _buffer(self, key: str, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
        buf = self._scratch.get(key)
        if buf is None or buf.shape != shape:
            buf = self._scratch[key] = np.empty(shape, dtype)
        return buf
