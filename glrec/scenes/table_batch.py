"""The table's cameras and annotations for a whole batch of samples at once, with the one-sample path's bits.

``Table.annotations`` (:mod:`glrec.scenes.table`) computes one
sample: its camera, each object's matrices and 2-D box, in a few dozen small
numpy calls. Here the same quantities are computed for every sample of a batch
in one pass over stacked arrays (:func:`annotate_batch`), with the same
element-wise operations in the same order (:func:`~glrec.scenes.camera.look_at_batch`,
:func:`~glrec.scenes.camera.matmul_pairs`, :func:`~glrec.scenes.camera.pixel_boxes_each`),
so sample *i*'s annotations are identical whichever path made them
(``tests/dataset/test_batch_annotations.py``). What is left per sample is
building its dicts from lists made once per batch (``tolist``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from operator import itemgetter
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import SceneError
from .camera import GL_TO_CV, intrinsics, look_at_batch, matmul_pairs, matmul_stack, pixel_boxes_each

if TYPE_CHECKING:
    from .table import Table
    from .table_layout import TableLayout

__all__ = ["annotate_batch", "camera_arrays", "cameras", "column", "lights"]

_UP = np.array([0.0, 1.0, 0.0])
#: ``math.radians``'s factor (CPython multiplies by pi / 180, one rounding).
_TO_RADIANS = math.pi / 180.0


def column(params: Sequence[Mapping[str, Any]], key: str) -> np.ndarray:
    """``float(p[key])`` of every sample, as a float64 array (numpy converts each value as ``float`` does)."""
    return np.fromiter(map(itemgetter(key), params), np.float64, len(params))


def libm(fn: Any, x: np.ndarray) -> np.ndarray:
    """``fn`` (``math.cos``, ``math.sin``) of every element, through ``math`` itself: numpy's own sin and cos
    may differ from the C library's in the last bit (SIMD versions), and a sample must keep its bits."""
    return np.fromiter(map(fn, x.tolist()), np.float64, len(x))


