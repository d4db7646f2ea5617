"""Whole turns on one GPU for the glrec processes that ask for them (``Recorder(gpu_lock=True)``, ``--gpu-lock``).

A GPU runs one context at a time, and contexts of different processes
time-slice: on an H200 (driver 580, 2026-12-03), nvJPEG alone in one process
encodes 5,248 frames/s at 1080p, and two processes doing the same encode
1,953 in total; four Recorders with nvJPEG together write 1,219 frames/s where
one writes 1,639 (``benchmarks/gpu_ceiling.py procs:*``). Each process's
short waits for its own results fall behind the other's time slices.

With the lock, a recording holds an exclusive ``flock`` on a file named after
the GPU's UUID for one turn (a batch of frames rendered, packed and encoded,
see :mod:`glrec.pipeline.turns`), and lets go before the next, so that the
processes take whole turns instead of slicing each other's. ``flock`` locks
go with the process: one that dies holding it frees it.

The lock is held while the calling thread renders the turn's frames, so it
suits recordings that render in tight loops; a process that spends long
between frames (a simulator step) holds the others back meanwhile.

Where CUDA's Multi-Process Service runs (``nvidia-cuda-mps-control -d``), the
CUDA work of all processes goes through one server context and runs side by
side: measured on the same H200, 2 / 4 / 8 Recorders with nvJPEG wrote 2,048 /
2,351 / 2,562 frames/s in total (one alone: 1,754), and the lock, which makes
them take turns, was slower there (2 Recorders: 1,675). So MPS is the remedy
where the machine's owner can start it, and :func:`mps_pipe` tells whether it
runs; the lock is for machines where it cannot.
"""

from __future__ import annotations

import fcntl
import logging
import os
import tempfile
import time
from pathlib import Path

from ..errors import CudaError

log = logging.getLogger("glrec")


def lock_path(uuid: str) -> Path:
    """The lock file of the GPU with ``uuid``, in shared memory where there is one (any user may take it)."""
    folder = Path("/dev/shm") if Path("/dev/shm").is_dir() else Path(tempfile.gettempdir())
    return folder / f"glrec-gpu-{uuid}.lock"


def mps_pipe() -> Path | None:
    """The control pipe of a running MPS daemon that this process's CUDA would join, or None.

    The daemon and its clients meet in ``$CUDA_MPS_PIPE_DIRECTORY`` (default ``/tmp/nvidia-mps``), where the
    daemon keeps its ``control`` pipe; a daemon that died without cleaning up leaves it behind, so this is a hint.
    """
    pipe = Path(os.environ.get("CUDA_MPS_PIPE_DIRECTORY") or "/tmp/nvidia-mps") / "control"
    return pipe if pipe.exists() else None


class GpuLock:
    """The exclusive turn lock of one GPU: :meth:`take` before a turn's first GPU work, :meth:`give` after its last.

    >>> lock = GpuLock(lock_path(device.info.uuid))  # doctest: +SKIP
    >>> lock.take(); ...; lock.give()  # doctest: +SKIP
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        try:  # read access is enough for flock, so a file another user made serves as well
            self._fd: int | None = os.open(path, os.O_RDONLY | os.O_CREAT, 0o666)
        except OSError as exc:
            raise CudaError(f"gpu_lock: cannot open the GPU's lock file {path} ({exc.strerror}); "
                            "leave gpu_lock off or make the folder writable.") from None  # fmt: skip
        self.held = False
        #: Seconds spent waiting for other processes' turns, and turns taken (for the log at close).
        self.waited = 0.0
        self.turns = 0

    def take(self) -> None:
        """Wait for the lock unless this recording holds it."""
        if self.held or self._fd is None:
            return
        t0 = time.perf_counter()
        fcntl.flock(self._fd, fcntl.LOCK_EX)
        self.waited += time.perf_counter() - t0
        self.held = True
        self.turns += 1

    def give(self) -> None:
        """Let the lock go, and let a process waiting for it run before this one can take it again."""
        if not self.held or self._fd is None:
            return
        fcntl.flock(self._fd, fcntl.LOCK_UN)
        self.held = False
        os.sched_yield()

    def close(self) -> None:
        """Let go and close the file. Safe twice."""
        self.give()
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)
            if self.turns:
                log.info("gpu_lock: %d turns, %.2f s waiting for other processes' turns", self.turns, self.waited)
