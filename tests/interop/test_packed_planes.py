"""Packed plane textures (4, 2 or 1 bytes per texel) give the same frame bytes for every width.

Widths are picked so each plane's row length is a multiple of 4, of 2 only, or odd:
every packing the convert and pack stages choose is checked against a numpy
reference computed from glReadPixels of the render.
"""

import numpy as np
import pytest
from helpers import reference_yuv420, render_once

from glrec.colour import ColourSpec
from glrec.convert import Converter, PlaneLayout, RgbPacker
from glrec.interop import HostReadback
from glrec.layout import texel_bytes

# Y row % 4 == 0 with chroma % 4 == 0, % 2 only, or odd; Y row % 2 only; odd widths (4:4:4, RGB).
WIDTHS_420 = [96, 100, 98, 102]
WIDTHS_ANY = [96, 98, 97]


def _rendered(gl, size, scene="plasma", t=0.9):
    target, sc, rgb = render_once(gl.mgl, scene, size, t)
    sc.close()
    return target, rgb


def _one_frame(gl, stage, target):
    rb = HostReadback(gl.mgl, stage, depth=2)
    try:
        stage.run(target.colour)
        (frame,) = rb.submit(0) + rb.drain()
    finally:
        rb.release()
    return frame


def test_texel_bytes_is_the_largest_that_divides_the_row():
    assert [texel_bytes(n) for n in (1920, 960, 1366, 683, 3 * 1366)] == [4, 4, 2, 1, 2]
    layout = PlaneLayout.for_format("yuv420p", 1366, 768)
    assert layout.textures == ((683, 768, 2), (683, 384, 1), (683, 384, 1))
    assert PlaneLayout.for_format("rgb24", 1920, 1080).textures == ((1440, 1080, 4),)
    assert PlaneLayout.for_format("nv12", 1920, 1080).textures == ((480, 1080, 4), (480, 540, 4))
    for fmt in ("yuv420p", "nv12", "yuv444p", "rgb24", "rgba"):
        lay = PlaneLayout.for_format(fmt, 1366, 768)
        # the textures hold exactly the plane bytes: nothing lost, nothing padded
        assert sum(w * h * c for w, h, c in lay.textures) == lay.nbytes


@pytest.mark.parametrize("pix_fmt", ["yuv420p", "nv12"])
@pytest.mark.parametrize("width", WIDTHS_420)
def test_420_every_packing_matches_reference(gl, pix_fmt, width):
    size = (width, 36)
    target, rgb = _rendered(gl, size)
    conv = Converter(gl.mgl, size, size, pix_fmt, ColourSpec())
    try:
        assert [t.components for t in conv.planes] == [c for _, _, c in conv.layout.textures]
        frame = _one_frame(gl, conv, target)
    finally:
        conv.release()
        target.release()
    y, u, v = reference_yuv420(rgb)
    planes = frame.planes()
    if pix_fmt == "nv12":
        uv = planes[1].reshape(size[1] // 2, size[0] // 2, 2)
        pu, pv = uv[..., 0], uv[..., 1]
    else:
        pu, pv = planes[1], planes[2]
    for got, ref in ((planes[0], y), (pu, u), (pv, v)):
        assert got.shape == ref.shape
        assert np.abs(got.astype(int) - ref).max() <= 1
        assert np.mean(got == ref) > 0.99


@pytest.mark.parametrize("width", WIDTHS_ANY)
def test_444_every_packing_matches_reference(gl, width):
    size = (width, 20)
    target, rgb = _rendered(gl, size)
    conv = Converter(gl.mgl, size, size, "yuv444p", ColourSpec())
    try:
        frame = _one_frame(gl, conv, target)
    finally:
        conv.release()
        target.release()
    ref = np.clip(np.floor(ColourSpec().to_yuv(rgb / 255.0) + 0.5), 0, 255)
    for k, plane in enumerate(frame.planes()):
        assert np.abs(plane.astype(int) - ref[..., k]).max() <= 1


@pytest.mark.parametrize("pix_fmt", ["rgb24", "rgba"])
@pytest.mark.parametrize("width", WIDTHS_ANY)
def test_rgb_pack_equals_the_flipped_render_exactly(gl, pix_fmt, width):
    size = (width, 22)
    target, rgb = _rendered(gl, size, "bars", 0.3)
    packer = RgbPacker(gl.mgl, size, pix_fmt)
    try:
        frame = _one_frame(gl, packer, target)
    finally:
        packer.release()
        target.release()
    assert frame.data.shape == frame_shape(pix_fmt, size)
    np.testing.assert_array_equal(frame.data[..., :3], rgb)
    if pix_fmt == "rgba":
        assert (frame.data[..., 3] == 255).all()


def frame_shape(pix_fmt, size):
    return (size[1], size[0], 3 if pix_fmt == "rgb24" else 4)
