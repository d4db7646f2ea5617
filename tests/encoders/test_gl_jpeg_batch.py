"""The GL JPEG encoder's batches and its parallel entropy coding, checked on bytes.

A batch of N frames (textures or the layers of an array texture) gives the bytes of
N single encodes, in one dispatch per pass; the parallel coder gives the bytes of the
serial coder it replaced (kept as ``benchmarks/gl_jpeg_before.py``), which Pillow and
FFmpeg decode as well as they decode libjpeg's.
"""

from __future__ import annotations

import hashlib
import io
import sys

import moderngl
import numpy as np
import pytest
from conftest import psnr
from PIL import Image
from test_gl_jpeg import encode, ffmpeg_decode, noise, photo_like, pillow_decode, pillow_jpeg, texture_of
from where import BENCHMARKS

from glrec.encoders.gl_jpeg import GlJpegStage
from glrec.encoders.gl_jpeg import stage as gl_jpeg
from glrec.errors import ConfigError

sys.path.insert(0, str(BENCHMARKS))
import gl_jpeg_before

pytestmark = pytest.mark.gl
SIZE = (40, 24)


@pytest.fixture(scope="module")
def mgl():
    from glrec.gl.context import create_context

    with create_context() as ctx:
        yield ctx.mgl
        assert ctx.mgl.error == "GL_NO_ERROR"


def pictures(n: int, size: tuple[int, int] = SIZE) -> list[np.ndarray]:
    return [photo_like(*size, seed) if seed % 2 else noise(*size, seed) for seed in range(n)]


def array_of(ctx, frames: list[np.ndarray]) -> moderngl.TextureArray:
    h, w = frames[0].shape[:2]
    layers = [np.concatenate([f, np.full((h, w, 1), 255, np.uint8)], axis=-1)[::-1] for f in frames]
    return ctx.texture_array((w, h, len(frames)), 4, np.ascontiguousarray(np.stack(layers)).tobytes())


def digest(jpegs: list[bytes]) -> list[str]:
    return [hashlib.sha256(j).hexdigest()[:16] for j in jpegs]


@pytest.mark.parametrize("batch", [1, 5, 16, 20, 64])
def test_a_batch_gives_the_bytes_of_single_encodes(mgl, batch):
    frames = pictures(37)
    singles = [encode(mgl, f, 80) for f in frames]
    textures = [texture_of(mgl, f) for f in frames]
    array = array_of(mgl, frames)
    stage = GlJpegStage(mgl, SIZE, quality=80, batch=batch)
    try:
        assert digest(stage.encode_batch(textures)) == digest(singles)  # chunks of `batch`, 16 textures a dispatch
        assert digest(stage.encode_batch(array)) == digest(singles)  # every layer
        done = []
        for first in range(0, len(frames), batch):  # the ring, a batch per slot
            stage.run_batch(textures[first : first + batch])
            done += stage.submit_batch(range(100 + first, 100 + first + len(textures[first : first + batch])))
        done += stage.drain()
    finally:
        stage.release()
        array.release()
        for t in textures:
            t.release()
    assert [i for i, _ in done] == list(range(100, 137))
    assert digest([j for _, j in done]) == digest(singles)
    for jpeg, rgb in zip(singles, frames, strict=True):
        assert Image.open(io.BytesIO(jpeg)).size == SIZE
        assert psnr(pillow_decode(jpeg), rgb) >= psnr(pillow_decode(pillow_jpeg(rgb, 80, "yuv420p")), rgb) - 2.0


def test_one_dispatch_per_pass_for_a_batch(mgl, monkeypatch):
    frames = pictures(20)
    array, textures = array_of(mgl, frames), [texture_of(mgl, f) for f in frames]
    stage = GlJpegStage(mgl, SIZE, batch=20)
    calls: list[tuple[int, ...]] = []
    barriers: list[int] = []
    real_dispatch, real_barrier = gl_jpeg.dispatch_compute, moderngl.Context.memory_barrier
    monkeypatch.setattr(gl_jpeg, "dispatch_compute", lambda *a: calls.append(a[1:]) or real_dispatch(*a))
    monkeypatch.setattr(moderngl.Context, "memory_barrier", lambda s, *a: barriers.append(1) or real_barrier(s, *a))
    try:
        stage.encode_batch(array)
        segments = stage.geometry.segments
        assert calls == [(segments, 1, 20), (segments, 1, 20)] and len(barriers) == 2  # 20 frames, two dispatches
        calls.clear()
        stage.encode_batch(textures)  # a sampler array of 16 units: 16 + 4 frames, then one assembly
        assert calls == [(segments, 1, 16), (segments, 1, 4), (segments, 1, 20)]
    finally:
        monkeypatch.undo()
        stage.release()
        array.release()
        for t in textures:
            t.release()


