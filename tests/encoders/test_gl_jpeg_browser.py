"""The GL encoder's JPEGs decode in Chromium (its own JPEG decoder, through an <img> and a canvas).

Headless Chromium (``tests/cdp.py``) decodes each JPEG from a data URL and hands back
its pixels; each must have the picture's size, and be as close to the picture as
Chromium's decode of libjpeg's (Pillow's) JPEG of it at the same quality and
subsampling. The cases cover what the parallel coder writes: restart markers, 0xFF
bytes to stuff (noise at quality 100), partial MCUs, and a batch of scene renders.
"""

from __future__ import annotations

import base64
import io
import os

import numpy as np
import pytest
from conftest import psnr
from helpers import render_once
from PIL import Image
from test_gl_jpeg import noise, photo_like

pytest.importorskip("websockets", reason="needs the stream extra: pip install 'glrec[stream]'")
from cdp import Browser, chromium_path, environment_note

from glrec.encoders.gl_jpeg import GlJpegStage

# In CI (.ci/run installs chromium) a missing browser is a failure, not a skip.
pytestmark = [
    pytest.mark.skipif(
        bool(environment_note()) and os.environ.get("CI") != "true", reason=environment_note() or "browser available"
    ),
]

DECODE = """
(async (jpegs) => {
  const out = [];
  for (const b64 of jpegs) {
    const img = new Image();
    img.src = "data:image/jpeg;base64," + b64;
    await img.decode();  // rejects when Chromium cannot decode the file
    const canvas = document.createElement("canvas");
    canvas.width = img.naturalWidth;
    canvas.height = img.naturalHeight;
    const g = canvas.getContext("2d");
    g.drawImage(img, 0, 0);
    const rgba = g.getImageData(0, 0, canvas.width, canvas.height).data;
    let bin = "";
    for (let i = 0; i < rgba.length; i += 4) bin += String.fromCharCode(rgba[i], rgba[i + 1], rgba[i + 2]);
    out.push([canvas.width, canvas.height, btoa(bin)]);
  }
  return out;
})(JPEGS)
"""


def chromium_decode(jpegs: list[bytes]) -> list[np.ndarray]:
    """Each JPEG decoded by Chromium: (H, W, 3) uint8."""
    page = DECODE.replace("JPEGS", repr([base64.b64encode(j).decode() for j in jpegs]))
    with Browser(chromium_path()) as browser:  # type: ignore[arg-type]
        results = browser.evaluate(page, timeout=60)
    return [np.frombuffer(base64.b64decode(b), np.uint8).reshape(h, w, 3) for w, h, b in results]


def pillow_jpeg(rgb: np.ndarray, quality: int, pix_fmt: str) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(rgb).save(buf, "JPEG", quality=quality, subsampling=2 if pix_fmt == "yuv420p" else 0)
    return buf.getvalue()


def test_chromium_decodes_the_jpegs_with_their_size_and_pixels(gl):
    ctx = gl.mgl
    cases = [  # (picture, quality, pix_fmt, restart)
        (photo_like(64, 48, 1), 90, "yuv420p", None),
        (noise(96, 80, 2), 100, "yuv444p", 1),  # a marker after every MCU, many 0xFF bytes stuffed
        (noise(96, 80, 3), 100, "yuv420p", None),
        (photo_like(33, 17, 4), 85, "yuv420p", None),  # partial MCUs on both edges
    ]
    ours = []
    for rgb, quality, pix_fmt, restart in cases:
        h, w = rgb.shape[:2]
        rgba = np.concatenate([rgb, np.full((h, w, 1), 255, np.uint8)], axis=-1)
        tex = ctx.texture((w, h), 4, np.ascontiguousarray(rgba[::-1]).tobytes())
        stage = GlJpegStage(ctx, (w, h), quality=quality, pix_fmt=pix_fmt, restart=restart)
        try:
            ours.append(stage.encode_now(tex))
        finally:
            stage.release()
            tex.release()
    renders = []
    for scene, t in (("plasma", 0.3), ("cube", 0.7), ("plasma", 1.9)):
        target, sc, rgb = render_once(ctx, scene, (320, 240), t)
        renders.append((target, sc, rgb))
    stage = GlJpegStage(ctx, (320, 240), quality=90, batch=3)
    try:
        ours += stage.encode_batch([target.colour for target, _, _ in renders])
    finally:
        stage.release()
        for target, sc, _ in renders:
            sc.close()
            target.release()
    cases += [(rgb, 90, "yuv420p", None) for _, _, rgb in renders]
    theirs = [pillow_jpeg(rgb, q, pix_fmt) for rgb, q, pix_fmt, _ in cases]
    decoded = chromium_decode(ours + theirs)
    for i, (rgb, quality, pix_fmt, _) in enumerate(cases):
        got, ref = decoded[i], decoded[len(cases) + i]
        assert got.shape == rgb.shape, i
        # >=: both inf when exact. Chromium upsamples chroma its own way: compare it with itself.
        assert psnr(got, rgb) >= psnr(ref, rgb) - 1.0, (i, quality, pix_fmt, psnr(got, rgb), psnr(ref, rgb))
