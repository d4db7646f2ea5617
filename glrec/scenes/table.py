"""``table``: randomly placed, coloured, lit primitives on a checkered table, with every ground-truth pass.

The built-in scene for synthetic datasets (``glrec dataset``). Its parameters
(:attr:`Table.parameters`) come from the spec's ``[params]``; what they leave
open (where each object stands, its shape, size, colour and turn) is drawn
from the sample's own generator in :meth:`Table.randomise`.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from typing import Any

import moderngl
import numpy as np
from pyrr import Matrix44

from ..errors import SceneError
from ..gl import glsl
from .camera import GL_TO_CV, as_list, intrinsics, matmul, matmul_stack, pixel_boxes
from .layers import LayeredGBuffer
from .passes import PASSES, clear_passes
from .primitives import MESHES, indexed_meshes
from .table_batch import cameras
from .table_draw import INSTANCE, TableDraw, prepare
from .table_layout import PlacedObjects, TableLayout, columns_ok, place_objects

NEAR, FAR = 0.05, 50.0


def _math(m: Matrix44) -> np.ndarray:
    """pyrr stores matrices for row vectors; glrec's maths uses column vectors (the transpose)."""
    column_major: np.ndarray = np.asarray(m, dtype=np.float64).T
    return column_major


@functools.cache
def _corners(shape: str) -> np.ndarray:
    """The distinct vertices of a shape's mesh (what its 2D box is projected from)."""
    return np.unique(MESHES[shape]()[:, :3].astype(np.float64), axis=0)


def corner_points(shape: str, models: np.ndarray) -> np.ndarray:
    """World positions (n, v, 3) of ``shape``'s distinct vertices under each of ``models`` (n, 4, 4), summed in a
    fixed order (element-wise, so the bits do not depend on how many objects are stacked)."""
    corners = _corners(shape)
    rot = models[:, :3, :3]
    points = corners[None, :, 0:1] * rot[:, None, :, 0]
    for axis in (1, 2):
        points = points + corners[None, :, axis : axis + 1] * rot[:, None, :, axis]
    out: np.ndarray = points + models[:, None, :3, 3]
    return out


def _models(objects: list[dict[str, Any]], turn: float | np.ndarray) -> np.ndarray:
    """Translation @ y-rotation @ scale of each object (turned by ``turn``: one, or one each), written out."""
    scale, yaw, x, z = (np.array([o[k] for o in objects], np.float64) for k in ("scale", "yaw", "x", "z"))
    return models_of(scale, yaw, x, z, turn)


def models_of(scale: np.ndarray, yaw: np.ndarray, x: np.ndarray, z: np.ndarray, turn: float | np.ndarray) -> np.ndarray:
    """:func:`_models` of objects given as arrays (one value each)."""
    s = np.asarray(scale, np.float64)
    yaw = np.asarray(yaw, np.float64) + turn
    c, sn = np.cos(yaw) * s, np.sin(yaw) * s
    m = np.zeros((len(s), 4, 4))
    m[:, 0, 0], m[:, 0, 2], m[:, 2, 0], m[:, 2, 2] = c, -sn, sn, c  # pyrr's y rotation
    m[:, 1, 1], m[:, 1, 3], m[:, 3, 3] = s, s / 2, 1.0
    m[:, 0, 3] = x
    m[:, 2, 3] = z
    return m + 0.0  # no negative zeros


#: The table top's lift (its top face at y = 0), as :func:`_math` gives it.
_TOP_SHIFT = _math(Matrix44.from_translation([0.0, -0.05, 0.0]))


