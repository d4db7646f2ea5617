"""The render thread of :func:`glrec.dataset.streaming.tensors.stream`: its context, renderer and batch slots.

:class:`Producer` renders each batch of the stream's ranges into a slot (host memory, or GL memory shared
with CUDA) and puts it on ``out``, then :data:`END`; an error is put as a :class:`Failure`. The next batch is
planned while one draws; a batch the layered path cannot take is rendered one sample at a time.
"""

from __future__ import annotations

import json
import logging
import queue
import threading
from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np

from ...errors import ConfigError
from ...scenes.capabilities import batch_annotated
from ..rendering import plan_ahead
from ..rendering.batch_meta import camera_arrays, indexed, object_arrays
from ..rendering.deferred_meta import DeferredMetas, deferred_columns
from ..rendering.memory import BatchLayout, HostSlots, Lease
from ..rendering.pack import PackTarget
from ..rendering.sample import Sample, SampleRenderer
from ..spec.document import DatasetSpec

log = logging.getLogger("glrec")

__all__ = ["END", "THREAD_NAME", "Failure", "Producer"]

THREAD_NAME = "glrec-dataset-stream"
#: Put on ``out`` after the last batch.
END = object()
Batch = dict[str, Any]


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


class Failure:
    """An error of the render thread, handed to the consumer."""

    def __init__(self, error: BaseException) -> None:
        self.error = error


class Producer:
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
                for k, indices in enumerate(ranges):  # the next batches are planned while this one draws
                    then = ranges[k + 1] if k + 1 < len(ranges) else None
                    later = ranges[k + 2 : k + 1 + plan_ahead.DEPTH]  # read now: a benchmark may set it
                    self.out.put(self._batch(renderer, layout, indices, then, later))
            self.out.put(END)
        except _Stopped:
            pass
        except BaseException as exc:
            self.out.put(Failure(exc))
        finally:
            self._teardown(gl, renderer)
            if device is not None:
                device.release()

    def _batch(self, renderer: SampleRenderer, layout: BatchLayout, indices: range, then: range | None,
               later: Sequence[range] = ()) -> Batch:  # fmt: skip
        assert self.slots is not None
        slots = self.slots
        slot = slots.acquire(self.abort)
        lease = slots.lease(slot)
        try:
            self.abort()
            metas = self._layered(renderer, layout, slot, indices, then, later) if renderer.batch_ready else None
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
        self, renderer: SampleRenderer, layout: BatchLayout, slot: int, indices: range, then: range | None,
        later: Sequence[range] = (),
    ) -> Sequence[dict[str, Any]] | None:  # fmt: skip
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
            chunks = renderer.draw_batch(indices, target, then, later)
            if chunks is not None:
                return DeferredMetas(self.spec, renderer.scene if batch_annotated(renderer.scene) else None, chunks,
                                     _strict_params)  # fmt: skip
            samples = renderer.render_batch(indices, target, then=then, later=later)
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
    """``meta`` with its ``params`` as strict JSON gives them back (a fresh copy; NaN or infinity an error naming
    the sample). Plain values are copied as they are, which is what the round trip through JSON gives them (a
    float's repr reads back to the same float); anything else goes through JSON."""
    from ..files.samples import meta_json

    try:
        meta["params"] = _json_copy(meta["params"])
    except _NotPlain:
        meta["params"] = json.loads(meta_json(meta["params"], meta["key"]))
    return meta


class _NotPlain(Exception):
    """A value the JSON round trip would change or refuse: NaN, infinity, a subclass, a key that is not str."""


def _json_copy(value: Any) -> Any:
    kind = type(value)
    if kind is str or kind is int or kind is bool or value is None:
        return value
    if kind is float:
        if value - value != 0.0:  # NaN or infinity: the round trip raises, naming the sample
            raise _NotPlain
        return value
    if kind is list or kind is tuple:
        return [_json_copy(v) for v in value]
    if kind is dict and all(type(k) is str for k in value):
        return {k: _json_copy(v) for k, v in value.items()}
    raise _NotPlain