def cameras(params: Sequence[Mapping[str, Any]], times: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    """Eyes (n, 3) and GL views (n, 4, 4) of samples with ``params[j]`` at ``times[j]`` (Table's camera, batched:
    the operations of the one-sample formula, element-wise, in its order; radians as ``math.radians`` does)."""
    t = np.asarray(times, np.float64)
    az = (column(params, "camera_azimuth") + column(params, "orbit") * t) * _TO_RADIANS
    el = column(params, "camera_elevation") * _TO_RADIANS
    d = column(params, "camera_distance")
    cos_el = libm(math.cos, el)
    eyes = np.stack([d * cos_el * libm(math.sin, az), d * libm(math.sin, el), d * cos_el * libm(math.cos, az)], 1)
    return eyes, look_at_batch(eyes, _UP)


def lights(params: Sequence[Mapping[str, Any]]) -> np.ndarray:
    """(n, 4): the direction the light travels (unit) and the ambient term of each sample (Table's light)."""
    az = column(params, "light_azimuth") * _TO_RADIANS
    el = column(params, "light_elevation") * _TO_RADIANS
    cos_el = libm(math.cos, el)
    return np.stack([-(cos_el * libm(math.sin, az)), -libm(math.sin, el), -(cos_el * libm(math.cos, az)),
                     column(params, "ambient")], 1)  # fmt: skip


def _annotation_cameras(
    table: Table, params: Sequence[Mapping[str, Any]], times: Sequence[float]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Eyes (n, 3), world-to-camera (n, 4, 4) in OpenCV's convention and intrinsics K (n, 3, 3) of a batch
    (K made once per field of view)."""
    eyes, views = cameras(params, times)
    fovs = [float(p["fov"]) for p in params]
    k_of = {fov: intrinsics(fov, table.size) for fov in set(fovs)}
    return eyes, matmul_stack(GL_TO_CV, views), np.stack([k_of[fov] for fov in fovs])


def camera_arrays(
    table: Table, layouts: Sequence[TableLayout], times: Sequence[float]
) -> tuple[np.ndarray, np.ndarray]:
    """K (n, 3, 3) and world-to-camera (n, 4, 4) of ``layouts[j]`` at ``times[j]``: :func:`annotate_batch`'s
    camera values (rounded alike) without the rest of the annotations."""
    _, w2c, ks = _annotation_cameras(table, [lay.params for lay in layouts], [float(t) for t in times])
    return ks.round(9) + 0.0, w2c.round(9) + 0.0


def _rounded(m: np.ndarray) -> list[Any]:
    """:func:`~glrec.scenes.camera.as_list` of a whole stack at once: rounded to 9 decimals, no ``-0.0``."""
    rows: list[Any] = (m.round(9) + 0.0).tolist()
    return rows


def annotate_batch(table: Table, layouts: Sequence[TableLayout], times: Sequence[float]) -> list[dict[str, Any]]:
    """``table.annotations(times[j])`` with ``layouts[j]`` in use, for every j, computed for the batch at once.

    Returns plain JSON values (lists, floats, ints, str, None). Raises SceneError naming the
    batch position of a sample whose camera or objects are not finite (NaN cannot go to JSON).
    """
    from .table import FAR, NEAR, corner_points, models_of
    from .table_layout import gather

    n = len(layouts)
    if not n:
        return []
    params = [lay.params for lay in layouts]
    times = [float(t) for t in times]
    eyes, w2c, ks = _annotation_cameras(table, params, times)
    counts, objs = gather(layouts)
    m = len(objs.x)
    owner = np.repeat(np.arange(n), counts)
    turns = np.array([float(p["spin"]) * t for p, t in zip(params, times, strict=True)])
    models = models_of(objs.scale, objs.yaw, objs.x, objs.z, np.repeat(turns, counts)) if m else np.zeros((0, 4, 4))
    bad = ~np.isfinite(w2c).all(axis=(1, 2)) | ~np.isfinite(eyes).all(axis=1)
    if m:
        bad |= np.bincount(owner, ~np.isfinite(models).all(axis=(1, 2)), minlength=n) > 0
    if bad.any():
        j = int(np.flatnonzero(bad)[0])
        raise SceneError(f"table: the camera or objects of batch sample {j} are not finite; check the [params] values.")
    cams = matmul_pairs(w2c[owner], models)
    boxes: list[list[int] | None] = [None] * m
    shapes = objs.shape
    for shape in dict.fromkeys(shapes.tolist()):
        rows = np.flatnonzero(shapes == shape)
        points = corner_points(shape, models[rows])
        at = owner[rows]
        for j, box in zip(rows.tolist(), pixel_boxes_each(points, w2c[at], ks[at], table.size, NEAR), strict=True):
            boxes[j] = box
    model_lists, cam_lists = _rounded(models), _rounded(cams)
    w2c_lists, eye_lists, k_lists = _rounded(w2c), _rounded(eyes), _rounded(ks)
    colours = [[round(c, 6) for c in rgb] for rgb in objs.colour.tolist()]
    names, classes, ids = shapes.tolist(), objs.klass.tolist(), objs.instance.tolist()
    width, height = table.size
    out: list[dict[str, Any]] = []
    first = 0
    for j in range(n):
        last = first + int(counts[j])
        out.append({
            "camera": {"K": k_lists[j], "world_to_camera": w2c_lists[j], "position": eye_lists[j], "near": NEAR,
                       "far": FAR, "width": width, "height": height},
            "objects": [
                {"instance": ids[i], "class": classes[i], "class_name": names[i], "colour": colours[i],
                 "world_from_object": model_lists[i], "camera_from_object": cam_lists[i], "bbox": boxes[i]}
                for i in range(first, last)
            ],
        })  # fmt: skip
        first = last
    return out
