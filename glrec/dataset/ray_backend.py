"""Scale-out: shards run on Ray actors, one per worker, each keeping its EGL context across shards.

Each actor is a Ray worker process (started as a new interpreter, not a fork of
the driver) holding one :class:`~glrec.dataset.runner.ShardWorker`: its GL
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
from typing import Any

from ..errors import ConfigError, DatasetError, OutputError
from .devices import egl_device_for_gpus
from .folder import DatasetFolder
from .runner import Progress, ShardWorker
from .spec import DatasetSpec

log = logging.getLogger("glrec")


def _import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise ConfigError("--ray needs Ray: pip install 'glrec[ray]' (or pip install ray).") from None
    return ray


class _ShardActor:
    """One Ray worker: a ShardWorker made once, rendering the shards it is given."""

    def __init__(self, spec: DatasetSpec, root: str, cpus: int) -> None:
        import ray

        gpu_ids = [str(g) for g in ray.get_gpu_ids()]
        if not gpu_ids:
            # llvmpipe starts a thread per core by default; keep to the cores Ray gave this worker
            os.environ.setdefault("LP_NUM_THREADS", str(cpus))
        folder = DatasetFolder(root, spec)
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


def _workers(ray: Any, shards: int, gpus: bool, cpus_per_task: int) -> int:
    """Actors to start: one per GPU (or per ``cpus_per_task`` CPUs) of the cluster, at most one per shard."""
    resources = ray.cluster_resources()
    slots = int(resources.get("GPU", 0)) if gpus else int(resources.get("CPU", 1)) // max(1, cpus_per_task)
    return max(1, min(shards, slots))


def run_on_ray(
    spec: DatasetSpec,
    folder: DatasetFolder,
    shards: list[int],
    *,
    address: str = "",
    progress: Progress | None = None,
    max_retries: int = 3,
    gpus: bool | None = None,
    cpus_per_task: int = 1,
) -> dict[int, dict[str, Any]]:
    """Render ``shards`` on Ray actors and return their records.

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
        n = _workers(ray, len(shards), bool(gpus), cpus_per_task)
        log.info("ray: %d shards on %d workers, %s each", len(shards), n, "one GPU" if gpus else f"{cpus_per_task} CPU")
        actors = [actor_class.remote(spec, str(folder.root), cpus_per_task) for _ in range(n)]
        return _schedule(ray, actors, shards, counter, progress, max_retries)
    finally:
        for actor in actors:
            ray.kill(actor, no_restart=True)
        if started:
            ray.shutdown()


def _schedule(ray: Any, actors: list[Any], shards: list[int], counter: Any, progress: Progress | None,
              max_retries: int) -> dict[int, dict[str, Any]]:  # fmt: skip
    """Keep every actor on the next pending shard until all are done; try a failed shard again on any actor."""
    records: dict[int, dict[str, Any]] = {}
    queue = deque(shards)
    attempts = dict.fromkeys(shards, 0)
    running: dict[Any, tuple[int, Any]] = {}  # ref -> (shard, actor)
    reported = 0

    def start(actor: Any) -> None:
        if queue:
            shard = queue.popleft()
            attempts[shard] += 1
            running[actor.run.remote(shard, counter)] = (shard, actor)

    for actor in actors:
        start(actor)
    try:
        while running:
            ready, _ = ray.wait(list(running), num_returns=1, timeout=0.25)
            for ref in ready:
                shard, actor = running.pop(ref)
                try:
                    records[shard] = ray.get(ref)
                except Exception as exc:
                    if attempts[shard] > max_retries:
                        raise DatasetError(
                            f"Shard {shard} failed after its retries: {exc}. The finished shards are kept; "
                            "fix the cause and run again with --resume."
                        ) from exc
                    log.warning("shard %d failed (attempt %d), trying again: %s", shard, attempts[shard], exc)
                    queue.appendleft(shard)
                start(actor)
            if progress is not None:
                # finished shards count in full: their last report may still be on its way to the actor
                done = ray.get(counter.counts.remote())
                done.update({s: len(r["samples"]) for s, r in records.items()})
                total = sum(done.values())
                if total > reported:
                    progress(total - reported)
                    reported = total
    except BaseException:
        for ref in running:
            ray.cancel(ref)  # actor calls cannot be force-cancelled; the actors are killed after this
        raise
    return records
