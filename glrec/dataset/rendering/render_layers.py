"""Render a batch of samples N per GL pass: the scene draws a chunk into the layers of array targets, one fence.

For a scene that is :class:`~glrec.scenes.capabilities.BatchDrawable` (the
built-in ``table``), :meth:`LayerRenderer.render` plans a batch at once
(:func:`~glrec.dataset.rendering.sample.plan_samples`), then per chunk of up to
:attr:`LayerRenderer.layers` samples: one clear and one instanced draw per mesh
kind into a :class:`~glrec.scenes.layers.LayeredGBuffer`, one packing dispatch
and one box dispatch over every layer (:class:`~glrec.dataset.rendering.layer_pack.LayerPacker`),
one fence, and on the host one read of the chunk. Sample j of every pass is
the bytes the one-sample path makes (the same viewport, shaders and packing):
``tests/dataset/test_dataset_layers.py`` checks it for batch sizes 1, 3 and 8 and
across chunks. A chunk is capped by GL's largest texture array, GL's largest
storage block and a memory budget for the targets (:func:`budget_of`).
"""

from __future__ import annotations

import ctypes
import functools
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import moderngl
import numpy as np

from ...encoders.png.writer import pixels
from ...errors import GlrecError, SceneError
from ...gl.context import software_gl
from ...gl.fences import gl_function
from ...scenes.capabilities import (
    Annotated,
    BatchAnnotated,
    BatchCameras,
    BatchDrawable,
    BatchPrepared,
    BatchRandomisable,
    LayoutParams,
    batch_annotated,
    batch_drawable,
    batch_prepared,
    layout_params_agree,
    marks_drawn,
    passes_of,
)
from ...scenes.layers import LayeredGBuffer, can_layer, layers_for
from .batch_meta import frame_meta
from .colour import ColourImage
from .layer_pack import LayerPacker
from .made import MadeWhenRead
from .pack import PackTarget
from .plan_ahead import ChunkPlanner, plans_in_process
from .plans import id_width

if TYPE_CHECKING:
    from .layer_pack import Boxes
    from .plans import SamplePlan
    from .sample import Sample, SampleRenderer

log = logging.getLogger("glrec")

__all__ = ["DrawnChunk", "LayerRenderer", "budget_of", "can_render_layers"]

#: GPU memory for one chunk's render targets: about 1 GiB on a GPU, 64 MiB on software GL
#: (llvmpipe rasterises a layer at a time; bigger chunks only cost memory there).
GPU_BUDGET, SOFTWARE_BUDGET = 1 << 30, 64 << 20
_RED_INTEGER, _UNSIGNED_INT, _DEPTH_COMPONENT, _FLOAT = 0x8D94, 0x1405, 0x1902, 0x1406


def budget_of(ctx: moderngl.Context) -> int:
    """Bytes of render targets a chunk may take on ``ctx``'s device."""
    return SOFTWARE_BUDGET if software_gl(ctx) else GPU_BUDGET


def can_render_layers(renderer: SampleRenderer) -> bool:
    """Whether ``renderer``'s samples can go through the layered batch path: a batch-drawing scene,
    still images (clips keep the one-sample path), the GPU packer, no colour encoder or a host-only
    one (a GPU JPEG encoder takes the layers' colour through :attr:`SampleRenderer.layer_colour` instead; as the
    renderer's own encoder it reads the one-sample colour target), every pass one the packer packs (a pass a
    row adds is read back as rendered, one sample at a time), and a driver that layers."""
    enc = renderer.colour_encoder
    packer = renderer.packer
    return (
        packer is not None
        and set(renderer.spec.output.passes) - {"rgb"} <= set(packer.sections)
        and (enc is None or bool(getattr(enc, "host_only", False)))  # GPU encoders read the one-sample target
        and not renderer.spec.is_clip
        and batch_drawable(renderer.scene)
        and can_layer(renderer.ctx)
    )


@dataclass
class DrawnChunk:
    """A chunk :meth:`LayerRenderer.draw` rendered: sample k is ``plans[k]`` at ``times[k]``, with the boxes its
    instance mask holds (``boxes[k]``) and the scene's params in effect (``in_effect[k]``, read only); ``cameras``: its
    ``cameras_batch`` arrays where they were made while it was planned. It holds no pass memory: what reads its
    metadata later never keeps a batch's buffer from being reused."""

    plans: Sequence[SamplePlan]
    times: list[float]
    boxes: Sequence[Boxes | None]
    in_effect: Sequence[Mapping[str, Any]]
    cameras: tuple[np.ndarray, np.ndarray] | None = None


