"""Render one sample: parameters from its seed, every pass from one draw, annotations beside them."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

import moderngl
import numpy as np

from ...errors import ConfigError, GlrecError, SceneError
from ...scenes.camera import mask_boxes
from ...scenes.capabilities import (
    Annotated,
    BatchRandomisable,
    Randomisable,
    ReportsParams,
    batch_randomisable,
    parameters_of,
    passes_of,
)
from ...scenes.passes import PASS_ROWS, GBuffer
from ..spec.document import DatasetSpec
from ..spec.params import rng_for, sample_seeds
from .batch_meta import add_visible, frame_meta, sample_meta
from .colour import ColourEncoder, ColourImage
from .memory import LentMappings
from .pack import PackTarget, PassPacker
from .plans import TIME_PARAM, SamplePlan, plan_samples, sample_plan

if TYPE_CHECKING:
    from ...scenes.layers import LayeredGBuffer

log = logging.getLogger("glrec")

__all__ = ["TIME_PARAM", "Sample", "SamplePlan", "SampleRenderer", "check_scene", "finish_colour", "plan_samples",
           "sample_plan"]  # fmt: skip


@dataclass
class Sample:
    """One rendered sample.

    ``frames`` holds, per frame (one for images), the arrays of the requested
    passes: ``rgb`` (h, w, 3) uint8 (when kept), ``depth`` (h, w) float32,
    ``instance``/``semantic`` (h, w) uint32, ``normal`` (h, w, 3) float32; when
    ``packed``, each pass is already its file's array instead
    (:func:`glrec.dataset.files.encode.file_array`: uint16 ids, 8-bit normals for png).
    ``colour`` holds the encoded colour image per frame when an encoder ran;
    ``deferred_colour`` the images a host-only encoder has yet to encode
    (:func:`finish_colour`). ``meta`` is what ``meta.json`` holds; ``plain_meta``: its annotations
    came from a :class:`~glrec.scenes.capabilities.BatchAnnotated` scene as plain JSON values.
    """

    index: int
    key: str
    seed: int
    params: dict[str, Any]
    frames: list[dict[str, np.ndarray]] = field(default_factory=list)
    colour: list[bytes] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)
    packed: bool = False
    deferred_colour: list[ColourImage] = field(default_factory=list)
    plain_meta: bool = False


def finish_colour(sample: Sample, encoder: ColourEncoder | None) -> None:
    """Encode the colour images the renderer left to a host-only encoder (on any thread)."""
    images, sample.deferred_colour = sample.deferred_colour, []
    if images:
        assert encoder is not None
        sample.colour = [encoder.encode(image) for image in images]


def check_scene(scene: object, spec: DatasetSpec) -> None:
    """Raise ConfigError if ``scene`` cannot make what ``spec`` asks (passes, parameters)."""
    name = type(scene).__name__
    passes = passes_of(scene)
    missing = [p for p in spec.output.passes if p not in passes]
    if missing:
        raise ConfigError(
            f"Scene {spec.scene!r} ({name}) does not write the pass(es) {missing}; it writes {list(passes)}. "
            "Remove them from [output] passes, or use a scene that writes them (see glrec.scenes.base.Scene)."
        )
    params = set(spec.params) - {TIME_PARAM}
    if params and not isinstance(scene, Randomisable):
        raise ConfigError(
            f"Scene {spec.scene!r} ({name}) has no randomise(params, rng) method, so it takes no parameters "
            f"but [params] sets {sorted(params)}; only 'time' applies to it."
        )
    known = parameters_of(scene)
    if known is not None:
        unknown = sorted(params - set(known))
        if unknown:
            raise ConfigError(
                f"Scene {spec.scene!r} has no parameter {unknown[0]!r}. Its parameters: "
                f"{', '.join(sorted(known))} (and 'time')."
            )
    if isinstance(scene, Randomisable):
        # A dry run with sample 0's parameters: a constant the scene refuses (fov = 0) fails
        # here, before anything is written, instead of at the first sample.
        plan = plan_samples(spec, [0])[0]
        first = {k: v for k, v in plan.params.items() if k != TIME_PARAM}
        try:
            if batch_randomisable(scene):
                assert isinstance(scene, BatchRandomisable)
                scene.randomise_batch([first], sample_seeds(spec.seed, [0]))
            else:
                scene.randomise(first, rng_for(plan.seed, "scene"))
        except GlrecError as exc:
            raise ConfigError(f"Scene {spec.scene!r} refuses sample 0's parameters: {exc}") from None
        except Exception as exc:
            raise ConfigError(
                f"Scene {spec.scene!r} failed on sample 0's parameters: {type(exc).__name__}: {exc}"
            ) from None


class SampleRenderer:
    """Renders samples of ``spec`` on a moderngl context: the scene and a G-buffer, set up once.

    ``packed``: the passes are packed on the GPU into their files' arrays and read
    back in one copy (:class:`~glrec.dataset.rendering.pack.PassPacker`), and a host-only
    colour encoder is left to :func:`finish_colour` (so it can run on another
    thread); otherwise each pass is read back as rendered. ``scanlines`` (with ``packed``, for a
    file writer): the passes filed as PNG come as their filtered rows, made on the GPU
    (:class:`~glrec.encoders.png.writer.ScanLines`; :mod:`~glrec.dataset.rendering.scanlines`).

    >>> with create_context() as gl:  # doctest: +SKIP
    ...     r = SampleRenderer(spec, gl.mgl)
    ...     sample = r.render(0)
    ...     r.close()
    """

    def __init__(
        self,
        spec: DatasetSpec,
        ctx: moderngl.Context,
        colour: ColourEncoder | None = None,
        keep_rgb: bool = True,
        *,
        packed: bool = False,
        scanlines: bool = False,
    ) -> None:
        from ...scenes import load_scene

        self.spec = spec
        self.ctx = ctx
        self.colour_encoder = colour
        self.keep_rgb = keep_rgb
        self._scanlines = scanlines
        self.scene = load_scene(spec.scene_ref())
        check_scene(self.scene, spec)
        self._packer: PassPacker | None = None
        self._layers: Any = None  # the batch path (render_layers.LayerRenderer), made on first use
        #: Called (G-buffer, layer, sample index) for each sample of a chunk :meth:`render_batch` drew, before the
        #: next chunk draws: a GPU colour encoder taking colour from the layers (the shard worker sets it). Set
        #: before the first batch: the batch path keeps a colour target only where it is set.
        self.layer_colour: Callable[[LayeredGBuffer, int, int], None] | None = None
        #: Where :meth:`render_batch` with host arrays made here (``target`` None) reads chunks back: their
        #: samples' arrays are views of these mapped GL buffers, lent until they are gone, with no copy on the
        #: host (:class:`~glrec.dataset.rendering.memory.LentMappings`). Set and released by a borrower that
        #: drops every sample's arrays before it releases them (the shard worker); it outlives the batch path,
        #: which is made again when a larger batch comes.
        self.lent: LentMappings | None = None
        self._plans: dict[int, SamplePlan] = {}
        # The scene's capabilities, checked once (a runtime protocol check costs ~10 us a call).
        self._randomisable = isinstance(self.scene, Randomisable)
        self._annotated = isinstance(self.scene, Annotated)
        self._reports_params = isinstance(self.scene, ReportsParams)  # once: a protocol check costs ~20 us
        self._instance_pass = "instance" in passes_of(self.scene)
        self._gbuffer: GBuffer | None = GBuffer(ctx, spec.size)
        try:
            self.scene.setup(ctx, spec.size)
            if packed:
                self._packer = self._make_packer()
        except GlrecError:
            self.close()
            raise
        except Exception as exc:
            self.close()
            raise SceneError(f"Setting up scene {spec.scene!r} failed: {type(exc).__name__}: {exc}") from exc

    def _make_packer(self) -> PassPacker:
        wanted = {p for p in self.spec.output.passes if p != "rgb"}
        enc = self.colour_encoder
        if self.keep_rgb or (enc is not None and getattr(enc, "needs_array", True)):
            wanted.add("rgb")
        boxes = "instance" in passes_of(self.scene)
        return PassPacker(
            self.ctx, self.gbuffer, wanted, normal=self.spec.output.normal, boxes=boxes, scanlines=self._scanlines
        )

    def prepare(self, indices: list[int] | range) -> None:
        """Plan samples ``indices`` for the batch at once (parameters and the scene's layouts, vectorised);
        :meth:`render` then takes each plan. Plans not rendered are dropped at the next ``prepare``.
        """
        try:
            self._plans = {p.index: p for p in plan_samples(self.spec, indices, self.scene)}
        except GlrecError:
            self._plans = {}  # each sample is planned alone, so the error comes with the sample it is about

    @property
    def batch_ready(self) -> bool:
        """Whether :meth:`render_batch` draws many samples per GL pass here (else it renders one at a time)."""
        from .render_layers import can_render_layers

        return can_render_layers(self)

    def render_batch(
        self, indices: Sequence[int], target: Callable[[int, int], PackTarget | None], *, max_layers: int | None = None,
        then: Sequence[int] | None = None, later: Sequence[Sequence[int]] = (),
    ) -> list[Sample]:  # fmt: skip
        """Render samples ``indices`` (``packed``, images, a :class:`~glrec.scenes.capabilities.BatchDrawable`
        scene: see :attr:`batch_ready`) N per GL pass, one fence per chunk
        (:class:`~glrec.dataset.rendering.render_layers.LayerRenderer`). Chunk ``indices[j:j+n]`` is packed into
        ``target(j, n)``: a host uint8 array of ``n`` sample strides (None: a new one) or a GL buffer and
        byte offset. ``then``: the samples of the next batch, planned on a planning thread while these draw
        (:meth:`~glrec.dataset.rendering.render_layers.LayerRenderer.plan_ahead`); ``later``: the batches after
        it, in order (planned too where processes plan, :data:`~glrec.dataset.rendering.plan_ahead.DEPTH`).
        """
        return self._layers_for(len(indices), max_layers).render(indices, target, then, later)

    def draw_batch(
        self, indices: Sequence[int], target: Callable[[int, int], PackTarget | None],
        then: Sequence[int] | None = None, later: Sequence[Sequence[int]] = (),
    ) -> list[Any] | None:  # fmt: skip
        """:meth:`render_batch` with the samples' metadata left for later: the chunks drawn
        (:class:`~glrec.dataset.rendering.render_layers.DrawnChunk`), for
        :class:`~glrec.dataset.rendering.deferred_meta.DeferredMetas`; None (nothing drawn) where the
        scene's annotations need the scene's state at the draw (then call :meth:`render_batch`)."""
        layers = self._layers_for(len(indices), None)
        return layers.draw(indices, target, then, later) if layers.can_defer else None

    def _layers_for(self, n: int, max_layers: int | None) -> Any:
        from .render_layers import LayerRenderer

        layers = self._layers
        # Made for the first batch; made again only when a larger batch could use more layers.
        if (
            layers is None
            or layers.max_layers != max_layers
            or layers.layers == layers.batch < n
            or layers.colour is not self.layer_colour
        ):
            self._layers = None
            if layers is not None:
                layers.release()
            layers = self._layers = LayerRenderer(self, n, max_layers)
        return layers

    @property
    def gbuffer(self) -> GBuffer:
        if self._gbuffer is None:
            raise SceneError("This sample renderer is closed.")
        return self._gbuffer

    @property
    def packer(self) -> PassPacker | None:
        """The GPU packer (None unless ``packed``): its :attr:`~PassPacker.sections` say where each pass lies."""
        return self._packer

    def render(
        self,
        index: int,
        on_frame: Callable[[GBuffer], None] | None = None,
        *,
        into: Callable[[int], PackTarget] | None = None,
    ) -> Sample:
        """Render sample ``index`` (all its frames). ``on_frame(gbuffer)`` runs after each frame's draw.

        ``into(frame)`` (``packed`` only): where frame ``frame``'s packed passes go
        (:meth:`PassPacker.run`); its arrays are then views of that memory, or absent
        when the target is a GL buffer.
        """
        spec = self.spec
        plan = self._plans.pop(index, None) or plan_samples(spec, [index], self.scene)[0]
        seed, params = plan.seed, plan.params
        scene = self.scene
        if plan.layout is not None:
            cast(BatchRandomisable, scene).use_layout(plan.layout)
        elif self._randomisable:
            scene_params = {k: v for k, v in params.items() if k != TIME_PARAM}
            try:
                cast(Randomisable, scene).randomise(scene_params, rng_for(seed, "scene"))
            except GlrecError:
                raise
            except Exception as exc:
                raise SceneError(
                    f"Scene {spec.scene!r} failed to randomise sample {index} with {scene_params}: "
                    f"{type(exc).__name__}: {exc}"
                ) from exc
        start = float(params.get(TIME_PARAM, 0.0))
        sample = Sample(index=index, key=spec.key(index), seed=seed, params=params, packed=self._packer is not None)
        frames_meta = []
        for f in range(spec.frames):
            t = start + f / spec.fps
            frames_meta.append(self._render_frame(sample, t, on_frame, None if into is None else into(f)))
        self.finish_meta(sample, frames_meta)
        return sample

    def in_effect(self) -> dict[str, Any]:
        """The scene's params in effect (:class:`ReportsParams`) for the layout in use, or none."""
        return dict(cast(ReportsParams, self.scene).params) if self._reports_params else {}

    def finish_meta(self, sample: Sample, frames_meta: list[dict[str, Any]]) -> None:
        """Fill ``sample.meta`` (what ``meta.json`` holds) from its frames' metadata and the scene's params."""
        sample.meta = sample_meta(self.spec, sample, self.in_effect(), frames_meta)

    def _render_frame(
        self, sample: Sample, t: float, on_frame: Callable[[GBuffer], None] | None, into: PackTarget | None = None
    ) -> dict[str, Any]:
        gb = self.gbuffer
        gb.use()
        try:
            self.scene.render(t)
        except GlrecError:
            raise
        except Exception as exc:
            raise SceneError(
                f"Scene {self.spec.scene!r} raised rendering sample {sample.index} at t={t:g}: "
                f"{type(exc).__name__}: {exc}"
            ) from exc
        if on_frame is not None:
            on_frame(gb)
        if self._packer is not None:
            return self._packed_frame(sample, t, into)
        arrays: dict[str, np.ndarray] = {}
        if self.colour_encoder is not None:
            image = ColourImage(gb.textures["rgb"], lambda: gb.read("rgb"))
            sample.colour.append(self.colour_encoder.encode(image))
            if self.keep_rgb:
                arrays["rgb"] = image.array()
        elif self.keep_rgb:
            arrays["rgb"] = gb.read("rgb")
        for name in self.spec.output.passes:
            if name != "rgb":
                arrays[name] = gb.read(name)
        sample.frames.append(arrays)
        meta: dict[str, Any] = {"t": t}
        if self._annotated:
            try:
                meta.update(cast(Annotated, self.scene).annotations(t))
            except GlrecError:
                raise
            except Exception as exc:
                raise SceneError(
                    f"Scene {self.spec.scene!r} failed to annotate sample {sample.index} at t={t:g}: "
                    f"{type(exc).__name__}: {exc}"
                ) from exc
        if self._instance_pass and meta.get("objects") is not None:
            instance = arrays["instance"] if "instance" in arrays else gb.read("instance")
            add_visible(meta, mask_boxes(instance))
        return meta

    def _unpacked(self, name: str) -> np.ndarray:
        """Pass ``name`` read back as rendered, where that is already its file's array (its row says)."""
        array = self.gbuffer.read(name)
        want = np.dtype(PASS_ROWS[name].file_dtype(self.spec.output))
        if array.dtype != want:
            raise ConfigError(
                f"Pass {name!r} renders {array.dtype} and is filed as {want}; the GPU packer converts only the "
                "built-in passes. Give its row a file dtype equal to its target's (e.g. 'u1' for 'f1')."
            )
        return array

    def _packed_frame(self, sample: Sample, t: float, into: PackTarget | None = None) -> dict[str, Any]:
        assert self._packer is not None
        packed = self._packer.run(into=into)
        arrays = {name: packed.arrays[name] for name in self.spec.output.passes if name in packed.arrays}
        arrays.pop("rgb", None)
        for name in self.spec.output.passes:  # a pass the packer has no rule for (a row added by a user)
            if name != "rgb" and name not in arrays and into is None:
                arrays[name] = self._unpacked(name)
        enc = self.colour_encoder
        if enc is not None:
            rgb = packed.arrays.get("rgb")
            image = ColourImage(self.gbuffer.textures["rgb"], lambda: rgb)  # type: ignore[arg-type, return-value]
            if getattr(enc, "host_only", False):
                sample.deferred_colour.append(ColourImage(None, lambda: rgb))  # type: ignore[arg-type, return-value]
            else:
                sample.colour.append(enc.encode(image))
        if self.keep_rgb and "rgb" in packed.arrays:
            arrays["rgb"] = packed.arrays["rgb"]
        sample.frames.append(arrays)
        annotations = cast(Annotated, self.scene).annotations(t) if self._annotated else None
        return frame_meta(t, annotations, packed.boxes)

    def close(self) -> None:
        """Release the scene, the packer and the G-buffer. Safe to call twice."""
        layers, self._layers = self._layers, None
        if layers is not None:
            layers.release()
        packer, self._packer = self._packer, None
        if packer is not None:
            packer.release()
        gb, self._gbuffer = self._gbuffer, None
        scene, self.scene = self.scene, None  # type: ignore[assignment]
        try:
            if scene is not None:
                scene.close()
        except GlrecError:
            raise
        except Exception as exc:
            raise SceneError(f"Closing scene {self.spec.scene!r} failed: {type(exc).__name__}: {exc}") from exc
        finally:
            if gb is not None:
                gb.release()
