"""The chunks of a batch planned ahead: on planning threads, while the batch before draws.

Planning a batch (each sample's parameters and the scene's layout, :func:`~glrec.dataset.rendering.plans.plan_samples`)
and, for a :func:`~glrec.scenes.capabilities.batch_prepared` scene, the CPU half of its draw take about as long as
the GPU's draw of it at small sizes (the H200, 128x128). :class:`ChunkPlanner` does both for the next batch on up
to :data:`PLANNERS` threads, a chunk per task, while the render thread draws this one; where batches are planned in
processes (:data:`PROCESS_BATCH`), for the next :data:`DEPTH` batches. Plans are pure functions of (seed, index), so
where they are made changes nothing.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Collection, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

    from ..spec.document import DatasetSpec
    from .plan_child import Planned, PlanProcess
    from .plans import SamplePlan

    Cameras = tuple[np.ndarray, np.ndarray]  # K (n, 3, 3) and world-to-camera (n, 4, 4)
    Chunk = tuple[Sequence[SamplePlan], Any, Cameras | None]  # plans, prepared draw, cameras

log = logging.getLogger("glrec")

__all__ = [
    "DEPTH",
    "FEW_LAYER_PROCESSES",
    "MANY_LAYERS",
    "PLANNERS",
    "PROCESSES",
    "PROCESS_BATCH",
    "ChunkPlanner",
    "plans_in_process",
]

#: Threads that plan the next batch's chunks while one draws, at most (and at most half the cores): their numpy
#: runs beside the render thread, their Python takes turns with it (four slowed the render thread on the H200).
PLANNERS = 2
#: Batches of at least this many samples are planned in a process of their own
#: (:class:`~glrec.dataset.rendering.plan_child.PlanProcess`) on machines with at least
#: :data:`PROCESS_CORES` cores: there planning a batch takes longer than drawing it (128x128 on the H200),
#: and the planning threads' Python holds the render thread back. None: never.
PROCESS_BATCH: int | None = 1024
PROCESS_CORES = 4
#: Planning processes at most, one per :data:`PROCESS_CORES` cores, where a GL pass draws at least
#: :data:`MANY_LAYERS` samples (small images, where planning bounds the stream); a batch's chunks go to them in turn.
#: One planned the 128x128 stream's chunks on the H200 at about 40,000 samples/s, busy nine tenths of the time. With
#: two batches planned ahead, four took the stream's steady rate from 48,468-49,788 (two) to 48,678-57,466 samples/s
#: over five runs, median 50,891 (H200, 16 cores, thirteenth session; with one batch ahead, three or four gained
#: nothing).
PROCESSES = 4
#: Planning processes at most where a GL pass draws fewer samples (large images: the GPU's fill bounds the stream).
#: At 640x480 (97 samples a pass, batch 1,024) four were 5-8 % slower than two (H200, thirteenth session).
FEW_LAYER_PROCESSES = 2
#: Samples per GL pass from which :data:`PROCESSES` plan (else :data:`FEW_LAYER_PROCESSES`).
MANY_LAYERS = 1024
#: Batches planned ahead at most where processes plan (``then`` and the batches ``later``, see
#: :meth:`ChunkPlanner.chunks`); on threads one. With one, a batch's chunks reached the processes only when the batch
#: before began to draw, and the render thread waited for them: the 128x128 stream's steady rate went from
#: 37,416-41,752 to 48,468-49,788 samples/s with two (H200, two processes, thirteenth session).
DEPTH = 2


def plans_in_process(batch: int, layers: int | None = None) -> int:
    """How many processes plan batches of ``batch`` samples drawn ``layers`` per GL pass here (0: none; see
    :data:`PROCESS_BATCH`, :data:`PROCESSES`; ``layers`` None: as many as the batch)."""
    if PROCESS_BATCH is None or batch < PROCESS_BATCH:
        return 0
    most = PROCESSES if (batch if layers is None else layers) >= MANY_LAYERS else min(PROCESSES, FEW_LAYER_PROCESSES)
    return max(0, min(most, (os.cpu_count() or 1) // PROCESS_CORES))


class ChunkPlanner:
    """Plans of ``spec``'s samples for ``scene``, in chunks of ``layers``; ``prepares``: also the draws' CPU half;
    ``processes``: planning processes to start (:func:`plans_in_process`). :attr:`cameras`: also each chunk's
    cameras (``cameras_batch``, a :class:`~glrec.scenes.capabilities.BatchCameras` scene; the training stream's)."""

    def __init__(self, spec: DatasetSpec, scene: object, layers: int, prepares: bool, processes: int = 0) -> None:
        self.spec, self.scene, self.layers, self.prepares = spec, scene, layers, prepares
        self.cameras = False
        self._remotes: list[PlanProcess] = []
        self._turn = 0
        if processes:  # started now, so they have loaded the scene by the time batches are planned ahead
            from .plan_child import PlanProcess

            try:
                for _ in range(processes):
                    self._remotes.append(PlanProcess(spec))
            except Exception as exc:  # no child to be had (no interpreter to start, no fds): threads plan
                log.debug("glrec: %d planning processes of %d (%s)", len(self._remotes), processes, exc)
        self._pool: ThreadPoolExecutor | None = None
        self._ahead: list[tuple[tuple[int, ...], list[Future[Chunk]]]] = []  # oldest first

    @property
    def planned_ahead(self) -> tuple[int, ...] | None:
        """The samples planned (or being planned) ahead for the batch that comes next, if any."""
        return self._ahead[0][0] if self._ahead else None

    @property
    def depth(self) -> int:
        """How many batches :meth:`chunks` plans ahead: :data:`DEPTH` where processes plan, else one."""
        return max(1, DEPTH) if self._remotes else 1

    def ahead(self, indices: Sequence[int]) -> None:
        """Start planning samples ``indices`` (a batch to come) on the planning threads while this batch draws,
        a chunk per task: its plans and, for a :func:`~glrec.scenes.capabilities.batch_prepared` scene, the CPU
        half of its draw. The :meth:`chunks` of exactly those indices takes them from there, a chunk at a
        time; an error is raised there as if it had planned them itself. Batches planned ahead before are kept
        (:meth:`chunks` drops those that no longer come); the same batch twice is planned once."""
        key, step = tuple(indices), self.layers
        if any(k == key for k, _ in self._ahead):
            return
        if self._pool is None:
            threads = max(1, min(PLANNERS, (os.cpu_count() or 1) // 2))
            self._pool = ThreadPoolExecutor(threads, thread_name_prefix="glrec-plan")
        chunks = [key[i : i + step] for i in range(0, len(key), step)]
        ready = [r for r in self._remotes if r.ready.is_set()]
        remote: list[Future[Planned] | None] = []
        for c in chunks:  # the processes take chunks in turn, from batch to batch
            self._turn += 1
            remote.append(ready[self._turn % len(ready)].submit(list(c), self.cameras) if ready else None)
        self._ahead.append(
            (key, [self._pool.submit(self._plan_chunk, c, r) for c, r in zip(chunks, remote, strict=True)])
        )

    def _plan_chunk(self, indices: Sequence[int], remote: Future[Planned] | None = None) -> Chunk:
        """A chunk's plans (a planning process's, or made here), its prepared draw where the scene prepares
        draws (None: drawn from the layouts) and its cameras where :attr:`cameras` (None: made when read)."""
        from .plans import chunk_extras, plan_samples

        plans, prepared, cams = None, None, None
        if remote is not None:
            try:
                plans, prepared, cams = remote.result()
            except Exception as exc:  # planned here, which raises the error that names the sample
                log.debug("glrec: the planning process did not plan samples %d..%d (%s)", indices[0], indices[-1], exc)
        if plans is None:
            plans = plan_samples(self.spec, list(indices), self.scene)
        return plans, *chunk_extras(self.scene, plans, self.prepares, self.cameras, prepared, cams)

    def _drop_ahead(self, keep: Collection[tuple[int, ...]] = ()) -> None:
        """Stop planning the batches ahead but those ``keep`` (what has not started is cancelled)."""
        dropped = [futures for key, futures in self._ahead if key not in keep]
        self._ahead = [entry for entry in self._ahead if entry[0] in keep]
        for futures in dropped:
            _settle(futures)

    def chunks(
        self, indices: Sequence[int], then: Sequence[int] | None, later: Sequence[Sequence[int]] = ()
    ) -> Iterator[tuple[int, Sequence[SamplePlan], list[float], Sequence[Any], Any, Cameras | None]]:
        """Per chunk of up to ``layers`` samples: its first position, plans, times, layouts, prepared draw
        (or None) and cameras (or None). Planned ahead (:meth:`ahead`) or here, at once. ``then`` (the next
        batch) and the batches ``later`` (those after it, in order) are planned ahead from here, up to
        :attr:`depth` batches; what was planned ahead for other samples is dropped."""
        from .plans import chunk_layouts, chunk_times, plan_samples

        key = tuple(indices)
        ahead = next((entry for entry in self._ahead if entry[0] == key), None)
        self._ahead = [entry for entry in self._ahead if entry[0] != key]
        coming = [tuple(b) for b in ([then] if then is not None else []) + list(later) if len(b)][: self.depth]
        self._drop_ahead(keep=coming)
        for batch in coming:
            self.ahead(batch)  # queued behind this batch's chunks (a batch already planned ahead is kept)
        if ahead is None:  # planned here, at once: the same chunks, already done
            plans = plan_samples(self.spec, list(indices), self.scene)
            ahead = (
                tuple(indices),
                [_done((plans[j : j + self.layers], None, None)) for j in range(0, len(plans), self.layers)],
            )
        j = 0
        try:
            for task in ahead[1]:
                chunk, prepared, cams = task.result()
                yield j, chunk, chunk_times(chunk), chunk_layouts(chunk), prepared, cams
                j += len(chunk)
        finally:  # after a chunk that failed (or a caller that stopped), the rest are waited for, not left running
            _settle(ahead[1])

    def close(self) -> None:
        """Drop what was planned ahead and stop the threads; safe twice."""
        self._drop_ahead()
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown()
        remotes, self._remotes = self._remotes, []
        for remote in remotes:
            remote.close()


def _done(value: Any) -> Future[Any]:
    """A future that has ``value`` already."""
    future: Future[Any] = Future()
    future.set_result(value)
    return future


def _settle(futures: Sequence[Future[Any]]) -> None:
    """Cancel what has not started; wait for what has (its result or error is nobody's now)."""
    for future in futures:
        if not future.cancel():
            future.exception()
