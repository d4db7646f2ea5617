"""An EGL context begun on a thread as a process starts, taken by its first :func:`~glrec.gl.context.create_context`.

A dataset worker process needs a GL context before its first sample, and
making one is slow where many processes start together: on the H200 machine
1.4-1.6 s each with 16 starting at once, 0.3-0.7 s alone
(``benchmarks/results/2026-12-04_nvidia-h200_fifteenth-a-gl-jpeg-compile.json``),
while the interpreter spends 0.3-0.5 s importing glrec, numpy and moderngl
before it could ask for one. :func:`begin` starts the EGL calls
(``eglInitialize``, ``eglCreateContext``: ctypes calls, which release the GIL)
on a thread first, so the two overlap. The context is made current once on
that thread, where drivers set up much of a context, and released there; no
other thread's current context is touched.

The first :func:`~glrec.gl.context.create_context` of the same device takes
it. One that failed, or was begun for another device, is dropped and the
context is made the usual way, so errors read as they always did.
"""

from __future__ import annotations

import atexit
import logging
import os
import threading
import time

from . import egl

log = logging.getLogger("glrec")

__all__ = ["begin", "resolve_device", "take"]

_lock = threading.Lock()
_pending: _Early | None = None


def resolve_device(device: int | None) -> int | None:
    """The EGL device a context for ``device`` is made on: ``GLCONTEXT_DEVICE_INDEX`` when None and it is set."""
    if device is None and os.environ.get("GLCONTEXT_DEVICE_INDEX", "").strip():
        return int(os.environ["GLCONTEXT_DEVICE_INDEX"])
    return device


class _Early:
    def __init__(self, device: int | None, version: tuple[int, int]) -> None:
        self.key = (device, version)
        self.headless: egl.Headless | None = None
        self.error: BaseException | None = None
        self.seconds = 0.0
        self.thread = threading.Thread(target=self._make, name="glrec-early-egl", daemon=True)
        self.thread.start()

    def _make(self) -> None:
        started = time.perf_counter()
        try:
            made = egl.create_headless(self.key[0], *self.key[1])
            error = egl.Binding(made.display, 0, 0, made.context).make_current()
            if error:
                made.destroy()
                raise RuntimeError(f"eglMakeCurrent failed ({egl.error_text(error)})")
            egl.Binding(0, 0, 0, 0).make_current(release_on=made.display)  # this thread lets it go
            self.headless = made
        except BaseException as exc:  # reported by take(): the usual path makes it again and raises there
            self.error = exc
        finally:
            self.seconds = time.perf_counter() - started

    def drop(self) -> None:
        self.thread.join()
        if self.headless is not None:
            self.headless.destroy()
            self.headless = None


def begin(device: int | None, major: int = 4, minor: int = 3) -> None:
    """Start making a headless OpenGL ``major.minor`` core context on EGL device ``device`` (None: the default,
    as :func:`~glrec.gl.context.create_context` resolves it) on a thread; one at a time per process."""
    global _pending
    with _lock:
        if _pending is not None:
            return
        _pending = _Early(resolve_device(device), (major, minor))
    atexit.register(_drop_untaken)


def take(device: int | None, major: int = 4, minor: int = 3) -> egl.Headless | None:
    """The context :func:`begin` made for this device and version (waiting for it), once; else None."""
    global _pending
    with _lock:
        early, _pending = _pending, None
    if early is None:
        return None
    asked = time.perf_counter()
    early.thread.join()
    waited = time.perf_counter() - asked
    if early.headless is None or early.key != (resolve_device(device), (major, minor)):
        why = f"it failed ({early.error})" if early.headless is None else f"it was for {early.key}"
        log.debug("glrec: the EGL context begun early is not used: %s", why)
        early.drop()
        return None
    log.debug("glrec: EGL context begun early: made in %.3f s, %.3f s of it waited for", early.seconds, waited)
    return early.headless


def _drop_untaken() -> None:
    global _pending
    with _lock:
        early, _pending = _pending, None
    if early is not None:
        early.drop()
