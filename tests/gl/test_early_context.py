"""An EGL context begun on a thread as a process starts (glrec.gl.early): the first create_context takes it.

Dataset workers begin theirs before they import the dataset modules, so the two overlap
(on the H200 machine a context took 1.4-1.6 s with 16 processes starting at once).
"""

from __future__ import annotations

import moderngl
import numpy as np
import pytest

from glrec.errors import ContextError
from glrec.gl import early, egl
from glrec.gl.context import create_context

pytestmark = pytest.mark.gl


@pytest.fixture(autouse=True)
def nothing_pending(monkeypatch):
    monkeypatch.delenv("GLCONTEXT_DEVICE_INDEX", raising=False)
    yield
    early._drop_untaken()  # a test that failed half-way leaves no context behind


def _begun() -> int:
    """The EGL context begun early, once its thread is done (0: it failed)."""
    pending = early._pending
    assert pending is not None
    pending.thread.join()
    return 0 if pending.headless is None else pending.headless.context


def test_the_first_context_takes_the_one_begun_early_and_renders():
    assert egl.current_context() == 0
    early.begin(None)
    made = _begun()
    assert made and egl.current_context() == 0  # made current and let go on its own thread only
    with create_context() as gl:
        assert gl.binding.context == made and gl.owned_by_current_thread()
        tex = gl.mgl.texture((8, 4), 4)
        fbo = gl.mgl.framebuffer(color_attachments=[tex])
        fbo.use()
        gl.mgl.clear(0.0, 1.0, 0.0, 1.0)
        pixels = np.frombuffer(fbo.read(components=4), np.uint8).reshape(4, 8, 4)
        fbo.release()
        tex.release()
    assert (pixels == [0, 255, 0, 255]).all()
    assert egl.current_context() == 0
    with create_context() as second:  # taken once: the next is made as before
        assert second.binding.context != made


def test_one_begun_for_another_device_is_dropped_and_the_callers_context_stays():
    user = moderngl.create_standalone_context(backend="egl", require=430)  # a user's, current on this thread
    try:
        mine = egl.current_context()
        early.begin(0)
        assert _begun() and egl.current_context() == mine
        assert early.take(None) is None  # device 0 named against EGL's default: not the same request
        assert early._pending is None and egl.current_context() == mine
    finally:
        user.release()
        egl.Binding(0, 0, 0, 0).make_current(release_on=egl.lib().eglGetCurrentDisplay() or 0)


def test_one_that_failed_leaves_the_usual_error():
    early.begin(63)
    assert _begun() == 0
    with pytest.raises(ContextError, match="requested EGL device 63"):
        create_context(63)
    assert early._pending is None
