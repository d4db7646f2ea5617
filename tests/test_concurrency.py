"""Two recorders at once, each on its own thread with its own GL context; and the thread rule.

Each thread records a different solid colour (and a different size and
codec), and the test decodes both files: every frame of each must be its own
colour, so neither recorder saw the other's GL state.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest
from helpers import decode_planes

import glrec
from glrec.gl.leaks import glrec_threads

FRAMES = 60


class Solid:
    """Clears the frame to one colour."""

    def __init__(self, rgb):
        self.rgb = rgb

    def setup(self, ctx, size):
        self.ctx = ctx

    def render(self, t):
        self.ctx.clear(*self.rgb, 1.0)

    def close(self):
        pass


def _record(path, rgb, size, codec, errors, barrier):
    try:
        barrier.wait(timeout=30)  # start together so the two really interleave
        with glrec.Recorder(path, size=size, fps=30, codec=codec, colour_range="full",
                            qp=0 if codec == "h264" else None, encoder="cpu") as rec:  # fmt: skip
            scene = Solid(rgb)
            for _ in range(FRAMES):
                rec.render(scene)
    except BaseException as exc:  # reported by the main thread
        errors.append(exc)


def _mean_yuv(planes):
    return tuple(float(np.mean(p)) for p in planes)


def test_two_recorders_on_two_threads_make_two_correct_files(gl, tmp_path):
    red, blue = tmp_path / "red.mkv", tmp_path / "blue.mp4"
    errors: list[BaseException] = []
    barrier = threading.Barrier(2)
    threads = [
        threading.Thread(target=_record, args=(red, (1.0, 0.0, 0.0), (96, 64), "h264", errors, barrier)),
        threading.Thread(target=_record, args=(blue, (0.0, 0.0, 1.0), (64, 48), "hevc", errors, barrier)),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors, errors
    assert glrec_threads() == []

    # BT.709 full range: red is Y=54 U=99 V=255, blue Y=18 U=255 V=116 (within coding error).
    for path, size, want in ((red, (96, 64), (54, 99, 255)), (blue, (64, 48), (18, 255, 116))):
        frames = decode_planes(path)
        assert len(frames) == FRAMES, path
        assert frames[0][0].shape == (size[1], size[0])
        for i, planes in enumerate(frames):
            got = _mean_yuv(planes)
            assert got == pytest.approx(want, abs=3), (path.name, i, got)


def _on_other_thread(fn):
    out: list[BaseException | None] = [None]

    def run():
        try:
            fn()
        except BaseException as exc:
            out[0] = exc

    t = threading.Thread(target=run)
    t.start()
    t.join(timeout=30)
    return out[0]


@pytest.mark.parametrize(
    "use",
    [
        pytest.param(lambda rec: rec.render("plasma"), id="render"),
        pytest.param(lambda rec: rec.frame().__enter__(), id="frame"),
        pytest.param(lambda rec: rec.ctx, id="ctx"),
        pytest.param(lambda rec: rec.capture(), id="capture"),
        pytest.param(lambda rec: rec.close(), id="close"),
    ],
)
def test_using_a_recorder_from_another_thread_raises_and_changes_nothing(gl, tmp_path, use):
    path = tmp_path / "owned.mkv"
    rec = glrec.Recorder(path, size=(64, 48), fps=30, encoder="cpu")
    rec.render("bars")
    err = _on_other_thread(lambda: use(rec))
    assert isinstance(err, glrec.ContextThreadError), err
    assert "another thread" in str(err) and "create one recorder per thread" in str(err)
    # The owner carries on as if nothing happened.
    rec.render("bars")
    assert rec.close().frames == 2
    assert len(decode_planes(path)) == 2
