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

import json
import logging
import os
import queue
import threading
import time
import weakref
from collections.abc import Iterator, Sequence
from typing import Any, Protocol

import numpy as np

from ...errors import BuffersHeldError, ConfigError, GlrecError
from ...scenes.capabilities import batch_annotated
from ..rendering.batch_meta import camera_arrays, indexed, object_arrays
from ..rendering.batches import BatchRanges, check_stream_args, parse_device
from ..rendering.deferred_meta import DeferredMetas, deferred_columns
from ..rendering.memory import BatchLayout, HostSlots, Lease
from ..rendering.pack import PackTarget
from ..rendering.sample import Sample, SampleRenderer
from ..spec.document import DatasetSpec

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

THREAD_NAME = "glrec-dataset-stream"
#: The process that last started a stream (a forked child sees its parent's pid here).
STREAM_PID: int | None = None
_END = object()


def batch_ranges(start: int, stop: int, batch_size: int, part: tuple[int, int] = (0, 1)) -> BatchRanges:
    """The batches of samples ``start..stop-1`` that part ``part[0]`` of ``part[1]`` renders (:class:`BatchRanges`).

    Batch k holds samples ``start + k * batch_size`` onwards (the last may be short);
    part p takes batches k = p, p + parts, ...: a sequence computed as it is read, never listed.
    """
    return BatchRanges(start, stop, batch_size, part)


class _Slots(Protocol):
    waiting_since: float | None

    def acquire(self, abort: Any) -> int: ...
    def lease(self, slot: int) -> Lease: ...
    def arrays(self, lease: Lease, layout: BatchLayout, n: int) -> dict[str, Any]: ...
    def target(self, slot: int, offset: int, nbytes: int) -> PackTarget: ...
    def close_gl(self) -> None: ...
    def close(self) -> None: ...


class _HostTargets(HostSlots):
    def target(self, slot: int, offset: int, nbytes: int) -> PackTarget:
        return self.memory(slot)[offset : offset + nbytes]

    def close_gl(self) -> None:
        pass

    def close(self) -> None:
        pass  # the memory goes with the last lease or array that holds it


class _Stopped(Exception):
    pass


class _Failure:
    def __init__(self, error: BaseException) -> None:
        self.error = error


