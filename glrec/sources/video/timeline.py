"""Which decoded picture is shown at time ``t``: the timing half of :class:`~glrec.sources.video.VideoSource`.

For files, the last picture whose timestamp is at or before ``t`` (the one a
player would be showing), so variable frame rates, dropped and repeated frames
come out right at any output rate; a looped input goes on from where its last
picture ended, and a time before the shown picture decodes again from the start.
For live inputs, the newest picture that has arrived.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from fractions import Fraction
from typing import Any

from .decode import Picture

log = logging.getLogger("glrec")

_TOLERANCE_S = 1e-4  # a picture stamped this close after t already counts as shown at t


def stamp_tolerance(time_base: Any, rate: Fraction | None) -> float:
    """How far after ``t`` a picture may be stamped and still count as the one shown at ``t``.

    A muxer rounds each timestamp to its time base: Matroska and WebM keep milliseconds, so the third
    picture of a 30 fps clip is stamped 0.067 s, after 2/30 s. Half a tick covers that rounding; a
    quarter of a frame is the most it may be, so a coarse time base never makes a picture early.
    """
    tick = 0.5 * float(time_base) if time_base else 0.0
    if rate:
        tick = min(tick, 0.25 / float(rate))
    return max(_TOLERANCE_S, tick)


class Timeline:
    """The pictures of the decode worker ``worker()`` on the input's clock (see the module docstring).

    ``reopen()`` stops that worker and starts one at the input's start again (for a
    loop or a rewind); the source owns the workers, the timeline only reads them.
    ``rate`` (frames per second, None if unknown) gives a picture without a
    duration its length; ``tolerance`` is :func:`stamp_tolerance`'s.
    """

    def __init__(
        self,
        worker: Callable[[], Any],
        reopen: Callable[[], object],
        *,
        label: str,
        live: bool,
        loop: bool,
        rate: Fraction | None,
        tolerance: float,
    ) -> None:
        self._worker, self._reopen = worker, reopen
        self.label, self.live, self.loop, self.rate, self.tolerance = label, live, loop, rate, tolerance
        self.offset = 0.0  # loops so far, in seconds of input
        self.current: Picture | None = None
        self.next: Picture | None = None
        self.still = False  # an image shown for ever (set by the source once it knows)

    def take(self, timeout: float | None = None) -> Picture | None:
        """The worker's next picture, stamped on the looped clock (None: the input ended)."""
        pic = self._worker().get(timeout=timeout)
        if pic is not None:
            pic.position = pic.time
            pic.time += self.offset
        return pic

    def peek(self) -> Picture | None:
        """The picture after the current one (decoded now if needed; a looped input starts again)."""
        if self.next is None:
            self.next = self.take()
            if self.next is None and self.loop and self.current is not None:
                self._restart_loop()
                self.next = self.take()
        return self.next

    def _restart_loop(self) -> None:
        assert self.current is not None
        self.offset = self.current.time + self.frame_span(self.current)
        self._reopen()

    def frame_span(self, pic: Picture) -> float:
        if pic.duration:
            return pic.duration
        return 1.0 / float(self.rate) if self.rate else 1.0 / 25.0

    def picture_at(self, t: float) -> Picture | None:
        """Advance to the picture shown at ``t`` (the newest one for live inputs).

        Returns None once a file has ended before ``t`` (never for a still image or a looped input).
        """
        if self.current is None:
            return None
        if self.live:
            pic = self._worker().newest()
            if pic is not None:
                self.current = pic
            return self.current
        if self.still:
            return self.current
        if t < self.current.time - self.tolerance and (self.current.index > 0 or self.offset > 0):
            self._rewind()
        while True:
            nxt = self.peek()
            if nxt is None:
                break
            if nxt.time <= t + self.tolerance:
                self.current, self.next = nxt, None
                continue
            # The current picture lasts until the next one starts.
            self.current.duration = nxt.time - self.current.time
            break
        cur = self.current
        if self.next is None and self._worker().ended and t >= cur.time + self.frame_span(cur) - self.tolerance:
            return None
        return cur

    def _rewind(self) -> None:
        """Go back to the start (a scene asked for an earlier time than the picture shown)."""
        log.info("%s: time went backwards; decoding again from the start", self.label)
        self.offset, self.next = 0.0, None
        self._reopen()
        self.current = self.take()
