"""References for the processing-stage tests: frames converted by glrec's converter without the stage.

A frame the stage hands on and the same bytes uploaded here go through the same
convert shader, so a lossless recording (x264 qp 0, yuv444p) of the stage's output
must decode to exactly the planes computed here: "exact for integer ops".
"""

from __future__ import annotations

import contextlib
import os
from collections import Counter
from pathlib import Path

import av
import numpy as np
import pytest

from glrec.colour import ColourSpec
from glrec.convert import Converter
from glrec.gl.context import create_context
from glrec.process import clcontext

LOSSLESS = {"codec": "h264", "qp": 0, "pix_fmt": "yuv444p"}


def require(module: str, install: str) -> object:
    """Import ``module`` or skip naming the install; in CI (GLREC_REQUIRE_GL=1) a missing module fails."""
    try:
        return __import__(module)
    except ImportError as exc:
        if os.environ.get("GLREC_REQUIRE_GL") == "1":
            pytest.fail(f"CI must install {module} ({install}): {exc}")
        pytest.skip(f"needs {module}: {install}")


def converted(frames: list[np.ndarray], pix_fmt: str = "yuv444p", colour: ColourSpec | None = None) -> list:
    """Each H x W x 4 uint8 frame (rows top-down) through glrec's converter: its planes, rows top-down."""
    h, w = frames[0].shape[:2]
    out = []
    with create_context() as gl:
        ctx = gl.mgl
        conv = Converter(ctx, (w, h), (w, h), pix_fmt, colour or ColourSpec())
        tex = ctx.texture((w, h), 4, dtype="f1")
        for f in frames:
            tex.write(np.ascontiguousarray(f[::-1]).tobytes())  # GL textures are bottom-up
            conv.run(tex)
            out.append(
                tuple(
                    np.frombuffer(p.read(alignment=1), np.uint8).reshape(p.height, p.width * p.components)
                    for p in conv.planes
                )
            )
        tex.release()
        conv.release()
    return out


def decoded_444(path: Path) -> list[np.ndarray]:
    """Every frame as its (3, H, W) yuv444p planes, decoded by FFmpeg through PyAV."""
    with av.open(str(path)) as c:
        frames = [f.to_ndarray() for f in c.decode(video=0)]
    assert all(f.shape[0] == 3 for f in frames)
    return frames


def assert_planes_equal(path: Path, expected: list) -> None:
    got = decoded_444(path)
    assert len(got) == len(expected), f"{len(got)} frames decoded, {len(expected)} expected"
    for i, (g, e) in enumerate(zip(got, expected, strict=True)):
        for p in range(3):
            diff = np.abs(g[p].astype(int) - e[p].astype(int))
            assert diff.max() == 0, f"frame {i} plane {p}: {int((diff > 0).sum())} pixels differ (max {diff.max()})"


def sobel(rgba: np.ndarray) -> np.ndarray:
    """Sobel gradient magnitude (|gx| + |gy|, clipped) of each colour channel, integers only; edges replicated."""
    x = np.pad(rgba[..., :3].astype(np.int32), ((1, 1), (1, 1), (0, 0)), mode="edge")
    gx = (x[:-2, 2:] + 2 * x[1:-1, 2:] + x[2:, 2:]) - (x[:-2, :-2] + 2 * x[1:-1, :-2] + x[2:, :-2])
    gy = (x[2:, :-2] + 2 * x[2:, 1:-1] + x[2:, 2:]) - (x[:-2, :-2] + 2 * x[:-2, 1:-1] + x[:-2, 2:])
    out = rgba.copy()
    out[..., :3] = np.clip(np.abs(gx) + np.abs(gy), 0, 255).astype(np.uint8)
    return out


def open_fds() -> Counter[str]:
    """What this process's open descriptors are (device file, memfd, pipe...), with how many of each."""
    out: Counter[str] = Counter()
    for name in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):  # the listing's own descriptor, closed before it is read
            out[os.readlink(f"/proc/self/fd/{name}")] += 1
    return out


def fd_growth(before: Counter[str], after: Counter[str]) -> str:
    """The descriptors open in ``after`` that were not in ``before``, by target, for a failure message."""
    grown = after - before
    return ", ".join(f"{n} x {target}" for target, n in sorted(grown.items())) or "none"


def cl_counts() -> list[tuple[int, int, list[int]]]:
    """OpenCL reference counts of each shared context, its queue and its programs: a buffer, queue or program a
    recording left alive holds the context, a kernel holds its program (as PoCL counts them)."""
    return [
        (e.context.reference_count, e.queue.reference_count, [p.reference_count for p in e.programs])
        for e in clcontext.entries()
    ]
