"""``bars``: a test pattern for checking colour, orientation and timing.

SMPTE-style bars at 75 %, a reverse-bar strip, a luma ramp, a pure red square
in the top-left corner (orientation), a white marker that moves with time and,
along the bottom edge, a binary time code: ``CODE_BITS`` square cells of
``min(height // 16, width // CODE_BITS)`` pixels, most significant bit first, white for 1, holding
``round(t * 1000)``. :func:`read_time_code` reads it back from a decoded frame.
"""

from __future__ import annotations

import numpy as np

from .base import ShaderScene

CODE_BITS = 24


class Bars(ShaderScene):
    """Colour bars with an orientation marker and a time code."""

    fragment = "bars.frag"


def read_time_code(luma: np.ndarray) -> int:
    """Return the milliseconds encoded in a decoded ``bars`` frame's luma plane (rows top-down)."""
    h, w = luma.shape
    cell = min(h // 16, w // CODE_BITS)
    row = luma[h - cell + cell // 4 : h - cell // 4]
    value = 0
    for i in range(CODE_BITS):
        block = row[:, i * cell + cell // 4 : (i + 1) * cell - cell // 4]
        value = (value << 1) | int(block.mean() > 128)
    return value
