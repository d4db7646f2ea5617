"""Finishing recordings whatever happens: deferred signals and an exit-time safety net.

Two small guards keep a recording from being cut short:

- :func:`deferred_signals` holds SIGINT/SIGTERM back while a file is being
  finished (flushing the encoder, writing the trailer, rewriting the MP4) and
  delivers them right after, so a second Ctrl-C cannot leave half a trailer.
- :func:`track` registers an open recorder; at interpreter exit any recorder
  still open (a script that forgot ``close()``, or died of an exception outside
  a ``with`` block) is finished with a warning instead of losing its last
  fragment. The registry holds a strong reference until ``close()``, so a
  recorder dropped without closing is still there to finish.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import signal
import threading
from collections.abc import Iterator
from typing import Any, Protocol

log = logging.getLogger("glrec")

_DEFERRED = (signal.SIGINT, signal.SIGTERM)


@contextlib.contextmanager
def deferred_signals(what: str) -> Iterator[None]:
    """Hold SIGINT and SIGTERM back for the duration of the block, then deliver them.

    Only the main thread receives signals in Python; elsewhere this does nothing.
    Signals whose handler was installed outside Python are left alone.

    >>> with deferred_signals("finishing out.mp4"):
    ...     pass  # a Ctrl-C here is delivered after the block
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received: list[int] = []

    def hold(signum: int, frame: Any) -> None:
        if not received:
            log.warning("%s received while %s; finishing first.", signal.Signals(signum).name, what)
        received.append(signum)

    previous = {}
    for sig in _DEFERRED:
        handler = signal.getsignal(sig)
        if handler is not None:  # None: installed from C; we could not put it back
            previous[sig] = signal.signal(sig, hold)
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        if received:
            # Re-send the first one so its own handler runs (KeyboardInterrupt,
            # the CLI's SIGTERM handler, or the default action).
            signal.raise_signal(received[0])


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
