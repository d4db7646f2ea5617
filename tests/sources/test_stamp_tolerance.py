"""Pictures stamped in a coarse time base (Matroska's milliseconds) are shown at their own frame times."""

from __future__ import annotations

from fractions import Fraction

import pytest
from media import pyav_clip

from glrec.sources import VideoSource
from glrec.sources.video.timeline import stamp_tolerance


@pytest.mark.parametrize("rate", [30, 60])
def test_every_picture_of_a_millisecond_stamped_clip_is_shown_once(tmp_path, rate):
    # 2/30 s is stamped 0.067 s in Matroska: after t = 2/30, yet it is the picture for that frame.
    path = pyav_clip(tmp_path / "ms.mkv", "libx264", size=(64, 48), rate=rate, frames=10)
    with VideoSource(path) as src:
        shown = [src.picture_at(k / rate).index for k in range(10)]
    assert shown == list(range(10))


def test_the_tolerance_covers_rounding_but_never_a_frame():
    assert stamp_tolerance(Fraction(1, 1000), Fraction(30)) == pytest.approx(0.0005)
    assert stamp_tolerance(Fraction(1, 90000), Fraction(30)) == pytest.approx(1e-4)  # fine bases: the floor
    assert stamp_tolerance(Fraction(1, 25), Fraction(25)) == pytest.approx(0.25 / 25)  # a tick per frame
    assert stamp_tolerance(None, None) == pytest.approx(1e-4)
