"""Child processes of glrec's own: started with ``subprocess`` (never a fork of a process that may hold a GL or
CUDA context, and without re-running the caller's main module as ``multiprocessing``'s spawn would), importing
this very glrec, and dying with their parent."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from multiprocessing.connection import Connection, Pipe
from pathlib import Path

__all__ = ["child_env", "die_with_parent", "start_child", "usable_cores"]


def usable_cores() -> int:
    """Cores this process may run on (its affinity mask, so ``taskset`` and container limits count)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def child_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """This process's environment, with the folder holding this glrec first on ``PYTHONPATH`` (a checkout on
    ``sys.path`` is imported by the child too, not another installed copy); ``extra``: set only where unset."""
    env = dict(os.environ)
    root = str(Path(__file__).resolve().parents[1])  # the folder holding glrec/, wherever this module sits
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH", "")) if p)
    for name, value in (extra or {}).items():
        env.setdefault(name, value)
    return env


def start_child(
    module: str, env: dict[str, str], keep: tuple[int, ...] = (), args: tuple[str, ...] = ()
) -> tuple[subprocess.Popen[bytes], Connection]:
    """``python -m module FD PARENT_PID *args``, talking over one end of a socket pair (the other is returned);
    ``keep``: more descriptors it inherits."""
    ours, theirs = Pipe(duplex=True)
    fd = theirs.fileno()
    cmd = [sys.executable, "-m", module, str(fd), str(os.getpid()), *args]
    try:
        proc = subprocess.Popen(cmd, pass_fds=(fd, *keep), env=env, stdin=subprocess.DEVNULL)
    except BaseException:
        ours.close()
        raise
    finally:
        theirs.close()  # the child holds its own copy; ours must go so its death reads as EOF
    return proc, ours


def die_with_parent(parent: int) -> None:
    """Ask Linux to SIGKILL this process when its parent dies (a kill -9 of the run stops every child)."""
    with contextlib.suppress(Exception):
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    if os.getppid() != parent:  # the parent died before the request took effect
        os._exit(1)
