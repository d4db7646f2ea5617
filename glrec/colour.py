"""Colour conversion constants and the tags that describe them.

glrec converts RGB to YUV itself (in a GL compute shader), so it knows exactly
which matrix and range were used and tags the stream with the same values.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

Matrix = Literal["bt709", "bt601"]
Range = Literal["limited", "full"]

# Luma weights (Kr, Kb) per ITU-R recommendation.
_WEIGHTS: dict[str, tuple[float, float]] = {"bt709": (0.2126, 0.0722), "bt601": (0.299, 0.114)}
# H.273 code points: (colour primaries, transfer characteristics, matrix coefficients).
# BT.601 here means the 625-line (PAL) primaries with the 601 matrix, as sRGB-ish
# content from a renderer has no better-defined choice.
_H273: dict[str, tuple[int, int, int]] = {"bt709": (1, 1, 1), "bt601": (5, 6, 5)}


@dataclass(frozen=True)
class ColourSpec:
    """How RGB becomes YUV: the matrix and the quantisation range."""

    matrix: Matrix = "bt709"
    range: Range = "limited"

    @property
    def kr_kb(self) -> tuple[float, float]:
        return _WEIGHTS[self.matrix]

    def rgb_to_yuv_matrix(self) -> tuple[tuple[float, float, float], tuple[float, float], tuple[float, float]]:
        """Return (luma weights, luma scale/offset, chroma scale/offset) in 0..255 units."""
        kr, kb = self.kr_kb
        kg = 1.0 - kr - kb
        if self.range == "limited":
            return (kr, kg, kb), (219.0, 16.0), (224.0, 128.0)
        return (kr, kg, kb), (255.0, 0.0), (255.0, 128.0)

    def to_yuv(self, rgb: Any) -> Any:
        """Convert float RGB in [0, 1] (shape ..., 3) to float Y, Cb, Cr in 0..255 units."""
        import numpy as np

        (kr, kg, kb), (ys, yo), (cs, co) = self.rgb_to_yuv_matrix()
        rgb = np.asarray(rgb, dtype=np.float64)
        y = rgb[..., 0] * kr + rgb[..., 1] * kg + rgb[..., 2] * kb
        cb = (rgb[..., 2] - y) / (2.0 * (1.0 - kb))
        cr = (rgb[..., 0] - y) / (2.0 * (1.0 - kr))
        return np.stack([y * ys + yo, cb * cs + co, cr * cs + co], axis=-1)

    @property
    def h273(self) -> tuple[int, int, int]:
        """(primaries, transfer, matrix) code points for the stream headers."""
        return _H273[self.matrix]

    @property
    def av_range(self) -> int:
        """AVColorRange: 1 = MPEG (limited), 2 = JPEG (full)."""
        return 1 if self.range == "limited" else 2
