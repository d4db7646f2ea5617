"""A recording of a network input resumed after a reconnect: no picture twice, none out of order.

After a break the decode worker opens the input again and seeks to the keyframe
at or before the last picture it recorded, so the stretch from that keyframe comes
again. :class:`ResumeFilter` skips every picture of the reconnected segment that
presents at or before that last picture: for the whole segment, not only until the
first new picture, because the decoder may hand out a B-frame of the replayed
stretch after a later picture.
"""

from __future__ import annotations

import logging
from typing import Any

import av

from .media import InputSpec, read_bound

log = logging.getLogger("glrec")

#: How far before the last recorded picture a picture of the reconnected segment may present and still
#: count as replayed (a B-frame decoded late); one further back, after new pictures, means the stream's
#: timestamps restarted (a new segment of a joined MPEG-TS), which is kept. In seconds, or frames.
_LATE_S, _LATE_FRAMES = 0.5, 16  # H.264 reorders 16 pictures at most


class ResumeFilter:
    """Which pictures of a reconnected segment were recorded before the break (see the module docstring)."""

    def __init__(self) -> None:
        self.mark: float | None = None  # seconds: the last picture recorded before the break
        self._past = False  # a picture after the mark has come since the reconnect

    def arm(self, mark: float | None) -> None:
        """A reconnect: skip what presents at or before ``mark`` (the last recorded picture's time)."""
        self.mark, self._past = mark, False

    def replayed(self, seconds: float | None, rate: float | None) -> bool:
        """Whether the picture presenting at ``seconds`` was recorded before the break (so is skipped)."""
        mark = self.mark
        if mark is None or seconds is None:
            return False
        if seconds > mark + 1e-6:
            self._past = True
            return False
        late = max(_LATE_S, _LATE_FRAMES / rate) if rate else _LATE_S
        if not self._past or mark - seconds <= late:
            return True
        self.mark = None  # far back after new pictures: the timestamps restarted; nothing of it was recorded
        return False


def seek_near(container: Any, stream: Any, seconds: float, label: str) -> None:
    """Start decoding near ``seconds`` (the keyframe at or before it); the filter skips the rest."""
    try:
        if stream.time_base is not None:
            container.seek(int(seconds / stream.time_base), stream=stream, backward=True)
    except (av.FFmpegError, OSError, ValueError) as exc:  # not seekable: decode from the start, skipping
        log.debug("%s: cannot seek to %.3f s on reconnect (%s); skipping from the start", label, seconds, exc)


def why(exc: BaseException, spec: InputSpec) -> str:
    """``exc`` in words for the log and the summary.

    av.ExitError is glrec's own read bound firing (PyAV's interrupt callback, which FFmpeg reports as
    "Immediate exit requested"), not the input's answer: say what glrec did instead.
    """
    if isinstance(exc, av.ExitError):
        bound = read_bound(spec)
        given = " (--input-timeout)" if bound == spec.timeout else ""
        return f"nothing arrived for {bound:g} s{given} and glrec stopped waiting"
    return str(exc)
