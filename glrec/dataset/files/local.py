"""One machine's cores: shards rendered by local worker processes, each with its own GL context.

Each worker is a new interpreter (``python -m glrec._dataset_worker``, which runs
:mod:`~glrec.dataset.files.local_worker`, its side; started with
``subprocess``: the ``spawn`` way, never a fork of a process that may already hold a
GL or CUDA context, and without re-running the caller's main module as
``multiprocessing``'s spawn would). It holds one
:class:`~glrec.dataset.files.runner.ShardWorker` (context, scene, packer, encode threads)
made once, and renders the shards the parent hands it, lowest pending shard first.
Workers write into ``OUT`` themselves; a shard's bytes depend only on the spec and
the shard, so which worker renders it changes nothing.

Messages go over one socket pair per worker (pickled): the parent sends the set-up,
then shard numbers, then None; a worker answers ``("start", shard)`` as it begins a
shard, ``("sample", index)`` before each draw, ``("progress", n)`` for the samples
written since the last one (at most every ``PROGRESS_S``, before each draw and each ``done``),
``("done", shard, record)`` and ``("failed", ...)``. On None a worker closes its copy of the folder's lock
and its socket, then tears down (its GL context, its interpreter): the run returns once every socket is
closed, and a thread reaps the processes. Each worker has one shard waiting
beside the ones it renders: sent when the one before it starts, so it is there
when the worker finishes drawing (:meth:`~glrec.dataset.files.runner.ShardWorker.run_shards`
draws it while the one before is committed). A worker that raises, or dies (its socket
closes), ends the run with one error naming the sample; the other workers are killed,
finished shards stay for ``--resume``. Workers die with the parent (``PR_SET_PDEATHSIG``), so a killed run
leaves nothing writing behind it.
"""

from __future__ import annotations

import contextlib
import logging
import pickle
import signal
import subprocess
import threading
import time
from collections.abc import Iterable, Iterator, Sized
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from typing import Any

from ..._children import child_env, start_child, usable_cores
from ...errors import ConfigError, DatasetError, GlrecError
from ..spec.document import DatasetSpec
from .folder import DatasetFolder
from .runner import Progress

__all__ = [
    "MAX_DEFAULT_WORKERS",
    "colour_factory",
    "colour_stays_here",
    "default_workers",
    "resolve_workers",
    "run_workers",
    "usable_cores",
    "wait_for_workers",
]

log = logging.getLogger("glrec")

#: The default never starts more workers than this, whatever the core count: each holds a GL context (its
#: layered targets: 32 layers of 11 MB, about 350 MB of GPU memory at 640x480, five passes, and 69 MB more where
#: the GPU filters the PNG passes' rows (``rendering.scanlines``: their pixels, 2.1 MB a layer); computed, not
#: measured), a scene and a few samples in memory. On the H200 machine (16 cores, one GPU), 16 workers against 8:
#: 222 / 287 samples/s for 800 samples (start-up dominates) and 763.7 / 619.6 for 16,000
#: (results/2026-12-04_nvidia-h200_twelfth-shards-*). So 8 stays the default, safe on smaller GPUs and faster on
#: short runs; a long run on many cores asks for more (``workers=N``).
MAX_DEFAULT_WORKERS = 8
#: Encode threads a worker has at least, whatever its share of the cores (a benchmark switch,
#: ``GLREC_BENCH_MIN_THREADS``). Two, so encoding might overlap the GL thread's waits, wrote fewer samples/s on
#: 16 H200 workers (PNG 579 against 672, GL JPEG 587 against 620; results/..._ninth-d-threads.txt), so one.
MIN_WORKER_THREADS = 1


def default_workers(shards: int, cores: int | None = None) -> int:
    """Workers when none are asked for: one per usable core, at most 8, at most one per pending shard."""
    return max(1, min(MAX_DEFAULT_WORKERS, usable_cores() if cores is None else cores, shards))


def resolve_workers(workers: int | None, shards: int) -> int:
    """``workers`` checked (None: :func:`default_workers`); never more than the pending shards."""
    if workers is None:
        return default_workers(shards)
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ConfigError(
            f"workers {workers!r} must be a whole number of 1 or more (1: render in this process); leave it out "
            f"for one per core (at most {MAX_DEFAULT_WORKERS})."
        )
    return max(1, min(workers, shards))


def colour_factory(spec: DatasetSpec) -> bytes | None:
    """The spec's colour encoder as the workers will register it (pickled), or None if it cannot travel.

    An encoder registered in this process (:func:`~glrec.dataset.register_colour_encoder`) is
    unknown to a new interpreter; a class or function importable by name goes with the set-up.
    """
    from .encode import COLOUR_ENCODERS

    factory = COLOUR_ENCODERS.get((spec.output.rgb, spec.output.rgb_encoder))
    if factory is None:
        return pickle.dumps(None)  # unknown here too: the worker raises the same ConfigError as one process
    try:
        return pickle.dumps(factory)
    except Exception:  # a lambda, a class defined inside a function
        return None