class _Producer:
    """The render thread's side: context, renderer, slots; hands batches to ``out``. Holds no SampleStream."""

    def __init__(self, spec: DatasetSpec, ranges: Sequence[range], batch_size: int, buffers: int,
                 cuda: int | None, gl_device: int | None) -> None:  # fmt: skip
        self.spec = spec
        self.ranges = ranges
        self.batch_size = batch_size
        self.buffers = buffers
        self.cuda = cuda
        self.gl_device = gl_device
        self.out: queue.Queue[Any] = queue.Queue()
        self.stop = threading.Event()
        self.slots: _Slots | None = None

    def abort(self) -> None:
        if self.stop.is_set():
            raise _Stopped

    def run(self) -> None:
        from ...gl.context import GLContext, create_context

        gl: GLContext | None = None
        renderer: SampleRenderer | None = None
        device: Any = None
        try:
            if self.cuda is None:
                gl = create_context(self.gl_device)
            else:
                from ..rendering.cuda import open_cuda

                device, gl = open_cuda(self.cuda, self.gl_device)
            with gl.active():
                renderer = SampleRenderer(self.spec, gl.mgl, None, keep_rgb=True, packed=True)
                assert renderer.packer is not None
                spec = self.spec
                unpacked = [p for p in spec.output.passes if p not in renderer.packer.sections]
                if unpacked:
                    raise ConfigError(
                        f"The training stream packs the built-in passes on the GPU and has no rule for "
                        f"{', '.join(unpacked)} (a pass added by a row); write shards (glrec.dataset.generate), "
                        "which read it back as rendered, or leave it out of [output] passes."
                    )
                layout = BatchLayout(self.batch_size, spec.frames, spec.size, renderer.packer.sections,
                                     renderer.packer.nbytes, spec.output.normal)  # fmt: skip
                if device is None:
                    self.slots = _HostTargets(layout.nbytes, self.buffers)
                else:
                    from ..rendering.cuda import CudaSlots

                    self.slots = CudaSlots(gl.mgl, device, layout.nbytes, self.buffers)
                    device = None  # the slots own it now
                ranges = self.ranges
                for k, indices in enumerate(ranges):  # the next batch is planned while this one draws
                    self.out.put(self._batch(renderer, layout, indices, ranges[k + 1] if k + 1 < len(ranges) else None))
            self.out.put(_END)
        except _Stopped:
            pass
        except BaseException as exc:
            self.out.put(_Failure(exc))
        finally:
            self._teardown(gl, renderer)
            if device is not None:
                device.release()

    def _batch(self, renderer: SampleRenderer, layout: BatchLayout, indices: range, then: range | None) -> Batch:
        assert self.slots is not None
        slots = self.slots
        slot = slots.acquire(self.abort)
        lease = slots.lease(slot)
        try:
            self.abort()
            metas = self._layered(renderer, layout, slot, indices, then) if renderer.batch_ready else None
            if metas is None:
                metas = self._one_by_one(renderer, layout, slot, indices)
            arrays = slots.arrays(lease, layout, len(indices))
        except BaseException:
            lease.release()
            raise
        del lease  # the arrays hold it now
        spec = self.spec
        batch: Batch = {"index": np.asarray(indices, np.int64), "key": [spec.key(i) for i in indices], **arrays}
        if isinstance(metas, DeferredMetas):
            batch.update(deferred_columns(renderer.scene, metas))
        else:
            batch.update(camera_arrays(metas, spec.is_clip))
            if not spec.is_clip:
                batch.update(object_arrays(metas))
        batch["meta"] = metas
        return batch

    def _layered(
        self, renderer: SampleRenderer, layout: BatchLayout, slot: int, indices: range, then: range | None
    ) -> Sequence[dict[str, Any]] | None:
        """The batch N samples per GL pass (:meth:`SampleRenderer.draw_batch`: its metadata made when first
        read; or :meth:`~SampleRenderer.render_batch`), or None after an error (then the one-by-one path
        renders it again, and fails naming the sample)."""
        from ..files.samples import meta_json

        slots = self.slots
        assert slots is not None

        def target(j: int, n: int) -> PackTarget:
            self.abort()
            return slots.target(slot, layout.frame_offset(j), n * layout.sample_stride)

        try:
            chunks = renderer.draw_batch(indices, target, then)
            if chunks is not None:
                return DeferredMetas(self.spec, renderer.scene if batch_annotated(renderer.scene) else None, chunks,
                                     _strict_params)  # fmt: skip
            samples = renderer.render_batch(indices, target, then=then)
            return [_plain(s) if s.plain_meta else dict(json.loads(meta_json(s.meta, s.key))) for s in samples]
        except _Stopped:
            raise
        except Exception as exc:
            log.debug("glrec: the batch of samples %d.. failed (%s); rendering it one by one", indices[0], exc)
            return None

    def _one_by_one(
        self, renderer: SampleRenderer, layout: BatchLayout, slot: int, indices: range
    ) -> list[dict[str, Any]]:
        slots = self.slots
        assert slots is not None
        metas = []
        renderer.prepare(indices)  # the batch's parameters and layouts, drawn at once
        for j, index in enumerate(indices):
            self.abort()

            def into(f: int, j: int = j) -> PackTarget:
                return slots.target(slot, layout.frame_offset(j, f), layout.frame_stride)

            metas.append(self._sample(renderer, index, into))
        return metas

    def _sample(self, renderer: SampleRenderer, index: int, into: Any) -> dict[str, Any]:
        from ..files.samples import meta_json  # strict JSON, exactly what meta.json holds

        try:
            sample = renderer.render(index, into=into)
            return dict(json.loads(meta_json(sample.meta, sample.key)))
        except _Stopped:
            raise
        except Exception as exc:
            raise indexed(exc, index) from None

    def _teardown(self, gl: Any, renderer: SampleRenderer | None) -> None:
        slots = self.slots
        try:
            if gl is not None:
                with gl.teardown():
                    if renderer is not None:
                        renderer.close()
                    if slots is not None:
                        slots.close_gl()
                gl.release()
        except Exception as exc:  # the stream's own error (if any) is the one to report
            log.warning("Releasing the dataset stream's GL resources failed: %s", exc)
        finally:
            if slots is not None:
                slots.close()


def _plain(sample: Sample) -> dict[str, Any]:
    """What ``meta.json`` holds for a sample whose annotations are plain JSON values already
    (:class:`~glrec.scenes.capabilities.BatchAnnotated`): only its ``params`` (the spec's values and the
    scene's) go through JSON; the rest is glrec's own ints, str and lists."""
    return _strict_params(dict(sample.meta))


def _strict_params(meta: dict[str, Any]) -> dict[str, Any]:
    from ..files.samples import meta_json

    meta["params"] = json.loads(meta_json(meta["params"], meta["key"]))
    return meta


def _stop(producer: _Producer, thread: threading.Thread) -> None:
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
        self._producer = _Producer(spec, ranges, batch_size, buffers, cuda, gl_device)
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
        if item is _END:
            self.close()
            raise StopIteration
        if isinstance(item, _Failure):
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
