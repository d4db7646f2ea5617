"""The GL convert stage and the PBO readback, against a numpy reference (Mesa llvmpipe in CI)."""

import numpy as np
import pytest
from helpers import reference_yuv420, render_once

from glrec.colour import ColourSpec
from glrec.convert import Converter
from glrec.gl.target import RenderTarget
from glrec.interop import HostReadback


def _convert(gl, target, size, dst, pix_fmt, colour):
    conv = Converter(gl.mgl, size, dst, pix_fmt, colour)
    rb = HostReadback(gl.mgl, conv, depth=3)
    conv.run(target.colour)
    frames = rb.submit(0) + rb.drain()
    rb.release()
    conv.release()
    assert len(frames) == 1
    return frames[0]


@pytest.mark.parametrize("colour", [ColourSpec(), ColourSpec("bt709", "full"), ColourSpec("bt601", "limited")])
@pytest.mark.parametrize("pix_fmt", ["yuv420p", "nv12"])
def test_420_matches_reference_exactly(gl, pix_fmt, colour):
    size = (320, 240)
    target, sc, rgb = render_once(gl.mgl, "plasma", size, 1.5)
    frame = _convert(gl, target, size, size, pix_fmt, colour)
    y, u, v = reference_yuv420(rgb, colour)
    planes = frame.planes()
    # One code value of slack for float rounding differences between GPU and numpy.
    assert np.abs(planes[0].astype(int) - y).max() <= 1
    if pix_fmt == "nv12":
        uv = planes[1].reshape(size[1] // 2, size[0] // 2, 2)
        pu, pv = uv[..., 0], uv[..., 1]
    else:
        pu, pv = planes[1], planes[2]
    assert np.abs(pu.astype(int) - u).max() <= 1
    assert np.abs(pv.astype(int) - v).max() <= 1
    assert np.mean(planes[0] == y) > 0.99
    sc.close()
    target.release()


def test_444_keeps_full_chroma(gl):
    size = (160, 90)
    target, sc, rgb = render_once(gl.mgl, "bars", size, 0.0)
    frame = _convert(gl, target, size, size, "yuv444p", ColourSpec())
    ref = np.clip(np.floor(ColourSpec().to_yuv(rgb / 255.0) + 0.5), 0, 255)
    for k, plane in enumerate(frame.planes()):
        assert np.abs(plane.astype(int) - ref[..., k]).max() <= 1
    sc.close()
    target.release()


def test_rows_are_flipped_to_top_down(gl):
    """The bars scene draws a red square top-left: it must be in the first rows of the output."""
    size = (320, 240)
    target, sc, _ = render_once(gl.mgl, "bars", size, 0.0)
    frame = _convert(gl, target, size, size, "yuv420p", ColourSpec())
    y, _, v = frame.planes()
    cell = size[1] // 16
    red_y = 16 + 219 * 0.2126
    assert abs(float(y[: cell // 2, : cell // 2].mean()) - red_y) < 2  # top-left is red
    assert float(v[: cell // 4, : cell // 4].mean()) > 230  # strong Cr
    assert abs(float(y[-cell // 2 :, : cell // 2].mean()) - red_y) > 20  # bottom-left is not
    sc.close()
    target.release()


def test_odd_size_padding_replicates_edge(gl):
    size = (161, 91)
    target, sc, _ = render_once(gl.mgl, "plasma", size, 0.3)
    frame = _convert(gl, target, size, (162, 92), "yuv420p", ColourSpec())
    y = frame.planes()[0]
    assert y.shape == (92, 162)
    np.testing.assert_array_equal(y[:, 161], y[:, 160])
    np.testing.assert_array_equal(y[91, :], y[90, :])
    sc.close()
    target.release()


def test_readback_ring_returns_frames_in_order(gl):
    size = (64, 48)
    target = RenderTarget(gl.mgl, size)
    conv = Converter(gl.mgl, size, size, "yuv420p", ColourSpec(range="full"))
    rb = HostReadback(gl.mgl, conv, depth=3)
    got = []
    for i in range(10):
        target.use()
        gl.mgl.clear(i / 10, i / 10, i / 10)
        conv.run(target.colour)
        got += rb.submit(i)
        assert len(got) == max(0, i - 2)  # the ring holds 3 frames in flight
    got += rb.drain()
    assert [f.index for f in got] == list(range(10))
    for f in got:
        assert abs(int(f.planes()[0][0, 0]) - round(f.index / 10 * 255)) <= 1
    rb.release()
    conv.release()
    target.release()


def test_releasing_the_bound_target_leaves_no_gl_error(gl):
    # moderngl re-binds its current framebuffer when it makes the next one; a released,
    # still-bound target used to leave GL_INVALID_OPERATION behind.
    for _ in range(3):
        target = RenderTarget(gl.mgl, (32, 32))
        target.use()
        gl.mgl.clear(1.0, 0.0, 0.0)
        target.release()
        assert gl.mgl.error == "GL_NO_ERROR"
