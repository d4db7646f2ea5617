"""Run GL code in a child process with its own environment (MUJOCO_GL, PYOPENGL_PLATFORM, ...).

MuJoCo and PyOpenGL read their platform variables once, at import, so every
test that sets them runs its body in a fresh interpreter. The child prints one
JSON document as its last line of output; a failure shows the child's output.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent

# Shared by the child programs: PSNR, decoding with PyAV, and the two experiments every library
# that draws with its own GL context goes through (its frames next to a recorder, in both creation
# orders; glrec recording inside its context, its full GL state snapshotted around every call).
PRELUDE = """
import json, sys
import av
import numpy as np

def psnr(a, b):
    mse = float(((np.asarray(a, np.float64) - np.asarray(b, np.float64)) ** 2).mean())
    return 99.0 if mse == 0 else 10 * np.log10(255.0 ** 2 / mse)

def decode(path):
    with av.open(str(path)) as c:
        return [f.to_ndarray(format="rgb24") for f in c.decode(video=0)]

def done(**values):
    print(json.dumps(values))

# Near-lossless settings: x264 lossless in 4:4:4, so only the RGB<->YUV round trip remains.
LOSSLESS = dict(codec="h264", crf=0, pix_fmt="yuv444p", preset="ultrafast")

# (order, renderer, its first frame, a 64x64 Recorder): the library's renderer made first, then the recorder first.
def both_orders(library, open_renderer, shot, folder):
    import glrec
    for order in (library + "-first", "recorder-first"):
        path = folder + "/" + order + ".mp4"
        rec = glrec.Recorder(path, size=(64, 64)) if order == "recorder-first" else None
        renderer = open_renderer()
        before = shot(renderer)
        yield order, renderer, before, rec or glrec.Recorder(path, size=(64, 64))

# What both_orders' caller saw: the library's frames during and after the recording against its first.
def frames_alongside(before, during, after, result):
    return dict(
        mean=float(before.mean()),
        same_during=all(bool((f == before).all()) for f in during),
        same_after=bool((after == before).all()),
        frames=result.frames,
        decoded=len(decode(result.path)),
    )

# Record the count frames draw(i) makes in the current context: the figures for assert_recorded_its_context.
def record_current_context(path, size, draw, count):
    import glrec
    from glrec.gl.state import StateGuard
    full = StateGuard(full=True)  # the library's context is current: its (maybe compatibility-profile) state
    before = full.capture()
    rec = glrec.Recorder(path, size=size, context="current", **LOSSLESS)
    changed = list(StateGuard.diff(before, full.capture()))
    frames = []
    for i in range(count):
        frames.append(draw(i))
        state = full.capture()
        rec.capture()
        changed += list(StateGuard.diff(state, full.capture()))
    state = full.capture()
    result = rec.close()
    changed += list(StateGuard.diff(state, full.capture()))
    video = decode(result.path)
    return dict(
        frames=result.frames, decoded=len(video), changed=changed,
        psnr=[psnr(a, b) for a, b in zip(frames, video)],
        psnr_flipped=psnr(frames[0], video[0][::-1]),
        distinct=psnr(frames[0], frames[-1]),
    ), frames
"""


def assert_frames_alongside(out: dict[str, Any], count: int, library: str) -> None:
    """What :func:`frames_alongside` (in the child) measured, in both orders: a picture, unchanged; every frame."""
    for order, r in out.items():
        assert r["mean"] > 20, f"{order}: {library}'s frame is black"
        assert r["same_during"] and r["same_after"], f"{order}: {library}'s frames changed: {r}"
        assert r["frames"] == r["decoded"] == count, f"{order}: {r}"


def assert_recorded_its_context(out: dict[str, Any], count: int, library: str) -> None:
    """What :func:`record_current_context` (in the child) measured: every frame, exact, upright, state intact."""
    assert out["frames"] == out["decoded"] == count
    assert out["changed"] == [], f"glrec changed {library}'s GL state: {out['changed']}"
    assert min(out["psnr"]) >= 40, out["psnr"]
    assert out["psnr_flipped"] < 25, "the video is upside down"
    assert out["distinct"] < 40, "the frames do not differ, so the comparison proves little"


def need(*modules: str) -> None:
    """Skip (or, in CI with GLREC_REQUIRE_GL=1, fail) when a library the test drives is missing."""
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if not missing:
        return
    what = f"needs {', '.join(missing)}: pip install '.[interop]' (see pyproject.toml)"
    if os.environ.get("GLREC_REQUIRE_GL") == "1":
        pytest.fail(what)
    pytest.skip(what)


def run_child(code: str, env: dict[str, str] | None = None, timeout: float = 120) -> dict[str, Any]:
    """Run ``PRELUDE + code`` in a fresh interpreter; return the JSON it printed last."""
    # The checkout first, then whatever the parent had (e.g. the packages a GPU machine carries).
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    full_env = {**os.environ, "PYTHONPATH": path, **(env or {})}
    with tempfile.TemporaryDirectory() as cwd:  # MuJoCo writes MUJOCO_LOG.TXT where it runs
        proc = subprocess.run(
            [sys.executable, "-c", PRELUDE + textwrap.dedent(code)],
            env=full_env,
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=cwd,
        )
    lines = [line for line in proc.stdout.splitlines() if line.strip()]
    if proc.returncode != 0 or not lines:
        out, err = proc.stdout[-4000:], proc.stderr[-6000:]
        raise AssertionError(f"child exited {proc.returncode}\n--- stdout ---\n{out}\n--- stderr ---\n{err}")
    try:
        return json.loads(lines[-1])
    except json.JSONDecodeError as exc:
        raise AssertionError(f"child printed no JSON last: {lines[-1]!r}\n{proc.stderr[-4000:]}") from exc


def psnr(a: np.ndarray, b: np.ndarray) -> float:
    mse = float(((a.astype(np.float64) - b.astype(np.float64)) ** 2).mean())
    return 99.0 if mse == 0 else 10 * np.log10(255.0**2 / mse)