def colour_stays_here(spec: DatasetSpec) -> ConfigError:
    """The error for workers asked for with a colour encoder that cannot reach them."""
    return ConfigError(
        f"Colour encoder {spec.output.rgb}/{spec.output.rgb_encoder} was registered as an object that worker "
        "processes cannot import (a lambda or a local class); register a module-level class or function, or "
        "use workers=1 (--workers 1)."
    )


#: Thread-count variables a worker gets its share of the cores in: Mesa llvmpipe, OpenMP, BLAS builds, numexpr.
THREAD_VARS = ("LP_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS")


@dataclass
class _Worker:
    number: int
    proc: subprocess.Popen[bytes]
    conn: Connection
    shard: int | None = None  # the one it draws
    sample: int | None = None
    waiting: int | None = None  # the one sent ahead, not begun
    shards: list[int] = field(default_factory=list)  # every one it was sent and has not finished
    done: list[int] = field(default_factory=list)
    heard: bool = False  # it has sent something: it started


def _child_env(cores_each: int) -> dict[str, str]:
    # llvmpipe starts a rasteriser thread per core in every context, and OpenMP/BLAS libraries a pool per
    # core in every process; the workers share the cores, so each gets its share (a value set by the user stays).
    # NVIDIA's GL driver sleeps instead of spinning while it waits for the GPU (__GL_YIELD): the workers are
    # bound by their CPU, and on the H200 spinning cost 7.0-8.4 ms of CPU a sample against 6.2-6.7 (see
    # docs/guides/performance.md). Other drivers ignore the variable.
    return child_env({**{name: str(cores_each) for name in THREAD_VARS}, "__GL_YIELD": "USLEEP"})


def _start(number: int, env: dict[str, str], keep: tuple[int, ...] = ()) -> _Worker:
    """Start worker ``number``; ``keep``: descriptors it inherits (the folder's lock, held until its shards are
    done)."""
    proc, conn = start_child("glrec._dataset_worker", env, keep)
    return _Worker(number, proc, conn)


