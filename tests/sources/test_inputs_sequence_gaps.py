"""A numbered image sequence with a gap is read past it, as a glob would (issue 30, item 12).

FFmpeg's image2 stops at the first missing number; glrec reads every image of the pattern in numeric
order and says so. Each image carries its number (tests/media.py), read back from the recording as
PyAV decodes it, and ffprobe counts the recording's pictures.
"""

from __future__ import annotations

import itertools
import logging
from pathlib import Path

import numpy as np
import pytest
from media import ffprobe_count, indexed_picture, indices_of
from PIL import Image

from glrec import transcode

pytestmark = pytest.mark.gl


def images(folder: Path, pattern: str, numbers: list[int]) -> None:
    folder.mkdir()
    rng = np.random.default_rng(0)
    for n in numbers:
        Image.fromarray(indexed_picture(n, rng)).save(folder / (pattern % n))


@pytest.mark.parametrize(
    ("pattern", "numbers"),
    [
        ("f_%03d.png", [*range(1, 11), *range(12, 21)]),  # one number missing
        ("f_%d.png", [3, 4, 9, 10, 11, 100, 101]),  # unpadded, across widths: numeric order, not a glob's
    ],
    ids=["missing-one", "unpadded"],
)
def test_a_numbered_sequence_with_gaps_is_read_whole(tmp_path: Path, caplog: pytest.LogCaptureFixture,
                                                     pattern: str, numbers: list[int]) -> None:  # fmt: skip
    images(tmp_path / "seq", pattern, numbers)
    out = tmp_path / "out.mkv"
    with caplog.at_level(logging.WARNING, logger="glrec"):
        result = transcode(str(tmp_path / "seq" / pattern), out, fps=10)
    # Before: the recording stopped at the gap (10 of 19 images, 3 of 7).
    assert ffprobe_count(out) == len(numbers)
    assert indices_of(out) == numbers
    assert result.frames == len(numbers)
    gaps = sum(1 for a, b in itertools.pairwise(numbers) if b != a + 1)
    assert f"the numbering has {gaps} gap" in caplog.text and "as a glob would" in caplog.text, caplog.text
    assert any(f"past {gaps} gap" in note for note in result.notes), result.notes


def test_a_sequence_without_gaps_is_left_to_ffmpeg(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    images(tmp_path / "seq", "f_%03d.png", list(range(0, 12)))
    with caplog.at_level(logging.WARNING, logger="glrec"):
        result = transcode(str(tmp_path / "seq" / "f_%03d.png"), tmp_path / "out.mkv", fps=10)
    assert indices_of(tmp_path / "out.mkv") == list(range(12))
    assert "gap" not in caplog.text and not any("gap" in n for n in result.notes)


def test_looping_a_sequence_with_a_gap_starts_again_at_its_first_image(tmp_path: Path) -> None:
    images(tmp_path / "seq", "f_%03d.png", [1, 2, 4])
    transcode(str(tmp_path / "seq" / "f_%03d.png"), tmp_path / "out.mkv", fps=10, loop=True, frames=7)
    assert indices_of(tmp_path / "out.mkv") == [1, 2, 4, 1, 2, 4, 1]
