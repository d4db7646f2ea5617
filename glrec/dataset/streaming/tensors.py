"""Samples of a dataset spec streamed into a training loop as batched arrays: no files in between.

:func:`stream` renders samples ``start..stop`` of a spec on a thread of its own
(its own GL context) into a fixed pool of batch buffers and yields each batch
as a dict of arrays: the same passes, values and metadata as the shards
(sample *i* is shard sample *i*). On ``device="cpu"`` the arrays are numpy views
of host memory; on ``device="cuda"`` they are CUDA arrays (DLPack and
``__cuda_array_interface__``) in memory GL renders into directly
(:mod:`glrec.dataset.rendering.cuda`). A batch's memory is reused only once every
array made from it is gone; while the consumer holds all buffers, the renderer
waits (memory never grows). :class:`glrec.dataset.streaming.torch_data.StreamDataset` is
the ``torch.utils.data.IterableDataset`` over it.
"""

from __future__ import annotations

import logging
import os
import queue
import threading
import time
import weakref
from collections.abc import Iterator, Sequence
from typing import Any

from ...errors import BuffersHeldError, GlrecError
from ..rendering.batches import BatchRanges, check_stream_args, parse_device
from ..spec.document import DatasetSpec
from .producer import END, THREAD_NAME, Failure, Producer

log = logging.getLogger("glrec")

__all__ = ["Batch", "SampleStream", "batch_ranges", "parse_device", "stream"]

#: What a batch holds (keys present when the spec and scene make them):
#: ``index`` (n,) int64, ``key`` list of str; the passes ``rgb`` (n, h, w, 3) uint8,
#: ``depth`` (n, h, w) float32, ``instance``/``semantic`` (n, h, w) uint16,
#: ``normal`` (n, h, w, 3) uint8 (``normal = "png"``) or float32 (``"npy"``) —
#: clips have a frame axis after n; ``K`` (n, 3, 3) and ``world_to_camera``
#: (n, 4, 4) float64 (clips: (n, frames, ...)); for images ``boxes`` (per sample, (m, 4)
#: int64 ``[x0, y0, x1, y1)`` of the visible objects), ``labels`` and ``instances``
#: (per sample, (m,) int64); ``meta`` (what each sample's ``meta.json`` holds). On the layered
#: batch path ``meta``, ``boxes``, ``labels`` and ``instances`` are sequences made when first read
#: (:mod:`glrec.dataset.rendering.deferred_meta`): a loop that reads only the tensors never pays for them.
Batch = dict[str, Any]

#: The process that last started a stream (a forked child sees its parent's pid here).
STREAM_PID: int | None = None


def batch_ranges(start: int, stop: int, batch_size: int, part: tuple[int, int] = (0, 1)) -> BatchRanges:
    """The batches of samples ``start..stop-1`` that part ``part[0]`` of ``part[1]`` renders (:class:`BatchRanges`).

    Batch k holds samples ``start + k * batch_size`` onwards (the last may be short);
    part p takes batches k = p, p + parts, ...: a sequence computed as it is read, never listed.
    """
    return BatchRanges(start, stop, batch_size, part)


def _stop(producer: Producer, thread: threading.Thread) -> None:
    producer.stop.set()
    while True:  # drop the batches nobody will take, so their buffers go back
        try:
            producer.out.get_nowait()
        except queue.Empty:
            break
    if thread.is_alive() and thread is not threading.current_thread():
        thread.join()
    while True:
        try:
            producer.out.get_nowait()
        except queue.Empty:
            break


