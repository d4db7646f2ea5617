"""Scale-out: every pending shard is a Ray task; progress comes back through one small actor.

Tasks run with ``max_calls=1``, so each starts in a fresh Ray worker process
(Ray starts workers as new interpreters, not forks of the driver) and makes its
own EGL context there, on the GPU Ray assigned (one GPU per task where the
cluster has GPUs, Mesa on one CPU otherwise). A failed task, an exception or a
dead worker, is retried ``max_retries`` times; its half-written shard is
removed before each attempt. Workers write into ``OUT`` directly, so on a
multi-node cluster ``OUT`` must be a filesystem every node sees.
"""

from __future__ import annotations

import logging
import os
import socket
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


def _shard_task(spec: DatasetSpec, root: str, shard: int, counter: Any, cpus: int) -> dict[str, Any]:
    import ray

    gpu_ids = [str(g) for g in ray.get_gpu_ids()]
    if not gpu_ids:
        # llvmpipe starts a thread per core by default; keep to the cores Ray gave this task
        os.environ.setdefault("LP_NUM_THREADS", str(cpus))
    folder = DatasetFolder(root, spec)
    if not folder.info_path.is_file():
        raise OutputError(
            f"{root} holds no dataset.json on node {socket.gethostname()}: the workers write into the output "
            "folder, so put it on a filesystem every node of the cluster mounts at the same path."
        )
    device = egl_device_for_gpus(gpu_ids)
    done = 0

    def progress(n: int) -> None:
        nonlocal done
        done += n
        counter.report.remote(shard, done)

    with ShardWorker(spec, folder, device, gpu=gpu_ids[0] if gpu_ids else None) as worker:
        return worker.run(shard, progress)


class _Counter:
    """Samples finished per shard; a retried shard counts from its best attempt so the total never drops."""

    def __init__(self) -> None:
        self.done: dict[int, int] = {}

    def report(self, shard: int, n: int) -> None:
        self.done[shard] = max(self.done.get(shard, 0), n)

    def counts(self) -> dict[int, int]:
        return dict(self.done)


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
    """Render ``shards`` as Ray tasks and return their records.

    ``address`` "" starts or joins Ray as ``ray.init()`` does (a local cluster unless
    ``RAY_ADDRESS`` is set); if Ray is already initialised that session is used.
    ``gpus`` None uses one GPU per task when the cluster has GPUs.
    """
    ray = _import_ray()
    started = not ray.is_initialized()
    if started:
        kwargs: dict[str, Any] = {"address": address} if address else {"include_dashboard": False}
        ray.init(**kwargs)
    try:
        if gpus is None:
            gpus = ray.cluster_resources().get("GPU", 0) > 0
        counter = ray.remote(num_cpus=0)(_Counter).remote()
        task = ray.remote(
            num_cpus=cpus_per_task,
            num_gpus=1 if gpus else 0,
            max_calls=1,  # a fresh worker process (and EGL context) per task
            max_retries=max_retries,
            retry_exceptions=True,
        )(_shard_task)
        log.info("ray: %d shard tasks, %s each", len(shards), "one GPU" if gpus else f"{cpus_per_task} CPU")
        refs = {task.remote(spec, str(folder.root), s, counter, cpus_per_task): s for s in shards}
        return _collect(ray, refs, counter, progress)
    finally:
        if started:
            ray.shutdown()


def _collect(ray: Any, refs: dict[Any, int], counter: Any, progress: Progress | None) -> dict[int, dict[str, Any]]:
    records: dict[int, dict[str, Any]] = {}
    pending = list(refs)
    reported = 0
    try:
        while pending:
            ready, pending = ray.wait(pending, num_returns=len(pending), timeout=0.25)
            for ref in ready:
                shard = refs[ref]
                try:
                    records[shard] = ray.get(ref)
                except Exception as exc:
                    raise DatasetError(
                        f"Shard {shard} failed after its retries: {exc}. The finished shards are kept; "
                        "fix the cause and run again with --resume."
                    ) from exc
            if progress is not None:
                # finished shards count in full: their last report may still be on its way to the actor
                done = ray.get(counter.counts.remote())
                done.update({s: len(r["samples"]) for s, r in records.items()})
                total = sum(done.values())
                if total > reported:
                    progress(total - reported)
                    reported = total
    except BaseException:
        for ref in pending:
            ray.cancel(ref, force=True)
        raise
    return records
