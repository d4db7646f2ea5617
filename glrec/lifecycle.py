"""Finishing recordings whatever happens: deferred signals and an exit-time safety net.

Two small guards keep a recording from being cut short:

- :func:`deferred_signals` holds SIGINT/SIGTERM back while a frame is handed
  on (read back frames move from the GPU ring to the encode queue) and while a
  file is finished (flushing the encoder, writing the trailer, rewriting the
  MP4), and delivers them right after: a Ctrl-C cannot drop frames already
  made, and a second one cannot leave half a trailer.
- :func:`track` registers an open recorder; at interpreter exit any recorder
  still open (a script that forgot ``close()``, or died of an exception outside
  a ``with`` block) is finished with a warning instead of losing its last
  fragment. The registry holds a strong reference until ``close()``, so a
  recorder dropped without closing is still there to finish.
"""

from __future__ import annotations

import atexit
import logging
import signal
import threading
from typing import Any, Protocol

log = logging.getLogger("glrec")

_DEFERRED = (signal.SIGINT, signal.SIGTERM)


class deferred_signals:  # lower case: it reads like the function it stands in for
    """Hold SIGINT and SIGTERM back for the duration of the block, then deliver them.

    Cheap enough to wrap every frame (a few microseconds). Only the main thread
    receives signals in Python; elsewhere this does nothing. Signals whose
    handler was installed outside Python are left alone. ``what`` (for the
    warning when a signal is held) says what is being protected.

    >>> with deferred_signals("finishing out.mp4"):
    ...     pass  # a Ctrl-C here is delivered after the block
    """

    __slots__ = ("_previous", "_received", "what")

    def __init__(self, what: str = "") -> None:
        self.what = what
        self._previous: list[tuple[int, Any]] = []
        self._received: list[int] = []

    def _hold(self, signum: int, frame: Any) -> None:
        if not self._received and self.what:
            log.warning("%s received while %s; finishing first.", signal.Signals(signum).name, self.what)
        self._received.append(signum)

    def __enter__(self) -> deferred_signals:
        if threading.get_ident() == _MAIN_THREAD:
            for sig in _DEFERRED:
                if signal.getsignal(sig) is not None:  # None: installed from C; it could not be put back
                    self._previous.append((sig, signal.signal(sig, self._hold)))
        return self

    def __exit__(self, *exc: Any) -> None:
        previous, self._previous = self._previous, []
        for sig, handler in previous:
            signal.signal(sig, handler)
        if self._received:
            # Re-send the first one so its own handler runs (KeyboardInterrupt, the
            # CLI's SIGTERM handler, or the default action).
            first, self._received = self._received[0], []
            signal.raise_signal(first)


_MAIN_THREAD = threading.main_thread().ident


class _Closable(Protocol):
    def _finish_at_exit(self) -> None: ...


_OPEN: set[Any] = set()
_lock = threading.Lock()


def track(obj: _Closable) -> None:
    """Remember an open recorder so :func:`_finish_open` can finish it at exit."""
    with _lock:
        _OPEN.add(obj)


def untrack(obj: object) -> None:
    with _lock:
        _OPEN.discard(obj)


@atexit.register
def _finish_open() -> None:
    with _lock:
        pending = list(_OPEN)
    for obj in pending:
        try:
            obj._finish_at_exit()
        except Exception as exc:  # exiting anyway: report, and go on with the others
            log.error("Could not finish %r at exit: %r", obj, exc)