class SampleStream:
    """An iterator of :data:`Batch` dicts; made by :func:`stream`. ``close()`` (or ``with``) stops it early.

    Closing stops the render thread, which releases its GL context and every GL
    object; batches the caller still holds stay valid (their memory goes when they do).
    """

    def __init__(self, spec: DatasetSpec, ranges: Sequence[range], batch_size: int, *, buffers: int,
                 cuda: int | None, gl_device: int | None, timeout: float) -> None:  # fmt: skip
        self.spec = spec
        self.ranges = ranges
        self.buffers = buffers
        self.timeout = timeout
        self._producer = Producer(spec, ranges, batch_size, buffers, cuda, gl_device)
        self._thread = threading.Thread(target=self._producer.run, name=THREAD_NAME, daemon=True)
        self._done = False
        self._thread.start()
        # A stream dropped without close() still stops its thread, which frees GL on its own thread.
        self._finalizer = weakref.finalize(self, _stop, self._producer, self._thread)

    def __len__(self) -> int:
        """How many batches this stream yields."""
        return len(self.ranges)

    @property
    def samples(self) -> int:
        """How many samples the stream yields in all (over every batch this worker or rank gets)."""
        ranges = self.ranges
        return ranges.samples if isinstance(ranges, BatchRanges) else sum(len(r) for r in ranges)

    def __iter__(self) -> Iterator[Batch]:
        return self

    def __next__(self) -> Batch:
        if self._done:
            raise StopIteration
        producer = self._producer
        while True:
            try:
                item = producer.out.get(timeout=0.05)
                break
            except queue.Empty:
                slots = producer.slots
                since = None if slots is None else slots.waiting_since
                if since is not None and time.monotonic() - since > self.timeout and producer.out.empty():
                    raise BuffersHeldError(
                        f"All {self.buffers} batch buffers of this stream are held by batches still referenced, "
                        f"so the next one cannot be rendered (waited {self.timeout:g} s). Copy what you keep "
                        "(array.copy(), tensor.clone()) and drop the batch, or pass buffers= larger than the "
                        "number of batches you hold at once."
                    ) from None
                if not self._thread.is_alive() and producer.out.empty():
                    self.close()
                    raise GlrecError("The dataset stream's render thread ended without a result.") from None
        if item is END:
            self.close()
            raise StopIteration
        if isinstance(item, Failure):
            self.close()
            raise item.error
        return item

    def close(self) -> None:
        """Stop rendering and release the GL context and its objects. Safe twice."""
        self._done = True
        self._finalizer()

    def __enter__(self) -> SampleStream:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def stream(
    spec: DatasetSpec | str | os.PathLike[str],
    batch_size: int = 64,
    *,
    device: str = "cpu",
    start: int = 0,
    stop: int | None = None,
    part: tuple[int, int] = (0, 1),
    buffers: int = 3,
    gl_device: int | None = None,
    timeout: float = 30.0,
) -> SampleStream:
    """Render samples ``start..stop-1`` of ``spec`` (a DatasetSpec or TOML path) and yield them in batches.

    Defaults: batches of 64 from sample 0 to the spec's last, numpy arrays
    (``device="cpu"``); ``"cuda"``/``"cuda:N"`` gives CUDA arrays on that device
    (torch/CuPy through DLPack), and is refused with the reason where CUDA cannot
    run (never a CPU fallback). ``part=(p, parts)`` renders only batches k with
    ``k % parts == p`` (:func:`batch_ranges`; DataLoader workers and ranks).
    ``buffers`` batches of memory are allocated once; the render thread waits while
    all are held; ``next()`` raises BuffersHeldError after ``timeout`` seconds of
    the caller holding them all. ``gl_device``: the EGL device index.

    >>> with stream("examples/dataset.toml", batch_size=8, stop=16) as s:  # doctest: +SKIP
    ...     for batch in s:
    ...         batch["rgb"].shape, batch["depth"].dtype
    ((8, 480, 640, 3), dtype('float32'))
    """
    spec = spec if isinstance(spec, DatasetSpec) else DatasetSpec.load(spec)
    args = check_stream_args(spec, batch_size, device=device, start=start, stop=stop, part=part, buffers=buffers,
                             gl_device=gl_device, timeout=timeout)  # fmt: skip
    from ...scenes import load_scene
    from ..rendering.sample import check_scene

    check_scene(load_scene(spec.scene_ref()), spec)  # a spec the scene cannot make fails before any thread
    global STREAM_PID
    STREAM_PID = os.getpid()
    return SampleStream(spec, BatchRanges(start, args.stop, batch_size, part), args.slot_batch, buffers=buffers,
                        cuda=args.cuda, gl_device=gl_device, timeout=timeout)  # fmt: skip