class Table:
    """A table with ``objects`` primitives (cube, sphere, cylinder, cone) standing on it.

    Instance ids are 1..N in placement order (0: no object; the table is
    "stuff", class ``table``). Classes: :attr:`classes` (index = class id).
    For clips, ``spin`` turns the objects (radians/s) and ``orbit`` moves the
    camera (degrees/s).

    >>> glrec.record("table", "table.mp4", size=(640, 480), seconds=2)  # doctest: +SKIP
    """

    passes: tuple[str, ...] = PASSES
    classes: tuple[str, ...] = ("background", "table", *MESHES)
    #: Every fragment it draws is depth-tested with depth writes and writes every pass
    #: (:class:`~glrec.scenes.capabilities.DepthMarksDrawn`): a layered G-buffer clears colour and depth only.
    depth_marks_drawn = True
    #: Parameters and their defaults; a spec may set any of them (constant or a distribution).
    parameters: dict[str, Any] = {  # noqa: RUF012 - read-only table
        "objects": 5,
        "shapes": list(MESHES),
        "object_size": [0.25, 0.5],
        "camera_distance": 3.5,
        "camera_elevation": 35.0,
        "camera_azimuth": 0.0,
        "fov": 45.0,
        "light_azimuth": 45.0,
        "light_elevation": 60.0,
        "ambient": 0.25,
        "table_size": 3.0,
        "table_colour": [0.55, 0.45, 0.35],
        "background": [0.08, 0.09, 0.12],
        "spin": 0.5,
        "orbit": 0.0,
    }

    def __init__(self) -> None:
        self.ctx: moderngl.Context | None = None
        self._prog: moderngl.Program | None = None
        self._vbo: moderngl.Buffer | None = None
        self._ibo: moderngl.Buffer | None = None
        self._instances: dict[str, tuple[moderngl.Buffer, moderngl.VertexArray]] = {}
        self._views: moderngl.Buffer | None = None
        self.size = (0, 0)
        self._model_cache: tuple[list[dict[str, Any]], float, np.ndarray] | None = None
        self._camera_cache: tuple[tuple[Any, ...], tuple[np.ndarray, np.ndarray, np.ndarray]] | None = None
        self._projections: dict[tuple[float, int, int], np.ndarray] = {}
        self.randomise({}, np.random.default_rng(0))

    # -- layout ------------------------------------------------------------------------------

    def randomise(self, params: dict[str, Any], rng: np.random.Generator) -> None:
        """Lay the table out from ``params`` (missing ones take their defaults) and a key drawn from ``rng``.

        The dataset renderer uses :meth:`randomise_batch` instead, keyed by each sample's seed.
        """
        seed = np.asarray([rng.integers(0, 2**63, dtype=np.int64)], np.int64).astype(np.uint64)
        self.use_layout(self.randomise_batch([params], seed)[0])

    def check(self, params: dict[str, Any]) -> dict[str, Any]:
        """``params`` over the defaults, or SceneError naming the first value the table refuses."""
        p = {**self.parameters, **params}
        for key, default in self.parameters.items():
            if isinstance(default, float) and not (
                isinstance(p[key], (int, float)) and not isinstance(p[key], bool) and math.isfinite(p[key])
            ):
                raise SceneError(f"table: {key} {p[key]!r} must be a finite number (default {default:g}).")
        if not 0 < p["fov"] < 180:
            raise SceneError(f"table: fov {p['fov']!r} must be above 0 and below 180 degrees (default 45).")
        if not p["camera_distance"] > 0 or not p["table_size"] > 0:
            raise SceneError(
                f"table: camera_distance {p['camera_distance']!r} and table_size {p['table_size']!r} must be positive."
            )
        shapes = list(p["shapes"])
        if not shapes or any(s not in MESHES for s in shapes):
            raise SceneError(f"table: shapes {shapes!r} must be a non-empty list of {', '.join(MESHES)}.")
        n = int(p["objects"])
        if not 0 <= n <= 1000:
            raise SceneError(f"table: objects {n} must be in 0..1000.")
        lo, hi = (float(v) for v in p["object_size"])
        if not 0 < lo <= hi:
            raise SceneError(f"table: object_size {p['object_size']!r} must be [min, max] with 0 < min <= max.")
        return p

    def check_batch(self, params: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
        """:meth:`check` of every sample: each column tested at once; where one fails (or holds what the
        vectorised test does not take), one sample at a time, so the error names the value :meth:`check` names."""
        merged = [{**self.parameters, **p} for p in params]
        if not merged or columns_ok(merged, self.parameters, tuple(MESHES)):
            return merged
        return [self.check(p) for p in params]

    def randomise_batch(self, params: Sequence[dict[str, Any]], seeds: np.ndarray) -> list[TableLayout]:
        """The layouts of a batch of samples, drawn at once (:class:`~glrec.scenes.capabilities.BatchRandomisable`).

        Layout ``j`` is a pure function of ``params[j]`` and ``seeds[j]`` (counter-based draws,
        :func:`glrec.scenes.table_layout.place_objects`), so a sample is the same in any batch.
        """
        checked = self.check_batch(params)
        placed = place_objects(checked, np.asarray(seeds, np.uint64), self.classes)
        return [TableLayout(p, placed, j) for j, p in enumerate(checked)]

    def use_layout(self, layout: TableLayout) -> None:
        """Make ``layout`` (one of :meth:`randomise_batch`'s) the one :meth:`render` draws."""
        self.layout = layout
        self.params = layout.params

    def layout_params(self, layout: TableLayout) -> dict[str, Any]:
        """The ``params`` that :meth:`use_layout` would put in effect
        (:class:`~glrec.scenes.capabilities.LayoutParams`)."""
        return layout.params

    @property
    def objects(self) -> list[dict[str, Any]]:
        """The objects of the layout in use (see :attr:`TableLayout.objects`)."""
        return self.layout.objects

    @objects.setter
    def objects(self, objects: list[dict[str, Any]]) -> None:
        self.layout = TableLayout(self.params, PlacedObjects.from_dicts(objects), 0)

    def model(self, obj: dict[str, Any], t: float) -> np.ndarray:
        """World-from-object matrix of ``obj`` at time ``t`` (standing on y = 0, turned about y)."""
        return _models([obj], float(self.params["spin"]) * t)[0]

    def models(self, t: float) -> np.ndarray:
        """World-from-object matrices (n, 4, 4) of every object at time ``t``, computed at once."""
        cache = self._model_cache
        if cache is None or cache[0] is not self.objects or cache[1] != t:
            cache = self._model_cache = (self.objects, t, _models(self.objects, float(self.params["spin"]) * t))
        return cache[2]

    def camera(self, t: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(eye, GL view, GL projection) at time ``t`` (computed once per layout, time and size)."""
        p = self.params
        key = (t, self.size, *(p[k] for k in ("camera_azimuth", "orbit", "camera_elevation", "camera_distance", "fov")))
        cache = self._camera_cache
        if cache is None or cache[0] != key:
            cache = self._camera_cache = (key, self._camera(t))
        return cache[1]

    def _camera(self, t: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        eyes, views = cameras([self.params], [t])  # the batch's own maths (not pyrr's: its np.dot is BLAS)
        return eyes[0], views[0], self._projection(float(self.params["fov"]))

    def _projection(self, fov: float) -> np.ndarray:
        """The GL projection of field of view ``fov`` at this size (one per fov and size, kept)."""
        w, h = self.size if self.size[1] else (4, 3)
        key = (fov, w, h)
        proj = self._projections.get(key)
        if proj is None:
            proj = self._projections[key] = _math(Matrix44.perspective_projection(fov, w / h, NEAR, FAR))
        return proj

    # -- Scene protocol ----------------------------------------------------------------------

    def setup_planning(self, size: tuple[int, int]) -> None:
        """Plan, prepare and give cameras for frames of ``size`` with no GL context (a planning process's copy;
        :class:`~glrec.scenes.capabilities.PlansWithoutGL`): the size is all those halves read of the set-up."""
        self.size = size

    def setup(self, ctx: moderngl.Context, size: tuple[int, int]) -> None:
        """Make the table's meshes and program in ``ctx`` for frames of ``size``."""
        self.ctx = ctx
        self.size = size
        self._prog = glsl.program(
            ctx, glsl.source("table.vert"), glsl.source("table.frag"), origin="table.vert/table.frag"
        )
        vertices, indices = indexed_meshes()
        self._ranges: dict[str, tuple[int, int]] = {}  # mesh kind -> (its first index, its index count)
        first = 0
        for name, idx in indices.items():
            self._ranges[name] = (first, len(idx))
            first += len(idx)
        self._vbo = ctx.buffer(vertices.tobytes())
        self._ibo = ctx.buffer(np.concatenate(list(indices.values())).tobytes())
        self._instances = {}  # mesh kind -> (its instance buffer, a vertex array reading it)
        for name in MESHES:
            buf = ctx.buffer(reserve=INSTANCE.itemsize * 64, dynamic=True)
            vao = ctx.vertex_array(
                self._prog,
                [
                    (self._vbo, "3f 3f", "in_position", "in_normal"),
                    (buf, "16f 4f 3u/i", "i_model", "i_colour", "i_ids"),
                ],
                index_buffer=self._ibo,
                index_element_size=4,
            )
            self._instances[name] = (buf, vao)

    def _draw(self, shape: str, rows: np.ndarray) -> None:
        """One instanced draw of every object of mesh kind ``shape`` (``rows``: their :data:`INSTANCE` records)."""
        buf, vao = self._instances[shape]
        if buf.size < rows.nbytes:
            buf.orphan(rows.nbytes * 2)
        buf.write(rows)
        first, count = self._ranges[shape]
        vao.render(moderngl.TRIANGLES, vertices=count, first=first, instances=len(rows))

    def _submit(self, draw: TableDraw) -> None:
        """Give GL a prepared draw (:func:`glrec.scenes.table_draw.prepare`): the views, then a draw per mesh kind."""
        assert self.ctx is not None
        self.use_layout(draw.last)  # the last one drawn is the one in use, as after render()
        views = draw.views
        if self._views is None or self._views.size < views.nbytes:
            if self._views is not None:
                self._views.release()
            self._views = self.ctx.buffer(reserve=views.nbytes * 2)
        self._views.write(views)
        self._views.bind_to_storage_buffer(0)
        self.ctx.enable(moderngl.DEPTH_TEST)
        for shape, rows in draw.kinds.items():  # one draw per mesh kind, for the whole batch
            self._draw(shape, rows)
        self.ctx.disable(moderngl.DEPTH_TEST)

    def render(self, t: float) -> None:
        """Draw the table and its objects at time ``t`` into every pass the bound framebuffer has."""
        if self.ctx is None or self._prog is None:
            raise SceneError("table: call setup() before render().")
        clear_passes(self.ctx, tuple(float(c) for c in self.params["background"]))  # type: ignore[arg-type]
        self._submit(prepare(self, [self.layout], [t]))

    def render_batch(self, target: LayeredGBuffer, layouts: Sequence[TableLayout], times: Sequence[float]) -> None:
        """Clear ``target`` (bound) and draw sample j (``layouts[j]`` at ``times[j]``) into its layer j
        (:class:`~glrec.scenes.capabilities.BatchDrawable`); :meth:`render` is the same draw with one sample."""
        if self.ctx is None or self._prog is None:
            raise SceneError("table: call setup() before render_batch().")
        self.render_prepared(target, self.prepare_batch(layouts, times))

    def prepare_batch(self, layouts: Sequence[TableLayout], times: Sequence[float]) -> TableDraw:
        """The CPU half of :meth:`render_batch`, no GL: any thread
        (:class:`~glrec.scenes.capabilities.BatchPrepared`)."""
        if not self.size[1]:
            raise SceneError("table: call setup() before prepare_batch().")
        return prepare(self, layouts, times)

    def render_prepared(self, target: LayeredGBuffer, draw: TableDraw) -> None:
        """The GL half of :meth:`render_batch`: clear ``target`` (bound) and draw what :meth:`prepare_batch` made."""
        if self.ctx is None or self._prog is None:
            raise SceneError("table: call setup() before render_batch().")
        target.clear(draw.backgrounds)
        self._submit(draw)

    def annotations_batch(self, layouts: Sequence[TableLayout], times: Sequence[float]) -> list[dict[str, Any]]:
        """:meth:`annotations` of sample j (``layouts[j]`` at ``times[j]``) for a whole batch, computed at once
        (:class:`~glrec.scenes.capabilities.BatchAnnotated`; :func:`glrec.scenes.table_batch.annotate_batch`)."""
        from .table_batch import annotate_batch

        return annotate_batch(self, layouts, times)

    def objects_batch(self, layouts: Sequence[TableLayout]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Each layout's object count, and every object's instance id and class id, layout after layout in the
        order :meth:`annotations_batch` lists them (:class:`~glrec.scenes.capabilities.BatchObjects`)."""
        from .table_layout import gather

        if not layouts:
            return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64)
        counts, objs = gather(layouts)
        return counts.astype(np.int64), objs.instance.astype(np.int64), objs.klass.astype(np.int64)

    def cameras_batch(self, layouts: Sequence[TableLayout], times: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
        """K (n, 3, 3) and world-to-camera (n, 4, 4) of a batch, the values :meth:`annotations_batch` gives
        (:class:`~glrec.scenes.capabilities.BatchCameras`)."""
        from .table_batch import camera_arrays

        return camera_arrays(self, layouts, times)

    def annotations(self, t: float) -> dict[str, Any]:
        """Camera (OpenCV convention, see glrec.scenes.camera) and per-object pose and 2D box at ``t``."""
        eye, view, _ = self.camera(t)
        w2c = matmul(GL_TO_CV, view)  # not @: BLAS's bits depend on the CPU (see camera.matmul)
        k = intrinsics(float(self.params["fov"]), self.size)
        models = self.models(t)
        cams = matmul_stack(w2c, models)  # every object at once, in matmul's fixed order
        boxes: list[list[int] | None] = [None] * len(models)
        for shape in {o["shape"] for o in self.objects}:  # the corners of each shape, projected together
            rows = [j for j, o in enumerate(self.objects) if o["shape"] == shape]
            points = corner_points(shape, models[rows])
            for j, box in zip(rows, pixel_boxes(points, w2c, k, self.size, NEAR), strict=True):
                boxes[j] = box
        objects = [
            {
                "instance": obj["instance"],
                "class": obj["class"],
                "class_name": obj["shape"],
                "colour": [round(c, 6) for c in obj["colour"]],
                "world_from_object": model,
                "camera_from_object": cam,
                "bbox": box,
            }
            for obj, model, cam, box in zip(self.objects, as_list(models), as_list(cams), boxes, strict=True)
        ]
        return {
            "camera": {
                "K": as_list(k),
                "world_to_camera": as_list(w2c),
                "position": as_list(eye),
                "near": NEAR,
                "far": FAR,
                "width": self.size[0],
                "height": self.size[1],
            },
            "objects": objects,
        }

    def close(self) -> None:
        """Release the GL objects ``setup`` made; safe to call twice."""
        instances, self._instances = self._instances, {}
        for buf, vao in instances.values():
            vao.release()
            buf.release()
        for name in ("_views", "_vbo", "_ibo", "_prog"):
            obj = getattr(self, name, None)
            setattr(self, name, None)
            if obj is not None:
                obj.release()
