"""A batch's metadata computed when it is first read: a training loop that reads only the tensors pays nothing.

What a streamed batch's ``meta`` holds for each sample (its ``meta.json``: the
camera, every object's pose and boxes, the parameters) costs more CPU than the
draw at small sizes: at 128x128 it was most of the stream's time. The layered
path (:meth:`~glrec.dataset.rendering.render_layers.LayerRenderer.draw`) keeps
what it needs instead (layouts, times, the visible boxes the GPU counted), and
:class:`DeferredMetas` builds the metadata of the whole batch at once the first
time any of it is read, on the reading thread, with the scene's
``annotations_batch``: the same values, in the same order, as when it was built
at once. Pickled (DataLoader workers), it is a plain list.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar, cast

import numpy as np

from ...errors import GlrecError, SceneError
from ...scenes.capabilities import BatchAnnotated, BatchCameras, BatchObjects, batch_objects_agree
from .batch_meta import camera_arrays, frame_meta, object_arrays, sample_meta
from .made import MadeWhenRead

if TYPE_CHECKING:
    from ..spec.document import DatasetSpec
    from .render_layers import DrawnChunk

__all__ = ["DeferredMetas", "LazyColumn", "deferred_columns"]

Meta = dict[str, Any]
T = TypeVar("T")


class DeferredMetas(MadeWhenRead[Meta]):
    """The ``meta`` of every sample of ``chunks``, made on first read (thread-safe), then kept.

    ``scene``: the scene that drew them, when it annotates (a
    :class:`~glrec.scenes.capabilities.BatchAnnotated` scene, whose annotations depend only on the
    layouts and times); ``finish(meta)``: a last step for each sample's meta (the stream's strict JSON).
    An error raised while building is raised again by every later read.
    """

    def __init__(
        self, spec: DatasetSpec, scene: object | None, chunks: list[DrawnChunk], finish: Callable[[Meta], Meta]
    ) -> None:
        self._spec, self._scene, self._chunks, self._finish = spec, scene, chunks, finish
        self._n = sum(len(c.plans) for c in chunks)
        self._lock = threading.Lock()
        self._metas: list[Meta] | None = None
        self._error: BaseException | None = None

    @property
    def annotated(self) -> bool:
        """Whether the samples' metadata lists objects (asked of the scene for the batch's first sample)."""
        if self._metas is not None:
            return bool(self._metas) and self._metas[0].get("objects") is not None
        if self._scene is None or not self._chunks:
            return False
        first = self._chunks[0]
        try:
            probe = cast(BatchAnnotated, self._scene).annotations_batch([first.plans[0].layout], first.times[:1])
            return probe[0].get("objects") is not None
        except Exception:
            self.materialise()  # raises, naming the sample
            raise

    def cameras(self, scene: BatchCameras) -> tuple[np.ndarray, np.ndarray] | None:
        """Every sample's K (n, 3, 3) and world-to-camera (n, 4, 4) from ``scene``'s ``cameras_batch`` (None once
        the metadata is made: take them from it); a camera that is not finite raises the metadata's error."""
        if self._metas is not None:
            return None
        parts = [
            c.cameras if c.cameras is not None else scene.cameras_batch([p.layout for p in c.plans], c.times)
            for c in self._chunks
        ]
        k = np.concatenate([p[0] for p in parts])
        w2c = np.concatenate([p[1] for p in parts])
        if not (np.isfinite(k).all() and np.isfinite(w2c).all()):
            self.materialise()  # the annotations refuse it, naming the sample
        return k, w2c

    @property
    def chunks(self) -> list[DrawnChunk]:
        """The drawn chunks the metadata is made from (empty once it is made)."""
        return self._chunks

    @property
    def built(self) -> bool:
        """Whether the metadata has been made (it is, once anything of it was read)."""
        return self._metas is not None

    def materialise(self) -> list[Meta]:
        """Every sample's meta (made now if not yet)."""
        with self._lock:
            if self._error is not None:
                raise self._error
            if self._metas is None:
                try:
                    self._metas = self._build()
                except Exception as exc:  # kept; an interrupt (Ctrl-C) is not, so a later read tries again
                    self._error = exc
                    raise
                self._chunks = []  # what they were made from is no longer needed
            return self._metas

    def _build(self) -> list[Meta]:
        from .sample import Sample

        spec, out = self._spec, []
        for chunk in self._chunks:
            annotations = self._annotate(chunk)
            for k, plan in enumerate(chunk.plans):
                frame = frame_meta(chunk.times[k], None if annotations is None else annotations[k], chunk.boxes[k])
                sample = Sample(index=plan.index, key=spec.key(plan.index), seed=plan.seed, params=plan.params)
                out.append(self._finish(sample_meta(spec, sample, chunk.in_effect[k], [frame])))
        return out

    def _annotate(self, chunk: DrawnChunk) -> Sequence[Meta] | None:
        if self._scene is None:
            return None
        scene = cast(BatchAnnotated, self._scene)
        layouts = [p.layout for p in chunk.plans]
        try:
            out = scene.annotations_batch(layouts, chunk.times)
            if len(out) == len(layouts):
                return out
        except Exception:
            pass
        for k, plan in enumerate(chunk.plans):  # find the sample the scene fails on, and name it
            try:
                scene.annotations_batch(layouts[k : k + 1], chunk.times[k : k + 1])
            except GlrecError as exc:
                raise SceneError(f"Sample {plan.index}: {exc}") from exc
            except Exception as exc:
                raise SceneError(
                    f"Scene {self._spec.scene!r} failed to annotate sample {plan.index}: {type(exc).__name__}: {exc}"
                ) from exc
        raise SceneError(
            f"Scene {self._spec.scene!r} gave a wrong number of annotations for a batch of {len(layouts)}."
        )

    def __len__(self) -> int:
        return self._n

    def __repr__(self) -> str:
        return repr(self.materialise()) if self.built else f"<{self._n} samples' meta, made when first read>"


