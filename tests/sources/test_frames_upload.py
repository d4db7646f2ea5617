"""The source stages on Mesa: host arrays through the PBO ring, strided buffers through the GPU unpack pass.

Each is compared exactly with a numpy reference of the documented conversion, read back from the render
target. The unpack pass (the CUDA path's GL half) is fed the bytes the CUDA copy would put in its buffer,
copied here from host memory by the same copy plan.
"""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

from glrec.errors import ConfigError
from glrec.gl.target import RenderTarget
from glrec.sources.frames import inspect_frame
from glrec.sources.frames.array import ArraySource
from glrec.sources.frames.unpack import UnpackPass, copy_plan

W, H = 20, 12


def expected_rgba(frame: np.ndarray) -> np.ndarray:
    """The documented conversion, in numpy: (H, W, 4) uint8, top row first (alpha 255 where none came)."""
    a = frame if frame.ndim == 3 else frame[:, :, None]
    if a.dtype == np.uint16:
        a = (a.astype(np.int64) * 255 + 32767) // 65535  # round(v * 255 / 65535); no ties
    elif a.dtype.kind == "f":
        work = np.float64 if a.dtype == np.float64 else np.float32  # as documented: float32 for float16/32
        a = np.rint(np.clip(a.astype(work), 0, 1) * work(255))
    a = a.astype(np.uint8)
    rgb = np.repeat(a, 3, axis=2) if a.shape[2] == 1 else a[:, :, :3]
    alpha = a[:, :, 3:] if a.shape[2] == 4 else np.full((*a.shape[:2], 1), 255, np.uint8)
    return np.concatenate([rgb, alpha], axis=2)


def read_target(target: RenderTarget) -> np.ndarray:
    raw = np.frombuffer(target.fbo.read(components=4), np.uint8).reshape(target.size[1], target.size[0], 4)
    return raw[::-1]  # GL rows are bottom-up


def frames_to_test() -> list[tuple[str, np.ndarray]]:
    rng = np.random.default_rng(7)
    u8 = rng.integers(0, 256, (H, W, 4), dtype=np.uint8)
    wide = rng.integers(0, 256, (H + 5, W * 3, 3), dtype=np.uint8)
    u16 = rng.integers(0, 65536, (H, W, 3), dtype=np.uint16)
    f = rng.random((H, W, 3))
    f[0, :3, 0] = [0.5 / 255, 1.5 / 255, 2.5 / 255]  # ties round to even: 0, 2, 2
    f[1, 0, :] = [-0.9 / 255, 1 + 0.9 / 255, 1.0]  # within tolerance: clipped
    return [
        ("rgb", u8[:, :, :3].copy()),
        ("rgba", u8),
        ("grey", u8[:, :, 0].copy()),
        ("grey-1", u8[:, :, :1]),
        ("bgr-view", u8[:, :, 2::-1]),
        ("reversed", u8[::-1, ::-1]),
        ("crop", wide[3 : 3 + H, 5 : 5 + 2 * W : 2]),
        ("transposed", np.ascontiguousarray(u8.transpose(1, 0, 2)).transpose(1, 0, 2)),
        ("uint16", u16),
        ("float64", f),
        ("float32", f.astype(np.float32)),
        ("float16", f.astype(np.float16)),
    ]


@pytest.mark.parametrize(("name", "frame"), frames_to_test(), ids=[n for n, _ in frames_to_test()])
def test_host_upload_matches_the_documented_conversion(gl, name, frame):
    target = RenderTarget(gl.mgl, (W, H))
    source = ArraySource(gl.mgl, target.colour, (W, H), depth=2)
    try:
        for _ in range(3):  # around the ring: each slot reused once its fence has signalled
            source.put(inspect_frame(frame))
            got = read_target(target)
            assert np.array_equal(got, expected_rgba(frame)), name
    finally:
        source.release()
        source.release()
        target.release()


def test_host_upload_leaves_pixel_store_state_as_found(gl):
    from glrec.sources.pixel_unpack import GL_UNPACK_ALIGNMENT
    from glrec.sources.pixel_unpack import get_int as _get_int

    target = RenderTarget(gl.mgl, (W, H))
    source = ArraySource(gl.mgl, target.colour, (W, H))
    try:
        gl.mgl.finish()
        before = _get_int(GL_UNPACK_ALIGNMENT)
        source.put(inspect_frame(np.zeros((H, W, 3), np.uint8)))
        assert _get_int(GL_UNPACK_ALIGNMENT) == before
        # moderngl's own client-memory uploads still work after ours (no unpack buffer left bound)
        tex = gl.mgl.texture((2, 1), 4, data=bytes([1, 2, 3, 4, 5, 6, 7, 8]))
        assert tex.read() == bytes([1, 2, 3, 4, 5, 6, 7, 8])
        tex.release()
    finally:
        source.release()
        target.release()


def _stage(frame: np.ndarray):
    """The bytes the CUDA copy puts in its buffer for ``frame`` (its memory read by the copy plan)."""
    h, w = frame.shape[:2]
    c = frame.shape[2] if frame.ndim == 3 else 1
    strides = frame.strides if frame.ndim == 3 else (*frame.strides, frame.itemsize)
    plan = copy_plan((h, w, c), strides, frame.itemsize)
    start = frame.ctypes.data + plan.src_offset
    staged = b"".join(ctypes.string_at(start + r * plan.src_pitch, plan.row_bytes) for r in range(plan.rows))
    return staged + b"\0" * (-len(staged) % 4), plan, (h, w, c)


@pytest.mark.parametrize(("name", "frame"), frames_to_test(), ids=[n for n, _ in frames_to_test()])
def test_unpack_pass_matches_the_host_path(gl, name, frame):
    if frame.dtype == np.float64:
        frame = frame.astype(np.float32)  # CUDA frames are at most float32
    staged, plan, shape = _stage(frame)
    target = RenderTarget(gl.mgl, (W, H))
    buffer = gl.mgl.buffer(staged)
    unpack = UnpackPass(gl.mgl)
    try:
        unpack.run(buffer, plan, shape, frame.dtype, target.colour)
        got = read_target(target)
        assert np.array_equal(got, expected_rgba(frame)), name
    finally:
        unpack.release()
        unpack.release()
        buffer.release()
        target.release()


@pytest.mark.parametrize(
    ("bad", "words"), [(np.nan, "NaN"), (np.inf, "NaN or infinite"), (-0.2, "below 0"), (3.0, "above 1")]
)
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_unpack_pass_refuses_bad_floats(gl, bad, words, dtype):
    frame = np.full((H, W, 3), 0.5, dtype)
    frame[H - 1, W - 1, 2] = bad
    staged, plan, shape = _stage(frame)
    target = RenderTarget(gl.mgl, (W, H))
    buffer = gl.mgl.buffer(staged)
    unpack = UnpackPass(gl.mgl)
    try:
        with pytest.raises(ConfigError, match=words):
            unpack.run(buffer, plan, shape, frame.dtype, target.colour)
        good = np.full((H, W, 3), 0.25, dtype)  # the flags are cleared for the next frame
        staged, plan, shape = _stage(good)
        buffer.write(staged)
        unpack.run(buffer, plan, shape, good.dtype, target.colour)
    finally:
        unpack.release()
        buffer.release()
        target.release()
