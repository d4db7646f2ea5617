"""What ``glrec doctor`` and ``glrec info`` share: the checks' verdicts, reference renders, independent decoding.

A round trip records colour bars through one backend, decodes them with PyAV
(FFmpeg's decoders, independent of the encoder) and compares the luma with the
same scene rendered by plain moderngl calls (no glrec pipeline).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import GlrecError

PASS, FAIL, NA = "ok", "FAIL", "n/a"
MIN_PSNR = 30.0  # dB on luma: far below what a working encoder gives on colour bars, far above a broken one


@dataclass
class Check:
    name: str
    status: str
    detail: str
    remedy: str = ""


def cuda_summary() -> tuple[str | None, list[Any]]:
    """Why CUDA is unusable here (None when it works), and the visible devices."""
    from ..cuda.driver import cuda_problem, visible_devices

    problem = cuda_problem()
    return problem, ([] if problem else visible_devices())


def reference_rgb(scene: str, size: tuple[int, int], frames: int, fps: float) -> list[np.ndarray]:
    """``scene`` rendered with plain moderngl calls (no glrec pipeline), RGB rows top-down."""
    from ..gl.context import create_context
    from ..gl.target import RenderTarget
    from ..scenes import load_scene

    out = []
    with create_context() as gl:
        target = RenderTarget(gl.mgl, size)
        sc = load_scene(scene)
        sc.setup(gl.mgl, size)
        for i in range(frames):
            target.use()
            sc.render(i / fps)
            out.append(np.frombuffer(target.fbo.read(components=3), np.uint8).reshape(size[1], size[0], 3)[::-1])
        sc.close()
        target.release()
    return out


def reference_luma(scene: str, size: tuple[int, int], frames: int, fps: float, colour: Any) -> list[np.ndarray]:
    """Luma of :func:`reference_rgb` through ``colour``'s matrix and range."""
    return [np.clip(np.floor(colour.to_yuv(rgb / 255.0)[..., 0] + 0.5), 0, 255)
            for rgb in reference_rgb(scene, size, frames, fps)]  # fmt: skip


def decoded_planes(path: Path) -> list[list[np.ndarray]]:
    """Every frame's Y, U, V planes as decoded (no conversion), for 4:2:0 and 4:4:4 streams."""
    import av

    out = []
    with av.open(str(path)) as c:
        for fr in c.decode(video=0):
            name = fr.format.name
            if name not in ("yuv420p", "yuvj420p", "yuv444p", "yuvj444p"):
                fr = fr.reformat(format="yuv420p")
                name = "yuv420p"
            a = fr.to_ndarray()
            h, w = fr.height, fr.width
            if "444" in name:
                out.append([a[i] for i in range(3)])
            else:
                flat = a.reshape(-1)
                q = (w // 2) * (h // 2)
                out.append([flat[: w * h].reshape(h, w), flat[w * h : w * h + q].reshape(h // 2, w // 2),
                            flat[w * h + q : w * h + 2 * q].reshape(h // 2, w // 2)])  # fmt: skip
    return out


def _sequence(path: Path) -> list[Path]:
    """The files of an image sequence ``path`` (a printf pattern), in frame order: those the pattern makes."""
    from ..sinks.paths import sequence_frames

    return [f for _, f in sorted(sequence_frames(path))]


def decoded_rgb(path: Path) -> list[np.ndarray]:
    """Every frame of an image sequence as RGB, decoded by PyAV (FFmpeg's decoders)."""
    import av

    out: list[np.ndarray] = []
    for f in _sequence(path):
        with av.open(str(f)) as c:
            out.extend(fr.to_ndarray(format="rgb24") for fr in c.decode(video=0))
    return out


def decoded_luma(path: Path) -> list[np.ndarray]:
    """Every frame's luma, decoded by PyAV (FFmpeg's decoders)."""
    import av

    out: list[np.ndarray] = []
    if "%" in path.name:
        for f in _sequence(path):
            with av.open(str(f)) as c:
                out.extend(fr.to_ndarray(format="gray") for fr in c.decode(video=0))
        return out
    with av.open(str(path)) as c:
        for fr in c.decode(video=0):
            out.append(fr.reformat(format="yuv444p").to_ndarray()[0])
    return out


def psnr(a: np.ndarray, b: np.ndarray) -> float:
    mse = float(np.mean((a.astype(np.float64) - b.astype(np.float64)) ** 2))
    return float("inf") if mse == 0 else 10 * np.log10(255.0**2 / mse)


def round_trip(path: Path, frames: int = 10, size: tuple[int, int] = (320, 240), **options: Any) -> tuple[Any, float]:
    """Record colour bars through ``options``' backend, decode them back, return (result, worst PSNR)."""
    from .._api import record
    from ..options import VideoOptions

    result = record("bars", path, size=size, fps=30, frames=frames, overwrite=True, **options)
    codec = options.get("codec", "h264")
    if codec == "png":  # RGB kept as rendered: compared as RGB, no matrix between
        got, ref = decoded_rgb(path), reference_rgb("bars", size, frames, 30)
    else:
        got = decoded_luma(path)
        ref = reference_luma("bars", size, frames, 30, VideoOptions.create(size, 30, codec=codec).colour)
    if len(got) != frames:
        raise GlrecError(f"{path.name}: decoded {len(got)} frames, recorded {frames}")
    return result, min(psnr(a, b) for a, b in zip(got, ref, strict=True))
