"""The front door: :func:`generate` a dataset, :func:`render_sample` one sample."""

from __future__ import annotations

import contextlib
import logging
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..scenes.capabilities import classes_of
from .files.digests import DEFAULT_DIGEST, resolve_digest
from .files.encode import check_colour_encoder
from .files.feed import ShardQueue
from .files.folder import FORMAT, FORMAT_VERSION, DatasetFolder, member_names
from .files.lock import FolderLock
from .files.runner import Progress, run_local
from .files.writers import disk_full
from .rendering.devices import check_egl_device
from .rendering.sample import Sample, SampleRenderer, check_scene
from .spec.document import DatasetSpec, check_flag

log = logging.getLogger("glrec")

_KEYS = {
    "rgb.png": "colour, 8-bit RGB PNG",
    "rgb.jpg": "colour, JPEG (4:2:0, BT.601 full range)",
    "rgb.mp4": "colour of the clip, H.264/HEVC video (BT.709 limited range)",
    "depth.npy": "float32, camera z of the surface in scene units (OpenCV camera), 0 = no surface",
    "depth.png": "uint16 PNG, round(camera z * depth_scale), 0 = no surface",
    "instance.png": "uint16 PNG, object instance id per pixel, 0 = no object",
    "semantic.png": "uint16 PNG, class id per pixel (see classes), 0 = background",
    "normal.png": "8-bit RGB PNG, round((n + 1) * 127.5) of the unit camera-space normal, 0 = no surface",
    "normal.npy": "float32 (h, w, 3), unit camera-space normal (OpenCV axes), 0 = no surface",
    "instance.npy": "uint16 (frames, h, w), instance id per pixel",
    "semantic.npy": "uint16 (frames, h, w), class id per pixel",
    "meta.json": "seed, params, camera (K, world_to_camera), objects (pose, bbox, visible_bbox, pixels)",
}


@dataclass(frozen=True)
class DatasetResult:
    """What :func:`generate` did."""

    path: Path
    samples: int
    shards: int
    shards_skipped: int  # complete before this run (resume)
    samples_rendered: int
    wall_seconds: float
    workers: int = 1  # local worker processes that rendered (1: this process, or Ray's actors)

    @property
    def samples_per_second(self) -> float:
        """Samples rendered by this run per second of wall-clock time (shards already complete not counted)."""
        return self.samples_rendered / self.wall_seconds if self.wall_seconds > 0 else 0.0

    def summary(self) -> str:
        """One line: the folder, samples, shards (and how many were already complete), workers and speed."""
        skipped = f", {self.shards_skipped} already complete" if self.shards_skipped else ""
        on = f" on {self.workers} workers" if self.workers > 1 else ""
        return (
            f"{self.path}: {self.samples} samples in {self.shards} shards{skipped}; rendered {self.samples_rendered}"
            f"{on} in {self.wall_seconds:.1f} s = {self.samples_per_second:.1f} samples/s"
        )


def _as_spec(spec: DatasetSpec | str | os.PathLike[str]) -> DatasetSpec:
    return spec if isinstance(spec, DatasetSpec) else DatasetSpec.load(spec)


def dataset_info(spec: DatasetSpec, scene: object) -> dict[str, Any]:
    """What ``dataset.json`` says (no timestamps, so a resumed run writes the same bytes)."""
    from .. import __version__  # here: glrec/__init__ imports the scenes, which import this package

    last = spec.shards - 1
    return {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "glrec": __version__,
        "identity": spec.identity(),
        "status": "incomplete",
        "samples": spec.samples,
        "shards": spec.shards,
        "layout": spec.output.layout,
        "digest": spec.output.digest or DEFAULT_DIGEST,  # of each file in the manifest, and of each shard
        "shard_pattern": f"shard-{{000000..{last:06d}}}.tar" if spec.output.layout == "webdataset" else None,
        "keys": {n: _KEYS.get(n, "") for n in member_names(spec)},
        "classes": list(classes_of(scene)),
        "camera_convention": "OpenCV: x right, y down, z forward; pixel (c, r) centre at (c + 0.5, r + 0.5)",
        "spec": spec.to_dict(),
    }


