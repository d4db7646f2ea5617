"""Scale-out: shards run on Ray actors, one per worker, each keeping its EGL context across shards.

Each actor is a Ray worker process (started as a new interpreter, not a fork of
the driver) holding one :class:`~glrec.dataset.files.runner.ShardWorker`: its GL
context, scene, packer and encode threads are made once, on the GPU Ray
assigned (one GPU per actor where the cluster has GPUs, Mesa on
``cpus_per_task`` CPUs otherwise), and render shard after shard. The driver
keeps every actor busy with the next pending shard. A failed shard, an
exception or a dead worker (Ray restarts a dead actor), is tried again up to
``max_retries`` times; its half-written shard is removed before each attempt.
Workers write into ``OUT`` directly, so on a multi-node cluster ``OUT`` must be
a filesystem every node sees. Progress comes back through one small actor.
"""

from __future__ import annotations

import logging
import os
import socket
from collections import deque
from collections.abc import Callable, Iterable, Sized
from typing import Any

from ...errors import ConfigError, DatasetError, OutputError
from ..rendering.devices import egl_device_for_gpus
from ..spec.document import DatasetSpec
from .folder import DatasetFolder
from .runner import Progress, ShardWorker

log = logging.getLogger("glrec")


def _import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise ConfigError("--ray needs Ray: pip install 'glrec[ray]' (or pip install ray).") from None
    return ray


class _ShardActor:
    """One Ray worker: a ShardWorker made once, rendering the shards it is given."""

    def __init__(self, spec: DatasetSpec, root: str, cpus: int, owner: str | None = None) -> None:
        import ray

        gpu_ids = [str(g) for g in ray.get_gpu_ids()]
        if not gpu_ids:
            # llvmpipe starts a thread per core by default; keep to the cores Ray gave this worker
            os.environ.setdefault("LP_NUM_THREADS", str(cpus))
        # owner: the driver holds the folder's lock; this worker checks before each shard that it still does
        folder = DatasetFolder(root, spec, owner=owner)
        if not folder.info_path.is_file():
            raise OutputError(
                f"{root} holds no dataset.json on node {socket.gethostname()}: the workers write into the output "
                "folder, so put it on a filesystem every node of the cluster mounts at the same path."
            )
        self.worker = ShardWorker(
            spec, folder, egl_device_for_gpus(gpu_ids), gpu=gpu_ids[0] if gpu_ids else None, threads=cpus
        )

    def run(self, shard: int, counter: Any) -> dict[str, Any]:
        done = 0

        def progress(n: int) -> None:
            nonlocal done
            done += n
            counter.report.remote(shard, done)

        return self.worker.run(shard, progress)


class _Counter:
    """Samples finished per shard; a retried shard counts from its best attempt so the total never drops."""

    def __init__(self) -> None:
        self.done: dict[int, int] = {}

    def report(self, shard: int, n: int) -> None:
        self.done[shard] = max(self.done.get(shard, 0), n)

    def counts(self) -> dict[int, int]:
        return dict(self.done)


def _workers(ray: Any, shards: int | None, gpus: bool, cpus_per_task: int) -> int:
    """Actors to start: one per GPU (or per ``cpus_per_task`` CPUs) of the cluster, at most one per shard."""
    resources = ray.cluster_resources()
    slots = int(resources.get("GPU", 0)) if gpus else int(resources.get("CPU", 1)) // max(1, cpus_per_task)
    return max(1, slots if shards is None else min(shards, slots))


def run_on_ray(
    spec: DatasetSpec,
    folder: DatasetFolder,
    shards: Iterable[int],
    *,
    address: str = "",
    progress: Progress | None = None,
    max_retries: int = 3,
    gpus: bool | None = None,
    cpus_per_task: int = 1,
) -> list[int]:
    """Render ``shards`` (taken lazily) on Ray actors; returns the shards rendered.

    ``address`` "" starts or joins Ray as ``ray.init()`` does (a local cluster unless
    ``RAY_ADDRESS`` is set); if Ray is already initialised that session is used.
    ``gpus`` None uses one GPU per actor when the cluster has GPUs.
    """
    ray = _import_ray()
    started = not ray.is_initialized()
    if started:
        kwargs: dict[str, Any] = {"address": address} if address else {"include_dashboard": False}
        ray.init(**kwargs)
    actors: list[Any] = []
    try:
        if gpus is None:
            gpus = ray.cluster_resources().get("GPU", 0) > 0
        counter = ray.remote(num_cpus=0)(_Counter).remote()
        actor_class = ray.remote(
            num_cpus=cpus_per_task,
            num_gpus=1 if gpus else 0,
            max_restarts=-1,  # a dead worker is started again; the shard's retries are counted below
        )(_ShardActor)
        count = len(shards) if isinstance(shards, Sized) else None
        n = _workers(ray, count, bool(gpus), cpus_per_task)
        log.info("ray: %s shards on %d workers, %s each", "?" if count is None else count, n,
                 "one GPU" if gpus else f"{cpus_per_task} CPU")  # fmt: skip
        actors = [actor_class.remote(spec, str(folder.root), cpus_per_task, folder.owner) for _ in range(n)]
        return _schedule(ray, actors, shards, counter, progress, max_retries, folder.check_done)
    finally:
        for actor in actors:
            ray.kill(actor, no_restart=True)
        if started:
            ray.shutdown()


def _schedule(ray: Any, actors: list[Any], shards: Iterable[int], counter: Any, progress: Progress | None,
              max_retries: int, check: Callable[[int], None] | None = None) -> list[int]:  # fmt: skip
    """Keep every actor on the next pending shard until all are done; try a failed shard again on any actor.
    ``check(shard)`` as each shard completes (the folder checks it on disk while the others render)."""
    finished: dict[int, int] = {}  # shard -> its samples
    fresh = iter(shards)  # taken as actors come free: there may be 2**63 - 1
    retry: deque[int] = deque()
    attempts: dict[int, int] = {}  # shards started and not finished
    running: dict[Any, tuple[int, Any]] = {}  # ref -> (shard, actor)
    reported = 0

    def start(actor: Any) -> None:
        shard = retry.popleft() if retry else next(fresh, None)
        if shard is not None:
            attempts[shard] = attempts.get(shard, 0) + 1
            running[actor.run.remote(shard, counter)] = (shard, actor)

    for actor in actors:
        start(actor)
    try:
        while running:
            ready, _ = ray.wait(list(running), num_returns=1, timeout=0.25)
            for ref in ready:
                shard, actor = running.pop(ref)
                try:
                    finished[shard] = len(ray.get(ref)["samples"])
                    attempts.pop(shard, None)
                except Exception as exc:
                    if attempts[shard] > max_retries:
                        raise DatasetError(
                            f"Shard {shard} failed after its retries: {exc}. The finished shards are kept; "
                            "fix the cause and run again with --resume."
                        ) from exc
                    log.warning("shard %d failed (attempt %d), trying again: %s", shard, attempts[shard], exc)
                    retry.appendleft(shard)
                start(actor)
                if check is not None and shard in finished:
                    check(shard)
            if progress is not None:
                # finished shards count in full: their last report may still be on its way to the actor
                done = ray.get(counter.counts.remote())
                done.update(finished)
                total = sum(done.values())
                if total > reported:
                    progress(total - reported)
                    reported = total
    except BaseException:
        for ref in running:
            ray.cancel(ref)  # actor calls cannot be force-cancelled; the actors are killed after this
        raise
    return list(finished)
