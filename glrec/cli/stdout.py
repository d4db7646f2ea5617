"""The command's own standard streams: stdout whose write errors say where they come from, lines on stderr."""

from __future__ import annotations

import contextlib
import errno
import os
import sys
from typing import Any, TextIO


class StdoutError(OSError):
    """Writing to standard output failed (a closed pipe, a full device)."""


class _CheckedStdout:
    """Standard output whose write errors say where they come from (:class:`StdoutError`)."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except OSError as exc:
            raise StdoutError(exc.errno, exc.strerror) from exc

    def flush(self) -> None:
        try:
            self._stream.flush()
        except OSError as exc:
            raise StdoutError(exc.errno, exc.strerror) from exc

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def checked_stdout() -> TextIO:
    """Wrap ``sys.stdout`` so its failures raise StdoutError; returns the stream it replaced."""
    original = sys.stdout
    sys.stdout = _CheckedStdout(original)
    return original


def abandon_stdout(exc: StdoutError, *, redirect: bool = True) -> bool:
    """After a failed write to standard output: point it at /dev/null so exiting prints no second error.

    ``redirect=False`` leaves file descriptor 1 alone (``main()`` called inside
    another program, which owns it). Returns True for a reader that went away (EPIPE: ``glrec ... | head``),
    which is not a failure of the command; False for anything else (a full disk).
    """
    if not redirect:
        return exc.errno == errno.EPIPE
    with contextlib.suppress(OSError, AttributeError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.__stdout__.fileno())  # type: ignore[union-attr]
        os.close(devnull)
    return exc.errno == errno.EPIPE


def say(text: str) -> None:
    """One line to standard error, if there still is one (after SIGHUP the terminal may be gone)."""
    with contextlib.suppress(OSError, ValueError):
        print(text, file=sys.stderr, flush=True)
