"""``gpu_lock``: whole GL/CUDA turns on one GPU across glrec processes (glrec.cuda.gpu_lock).

The lock itself is a ``flock`` and is checked here without a GPU, against another open file description of
the same file (as another process holds it) and against a process that dies holding it. The GPU tier
checks that an nvJPEG recording holds it for each turn and lets go between turns
(tests/gpu/test_gpu_lock_gpu.py).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from helpers import locked_elsewhere

import glrec
from glrec.cli import main
from glrec.cuda.gpu_lock import GpuLock, lock_path
from glrec.errors import ConfigError


def test_the_lock_is_held_from_take_to_give_once_however_often_taken(tmp_path: Path) -> None:
    lock = GpuLock(tmp_path / "gpu.lock")
    assert not locked_elsewhere(lock.path)
    lock.take()
    lock.take()  # already held: no second wait, one turn
    assert locked_elsewhere(lock.path) and lock.turns == 1
    lock.give()
    assert not locked_elsewhere(lock.path)
    lock.take()
    lock.close()
    lock.close()
    assert not locked_elsewhere(lock.path) and lock.turns == 2


def test_a_process_that_dies_holding_the_lock_frees_it(tmp_path: Path) -> None:
    path = tmp_path / "gpu.lock"
    child = (
        "import os, sys; from glrec.cuda.gpu_lock import GpuLock; "
        f"lock = GpuLock(__import__('pathlib').Path({str(path)!r})); lock.take(); "
        "print('held', flush=True); sys.stdin.readline(); os._exit(9)"
    )
    proc = subprocess.Popen([sys.executable, "-c", child], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdin is not None
    assert proc.stdout.readline().strip() == "held"
    assert locked_elsewhere(path)
    proc.stdin.write("\n")
    proc.stdin.flush()
    assert proc.wait(timeout=60) == 9
    assert not locked_elsewhere(path)


def test_the_lock_file_is_named_after_the_gpu_and_kept_in_shared_memory() -> None:
    path = lock_path("0f1e2d3c")
    assert path.name == "glrec-gpu-0f1e2d3c.lock"
    assert path.parent == Path("/dev/shm") or not Path("/dev/shm").is_dir()


@pytest.mark.gl
def test_gpu_lock_is_refused_where_the_recording_takes_no_turns(tmp_path: Path) -> None:
    path = tmp_path / "cpu.mp4"
    with pytest.raises(ConfigError, match=r"gpu_lock=True .* leave gpu_lock off"):
        glrec.Recorder(path, size=(64, 64), fps=30, encoder="cpu", gpu_lock=True)
    assert not path.exists()


@pytest.mark.gl
def test_the_cli_refuses_gpu_lock_on_the_cpu_path_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    out = tmp_path / "cpu.mp4"
    code = main(["record", "plasma", "-o", str(out), "--frames", "2", "--size", "64x64", "--encoder", "cpu",
                 "--gpu-lock"])  # fmt: skip
    err = capsys.readouterr().err.strip().splitlines()
    assert code != 0 and not out.exists()
    assert len(err) == 1 and "gpu_lock" in err[0], err


def test_a_running_mps_daemon_is_told_by_its_control_pipe(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from glrec.cuda.gpu_lock import mps_pipe
    from glrec.diagnostics.common import NA, PASS
    from glrec.diagnostics.doctor import _sharing_check

    monkeypatch.setenv("CUDA_MPS_PIPE_DIRECTORY", str(tmp_path))
    assert mps_pipe() is None
    check = _sharing_check()
    assert check.status == NA and "nvidia-cuda-mps-control -d" in check.remedy and "gpu_lock" in check.remedy
    (tmp_path / "control").touch()  # the daemon's pipe, as nvidia-cuda-mps-control -d leaves it
    assert mps_pipe() == tmp_path / "control"
    check = _sharing_check()
    assert check.status == PASS and str(tmp_path) in check.detail
