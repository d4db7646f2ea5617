"""Reference renders and independent decoding for the tests."""

from __future__ import annotations

import tarfile
from pathlib import Path
from typing import Any

import av
import numpy as np

from glrec.colour import ColourSpec
from glrec.gl.context import create_context
from glrec.gl.target import RenderTarget
from glrec.scenes import load_scene


def reference_rgb(scene: str, size: tuple[int, int], times: list[float]) -> list[np.ndarray]:
    """Render ``scene`` at ``times`` with plain moderngl calls; RGB uint8, rows top-down."""
    out = []
    with create_context() as gl:
        target = RenderTarget(gl.mgl, size)
        sc = load_scene(scene)
        sc.setup(gl.mgl, size)
        for t in times:
            target.use()
            sc.render(t)
            raw = np.frombuffer(target.fbo.read(components=3), np.uint8).reshape(size[1], size[0], 3)
            out.append(raw[::-1].copy())
        sc.close()
        target.release()
    return out


def render_once(ctx: Any, scene: str, size: tuple[int, int], t: float) -> tuple[RenderTarget, Any, np.ndarray]:
    """Render ``scene`` at ``t`` into a new target: (the target, the set-up scene, its RGB rows top-down)."""
    target = RenderTarget(ctx, size)
    sc = load_scene(scene)
    sc.setup(ctx, size)
    target.use()
    sc.render(t)
    rgb = np.frombuffer(target.fbo.read(components=3), np.uint8).reshape(size[1], size[0], 3)[::-1].copy()
    return target, sc, rgb


def shard_members(root: Path) -> dict[str, bytes]:
    """Every member of the dataset shards ``root/shard-*.tar``, by name."""
    out = {}
    for shard in sorted(Path(root).glob("shard-*.tar")):
        with tarfile.open(shard) as tar:
            out.update({m.name: tar.extractfile(m).read() for m in tar.getmembers()})  # type: ignore[union-attr]
    return out


def reference_yuv420(rgb: np.ndarray, colour: ColourSpec | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """BT.709 (or ``colour``) 4:2:0 planes of an RGB frame, chroma averaged over 2x2 blocks."""
    colour = colour or ColourSpec()
    h, w, _ = rgb.shape
    f = rgb.astype(np.float64) / 255.0
    y = colour.to_yuv(f)[..., 0]
    sub = colour.to_yuv(f.reshape(h // 2, 2, w // 2, 2, 3).mean(axis=(1, 3)))
    q = lambda a: np.clip(np.floor(a + 0.5), 0, 255).astype(np.uint8)  # noqa: E731
    return q(y), q(sub[..., 1]), q(sub[..., 2])


def decode_planes(path: Path) -> list[tuple[np.ndarray, ...]]:
    """Decode every frame with PyAV (FFmpeg's decoders) into yuv420p planes."""
    frames = []
    with av.open(str(path)) as c:
        for f in c.decode(video=0):
            if f.format.name not in ("yuv420p", "yuvj420p"):
                f = f.reformat(format="yuv420p")
            a = f.to_ndarray()
            h, w = f.height, f.width
            flat = a.reshape(-1)
            q = (w // 2) * (h // 2)
            frames.append(
                (
                    flat[: w * h].reshape(h, w),
                    flat[w * h : w * h + q].reshape(h // 2, w // 2),
                    flat[w * h + q :].reshape(h // 2, w // 2),
                )
            )
    return frames


def decode_times(path: Path) -> list[float]:
    with av.open(str(path)) as c:
        return [float(f.time) for f in c.decode(video=0)]


def encoder_parts(video: Any, encoder: str | None = None) -> tuple[Any, Any]:
    """``video``'s stream facts and the encoder's own options (``glrec.options.VideoOptions``), as the plan opens it."""
    asked = video.request(encoder)
    return asked.facts, asked.options


def locked_elsewhere(path: Path) -> bool:
    """Whether someone holds ``path``'s flock: a fresh open file description tries it without waiting."""
    import fcntl
    import os

    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # lets go of it if this probe got it
    return False
