"""Frame rates as exact rationals: the time base every encoder and sink shares (pts of frame i is i)."""

from __future__ import annotations

from fractions import Fraction


def frame_rate(fps: float) -> Fraction:
    """``fps`` as an exact rational, recognising the NTSC rates (29.97 -> 30000/1001).

    >>> frame_rate(29.97), frame_rate(25)
    (Fraction(30000, 1001), Fraction(25, 1))
    """
    ntsc = round(fps * 1.001)
    if abs(fps - ntsc * 1000 / 1001) < 1e-3 and abs(fps - round(fps)) > 1e-6:
        return Fraction(ntsc * 1000, 1001)
    rate = Fraction(fps).limit_denominator(1001)
    if rate <= 0:  # below 1/2002 fps the limited denominator rounds to zero
        rate = Fraction(fps).limit_denominator(1_000_000)
    return rate