def run_workers(
    spec: DatasetSpec, folder: DatasetFolder, shards: Iterable[int], workers: int, device: int | None,
    progress: Progress | None, colour: bytes | None = None, *, lock_fd: int | None = None,
) -> list[int]:  # fmt: skip
    """Render ``shards`` on ``workers`` local processes; returns the shards rendered.

    ``shards`` is taken lazily (it may be a :class:`~glrec.dataset.files.feed.ShardQueue` of any length).
    ``colour``: :func:`colour_factory` of the spec (made here when None). ``lock_fd``: the folder's
    lock (:class:`~glrec.dataset.files.lock.FolderLock`), which every worker inherits and so holds too.
    """
    colour = colour_factory(spec) if colour is None else colour
    if colour is None:
        raise colour_stays_here(spec)
    count = len(shards) if isinstance(shards, Sized) else None
    queue = iter(shards)
    n = max(1, min(workers, workers if count is None else count))
    cores_each = max(1, usable_cores() // n)
    keep = () if lock_fd is None else (lock_fd,)
    setup = {
        "spec": spec, "root": str(folder.root), "scratch": str(folder.scratch), "device": device,
        "threads": min(8, max(cores_each, MIN_WORKER_THREADS)), "log_level": log.getEffectiveLevel(), "colour": colour,
        "owner": folder.owner, "keep": keep,
    }  # fmt: skip
    env = _child_env(cores_each)
    log.info("%s shards on %d local workers, %d core(s) each", "?" if count is None else count, n, cores_each)
    done: list[int] = []
    pool: list[_Worker] = []
    try:
        for i in range(n):
            pool.append(_start(i + 1, env, keep))
            _send(pool[-1], setup)
        for w in pool:
            _hand_out(w, queue)
        while any(w.shards for w in pool):
            busy = [w for w in pool if w.shards]
            for conn in wait([w.conn for w in busy]):
                w = next(x for x in busy if x.conn is conn)
                was = len(done)
                _receive(w, done, progress)
                if w.waiting is None:
                    _hand_out(w, queue)
                for shard in done[was:]:  # checked now, while the others render, rather than all at the end
                    folder.check_done(shard)
        for w in pool:
            with contextlib.suppress(OSError):  # one that died now has nothing left to do anyway
                w.conn.send(None)  # done: the worker lets go of the folder, then releases its context and exits
        for w in pool:
            _until_closed(w)
        # Not a daemon: the interpreter waits for it at exit, so a worker is not killed (PR_SET_PDEATHSIG) mid-way.
        reaper = threading.Thread(target=_reap, args=([w.proc for w in pool],), name="glrec-reap-workers")
        reaper.start()
        _REAPERS.append(reaper)
        pool = []  # they no longer touch the folder: not this run's to kill or wait for
    finally:
        for w in pool:
            if w.proc.poll() is None:
                w.proc.kill()  # a failure elsewhere or an interrupt: this run ends here
        for w in pool:
            with contextlib.suppress(subprocess.TimeoutExpired):
                w.proc.wait(timeout=10)
            w.conn.close()
            if w.proc.returncode is not None:
                # What a stopped worker left unfinished of its shards goes, as one process removes its
                # own on an error or Ctrl-C; a complete shard (its record written) stays for --resume.
                for shard in w.shards:
                    with contextlib.suppress(OSError):
                        folder.discard(shard)
    return done


_REAPERS: list[threading.Thread] = []  # of the runs in this process, until wait_for_workers() joins them


def wait_for_workers() -> None:
    """Wait until the worker processes of every earlier run in this process have exited.

    A run returns once its workers are done with the folder, before they have torn down their GL contexts and
    interpreters; a measurement of the run's CPU or memory through ``RUSAGE_CHILDREN`` counts a worker only
    once it has exited and been reaped (``glrec bench`` calls this before reading them).
    """
    while _REAPERS:
        _REAPERS.pop().join()


def _until_closed(w: _Worker, timeout: float = 60.0) -> None:
    """Wait until worker ``w`` closes its socket (having let go of the folder's lock first) or dies."""
    deadline = time.monotonic() + timeout
    while wait([w.conn], max(0.0, deadline - time.monotonic())):
        try:
            w.conn.recv()  # nothing is sent after the last done; read and dropped
        except (EOFError, OSError):
            return
    w.proc.kill()  # stuck: it must not hold the folder after the run
    with contextlib.suppress(subprocess.TimeoutExpired):
        w.proc.wait(timeout=10)


def _reap(procs: list[subprocess.Popen[bytes]]) -> None:
    """Wait for workers that have closed their sockets to exit (a minute each at most, then killed)."""
    for proc in procs:
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _send(w: _Worker, message: Any) -> None:
    try:
        w.conn.send(message)
    except OSError:  # BrokenPipeError, ConnectionResetError: the worker is gone
        raise _died(w) from None


def _hand_out(w: _Worker, queue: Iterator[int]) -> None:
    """Send ``w`` the next shard to wait beside the one it draws (none once the queue is empty)."""
    shard = next(queue, None)
    if shard is not None:
        w.waiting = shard
        w.shards.append(shard)
        _send(w, shard)


def _receive(w: _Worker, done: list[int], progress: Progress | None) -> None:
    try:
        msg = w.conn.recv()
    except (EOFError, OSError):  # OSError: ConnectionResetError when it died before reading what it was sent
        raise _died(w) from None
    w.heard = True
    kind = msg[0]
    if kind == "sample":
        w.sample = msg[1]
    elif kind == "start":
        w.shard, w.sample = msg[1], None
        if w.waiting == msg[1]:
            w.waiting = None  # begun: another is sent to wait
    elif kind == "progress":
        if progress is not None:
            progress(msg[1])
    elif kind == "done":
        done.append(msg[1])
        w.done.append(msg[1])
        w.shards.remove(msg[1])
        if w.shard == msg[1]:
            w.shard = None
    elif kind == "failed":
        raise _failed(w, msg[1] if msg[1] is not None else w.shard, *msg[2:])
    else:  # pragma: no cover - a message this version does not send
        raise DatasetError(f"Dataset worker {w.number} sent an unknown message {kind!r}.")


def _died(w: _Worker) -> DatasetError:
    with contextlib.suppress(subprocess.TimeoutExpired):
        w.proc.wait(timeout=10)
    code = w.proc.returncode
    if code is not None and code < 0 and -code in signal.valid_signals():
        how = f"was killed by {signal.Signals(-code).name}"
    else:
        how = f"exited with status {code}" if code is not None else "stopped answering"
    if not w.heard:
        where = "starting" + (f" (before its first sample of shard {w.shards[0]})" if w.shards else "")
    elif w.sample is not None:
        where = f"rendering sample {w.sample} of shard {w.shard}"
    else:
        where = f"rendering shard {w.shard}"
    return DatasetError(
        f"Dataset worker {w.number} (pid {w.proc.pid}) {how} while {where}; the finished shards are "
        "kept: run again with --resume (resume=True), with --workers 1 to see the error in this process."
    )


def _failed(
    w: _Worker, shard: int | None, index: int | None, blob: bytes | None, name: str, text: str, tb: str
) -> GlrecError:
    """The worker's error as one error of this process, naming the sample; a glrec error keeps its class."""
    log.debug("dataset worker %d failed:\n%s", w.number, tb)
    original: BaseException | None = None
    if blob is not None:
        with contextlib.suppress(Exception):
            original = pickle.loads(blob)
    where = f"Sample {index} (shard {shard})" if index is not None else f"Shard {shard}"
    if isinstance(original, GlrecError):
        errno = getattr(original, "errno", None)
        message = f"{where}: {original.strerror if errno is not None else text}"  # type: ignore[attr-defined]
        with contextlib.suppress(Exception):
            return type(original)(errno, message) if errno is not None else type(original)(message)
        return DatasetError(message)
    return DatasetError(
        f"{where} failed in dataset worker {w.number}: {name}: {text}. The finished shards are kept; fix the "
        "cause and run again with --resume (resume=True); --workers 1 shows the traceback in this process."
    )