class LazyColumn(MadeWhenRead[Any]):
    """One per-sample column of a batch, made when first read (``boxes``, ``labels``, ``instances``: ``make()``
    gives the three at once, kept in ``shared``), from the batch's metadata or, where the scene says which
    objects its layouts hold (:class:`~glrec.scenes.capabilities.BatchObjects`), from those and the boxes the
    GPU counted, without the rest of the metadata."""

    def __init__(self, name: str, n: int, make: Callable[[], dict[str, list[Any]]], shared: dict[str, list[Any]],
                 convert: Callable[[Any], Any] | None = None) -> None:  # fmt: skip
        self._name, self._n, self._make, self._shared, self._convert = name, n, make, shared, convert
        self._converted: list[Any] | None = None

    def map(self, convert: Callable[[Any], Any]) -> LazyColumn:
        """This column with ``convert`` applied to each value, when read (``to_torch``: tensors)."""
        return LazyColumn(self._name, self._n, self._make, self._shared, convert)

    def materialise(self) -> list[Any]:
        shared = self._shared
        if self._name not in shared:
            shared.update(self._make())
        if self._convert is None:
            return shared[self._name]
        if self._converted is None:
            self._converted = [self._convert(v) for v in shared[self._name]]
        return self._converted

    def __len__(self) -> int:
        return self._n

    def __repr__(self) -> str:
        made = self._name in self._shared and (self._convert is None or self._converted is not None)
        return repr(self.materialise()) if made else f"<{len(self)} {self._name}, made when read>"


def deferred_columns(scene: object, metas: DeferredMetas) -> dict[str, Any]:
    """A streamed batch's columns from its deferred metadata: ``K`` and ``world_to_camera`` (from a
    :class:`BatchCameras` scene; else the metadata is made now) and ``boxes``, ``labels`` and ``instances``,
    made when first read (from the scene's :class:`BatchObjects` where it agrees, else from the metadata)."""
    out: dict[str, Any] = {}
    chunks = metas.chunks  # before the metadata is made (it lets them go)
    cams = metas.cameras(scene) if isinstance(scene, BatchCameras) else None
    if cams is None:
        out.update(camera_arrays(metas.materialise(), False))
    else:
        out["K"], out["world_to_camera"] = cams
    direct = chunks and not metas.built and batch_objects_agree(scene)
    if direct or metas.annotated:
        shared: dict[str, list[Any]] = {}
        if direct:
            make = functools.partial(_counted_columns, cast(BatchObjects, scene), chunks)
        else:
            make = functools.partial(_meta_columns, metas)
        for name in ("boxes", "labels", "instances"):
            out[name] = LazyColumn(name, len(metas), make, shared)
    return out


def _meta_columns(metas: DeferredMetas) -> dict[str, list[Any]]:
    return object_arrays([m if m.get("objects") is not None else {**m, "objects": []} for m in metas.materialise()])


def _counted_columns(scene: BatchObjects, chunks: list[DrawnChunk]) -> dict[str, list[Any]]:
    """The columns :func:`object_arrays` makes from the metadata, made from the layouts' objects (instance and
    class ids, in the annotations' order) and each sample's visible boxes: an object is listed where the GPU
    counted pixels of its instance id, with that box. Each value is a view of one array per chunk."""
    from .layer_pack import BoxTable

    out: dict[str, list[Any]] = {"boxes": [], "labels": [], "instances": []}
    for chunk in chunks:
        n = len(chunk.plans)
        counts, ids, classes = scene.objects_batch([p.layout for p in chunk.plans])
        layers = np.repeat(np.arange(n), counts)
        if isinstance(chunk.boxes, BoxTable):
            seen, boxes = chunk.boxes.lookup(layers, ids)
        else:  # a list of per-sample dicts (or None: no boxes), instance id -> (box or None, pixels)
            pairs = zip(layers.tolist(), ids.tolist(), strict=True)
            found = [(chunk.boxes[j] or {}).get(i, (None, 0))[0] for j, i in pairs]
            seen = np.array([b is not None for b in found], bool)
            boxes = np.array([b if b is not None else (0, 0, 0, 0) for b in found], np.int64).reshape(-1, 4)
        cut = np.cumsum(np.bincount(layers[seen], minlength=n))[:-1]
        out["boxes"] += np.split(boxes[seen], cut)
        out["labels"] += np.split(classes[seen], cut)
        out["instances"] += np.split(ids[seen], cut)
    return out
