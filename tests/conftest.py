"""Test tiers: pure Python, GL on Mesa llvmpipe (CI), and GPU (``-m gpu``).

GL tests skip with instructions when no EGL context can be made, unless
``GLREC_REQUIRE_GL=1`` (CI sets it), where a missing context is a failure.
GPU tests skip with the reason when CUDA or the GPU extras are missing.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
# pygame (CartPole's renderer in the Gymnasium tests) draws off screen and plays no sound.
os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
os.environ.setdefault("SDL_AUDIODRIVER", "dummy")
sys.path.insert(0, str(ROOT / "tests"))


def _gl_problem() -> str | None:
    try:
        from glrec.gl.context import create_context

        create_context().release()
    except Exception as exc:
        return str(exc)
    return None


_GL_PROBLEM: str | bool | None = False


def gl_problem() -> str | None:
    global _GL_PROBLEM
    if _GL_PROBLEM is False:
        _GL_PROBLEM = _gl_problem()
    return _GL_PROBLEM  # type: ignore[return-value]


_GPU_PROBLEM: str | bool | None = False
GPU_HINT = "needs an NVIDIA GPU with CUDA-GL interop: pip install glrec[cuda] (and [nvjpeg], [nvenc]); run with -m gpu"


def gpu_problem() -> str | None:
    """Why the GPU tier cannot run here (None when it can): no cuda-python, no driver, or GL not on NVIDIA."""
    global _GPU_PROBLEM
    if _GPU_PROBLEM is False:
        try:
            from glrec.cuda.driver import cuda_problem
            from glrec.gl.devices import egl_devices

            problem = cuda_problem()
            if problem is None and not any(d.cuda_device is not None for d in egl_devices()):
                problem = "no EGL device reports a CUDA device (is the NVIDIA EGL driver installed?)"
        except Exception as exc:
            problem = f"{type(exc).__name__}: {exc}"
        _GPU_PROBLEM = problem
    return _GPU_PROBLEM  # type: ignore[return-value]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if item.get_closest_marker("gpu"):
            problem = gpu_problem()
            if problem is not None:
                item.add_marker(pytest.mark.skip(reason=f"{GPU_HINT} ({problem})"))
                continue
        if "gl" in item.fixturenames or item.get_closest_marker("gl"):
            problem = gl_problem()
            if problem is not None:
                if os.environ.get("GLREC_REQUIRE_GL") == "1":
                    item.add_marker(pytest.mark.xfail(reason=f"no GL: {problem}", strict=True, run=False))
                    continue
                item.add_marker(
                    pytest.mark.skip(
                        reason="needs an EGL OpenGL 4.3 context (apt-get install libegl1 libegl-mesa0 "
                        f"libgl1-mesa-dri): {problem}"
                    )
                )


@pytest.fixture
def gl():
    """A fresh GL context; the test fails if it leaves a GL error behind."""
    from glrec.gl.context import create_context

    # Current for the whole test (glrec's contexts are current only while in use), released after.
    with create_context() as ctx:
        yield ctx
        error = ctx.mgl.error
        assert error == "GL_NO_ERROR", f"test left a GL error: {error}"


@pytest.fixture
def ffprobe():
    exe = shutil.which("ffprobe")
    if exe is None:
        pytest.skip("needs ffprobe (apt-get install ffmpeg)")

    def run(path: Path, *entries: str) -> dict[str, str]:
        out = subprocess.run(
            [exe, "-v", "error", "-select_streams", "v:0", "-count_frames", "-show_entries",
             "stream=" + ",".join(entries), "-of", "default=noprint_wrappers=1", str(path)],
            capture_output=True, text=True, check=True,
        ).stdout  # fmt: skip
        return dict(line.split("=", 1) for line in out.strip().splitlines())

    return run


def psnr(a: np.ndarray, b: np.ndarray) -> float:
    mse = float(np.mean((a.astype(np.float64) - b.astype(np.float64)) ** 2))
    return float("inf") if mse == 0 else 10 * np.log10(255.0**2 / mse)


def glrec_record(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """``glrec record ARGS`` in a child process, as a user runs it; asserts it exited 0 (its stderr if not)."""
    run = subprocess.run([sys.executable, "-m", "glrec", "record", *args], capture_output=True, text=True,
                         timeout=timeout)  # fmt: skip
    assert run.returncode == 0, run.stderr
    return run