def generate(
    spec: DatasetSpec | str | os.PathLike[str],
    out: str | os.PathLike[str],
    *,
    resume: bool = False,
    overwrite: bool = False,
    ray: str | None = None,
    workers: int | None = None,
    device: int | None = None,
    progress: Progress | None = None,
    ray_options: dict[str, Any] | None = None,
) -> DatasetResult:
    """Render the dataset ``spec`` (a DatasetSpec or a TOML path) into the folder ``out``.

    Defaults: a new or empty ``out``; a folder holding a dataset is refused unless
    ``resume`` (same spec: complete shards are kept, the rest redone) or
    ``overwrite``. ``workers``: local worker processes, each with its own GL
    context (None: one per usable core, at most 8 and at most one per pending
    shard; 1: everything in this process); the shards are the same bytes whatever
    the count. ``ray``: None renders on this machine; ``""`` starts or joins Ray as
    ``ray.init()`` does; an address joins that cluster (Ray then places the
    workers, so ``workers`` is refused with it). ``device``: the EGL device every
    local worker renders on. ``progress(n)`` is called as samples finish. The
    folder is locked for the whole run (:mod:`glrec.dataset.files.lock`): another run
    writing it is refused with an OutputError naming that run, before anything
    is touched. ``"complete"`` is written once every shard is found on disk.
    Local workers are done with the folder when this returns; their processes
    finish exiting (GL context, interpreter) on a thread, which the interpreter
    waits for as it exits.

    >>> glrec.dataset.generate("examples/dataset.toml", "out/")  # doctest: +SKIP
    DatasetResult(path=PosixPath('out'), samples=200, ...)
    """
    from ..scenes import load_scene
    from .files.local import (
        MAX_DEFAULT_WORKERS,
        colour_factory,
        colour_stays_here,
        resolve_workers,
        run_workers,
        usable_cores,
    )

    check_flag("resume", resume)
    check_flag("overwrite", overwrite)
    if ray is not None and workers is not None:
        raise ConfigError(
            "workers= sets local worker processes; with ray= Ray starts one worker per GPU (or per CPU) of the "
            "cluster. Leave one of them out."
        )
    resolve_workers(workers, 1)  # a bad count is refused before anything is written
    spec = _as_spec(spec)
    check_colour_encoder(spec.output)
    check_egl_device(device)
    colour = colour_factory(spec) if ray is None and workers != 1 else None
    if colour is None and workers is not None and workers > 1:
        raise colour_stays_here(spec)
    scene = load_scene(spec.scene_ref())
    check_scene(scene, spec)  # before anything is written
    old = DatasetFolder(Path(out), spec).check(resume=resume, overwrite=overwrite, info=dataset_info(spec, scene))
    # a refusal above or here touches nothing, not even the lock; a resumed folder keeps its digest
    digest = resolve_digest(spec.output.digest, old if resume else None, str(out))
    spec = spec.with_(output=replace(spec.output, digest=digest))
    info = dataset_info(spec, scene)
    folder = DatasetFolder(Path(out), spec)
    started = time.perf_counter()
    with _locked(folder) as lock:
        try:
            folder.prepare(resume=resume, overwrite=overwrite, info=info)
        except OSError as exc:
            full = disk_full(exc, f"Preparing {folder.root}")
            if full is not None:
                raise full from exc
            raise
        done = folder.complete_shards()  # listed, not looked up shard by shard: there may be 2**63 - 1 shards
        pending = ShardQueue(spec.shards, done)
        if done:
            log.info("%s: %d of %d shards already complete", out, len(done), spec.shards)
            if progress is not None:
                progress(sum(len(spec.shard_range(s)) for s in done))
        used = 1
        rendered: list[int] = []
        if pending:
            if ray is not None:
                from .files.ray_backend import run_on_ray

                rendered = run_on_ray(spec, folder, pending, address=ray, progress=progress, **(ray_options or {}))
            else:
                used = resolve_workers(workers, len(pending))
                if workers is None and used < min(MAX_DEFAULT_WORKERS, usable_cores()):
                    log.info("%d shard(s) to render: %d worker(s) of the %d cores; a smaller shard_size uses more",
                             len(pending), used, usable_cores())  # fmt: skip
                if used > 1 and colour is None:
                    log.info(
                        "colour encoder %s cannot go to worker processes: one process renders", spec.output.rgb_encoder
                    )
                    used = 1
                if used > 1:
                    rendered = run_workers(spec, folder, pending, used, device, progress, colour, lock_fd=lock.fd)
                else:
                    rendered = run_local(spec, folder, pending, device, progress)
        try:
            folder.finish(info)  # every shard checked on disk, the manifest made from the records there
        except OSError as exc:
            full = disk_full(exc, f"Writing the manifest of {folder.root}")
            if full is not None:
                raise full from exc
            raise
    samples = sum(len(spec.shard_range(s)) for s in rendered)
    return DatasetResult(
        Path(out), spec.samples, spec.shards, len(done), samples, time.perf_counter() - started, workers=used
    )


@contextlib.contextmanager
def _locked(folder: DatasetFolder) -> Iterator[FolderLock]:
    """The folder's lock held (its token given to ``folder``), a full disk said as such."""
    lock = FolderLock(folder.root)
    try:
        lock.acquire()
    except OSError as exc:
        full = disk_full(exc, f"Locking {folder.root}")
        if full is not None:
            raise full from exc
        raise
    folder.owner = lock.token
    try:
        yield lock
    finally:
        folder.owner = None
        lock.release()


def render_sample(spec: DatasetSpec | str | os.PathLike[str], index: int, *, device: int | None = None) -> Sample:
    """Render sample ``index`` of ``spec`` alone and return its arrays and meta (no files written).

    The result equals that sample in a full run: same seed, same parameters, same pixels.

    >>> s = render_sample("examples/dataset.toml", 17)  # doctest: +SKIP
    >>> s.frames[0]["depth"].shape
    (480, 640)
    """
    from ..gl.context import create_context

    spec = _as_spec(spec)
    check_egl_device(device)
    with create_context(device) as gl:
        renderer = SampleRenderer(spec, gl.mgl)
        try:
            return renderer.render(index)
        finally:
            renderer.close()
