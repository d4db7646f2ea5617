"""Quality parity of the GL JPEG encoder with libjpeg-turbo (Pillow) at the same quality and subsampling.

On glrec's cube and plasma renders (the render target itself is encoded), a
frame of FFmpeg's testsrc2 decoded by PyAV, and a photo-like picture: PSNR
within 0.5 dB of Pillow's, file size within 10 %. ``-rA`` prints both per
picture; ``benchmarks/gl_jpeg.py`` stores them.
"""

from __future__ import annotations

import av
import numpy as np
import pytest
from conftest import psnr
from helpers import render_once
from test_gl_jpeg import encode, photo_like, pillow_decode, pillow_jpeg

SIZE = (320, 240)


def lavfi_testsrc2() -> np.ndarray:
    """Frame 3 of FFmpeg's testsrc2 (gradients, text, colour bars) decoded through PyAV."""
    with av.open(f"testsrc2=size={SIZE[0]}x{SIZE[1]}:rate=10", format="lavfi") as c:
        for i, frame in enumerate(c.decode(video=0)):
            if i == 3:
                return frame.to_ndarray(format="rgb24")
    raise AssertionError("testsrc2 ended early")


@pytest.mark.gl
@pytest.mark.parametrize("pix_fmt", ["yuv420p", "yuv444p"])
@pytest.mark.parametrize("quality", [75, 90])
@pytest.mark.parametrize("picture", ["cube", "plasma", "testsrc2", "photo"])
def test_psnr_and_size_match_libjpeg(gl, picture, quality, pix_fmt):
    ctx = gl.mgl
    if picture in ("cube", "plasma"):
        target, scene, rgb = render_once(ctx, picture, SIZE, 0.7)
        from glrec.encoders.gl_jpeg import GlJpegStage

        stage = GlJpegStage(ctx, SIZE, quality=quality, pix_fmt=pix_fmt)
        try:
            data = stage.encode_now(target.colour)  # the render target as the pipeline hands it over
        finally:
            stage.release()
            scene.close()
            target.release()
    else:
        rgb = lavfi_testsrc2() if picture == "testsrc2" else photo_like(*SIZE)
        data = encode(ctx, rgb, quality, pix_fmt)
    theirs = pillow_jpeg(rgb, quality, pix_fmt)
    ours_db, theirs_db = psnr(pillow_decode(data), rgb), psnr(pillow_decode(theirs), rgb)
    ratio = len(data) / len(theirs)
    print(f"{picture} q{quality} {pix_fmt}: GL {ours_db:.2f} dB {len(data)} B, "
          f"Pillow {theirs_db:.2f} dB {len(theirs)} B, size x{ratio:.3f}")  # fmt: skip
    assert abs(ours_db - theirs_db) <= 0.5
    assert abs(ratio - 1) <= 0.10
