"""The same decoded samples give the same RGB whichever decoder path carried them (GL on llvmpipe, no GPU).

FFmpeg's decoders hand glrec planar pictures (yuv420p, yuv420p10le with the
bits low); NVDEC hands it NV12 and P016 (chroma interleaved, 10 bits high in
16). H.264 and HEVC decoding is exact, so both decoders produce the same
samples, and glrec must then produce the same RGB. Here one set of random
samples is laid out both ways: the CPU path's uploader takes it as an
``av.VideoFrame``, NVDEC's GL side (:class:`~glrec.sources.video.nvdec_gl.NvdecUploader`)
unpacks it from a GL buffer laid out as the NVDEC worker fills its pool slots,
and both go through the one RGB pass. The results must be bit-identical.
"""

from __future__ import annotations

from dataclasses import dataclass

import av
import numpy as np
import pytest

from glrec.sources.video.nvdec import NvPicture, _nv_format, _Plane
from glrec.sources.video.nvdec_gl import NvdecUploader
from glrec.sources.video.rgb import RgbPass
from glrec.sources.video.upload import PboUploader

pytestmark = pytest.mark.gl


@dataclass
class _Memory:
    """Stands in for the worker's CUDA allocation: a plain GL buffer holding the pool's bytes."""

    buffer: object

    def attach(self, ctx):
        return self.buffer

    def detach(self) -> None:
        pass


class _Pool:
    def give_back(self, slot: int) -> None:
        pass


class _Worker:
    def __init__(self, buffer) -> None:
        self._memory = _Memory(buffer)
        self.pool = _Pool()

    def wait_ready(self, pic) -> None:
        pass


def _samples(w: int, h: int, bits: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    dtype = np.uint8 if bits == 8 else np.uint16
    cw, ch = -(-w // 2), -(-h // 2)
    top = (1 << bits) - 1
    y = rng.integers(0, top + 1, (h, w), dtype=dtype)
    u = rng.integers(0, top + 1, (ch, cw), dtype=dtype)
    v = rng.integers(0, top + 1, (ch, cw), dtype=dtype)
    return y, u, v


def _planar_frame(y: np.ndarray, u: np.ndarray, v: np.ndarray, pix_fmt: str) -> av.VideoFrame:
    frame = av.VideoFrame(y.shape[1], y.shape[0], pix_fmt)
    for plane, data in zip(frame.planes, (y, u, v), strict=True):
        rows = np.zeros((plane.height, plane.line_size), np.uint8)
        raw = data.view(np.uint8).reshape(data.shape[0], -1)
        rows[:, : raw.shape[1]] = raw
        plane.update(rows.tobytes())
    return frame


def _pool_bytes(y: np.ndarray, u: np.ndarray, v: np.ndarray, shift: int) -> tuple[bytes, list[int], list[_Plane]]:
    """The planes as NvdecWorker copies them into a slot: NV12/P016, rows tight, planes 256-byte aligned."""
    uv = np.empty((u.shape[0], u.shape[1] * 2), u.dtype)
    uv[:, 0::2], uv[:, 1::2] = u, v
    out, offsets, planes = b"", [], []
    for data, texels in ((y << shift, y.shape[1]), (uv << shift, u.shape[1])):
        raw = np.ascontiguousarray(data).view(np.uint8).reshape(data.shape[0], -1)
        offsets.append(len(out))
        planes.append(_Plane(texels, raw.shape[0], raw.shape[1]))
        out += raw.tobytes()
        out += b"\0" * (-len(out) % 256)
    return out, offsets, planes


def _rgb(gl, planes, fmt, size) -> np.ndarray:
    rgb = RgbPass(gl.mgl)
    try:
        rgb.configure(fmt, 1, False, size, 0, [t.size for t in planes])
        rgb.run(planes)
        return np.frombuffer(rgb.texture.read(), np.uint8).reshape(size[1], size[0], 4).copy()
    finally:
        rgb.release()


@pytest.mark.parametrize(("bits", "size"), [(8, (320, 180)), (8, (321, 181)), (10, (256, 144)), (10, (97, 33))])
@pytest.mark.parametrize("pbo", [True, False])
def test_nvdec_and_ffmpeg_layouts_of_one_picture_convert_alike(gl, bits, size, pbo):
    w, h = size
    y, u, v = _samples(w, h, bits, seed=w * h + bits)
    cpu = PboUploader(gl.mgl, pbo=pbo)
    buffer = None
    nv = None
    try:
        fmt = cpu.upload(_planar_frame(y, u, v, "yuv420p" if bits == 8 else "yuv420p10le"))
        want = _rgb(gl, cpu.planes, fmt, size)

        data, offsets, planes = _pool_bytes(y, u, v, 0 if bits == 8 else 16 - bits)
        buffer = gl.mgl.buffer(data)
        nv = NvdecUploader(gl.mgl, _Worker(buffer))
        nv_fmt = _nv_format("NV12" if bits == 8 else "P016", bits)
        pic = NvPicture(0, nv_fmt, planes, offsets, w, h, 1, 1)
        got = _rgb(gl, nv.planes if nv.upload(pic) else [], nv_fmt, size)
    finally:
        cpu.release()
        if nv is not None:
            nv.release()
        if buffer is not None:
            buffer.release()
    diff = np.abs(want.astype(int) - got.astype(int))
    assert diff.max() == 0, f"{int((diff > 0).any(axis=2).sum())} pixels differ, by up to {diff.max()}"
    assert len(np.unique(want[..., 0])) > 50  # a picture with many values, not a flat one that proves little


def test_linear_chroma_is_honoured_by_the_nvdec_uploader(gl):
    buffer = gl.mgl.buffer(reserve=4096)
    try:
        for linear in (False, True):
            nv = NvdecUploader(gl.mgl, _Worker(buffer), linear=linear)
            pic = NvPicture(0, _nv_format("NV12", 8), [_Plane(32, 16, 32), _Plane(16, 8, 32)], [0, 512], 32, 16, 1, 1)
            nv.upload(pic)
            want = 0x2601 if linear else 0x2600  # GL_LINEAR, GL_NEAREST
            assert all(t.filter == (want, want) for t in nv.planes)
            nv.release()
    finally:
        buffer.release()
