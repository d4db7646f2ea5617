"""Numbered image sequences (``frames_%04d.png``) whose numbering has gaps: every image, in order.

FFmpeg's image2 demuxer reads a numbered sequence from its first image up to the
first missing number and stops there, without a word; a glob (``frames/*.png``)
reads every file it matches. glrec reads a numbered sequence as a glob would:
the images after a gap are read too, one run of consecutive numbers after
another, and a log line says where the gaps are. :func:`runs` finds the runs;
the decode worker opens each run in turn (image2's ``start_number``) and
continues the timeline across them, so picture *k* of the listing is shown
at ``k / framerate`` whatever its number.
"""

from __future__ import annotations

import itertools
import logging
import os
import re
from pathlib import Path

log = logging.getLogger("glrec")

#: FFmpeg's frame number in a file name: ``%d`` with an optional width (always zero-padded).
_NUMBER = re.compile(r"%(\d*)d")
#: How far past ``start_number`` image2 looks for the first image (its ``start_number_range`` default).
_START_RANGE = 5


def _name_regex(name: str) -> tuple[re.Pattern[str], int] | None:
    """A regular expression for the file names pattern ``name`` makes, and the number's width; None if
    ``name`` is not a pattern with exactly one number (``%%`` is a literal ``%``)."""
    parts = re.split(r"(%%|%\d*d)", name)
    numbers = [p for p in parts if _NUMBER.fullmatch(p)]
    if len(numbers) != 1 or "%" in "".join(p for p in parts if p != "%%" and not _NUMBER.fullmatch(p)):
        return None
    regex = "".join("%" if p == "%%" else r"(\d+)" if _NUMBER.fullmatch(p) else re.escape(p) for p in parts)
    width = _NUMBER.fullmatch(numbers[0]).group(1)  # type: ignore[union-attr]
    return re.compile(regex), int(width or 0)


def _int_option(options: dict[str, str], key: str, default: int) -> int:
    try:
        return int(options.get(key, default))
    except ValueError:
        return default  # FFmpeg refuses the value itself, with its own message


def runs(pattern: str, options: dict[str, str]) -> tuple[tuple[int, int], ...]:
    """The runs ``(first number, images)`` of a numbered sequence with gaps, from where FFmpeg starts.

    Empty when the numbering has no gap after FFmpeg's first image (image2 reads it all itself), or
    when there is nothing to read (FFmpeg's own error says so). ``options``: the input's FFmpeg
    options (``start_number``, ``start_number_range`` as image2 takes them).
    """
    path = Path(pattern)
    parsed = _name_regex(path.name)
    if parsed is None:
        return ()
    regex, width = parsed
    numbers = set()
    try:
        with os.scandir(path.parent if str(path.parent) else ".") as entries:
            for entry in entries:
                match = regex.fullmatch(entry.name)
                # FFmpeg writes the number zero-padded to the width: "7" is not image 7 of %03d, "007" is.
                if match and f"{int(match.group(1)):0{width}d}" == match.group(1):
                    numbers.add(int(match.group(1)))
    except OSError:
        return ()
    start = _int_option(options, "start_number", 0)
    first = [n for n in range(start, start + max(1, _int_option(options, "start_number_range", _START_RANGE)))
             if n in numbers]  # fmt: skip
    if not first:
        return ()
    found: list[list[int]] = []
    for n in sorted(k for k in numbers if k >= first[0]):
        if found and n == found[-1][0] + found[-1][1]:
            found[-1][1] += 1
        else:
            found.append([n, 1])
    if len(found) < 2:
        return ()
    gaps = [f"after {a + c - 1} comes {b}" for (a, c), (b, _) in itertools.pairwise(found)]
    log.warning(
        "%s: the numbering has %d gap%s (%s); reading all %d images in order past them, as a glob would "
        "(FFmpeg alone stops at the first gap)", pattern, len(gaps), "s" * (len(gaps) > 1),
        ", ".join(gaps[:3]) + (", ..." if len(gaps) > 3 else ""), sum(c for _, c in found),
    )  # fmt: skip
    return tuple((a, c) for a, c in found)