@pytest.mark.parametrize(
    ("size", "quality", "pix_fmt", "restart"),
    [
        ((1, 1), 90, "yuv420p", None),
        ((33, 9), 75, "yuv444p", None),
        ((96, 80), 100, "yuv420p", 1),  # noise at quality 100: 0xFF bytes to stuff in most segments
        ((96, 80), 100, "yuv444p", None),  # 21 MCUs of 3 blocks: the largest work group (504 invocations)
        ((1024, 16), 100, "yuv420p", None),
        ((300, 24), 5, "yuv420p", 3),  # long runs of zeros: ZRL codes
    ],
)
def test_same_bytes_as_the_serial_encoder(mgl, tmp_path, size, quality, pix_fmt, restart):
    for rgb in (noise(*size, 7), photo_like(*size, 8)):
        tex = texture_of(mgl, rgb)
        old = gl_jpeg_before.GlJpegStage(mgl, size, quality=quality, pix_fmt=pix_fmt, restart=restart)
        try:
            theirs = old.encode_now(tex)
        finally:
            old.release()
            tex.release()
        ours = encode(mgl, rgb, quality, pix_fmt, restart=restart)
        assert ours == theirs
        assert ffmpeg_decode(ours, tmp_path).shape == rgb.shape


def test_batches_refused_with_the_reason(mgl):
    with pytest.raises(ConfigError, match="batch 0 must be at least 1"):
        GlJpegStage(mgl, SIZE, batch=0)
    frame = gl_jpeg.geometry((1920, 1080), "yuv420p").max_bytes + 4
    too_many = int(mgl.info["GL_MAX_SHADER_STORAGE_BLOCK_SIZE"]) // frame + 1
    with pytest.raises(ConfigError, match=f"use a batch of at most {too_many - 1}"):
        GlJpegStage(mgl, (1920, 1080), batch=too_many)  # refused before any buffer is made
    stage = GlJpegStage(mgl, SIZE, batch=2)
    textures = [texture_of(mgl, f) for f in pictures(3)] + [mgl.texture((16, 8), 4)]
    try:
        with pytest.raises(ConfigError, match="batches of 1..2 frames, not 3"):
            stage.run_batch(textures[:3])
        with pytest.raises(ConfigError, match=r"encodes \(40, 24\) textures, not \(16, 8\)"):
            stage.encode_batch(textures)
        assert stage.encode_batch([]) == []
    finally:
        stage.release()
        for t in textures:
            t.release()


def test_profile_times_each_pass(mgl):
    tex = texture_of(mgl, photo_like(*SIZE))
    stage = GlJpegStage(mgl, SIZE)
    try:
        times = stage.profile([tex])
        assert list(times["wall"]) == ["segments", "assemble", "total"] and list(times["gpu"]) == list(times["wall"])
        assert all(v > 0 for v in times["wall"].values())
        assert stage.encode_now(tex) == encode(mgl, photo_like(*SIZE), 90)  # profiling leaves the stage as it was
    finally:
        stage.release()
        tex.release()


def test_a_batch_cut_short_does_not_spoil_the_next(mgl, monkeypatch):
    """Pass 1 adds segment lengths into tile totals that pass 2 clears: a batch whose pass 2 never ran
    (an error between the dispatches) must leave the next batch's offsets right."""
    size = (160, 128)  # 80 MCUs, a segment each: two tiles, so offsets use the tile totals
    rgb = photo_like(*size, 3)
    tex = texture_of(mgl, rgb)
    stage = GlJpegStage(mgl, size, restart=1)
    assert stage.geometry.tiles == 2
    real = gl_jpeg.dispatch_compute
    calls = []

    def second_fails(*args):
        calls.append(args)
        if len(calls) == 2:
            raise RuntimeError("injected: the assembly is not dispatched")
        real(*args)

    try:
        want = stage.encode_now(tex)
        monkeypatch.setattr(gl_jpeg, "dispatch_compute", second_fails)
        with pytest.raises(RuntimeError, match="injected"):
            stage.run(tex)
        monkeypatch.undo()
        assert [stage.encode_now(tex) for _ in range(3)] == [want] * 3
        assert psnr(pillow_decode(want), rgb) > 30
    finally:
        stage.release()
        tex.release()
