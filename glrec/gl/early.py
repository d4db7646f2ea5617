"""A GL context made on a thread of its own while the process imports the rest (a local dataset worker's start).

On the H200 machine a worker spent about half a second importing glrec's dataset modules and as long again in the
driver making its first EGL context current (py-spy over 16 workers starting at once), one after the other. The
driver's calls release the interpreter lock, so the two can overlap: :func:`start` begins making the context,
:func:`take` hands it over (the caller makes it current where it works, ``with gl.active():``).

>>> start(None)  # doctest: +SKIP
>>> gl = take(None)  # the context, or None: the caller makes its own (and sees the error, if any)
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .context import GLContext

__all__ = ["start", "take"]

log = logging.getLogger("glrec")

_early: tuple[int | None, threading.Thread, list[GLContext | None]] | None = None


def start(device: int | None) -> None:
    """Begin making a headless context on EGL device ``device`` (None: the default) on a thread."""
    global _early
    made: list[GLContext | None] = [None]

    def make() -> None:
        from .context import create_context

        try:
            made[0] = create_context(device)  # current on no thread once made
        except Exception as exc:  # the caller's own attempt raises it, where it can be reported
            log.debug("glrec: the early GL context was not made (%s)", exc)

    thread = threading.Thread(target=make, name="glrec-gl-early", daemon=True)
    thread.start()
    _early = (device, thread, made)


def take(device: int | None) -> GLContext | None:
    """The context :func:`start` made for ``device`` (waiting for it), once; None if none was begun for that
    device or it could not be made."""
    global _early
    early, _early = _early, None
    if early is None:
        return None
    wanted, thread, made = early
    thread.join()
    gl = made[0]
    if gl is not None:
        gl.adopt()  # its maker has ended: it is this thread's now
    if gl is not None and wanted != device:  # begun for another device: not this one's
        gl.release()
        return None
    if gl is not None:  # made before the process set up its logging: said again here
        log.info("GL context: %s, OpenGL %s (made as the process started)", gl.info.renderer, gl.info.version)
    return gl
