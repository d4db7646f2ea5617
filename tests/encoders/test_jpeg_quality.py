"""``quality`` has one meaning on every JPEG encoder: libjpeg's 1-100 scale (issue 35 item 1).

The GL JPEG encoder scales libjpeg's own tables; the CPU encoder (FFmpeg's mjpeg)
maps the quality onto its q-scale (:func:`glrec.encoders.jpeg_options.ffmpeg_qscale`).
Both are measured here against libjpeg itself (Pillow), on the same rendered
picture: file size and luma PSNR at the same quality. nvJPEG is the GPU tier's.
"""

from __future__ import annotations

import io
from fractions import Fraction

import av
import numpy as np
import pytest
from PIL import Image

import glrec
from glrec.diagnostics.common import psnr, reference_rgb
from glrec.encoders.gl_jpeg.tables import LUMA_QUANT
from glrec.encoders.jpeg_options import _QSCALE_PER_SCALE, ffmpeg_qscale, libjpeg_scale

SIZE = (320, 240)


def _luma(rgb: np.ndarray) -> np.ndarray:
    return rgb.astype(np.float64) @ [0.299, 0.587, 0.114]


def _dqt(jpeg: bytes) -> list[int]:
    """The first quantisation table a JPEG file holds, in zigzag order."""
    at = 2
    while jpeg[at + 1] != 0xDB:
        at += 2 + int.from_bytes(jpeg[at + 2 : at + 4], "big")
    return list(jpeg[at + 5 : at + 69])


_ZIGZAG = [0, 1, 8, 16, 9, 2, 3, 10, 17, 24, 32, 25, 18, 11, 4, 5, 12, 19, 26, 33, 40, 48, 41, 34, 27, 20, 13, 6, 7, 14,
           21, 28, 35, 42, 49, 56, 57, 50, 43, 36, 29, 22, 15, 23, 30, 37, 44, 51, 58, 59, 52, 45, 38, 31, 39, 46, 53,
           60, 61, 54, 47, 55, 62, 63]  # fmt: skip


def test_the_qscale_ratio_is_the_two_tables_own():
    """FFmpeg's table at q-scale 8 is its base matrix itself ((m * 8) >> 3): read it from its own output."""
    cc = av.CodecContext.create("mjpeg", "w")
    cc.width, cc.height, cc.pix_fmt, cc.time_base = 16, 16, "yuvj420p", Fraction(1, 30)
    cc.qmin = cc.qmax = 8
    cc.open()
    frame = av.VideoFrame.from_ndarray(np.full((24, 16), 128, np.uint8), format="yuvj420p")
    frame.pts = 0
    zigzag = _dqt(b"".join(bytes(p) for p in cc.encode(frame) + cc.encode(None)))
    ffmpeg = np.zeros(64)
    ffmpeg[_ZIGZAG] = zigzag
    annex_k = np.asarray(LUMA_QUANT, np.float64).reshape(64)
    low = [r * 8 + c for r in range(6) for c in range(6) if (r, c) != (0, 0)]  # DC left out: FFmpeg fixes it at 8

    def geo(t: np.ndarray) -> float:
        return float(np.exp(np.mean(np.log(t[low]))))

    derived = 8 / 100 * geo(annex_k) / geo(ffmpeg)
    assert abs(_QSCALE_PER_SCALE - derived) < 5e-4, derived
    assert [ffmpeg_qscale(q) for q in (1, 50, 90, 91, 92, 100)] == [31, 9, 2, 2, 1, 1]
    assert libjpeg_scale(50) == 100 and libjpeg_scale(25) == 200


def _jpeg(scene: str, quality: int, encoder: str, tmp_path) -> bytes:
    for old in tmp_path.glob("q_*.jpg"):
        old.unlink()
    glrec.record(scene, tmp_path / "q_%02d.jpg", size=SIZE, fps=30, frames=1, quality=quality, encoder=encoder)
    return (tmp_path / "q_00.jpg").read_bytes()


def _measured(jpeg: bytes, ref: np.ndarray) -> tuple[int, float]:
    return len(jpeg), psnr(_luma(np.asarray(Image.open(io.BytesIO(jpeg)).convert("RGB"))), _luma(ref))


@pytest.mark.parametrize("scene", ["plasma", "particles"])
@pytest.mark.parametrize("quality", [30, 70, 90])
def test_a_quality_means_libjpegs_on_every_jpeg_encoder(gl, tmp_path, scene, quality):
    ref = reference_rgb(scene, SIZE, 1, 30.0)[0]
    out = io.BytesIO()
    Image.fromarray(ref).save(out, "JPEG", quality=quality, subsampling=2)  # libjpeg(-turbo) itself
    size, db = _measured(out.getvalue(), ref)
    gl_size, gl_db = _measured(_jpeg(scene, quality, "gl", tmp_path), ref)
    assert abs(gl_db - db) < 0.3 and 0.9 < gl_size / size < 1.15, (gl_size, gl_db, size, db)  # libjpeg's tables
    cpu_size, cpu_db = _measured(_jpeg(scene, quality, "cpu", tmp_path), ref)
    # FFmpeg's own tables in whole steps: near libjpeg, not equal (its fixed DC step caps smooth pictures)
    assert abs(cpu_db - db) < 3.5 and 0.75 < cpu_size / size < 1.3, (cpu_size, cpu_db, size, db)


@pytest.mark.gpu
def test_nvjpeg_takes_quality_on_the_same_scale(tmp_path):
    from conftest import gpu_problem

    if gpu_problem():
        pytest.skip(gpu_problem())
    for quality in (30, 90):
        ref = reference_rgb("particles", SIZE, 1, 30.0)[0]
        out = io.BytesIO()
        Image.fromarray(ref).save(out, "JPEG", quality=quality, subsampling=2)
        size, db = _measured(out.getvalue(), ref)
        nv_size, nv_db = _measured(_jpeg("particles", quality, "nvjpeg", tmp_path), ref)
        assert abs(nv_db - db) < 1.0 and 0.8 < nv_size / size < 1.25, (quality, nv_size, nv_db, size, db)
