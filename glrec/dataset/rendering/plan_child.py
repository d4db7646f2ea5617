"""Batches planned in a process of their own, beside the render thread's interpreter lock.

Planning a batch (:func:`~glrec.dataset.rendering.plans.plan_samples`: parameters and the scene's layouts) is
vectorised numpy driven from Python, about 27 us a sample for the table scene (2-core development machine,
4,096 samples); on planning threads it takes turns with the render thread for the interpreter lock, which bounds
the training stream at small sizes (128x128 on the H200). A :class:`PlanProcess` plans in a child process
(``python -m glrec.dataset.rendering.plan_child``, started as dataset workers are: a new interpreter importing
this glrec, dying with its parent) and sends the plans back pickled; unpickling them costs the parent about
5 us a sample. The child loads the spec's scene itself (``load_scene(spec.scene_ref())``, as a dataset worker
does); plans are pure functions of (seed, index), so they are the same bytes wherever they are made.

Where the scene plans without GL (:class:`~glrec.scenes.capabilities.PlansWithoutGL`: set up for the frame size
alone), the child also makes a chunk's prepared draw (``prepare_batch``) and, when asked, its cameras
(``cameras_batch``): arrays, cheap to unpickle, that the parent's planning threads and render thread would
otherwise compute holding its interpreter lock. The plans then come as
:class:`~glrec.dataset.rendering.plans.PackedPlans`: still pickled, unpickled only where the parent reads them
(a sample's metadata), with each sample's time and the chunk's box-table width beside them.

Anything the child cannot do (it does not start, its scene fails to load, a batch raises, it dies) fails that
request's future; the caller plans those samples itself, which raises the error that names the sample. A prepared
draw or cameras the child could not make come back as None: the caller makes them.
"""

from __future__ import annotations

import contextlib
import logging
import os
import pickle
import socket
import sys
import threading
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any

from ..._children import child_env, die_with_parent, start_child

if TYPE_CHECKING:
    from collections.abc import Sequence

    import numpy as np

    from ..spec.document import DatasetSpec
    from .plans import SamplePlan

__all__ = ["PlanProcess"]

log = logging.getLogger("glrec")
_READY = -1  # the child's first message: the scene is loaded


#: What the child answers for a chunk: its plans, its prepared draw and its (K, world-to-camera) arrays (None:
#: not made there).
Planned = tuple["Sequence[SamplePlan]", Any, "tuple[np.ndarray, np.ndarray] | None"]


