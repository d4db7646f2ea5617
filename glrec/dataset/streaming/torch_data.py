"""``torch.utils.data.IterableDataset`` over :func:`glrec.dataset.stream`: batches as torch tensors.

Use it with ``DataLoader(ds, batch_size=None, num_workers=N)``: the dataset
already yields whole batches. Each worker process opens its own stream (its own
GL context) on its own batches: with W workers (per rank, of ``world_size``
ranks), worker w of rank r renders batches k with ``k % (W * world_size) ==
r * W + w`` (:func:`glrec.dataset.streaming.tensors.batch_ranges`), read from
``torch.utils.data.get_worker_info()``; so no sample is rendered twice, none is
missing, and the DataLoader, taking a batch from each worker in turn, yields
them in index order.

GL drivers do not survive ``fork``: a worker forked from a process that had
already opened EGL hangs in its first draw (measured with Mesa llvmpipe). Such a
worker refuses with a ContextError saying so; pass
``multiprocessing_context="spawn"`` (or ``"forkserver"``) to the DataLoader
then. Forked workers of a process that never opened EGL are fine.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterator
from typing import Any

import numpy as np
import torch
import torch.utils.dlpack
from torch.utils.data import IterableDataset, get_worker_info

from ...errors import ContextError
from ..rendering.batches import check_stream_args
from ..rendering.deferred_meta import LazyColumn
from ..spec.document import DatasetSpec, whole_number
from .tensors import Batch, batch_ranges, parse_device, stream

__all__ = ["StreamDataset", "to_torch"]


def to_torch(batch: Batch, device: str = "cpu", *, shared: bool = False) -> dict[str, Any]:
    """A stream batch as torch tensors, without copying the passes (numpy views / DLPack).

    Passes stay where they were rendered (host, or the CUDA device); ``index``,
    ``K``, ``world_to_camera``, ``boxes``, ``labels``, ``instances`` become tensors
    on ``device`` (the last three when first read, as the metadata is made); ``key`` and ``meta`` stay
    sequences. ``shared``: host passes are
    copied once into shared memory instead, as a DataLoader worker hands them on
    (so the stream's buffer is free again at once).
    """
    out: dict[str, Any] = {}
    for name, value in batch.items():
        if name in ("key", "meta"):
            out[name] = value
        elif isinstance(value, list):
            out[name] = [torch.as_tensor(v, device=device) for v in value]
        elif isinstance(value, LazyColumn):  # made (and made tensors) when first read
            out[name] = value.map(functools.partial(torch.as_tensor, device=device))
        elif isinstance(value, np.ndarray):
            if device != "cpu":
                out[name] = torch.as_tensor(value, device=device)
            elif shared:
                tensor = torch.empty(value.shape, dtype=_TORCH[value.dtype.str[1:]]).share_memory_()  # type: ignore[no-untyped-call]
                tensor.copy_(torch.from_numpy(value))
                out[name] = tensor
            else:
                out[name] = torch.from_numpy(value)
        else:  # a CUDA pass
            out[name] = torch.utils.dlpack.from_dlpack(value)
    return out


_TORCH = {"u1": torch.uint8, "u2": torch.uint16, "f4": torch.float32, "f8": torch.float64, "i8": torch.int64}


def _check_not_forked_after_egl() -> None:
    from ...gl import egl
    from . import tensors

    inherited = egl.lib.cache_info().currsize > 0 and os.getpid() != tensors.STREAM_PID
    if inherited:
        raise ContextError(
            "This DataLoader worker was forked from a process that had already opened EGL (a GL context was "
            "made there), and GL drivers do not survive fork (the first draw would hang). Pass "
            "multiprocessing_context='spawn' (or 'forkserver') to the DataLoader, or make it before any GL context."
        )


class StreamDataset(IterableDataset):  # type: ignore[type-arg]  # torch is a soft dependency here
    """Batches of samples ``start..stop-1`` of ``spec`` as dicts of torch tensors (see :func:`to_torch`).

    Arguments as :func:`glrec.dataset.stream`; ``rank``/``world_size`` split the
    batches between processes of a distributed job (each worker of each rank
    takes its own). The spec is read and checked here, in the training process.

    >>> ds = StreamDataset("examples/dataset.toml", batch_size=16)  # doctest: +SKIP
    >>> for batch in torch.utils.data.DataLoader(ds, batch_size=None, num_workers=2):  # doctest: +SKIP
    ...     batch["rgb"].shape
    torch.Size([16, 480, 640, 3])
    """

    def __init__(
        self,
        spec: DatasetSpec | str | os.PathLike[str],
        batch_size: int = 64,
        *,
        device: str = "cpu",
        start: int = 0,
        stop: int | None = None,
        rank: int = 0,
        world_size: int = 1,
        buffers: int = 3,
        gl_device: int | None = None,
        timeout: float = 30.0,
    ) -> None:
        super().__init__()
        self.spec = spec if isinstance(spec, DatasetSpec) else DatasetSpec.load(spec)
        world_size = whole_number("world_size", world_size, 1, None, "the number of ranks")
        whole_number("rank", rank, 0, world_size - 1, "0")
        # Everything a worker's stream would refuse is refused here, in the training process, before any
        # DataLoader worker starts: the arguments, the device, and what the scene cannot make.
        args = check_stream_args(self.spec, batch_size, device=device, start=start, stop=stop, part=(0, 1),
                                 buffers=buffers, gl_device=gl_device, timeout=timeout)  # fmt: skip
        from ...scenes import load_scene
        from ..rendering.sample import check_scene

        check_scene(load_scene(self.spec.scene_ref()), self.spec)
        self.device = device
        self.batch_size = batch_size
        self.start = start
        self.stop = args.stop
        self.rank = rank
        self.world_size = world_size
        self.options = {"buffers": buffers, "gl_device": gl_device, "timeout": timeout}

    def _part(self) -> tuple[int, int]:
        info = get_worker_info()
        worker, workers = (0, 1) if info is None else (info.id, info.num_workers)
        return self.rank * workers + worker, self.world_size * workers

    def __len__(self) -> int:
        """Batches this rank yields (all its workers together); computed, never listed."""
        info = get_worker_info()
        workers = 1 if info is None else info.num_workers
        parts = self.world_size * workers
        return sum(
            len(batch_ranges(self.start, self.stop, self.batch_size, (self.rank * workers + w, parts)))
            for w in range(workers)
        )

    def __iter__(self) -> Iterator[dict[str, Any]]:
        worker = get_worker_info() is not None
        if worker:
            _check_not_forked_after_egl()
        tensor_device = "cpu" if self.device == "cpu" else f"cuda:{parse_device(self.device)}"
        with stream(self.spec, self.batch_size, device=self.device, start=self.start, stop=self.stop,
                    part=self._part(), **self.options) as s:  # type: ignore[arg-type]  # fmt: skip
            for batch in s:
                # A worker's batch is pickled to the training process: torch would copy it into shared
                # memory at some point while the stream's buffer stays held; one copy now frees it.
                yield to_torch(batch, tensor_device, shared=worker)
                del batch
