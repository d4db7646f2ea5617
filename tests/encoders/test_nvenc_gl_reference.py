"""The reference the GPU tier of the NVENC contract test compares surfaces with, checked on any GL (llvmpipe in CI).

``gl_reference.reference_bytes`` (``glReadPixels`` of the convert stage's output textures)
must be exactly the bytes glrec hands an encoder: here, what the host readback
(``glGetTexImage`` into a PBO, the CPU path) returns for the same converted frame, and
close to a numpy conversion of the rendered RGB. The GPU tier cannot run here; its
reference can, and once read one or two of the four bytes of each rgba8 texel (a quarter of a Y plane).
"""

from __future__ import annotations

import numpy as np
import pytest
from gl_reference import reference_bytes
from helpers import reference_yuv420

from glrec.colour import ColourSpec
from glrec.convert import Converter, RgbPacker
from glrec.gl.target import RenderTarget
from glrec.interop import HostReadback
from glrec.scenes import load_scene

SIZE = (320, 240)  # the GPU tier's size


def _render(ctx, size):
    target = RenderTarget(ctx, size)
    scene = load_scene("plasma")
    scene.setup(ctx, size)
    target.use()
    scene.render(1.5)
    scene.close()
    return target


def _host_readback(ctx, source) -> bytes:
    readback = HostReadback(ctx, source, depth=2)
    try:
        (frame,) = readback.submit(0) + readback.drain()
    finally:
        readback.release()
    return frame.data.tobytes()


@pytest.mark.parametrize("size", [SIZE, (72, 46), (70, 46)])  # rgba8, and rg8 + r8 texels (70, 35 bytes a row)
@pytest.mark.parametrize("pix_fmt", ["nv12", "yuv420p", "yuv444p", "rgba"])
def test_reference_is_the_frame_glrec_hands_the_encoder(gl, pix_fmt, size):
    ctx = gl.mgl
    target = _render(ctx, size)
    source = RgbPacker(ctx, size, "rgba") if pix_fmt == "rgba" else Converter(ctx, size, size, pix_fmt, ColourSpec())
    try:
        source.run(target.colour)
        ref = reference_bytes(ctx, source, target)
        host = _host_readback(ctx, source)
        rgb = np.frombuffer(target.fbo.read(components=3), np.uint8).reshape(size[1], size[0], 3)[::-1]
    finally:
        source.release()
        target.release()
    assert len(ref) == source.layout.nbytes == len(host)
    assert ref == host, f"{sum(a != b for a, b in zip(ref, host, strict=True))} bytes differ from the host readback"
    # and it is the picture, not only agreement between two GL reads
    w, h = size
    buf = np.frombuffer(ref, np.uint8)
    if pix_fmt == "rgba":
        assert np.array_equal(buf.reshape(h, w, 4)[..., :3], rgb) and (buf.reshape(h, w, 4)[..., 3] == 255).all()
        return
    if pix_fmt == "yuv444p":
        want = np.clip(np.floor(ColourSpec().to_yuv(rgb / 255.0) + 0.5), 0, 255)
        got = buf.reshape(3, h, w)
        assert max(int(np.abs(got[k].astype(int) - want[..., k]).max()) for k in range(3)) <= 1
        return
    y, u, v = reference_yuv420(rgb)
    chroma = buf[w * h :]
    if pix_fmt == "nv12":
        pu, pv = chroma.reshape(h // 2, w // 2, 2)[..., 0], chroma.reshape(h // 2, w // 2, 2)[..., 1]
    else:
        pu, pv = chroma[: w * h // 4].reshape(h // 2, w // 2), chroma[w * h // 4 :].reshape(h // 2, w // 2)
    for got, want in ((buf[: w * h].reshape(h, w), y), (pu, u), (pv, v)):
        assert int(np.abs(got.astype(int) - want).max()) <= 1  # float rounding, GPU against numpy
