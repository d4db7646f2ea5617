"""A decoded input's clock: each picture's time on one timeline, bridging timestamp resets and jumps.

A picture's time is its pts in seconds minus the first picture's, so variable frame rates come through
unchanged. A picture without a pts comes one frame after the one before. Timestamps that go backwards
(``cat a.ts b.ts``, a stream that restarts its clock), or jump ahead by more than :data:`JUMP_S` in a
format that allows jumps (MPEG-TS), start a new segment that continues where the last one ended
(counted in :attr:`Stamps.discontinuities`).
"""

from __future__ import annotations

import logging

log = logging.getLogger("glrec")

#: A forward jump in timestamps that counts as a discontinuity in formats that allow them (FFmpeg's
#: dts_delta_threshold).
JUMP_S = 10.0


class Stamps:
    """The times of an input's pictures, in order; ``label`` names the input in the log."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.jumps = False  # the format allows timestamp jumps (MPEG-TS and the like)
        self.discontinuities = 0  # timestamp resets and jumps bridged by continuing the timeline
        self.origin: float | None = None  # the pts, in seconds, of time 0 of the current segment
        self.last_time = 0.0
        self.last_duration: float | None = None

    def time_of(self, seconds: float | None, duration: float | None, first: bool, rate: float | None) -> float:
        """The time of the next picture, stamped ``seconds`` (None: no pts) and lasting ``duration``;
        ``first``: no picture came before it; ``rate``: the stream's frames per second, where it says."""
        step = self.last_duration or 1.0 / float(rate or 25)
        if seconds is None:
            t = 0.0 if first else self.last_time + step  # one frame after the previous one
        else:
            if self.origin is None:
                self.origin = seconds - (0.0 if first else self.last_time)
            t = seconds - self.origin
            expected = self.last_time + step
            if not first and (t < self.last_time - step / 2 or (self.jumps and t - expected > JUMP_S)):
                # A new segment (timestamps reset or jumped): it continues where the last one ended.
                self.discontinuities += 1
                log.info("%s: timestamps jump from %.3f s to %.3f s; continuing the timeline at %.3f s",
                         self.label, self.last_time + self.origin, seconds, expected)  # fmt: skip
                self.origin = seconds - expected
                t = expected
        self.last_time, self.last_duration = t, duration
        return t

    def resume_live(self, away: float) -> None:
        """A live input reconnected after ``away`` seconds: its new timestamps start anywhere, so the next
        picture continues from the last one, plus the time away."""
        self.origin = None
        self.last_time += away