class LayerRenderer:
    """The batch path of one :class:`~glrec.dataset.rendering.sample.SampleRenderer` (made by it; released with it).

    ``max_layers`` caps a chunk below what GL and the budget allow (tests force chunking with it).
    """

    def __init__(self, renderer: SampleRenderer, batch: int, max_layers: int | None = None) -> None:
        packer = renderer.packer
        assert packer is not None and can_render_layers(renderer)
        ctx = renderer.ctx
        size = renderer.spec.size
        self.renderer = renderer
        self.batch, self.max_layers = batch, max_layers
        self.stride = _round_up(max(packer.nbytes, 1), 256)
        block = int(ctx.info.get("GL_MAX_SHADER_STORAGE_BLOCK_SIZE", 2**27))
        # Targets for the passes packed, plus instance and semantic where boxes or ids are counted.
        ids = packer.want_boxes or bool(packer.wanted & {"instance", "semantic"})  # the box pass reads both
        read = set(packer.wanted) | ({"instance", "semantic"} if ids else set())
        self.colour = renderer.layer_colour  # the renderer's, when this was made
        if self.colour is not None:  # a GPU encoder copies each sample's colour out of the chunk's target
            read.add("rgb")
        layers = min(layers_for(ctx, size, batch, budget_of(ctx), read), max(1, block // self.stride))
        self.layers = max(1, min(layers, max_layers or layers))
        self.gbuffer: LayeredGBuffer | None = LayeredGBuffer(ctx, size, self.layers, read)
        if marks_drawn(renderer.scene):  # only colour and depth are cleared; the packer masks the rest by depth
            self.gbuffer.masked = frozenset(set(self.gbuffer.textures) & set(passes_of(renderer.scene)) - {"rgb"})
        try:
            self.packer: LayerPacker | None = LayerPacker(ctx, self.gbuffer, packer)
            if self.gbuffer.masked and not self._masking_works():
                log.warning(
                    "glrec: this GL driver failed the check of reading passes where depth was written; "
                    "every target is cleared for each chunk instead (the same bytes, slower on big GPUs)"
                )
                self.gbuffer.masked = frozenset()
                masked, self.packer = self.packer, LayerPacker(ctx, self.gbuffer, packer)
                masked.release()
        except BaseException:
            self.release()
            raise
        self._annotated = isinstance(renderer.scene, Annotated)
        self._batch_annotated = batch_annotated(renderer.scene)
        self._layout_params = layout_params_agree(renderer.scene)
        self._planner = ChunkPlanner(
            renderer.spec,
            renderer.scene,
            self.layers,
            batch_prepared(renderer.scene),
            plans_in_process(batch, self.layers),
        )
        log.debug("glrec: dataset batches drawn %d samples per GL pass (%d bytes each)", self.layers, self.stride)

    def render(
        self, indices: Sequence[int], target: Callable[[int, int], PackTarget | None],
        then: Sequence[int] | None = None, later: Sequence[Sequence[int]] = (),
    ) -> list[Sample]:  # fmt: skip
        """Render samples ``indices``; chunk ``indices[j:j+n]`` is packed into ``target(j, n)`` (a host
        array of ``n * stride`` bytes, or a GL buffer and offset), sample ``j + k`` at ``k * stride``.
        ``then``: the batch that comes next, planned meanwhile (:meth:`plan_ahead`); ``later``: the batches
        after it, planned too where the planner plans more than one ahead.
        Returns the samples (meta filled; ``frames`` holds the host arrays, or empty dicts)."""
        from .sample import Sample

        r = self.renderer
        spec = r.spec
        samples: list[Sample] = []
        for j, chunk, times, layouts, prepared, _ in self._planner.chunks(indices, then, later):
            layouts = list(layouts)
            # The chunk's annotations are computed on the CPU while the GPU draws and packs it.
            annotate = functools.partial(self._batch_annotations, layouts, times)
            result = self._chunk(layouts, times, target(j, len(chunk)), annotate, prepared)
            batch = result.meanwhile
            for k, plan in enumerate(chunk):
                deferred: list[ColourImage] = []
                sample = Sample(index=plan.index, key=spec.key(plan.index), seed=plan.seed, params=plan.params,
                                packed=True, frames=[self._frame(deferred, result.arrays[k])],
                                deferred_colour=deferred, plain_meta=batch is not None)  # fmt: skip
                annotations = None
                if self._annotated:
                    cast(BatchRandomisable, r.scene).use_layout(plan.layout)  # the layout drawn: its params in meta
                    annotations = batch[k] if batch is not None else _annotate(r, plan.index, times[k])
                r.finish_meta(sample, [frame_meta(times[k], annotations, result.boxes[k])])
                samples.append(sample)
            if self.colour is not None:  # before the next chunk draws over the layers
                assert self.gbuffer is not None
                for k, plan in enumerate(chunk):
                    self.colour(self.gbuffer, k, plan.index)
        return samples

    def draw(
        self, indices: Sequence[int], target: Callable[[int, int], PackTarget | None],
        then: Sequence[int] | None = None, later: Sequence[Sequence[int]] = (),
    ) -> list[DrawnChunk]:  # fmt: skip
        """Render samples ``indices`` as :meth:`render` does, but leave their metadata for later: each chunk's
        plans, times, visible boxes and the scene's params in effect, which
        :class:`~glrec.dataset.rendering.deferred_meta.DeferredMetas` annotates when (and if) it is read, on
        any thread. Only where :attr:`can_defer` (the annotations are a pure function of the layouts)."""
        assert self.can_defer
        r = self.renderer
        self._planner.cameras = isinstance(r.scene, BatchCameras)  # the stream's columns: made while planning
        chunks: list[DrawnChunk] = []
        for j, chunk, times, layouts, prepared, cams in self._planner.chunks(indices, then, later):
            result = self._chunk(layouts, times, target(j, len(chunk)), prepared=prepared, ids=getattr(chunk, "ids", 0))
            in_effect: Sequence[Mapping[str, Any]] = []
            if self._layout_params:  # read from the layouts (copied when the meta is made), not switched to
                in_effect = _ParamsOf(cast(LayoutParams, r.scene), layouts)
            elif r._reports_params:
                switched = []
                for plan in chunk:
                    cast(BatchRandomisable, r.scene).use_layout(plan.layout)
                    switched.append(r.in_effect())
                in_effect = switched
            chunks.append(DrawnChunk(chunk, times, result.boxes, in_effect or [{}] * len(chunk), cams))
        return chunks

    def _masking_works(self) -> bool:
        """Whether this driver's packer reads the passes left uncleared where the depth-test buffer was written
        and 0 elsewhere: one layer with marker values in those targets, depth cleared to 1 (nothing drawn:
        all 0), then to 0.5 (drawn: the markers), packed and compared. Runs once per renderer."""
        gb, packer = self.gbuffer, self.packer
        assert gb is not None and packer is not None
        markers = {"depth": (5.0, 0.0, 0.0, 0.0), "instance": (7, 0, 0, 0), "semantic": (9, 0, 0, 0),
                   "normal": (0.5, 0.5, 0.5, 0.0)}  # fmt: skip
        for depth, drawn in ((1.0, False), (0.5, True)):
            with gb.bound():
                gb.clear_to({k: v for k, v in markers.items() if k in gb.masked}, depth)
            # A box table with room for the marker id: no layer read back for its boxes (a GPU round trip
            # that took 0.2 s of a stream's start on the H200).
            ids = 1 + int(markers["instance"][0])
            arrays = packer.run(1, self.stride, ids, None, self._instance_layer).arrays
            for name in gb.masked & set(arrays[0]):
                got = pixels(arrays[0][name])  # scanlines (a shard worker's PNG passes) as their image
                if bool((got != 0).all()) if drawn else not got.any():
                    continue
                log.debug("glrec: the masked %s pass read %s with depth %g", name, got.ravel()[:4], depth)
                return False
        return True

    def plan_ahead(self, indices: Sequence[int]) -> None:
        """Start planning samples ``indices`` (the next batch) while this one draws
        (:meth:`~glrec.dataset.rendering.plan_ahead.ChunkPlanner.ahead`)."""
        self._planner.ahead(indices)

    @property
    def can_defer(self) -> bool:
        """Whether :meth:`draw` may leave the metadata for later: the scene annotates whole batches
        (:func:`~glrec.scenes.capabilities.batch_annotated`) or not at all."""
        return self._batch_annotated or not self._annotated

    def _batch_annotations(self, layouts: list[Any], times: list[float]) -> Sequence[dict[str, Any]] | None:
        """The chunk's annotations from the scene's ``annotations_batch``, or None: annotate one sample at a
        time (a scene without it, or one that failed: the one-sample call then names the sample)."""
        if not self._batch_annotated:
            return None
        try:
            out = cast(BatchAnnotated, self.renderer.scene).annotations_batch(layouts, times)
        except Exception as exc:
            log.debug("glrec: batch annotations failed (%s); annotating one sample at a time", exc)
            return None
        if len(out) != len(layouts):
            log.debug("glrec: annotations_batch gave %d for %d samples; one at a time", len(out), len(layouts))
            return None
        return out

    def _frame(self, deferred: list[ColourImage], packed: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """A sample's frame arrays as the one-sample packed path gives them; its colour left to the encoder."""
        r = self.renderer
        arrays = {name: packed[name] for name in r.spec.output.passes if name in packed and name != "rgb"}
        rgb = packed.get("rgb")
        if r.colour_encoder is not None and rgb is not None:  # a host-only encoder (can_render_layers)
            deferred.append(ColourImage(None, lambda rgb=rgb: rgb))  # type: ignore[misc]
        if r.keep_rgb and rgb is not None:
            arrays["rgb"] = rgb
        return arrays

    def _chunk(self, layouts: Sequence[Any], times: list[float], into: PackTarget | None,
               meanwhile: Callable[[], Any] | None = None, prepared: Any = None, ids: int = 0) -> Any:  # fmt: skip
        """Draw and pack a chunk; ``ids``: its box table's width where known (else counted from the layouts)."""
        assert self.gbuffer is not None and self.packer is not None
        gb, scene = self.gbuffer, self.renderer.scene
        with gb.bound():
            try:
                if prepared is not None:  # the CPU half done on a planning thread
                    cast(BatchPrepared, scene).render_prepared(gb, prepared)
                else:
                    cast(BatchDrawable, scene).render_batch(gb, list(layouts), times)
            except GlrecError:
                raise
            except Exception as exc:
                raise SceneError(
                    f"Scene {self.renderer.spec.scene!r} raised drawing a batch of {len(layouts)} samples: "
                    f"{type(exc).__name__}: {exc}"
                ) from exc
        ids = ids or id_width(layouts)
        lend = self.renderer.lent
        return self.packer.run(len(layouts), self.stride, ids, into, self._instance_layer, meanwhile, lend=lend)

    def _instance_layer(self, layer: int) -> np.ndarray:
        """Layer ``layer``'s instance mask, top-down (the box fallback for ids beyond the table); 0 where nothing
        was drawn when the target was left uncleared (:attr:`LayeredGBuffer.masked`)."""
        gb = self.gbuffer
        assert gb is not None
        w, h = gb.size
        out = np.empty((h, w), np.uint32)
        fn = gl_function("glGetTextureSubImage", None, ctypes.c_uint, *(ctypes.c_int,) * 7, ctypes.c_uint,
                         ctypes.c_uint, ctypes.c_int, ctypes.c_void_p)  # fmt: skip
        fn(gb.textures["instance"].glo, 0, 0, 0, layer, w, h, 1, _RED_INTEGER, _UNSIGNED_INT,
           out.nbytes, out.ctypes.data)  # fmt: skip
        if "instance" in gb.masked:
            depth = np.empty((h, w), np.float32)
            fn(gb.depth_texture, 0, 0, 0, layer, w, h, 1, _DEPTH_COMPONENT, _FLOAT, depth.nbytes,
               depth.ctypes.data)  # fmt: skip
            out[depth >= 1.0] = 0
        return np.ascontiguousarray(out[::-1])

    def release(self) -> None:
        """Free the targets and the packer, and stop the planning thread; safe twice."""
        planner = getattr(self, "_planner", None)
        if planner is not None:
            planner.close()
        packer, self.packer = getattr(self, "packer", None), None
        if packer is not None:
            packer.release()
        gb, self.gbuffer = self.gbuffer, None
        if gb is not None:
            gb.release()


def _annotate(r: SampleRenderer, index: int, t: float) -> dict[str, Any]:
    try:
        return dict(cast(Annotated, r.scene).annotations(t))
    except GlrecError:
        raise
    except Exception as exc:
        raise SceneError(
            f"Scene {r.spec.scene!r} failed to annotate sample {index} at t={t:g}: {type(exc).__name__}: {exc}"
        ) from exc


class _ParamsOf(MadeWhenRead[Mapping[str, Any]]):
    """The params in effect of each of ``layouts`` (the scene's ``layout_params``), made when first read: the
    layouts of a chunk planned in a process stay unread until its metadata is (read under its lock)."""

    def __init__(self, scene: LayoutParams, layouts: Sequence[Any]) -> None:
        self._scene, self._layouts = scene, layouts
        self._made: list[Mapping[str, Any]] | None = None

    def __len__(self) -> int:
        return len(self._layouts)

    def materialise(self) -> list[Mapping[str, Any]]:
        if self._made is None:
            self._made = [self._scene.layout_params(lay) for lay in self._layouts]
        return self._made


def _round_up(n: int, to: int) -> int:
    return (n + to - 1) // to * to
