"""Build the stand-in driver libraries in ``tests/native/`` (gcc) and run code against them in a child process.

``libcuda.so.1`` keeps "device" memory in host memory; ``libnvidia-encode.so.1``
records what PyNvVideoCodec configured, dumps the surfaces it is given and
returns marker packets (see the C sources). A child process with
``LD_LIBRARY_PATH`` pointing at the build directory loads them in place of
NVIDIA's: the parent process never does.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

NATIVE = Path(__file__).resolve().parent / "native"
HEADER = Path("/usr/include/ffnvcodec/nvEncodeAPI.h")  # Debian: libffmpeg-nvenc-dev
LIBS = {"cuda": ("fake_cuda.c", "libcuda.so.1"), "nvenc": ("fake_nvenc.c", "libnvidia-encode.so.1")}
ROOT = Path(__file__).resolve().parent.parent


def prebuilt(which: tuple[str, ...]) -> Path | None:
    """``$GLREC_FAKE_DRIVERS_DIR`` when it holds the stand-ins named in ``which`` (built elsewhere, e.g. for
    a GPU machine without gcc or the NVENC header), else None."""
    path = os.environ.get("GLREC_FAKE_DRIVERS_DIR")
    if path and all((Path(path) / LIBS[name][1]).exists() for name in which):
        return Path(path).resolve()
    return None


def package_problem() -> str | None:
    """Why the Python side of the contract test cannot run here (None when it can)."""
    try:
        import cuda.bindings.driver  # noqa: F401
    except ImportError:
        return "cuda-python is missing (pip install glrec[nvenc])"
    import importlib.util

    if importlib.util.find_spec("PyNvVideoCodec") is None:
        return "PyNvVideoCodec is missing (pip install glrec[nvenc])"
    return None


def build_problem() -> str | None:
    """Why the stand-ins cannot be built or used here (None when they can)."""
    if shutil.which("gcc") is None:
        return "gcc is missing (apt-get install gcc)"
    if not HEADER.exists():
        return f"{HEADER} is missing (apt-get install libffmpeg-nvenc-dev)"
    return package_problem()


def build(out: Path, which: tuple[str, ...] = ("cuda", "nvenc")) -> Path:
    """Compile the stand-ins named in ``which`` into ``out``; return ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    for name in which:
        source, lib = LIBS[name]
        cmd = ["gcc", "-shared", "-fPIC", "-O1", "-Wall", "-Wextra", "-Werror", "-fvisibility=hidden",
               "-o", str(out / lib), str(NATIVE / source), "-lpthread", "-ldl"]  # fmt: skip
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"building {lib} failed:\n{done.stderr}")
    return out


def stand_ins(tmp_path_factory) -> Path:
    """Both stand-ins built for this session, or skip (fail with ``GLREC_REQUIRE_NVENC_CONTRACT=1``) saying why not."""
    import pytest

    problem = build_problem()
    if problem is not None:
        if os.environ.get("GLREC_REQUIRE_NVENC_CONTRACT") == "1":
            pytest.fail(f"NVENC contract test cannot run: {problem}")
        pytest.skip(f"NVENC contract test needs gcc, libffmpeg-nvenc-dev and glrec[nvenc]: {problem}")
    return build(tmp_path_factory.mktemp("fake-drivers"))


def nvenc_only(tmp_path_factory) -> Path:
    """The stand-in NVENC library alone (the GPU tier: the real libcuda beside it), or skip saying what is missing."""
    import pytest
    from conftest import gpu_problem

    ready = prebuilt(("nvenc",))
    problem = gpu_problem() or (package_problem() if ready else build_problem())
    if problem is not None:
        pytest.skip(f"needs an NVIDIA GPU with CUDA-GL interop, glrec[nvenc], and gcc with libffmpeg-nvenc-dev "
                    f"or GLREC_FAKE_DRIVERS_DIR holding a built libnvidia-encode.so.1: {problem}")  # fmt: skip
    if ready is not None and (ready / LIBS["cuda"][1]).exists():  # first on the child's LD_LIBRARY_PATH: it would
        pytest.fail(  # stand in for the real driver too, and NVIDIA's EGL would find no CUDA device behind its GPU
            f"GLREC_FAKE_DRIVERS_DIR ({ready}) holds the stand-in {LIBS['cuda'][1]}, which hides the real driver "
            f"from the GPU tier; build it with the NVENC stand-in alone: fake_drivers.build(DIR, ('nvenc',))."
        )
    return ready or build(tmp_path_factory.mktemp("nvenc-only"), ("nvenc",))


def _child(args: list[str], libs: Path, env: dict[str, str] | None, timeout: float) -> dict:
    def first(path: str, var: str) -> str:  # in front of what the environment has (the GPU machine's loaders)
        return os.pathsep.join(p for p in (path, os.environ.get(var, "")) if p)

    here = os.pathsep.join([str(ROOT), str(ROOT / "tests")])
    full = {**os.environ, "LD_LIBRARY_PATH": first(str(libs), "LD_LIBRARY_PATH"),
            "PYTHONPATH": first(here, "PYTHONPATH"), **(env or {})}  # fmt: skip
    done = subprocess.run([sys.executable, str(ROOT / "tests" / "nvenc_child.py"), *args], env=full,
                          capture_output=True, text=True, timeout=timeout)  # fmt: skip
    lines = [line for line in done.stdout.splitlines() if line.startswith("result ")]
    if done.returncode != 0 or not lines:
        raise AssertionError(f"child failed (rc {done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return json.loads(lines[-1][len("result ") :])


def run_child(job: dict, libs: Path, work: Path, env: dict[str, str] | None = None, timeout: float = 120) -> dict:
    """Run one ``tests/nvenc_child.py`` job against the stand-ins in ``libs``; return its JSON result.

    The stand-ins write their records under ``work``: ``nvenc.jsonl``, ``cuda.jsonl``,
    ``surfaces/`` and the child's ``inputs/``.
    """
    result = _child([json.dumps(job), str(work)], libs, env, timeout)
    if "crash" in result:
        raise AssertionError(f"child job crashed:\n{result['crash']}")
    return result


def run_batch(
    entries: dict[str, tuple[dict, dict]],
    libs: Path,
    root: Path,
    timeout: float = 300,
    env: dict[str, str] | None = None,
) -> dict[str, dict]:
    """Run many jobs ``{name: (job, env)}`` in one child process, each with its records under ``root/name``.

    ``env`` is the child process's own (what the stand-ins read once, e.g. ``GLREC_FAKE_CUDA_DEVICES``)."""
    batch = [{"name": name, "job": job, "work": str(root / name), "env": env} for name, (job, env) in entries.items()]
    spec = root / "batch.json"
    spec.write_text(json.dumps(batch))
    return _child(["--batch", str(spec)], libs, env, timeout)


def records(path: Path) -> list[dict]:
    """The JSON lines a stand-in wrote (empty when it wrote none)."""
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
