"""Finishing recordings whatever happens: deferred signals and an exit-time safety net.

Two small guards keep a recording from being cut short:

- :data:`frame_gate` holds SIGINT/SIGTERM/SIGHUP/SIGQUIT back while a frame is handed on
  (read-back frames move from the GPU ring to the encode queue), and
  :func:`deferred_signals` while a file is finished (flushing the encoder,
  writing the trailer, rewriting the MP4); both deliver them right after: a
  Ctrl-C cannot drop frames already made, and a second one cannot leave half
  a trailer.
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

# The signals that end a program politely: Ctrl-C, kill, a closed terminal or dropped
# ssh session (SIGHUP), Ctrl-\ (SIGQUIT). Each is held while a frame or a file is finished.
_DEFERRED = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT") if hasattr(signal, name))


class deferred_signals:  # lower case: it reads like the function it stands in for
    """Hold SIGINT, SIGTERM, SIGHUP and SIGQUIT back for the duration of the block, then deliver them.

    This swaps the handlers in and out (about 10 us), so it guards rare, long
    steps such as finishing a file; a default SIGTERM (which would kill the
    process) is held too, so the file is finished before the process dies.
    :data:`frame_gate` is the per-frame version. Only the main thread receives
    signals in Python; elsewhere this does nothing. Signals whose handler was
    installed outside Python are left alone. ``what`` (for the warning when a
    signal is held) says what is being protected.

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


class FrameGate:
    """Holds Python-handled SIGINT/SIGTERM/SIGHUP/SIGQUIT for the few microseconds a frame is handed on.

    Swapping handlers for every frame costs about 8 % at 64x64 (measured), so
    the gate installs its own handler once, in front of the program's, and a
    frame only raises a counter. A signal outside a held block goes straight
    to the program's handler; inside, it waits until the block ends. Signals
    with no Python handler (a default SIGTERM kills at once either way) are
    not wrapped. ``acquire``/``release`` bracket a recorder's life, so the
    program's handlers are back in place when no recorder is open.

    >>> with frame_gate:  # doctest: +SKIP
    ...     hand_the_frame_on()
    """

    def __init__(self) -> None:
        self._behind: dict[int, Any] = {}  # the handler each signal goes to when not held
        self._depth = 0
        self._pending: list[int] = []
        self._users = 0
        self._handler = self._handle  # one bound method, so "is it still installed" is an identity test

    def _handle(self, signum: int, frame: Any) -> None:
        if self._depth:
            self._pending.append(signum)
        else:
            self._behind[signum](signum, frame)

    def _install(self) -> None:
        for sig in _DEFERRED:
            handler = signal.getsignal(sig)
            if callable(handler) and handler is not self._handler:
                self._behind[sig] = handler
                signal.signal(sig, self._handler)

    def acquire(self) -> None:
        """A recorder starts using the gate (main thread only; elsewhere nothing happens)."""
        if threading.get_ident() == _MAIN_THREAD:
            self._users += 1
            self._install()

    def release(self) -> None:
        """A recorder is done; the last one puts the program's own handlers back."""
        if threading.get_ident() != _MAIN_THREAD or self._users == 0:
            return
        self._users -= 1
        if self._users == 0:
            for sig, handler in self._behind.items():
                if signal.getsignal(sig) is self._handler:
                    signal.signal(sig, handler)
            # _behind is kept: a block that saved the gate's handler while a recorder was open (deferred_signals
            # around a batch recorder whose grid recorder closes inside it) puts the gate back afterwards, and
            # its signals must still reach the program's handler.

    def __enter__(self) -> None:
        # A handler the program installs after the recorder started goes in front of the
        # gate: its signals are then not held (the file is still finished), and release()
        # leaves that handler in place.
        if self._users and threading.get_ident() == _MAIN_THREAD:
            self._depth += 1

    def __exit__(self, *exc: Any) -> None:
        if not self._depth or threading.get_ident() != _MAIN_THREAD:
            return
        self._depth -= 1
        if not self._depth and self._pending:
            first = self._pending[0]
            self._pending.clear()
            self._behind[first](first, None)  # KeyboardInterrupt, or the program's own reaction, now


#: The process-wide gate the recorder hands frames on through.
frame_gate = FrameGate()


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


# -- the command line's side: signals that end the program, and its standard output ----------

_TERMINATING = tuple(sig for sig in _DEFERRED if sig != signal.SIGINT)
_WORDS = {"SIGTERM": "terminated", "SIGHUP": "hung up", "SIGQUIT": "quit"}


class Terminated(KeyboardInterrupt):
    """SIGTERM, SIGHUP or SIGQUIT, handled like Ctrl-C: the file is finished, the program exits non-zero."""

    def __init__(self, signum: int) -> None:
        self.signum = signum
        super().__init__(signal.Signals(signum).name)

    @property
    def word(self) -> str:
        """What happened, for the user: 'terminated', 'hung up', 'quit'."""
        return _WORDS.get(signal.Signals(self.signum).name, "terminated")


def _raise_terminated(signum: int, frame: Any) -> None:
    raise Terminated(signum)


def catch_termination() -> dict[int, Any]:
    """Make SIGTERM, SIGHUP and SIGQUIT raise :class:`Terminated` (main thread); return the handlers replaced."""
    return {sig: signal.signal(sig, _raise_terminated) for sig in _TERMINATING}


def forget_unhandled_interrupt() -> None:
    """Clear CPython's mark that a KeyboardInterrupt went unhandled, once glrec has handled one.

    CPython (3.10 and 3.11) sets that mark whenever a KeyboardInterrupt leaves code that ``exec()`` runs from a
    string, even when the caller then handles it; dataclasses and namedtuple build their methods that way, so a
    Ctrl-C during the command line's imports can land there. Under ``python -m glrec`` the interpreter then
    ends the process by SIGINT (-2) after finishing, instead of with the status glrec chose (130). Where the
    interpreter does not expose the mark (other versions and builds), this does nothing.
    """
    try:
        import ctypes

        ctypes.c_int.in_dll(ctypes.pythonapi, "_Py_UnhandledKeyboardInterrupt").value = 0
    except (ImportError, ValueError, AttributeError, OSError):  # no ctypes, or no such symbol here
        pass


def restore_handlers(previous: dict[int, Any], *, leaving: bool = False) -> None:
    """Put the handlers back; with ``leaving``, the program is on its way out because of a signal.

    A second signal while it leaves (threads finishing, the interpreter's own
    teardown, which puts every Python handler back to the default) would meet
    the default action and end the process by that signal (exit -15) instead of
    with the status already chosen. The file is finished by then, so further
    ending signals are ignored (only where the program had left them at their
    default) for the last milliseconds of the process.
    """
    for sig, handler in previous.items():
        signal.signal(sig, handler)
    if not leaving:
        return
    for sig in _DEFERRED:
        if signal.getsignal(sig) in (signal.SIG_DFL, signal.default_int_handler):
            signal.signal(sig, signal.SIG_IGN)
