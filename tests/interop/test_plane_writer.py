"""The shared handoff's buffer writer, checked on any GL (Mesa in CI) against the host readback."""

import numpy as np
import pytest

from glrec.colour import ColourSpec
from glrec.convert import Converter
from glrec.convert.pack import RgbPacker
from glrec.gl.target import RenderTarget
from glrec.interop import HostReadback
from glrec.interop.shared import PlaneWriter
from glrec.scenes import load_scene


@pytest.mark.parametrize("pix_fmt", ["nv12", "yuv420p", "yuv444p", "rgb24", "rgba"])
@pytest.mark.parametrize("size", [(64, 48), (70, 30), (33, 17)])
def test_plane_writer_matches_host_readback(gl, pix_fmt, size):
    if pix_fmt in ("nv12", "yuv420p") and (size[0] % 2 or size[1] % 2):
        pytest.skip("4:2:0 needs even sizes")
    ctx = gl.mgl
    target = RenderTarget(ctx, size)
    scene = load_scene("bars")
    scene.setup(ctx, size)
    source = (
        RgbPacker(ctx, size, pix_fmt)
        if pix_fmt in ("rgb24", "rgba")
        else Converter(ctx, size, size, pix_fmt, ColourSpec())
    )
    readback = HostReadback(ctx, source, 2)
    writer = PlaneWriter(ctx, source)
    offset = 256  # a slot that does not start at 0, as in the shared pool
    buf = ctx.buffer(reserve=offset + (source.layout.nbytes + 3) // 4 * 4 + 256)
    try:
        target.use()
        scene.render(0.7)
        source.run(target.colour)
        writer.run(buf, offset)
        readback.submit(0)
        (host,) = readback.drain()
        got = np.frombuffer(buf.read(), np.uint8)[offset : offset + source.layout.nbytes]
        assert np.array_equal(got, host.data.reshape(-1))
        assert not np.frombuffer(buf.read(), np.uint8)[:offset].any(), "wrote before its slot"
    finally:
        for obj in (writer, readback, source, target):
            obj.release()
        scene.close()
        buf.release()