class PlanProcess:
    """A child process that plans ``spec``'s samples: :meth:`submit` a chunk's indices, get a future of its plans."""

    def __init__(self, spec: DatasetSpec) -> None:
        self._futures: dict[int, Future[Planned]] = {}
        self._lock = threading.Lock()
        self._next = 0
        self._gone: str | None = None
        #: Set once the child has loaded the scene: until then a caller plans itself rather than wait for it.
        self.ready = threading.Event()
        # One thread per stream's planner (OpenMP/BLAS pools of its own would take the render thread's cores).
        self._proc, self._conn = start_child(__name__, child_env({"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}))
        self._conn.send_bytes(pickle.dumps(spec, protocol=pickle.HIGHEST_PROTOCOL))
        self._reader = threading.Thread(target=self._read, name="glrec-plan-reader", daemon=True)
        self._reader.start()

    def submit(self, indices: list[int], cameras: bool = False) -> Future[Planned]:
        """Plans of ``indices``, made by the child in the order asked, with the chunk's prepared draw and, if
        ``cameras``, its cameras where the child's scene makes them (else None)."""
        future: Future[Planned] = Future()
        with self._lock:
            if self._gone is not None:
                future.set_exception(RuntimeError(self._gone))
                return future
            key, self._next = self._next, self._next + 1
            self._futures[key] = future
        try:
            self._conn.send_bytes(pickle.dumps((key, list(indices), cameras), protocol=pickle.HIGHEST_PROTOCOL))
        except OSError as exc:
            self._fail(f"the planning process is gone ({exc})")
        return future

    def _read(self) -> None:
        while True:
            try:
                key, ok, payload = pickle.loads(self._conn.recv_bytes())
            except (EOFError, OSError, TypeError):  # TypeError: the connection was closed under the read
                self._fail("the planning process ended")
                return
            if key == _READY:
                self.ready.set()
                continue
            with self._lock:
                future = self._futures.pop(key, None)
            if future is None or not future.set_running_or_notify_cancel():
                continue
            if ok:
                future.set_result(payload)
            else:
                future.set_exception(RuntimeError(payload))

    def _fail(self, why: str) -> None:
        with self._lock:
            if self._gone is None:
                self._gone = why
                log.debug("glrec: %s; batches are planned in this process", why)
            futures, self._futures = self._futures, {}
        for future in futures.values():
            if future.set_running_or_notify_cancel():
                future.set_exception(RuntimeError(why))

    def close(self) -> None:
        """Stop the child (it exits at the end of its input) and fail what it had not answered; safe twice."""
        with contextlib.suppress(OSError):  # the end of its input: the child exits, so the reader sees the end
            end = socket.socket(fileno=os.dup(self._conn.fileno()))
            end.shutdown(socket.SHUT_WR)
            end.close()
        with contextlib.suppress(Exception):
            self._proc.wait(timeout=10)
        if self._proc.poll() is None:
            self._proc.kill()
            self._proc.wait()
        self._reader.join(timeout=10)
        with contextlib.suppress(OSError):
            self._conn.close()
        self._fail("the planning process was closed")


# -- the child side ------------------------------------------------------------------------------------------


def _serve(conn: Any) -> None:
    from ...scenes import load_scene
    from ...scenes.capabilities import PlansWithoutGL, plans_without_gl

    spec = pickle.loads(conn.recv_bytes())
    try:
        scene: Any = load_scene(spec.scene_ref())
        failed = None
    except Exception as exc:  # every request is answered with the reason; the parent plans them itself
        scene, failed = None, f"the planning process could not load scene {spec.scene!r}: {exc}"
    sized = False  # set up for planning: its prepared draws and cameras are the parent's
    if plans_without_gl(scene):
        assert isinstance(scene, PlansWithoutGL)
        with contextlib.suppress(Exception):  # not set up: plans only
            scene.setup_planning(spec.size)
            sized = True
    if failed is None:
        conn.send_bytes(pickle.dumps((_READY, True, None)))
    while True:
        try:
            key, indices, cameras = pickle.loads(conn.recv_bytes())
        except EOFError:
            return
        try:
            if failed is not None:
                raise RuntimeError(failed)
            answer: tuple[int, bool, Any] = (key, True, _plan(spec, indices, scene, sized, cameras))
        except Exception as exc:
            answer = (key, False, f"{type(exc).__name__}: {exc}")
        conn.send_bytes(pickle.dumps(answer, protocol=pickle.HIGHEST_PROTOCOL))


def _plan(spec: DatasetSpec, indices: list[int], scene: Any, sized: bool, cameras: bool) -> Planned:
    """A chunk's plans; where ``sized``, its prepared draw and (if asked) cameras, or None where those raise (the
    parent makes them again, which names the failure there)."""
    from ...scenes.capabilities import BatchCameras, batch_prepared
    from .plans import PackedPlans, chunk_extras, plan_samples

    plans = plan_samples(spec, indices, scene)
    if not sized:
        return plans, None, None
    extras = chunk_extras(scene, plans, batch_prepared(scene), cameras and isinstance(scene, BatchCameras))
    # Where the parent needs no layout to draw (prepared here), the plans stay pickled until it reads them.
    return (plans if extras[0] is None else PackedPlans(plans)), *extras


def main(argv: list[str]) -> int:
    from multiprocessing.connection import Connection

    fd, parent = int(argv[0]), int(argv[1])
    die_with_parent(parent)
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    conn = Connection(fd)
    try:
        _serve(conn)
    except (EOFError, BrokenPipeError, ConnectionResetError):
        return 1
    finally:
        conn.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
