"""A GL context made on a thread while the process imports (glrec.gl.early, a local dataset worker's start): the
taking thread owns it and draws with it; nothing is left current on either thread; a wrong device or a failure
gives None, so the caller makes its own and reports the error."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from glrec.errors import ContextThreadError
from glrec.gl import early, egl

pytestmark = pytest.mark.gl


def test_the_context_made_on_a_thread_is_the_takers_and_draws() -> None:
    early.start(None)
    gl = early.take(None)
    assert gl is not None
    try:
        assert egl.current_context() == 0  # made on the other thread, current on none
        with gl.active():
            fbo = gl.mgl.simple_framebuffer((8, 4))
            fbo.use()
            gl.mgl.clear(0.2, 0.4, 0.6, 1.0)
            pixels = np.frombuffer(fbo.read(components=4), np.uint8).reshape(4, 8, 4)
            fbo.release()
        assert (pixels == [51, 102, 153, 255]).all()
        assert egl.current_context() == 0  # put back as it was
    finally:
        gl.release()
    assert early.take(None) is None  # handed over once


def test_a_context_for_another_device_is_released_not_handed_over() -> None:
    early.start(None)
    assert early.take(0) is None  # begun for EGL's default, asked for device 0
    assert early.take(None) is None


def test_a_context_that_could_not_be_made_is_none_and_the_caller_sees_the_error() -> None:
    from glrec.errors import ContextError
    from glrec.gl.context import create_context

    early.start(99)  # no such EGL device here
    assert early.take(99) is None
    with pytest.raises(ContextError):
        create_context(99)


def test_the_taken_context_refuses_other_threads() -> None:
    early.start(None)
    gl = early.take(None)
    assert gl is not None
    errors: list[BaseException] = []

    def use() -> None:
        try:
            with gl.active():
                pass
        except BaseException as exc:  # the taker owns it now: another thread is refused
            errors.append(exc)

    t = threading.Thread(target=use)
    t.start()
    t.join()
    gl.release()
    assert len(errors) == 1 and isinstance(errors[0], ContextThreadError)
