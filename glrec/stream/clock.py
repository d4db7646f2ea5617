"""The live frame clock: frame slots on the wall clock, and what happens when rendering falls behind.

Slot ``k`` is due at ``start + k / fps``. The live loop asks for the next slot,
the clock sleeps until it is due (so nothing renders faster than ``fps``), and
the frame rendered for slot ``k`` gets timestamp ``k / fps``: timestamps still
come from a frame index, now the index of a wall-clock slot.

Skip policy (``"latest"``, the only one): when a frame finishes after the next
slot's due time, the clock does not queue the missed slots (that would add one
frame of delay per missed slot, forever) but jumps to the most recent slot that
is due, and counts the ones it passed over as skipped. A frame late by less
than one interval is rendered at once without skipping. Skips are logged at
warning level, the first at once and then at most every few seconds with the
running count.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable

from ..errors import ConfigError

log = logging.getLogger("glrec")

SKIP_POLICY = "latest"
_LOG_EVERY_S = 5.0


class FrameClock:
    """Wall-clock frame slots at ``fps``.

    ``clock`` and ``sleep`` default to :func:`time.monotonic` and :func:`time.sleep`
    (tests pass fakes). The first call to :meth:`next_slot` starts the clock and
    returns slot 0 at once.

    >>> clock = FrameClock(30)
    >>> clock.next_slot(), clock.next_slot()  # the second call waits ~33 ms
    (0, 1)
    """

    def __init__(
        self,
        fps: float,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if not fps > 0:
            raise ConfigError(f"fps {fps} must be above 0 for a live clock; use e.g. 30.")
        self.fps = float(fps)
        self.interval = 1.0 / self.fps
        self.skipped = 0  # slots passed over because rendering was behind
        self.rendered = 0  # slots handed out
        self._clock, self._sleep = clock, sleep
        self._start: float | None = None
        self._next = 0
        self._last_log = -math.inf
        self._logged_skips = 0

    @property
    def started(self) -> float | None:
        """The clock reading at slot 0 (None before the first slot)."""
        return self._start

    def due(self, slot: int) -> float:
        """The clock reading at which ``slot`` is due."""
        if self._start is None:
            raise ConfigError("The frame clock has not started; call next_slot() first.")
        return self._start + slot * self.interval

    def next_slot(self) -> int:
        """Wait until the next slot is due and return its index (skipping slots if behind)."""
        now = self._clock()
        if self._start is None:
            self._start = now
        slot = self._next
        wait = self.due(slot) - now
        if wait > 0:
            self._sleep(wait)
        else:
            # The newest slot whose due time has passed; the small epsilon keeps a slot
            # that is due exactly now from being counted as missed by float rounding.
            latest = int((now - self._start) * self.fps + 1e-9)
            if latest > slot:
                self._skip(latest - slot, now)
                slot = latest
        self._next = slot + 1
        self.rendered += 1
        return slot

    def _skip(self, n: int, now: float) -> None:
        self.skipped += n
        if now - self._last_log >= _LOG_EVERY_S:
            log.warning(
                "live: rendering fell behind %g fps; skipped %d frame slot(s) (%d in all, policy %r: "
                "render the newest due slot). Lower --size or --fps, or use a faster --preset.",
                self.fps, self.skipped - self._logged_skips, self.skipped, SKIP_POLICY,
            )  # fmt: skip
            self._last_log, self._logged_skips = now, self.skipped
