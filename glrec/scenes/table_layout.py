"""The table scene's layouts for a batch of samples, drawn at once with counter-based draws.

Each sample's objects come from its own seed alone (:mod:`glrec.scenes.draws`):
object slot ``k`` draws its shape, size, colour and turn from the stream
``"table:object"`` (draws ``8k .. 8k + 5``) and its place from ``"table:place"``
(try ``t``: draws ``2 (k * TRIES + t)`` and the next; all tries are tested at
once and the first that fits wins), so every step below is vectorised over the
samples of the batch and a sample's layout does not depend
on which other samples share its batch.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .draws import uniforms

__all__ = ["TRIES", "TableLayout", "hsv_to_rgb", "place_objects"]

#: Places tried for one object before it is left out (no room left on the table).
TRIES = 100
_PER_OBJECT = 8  # draws reserved per object slot in "table:object" (6 used)


@dataclass(frozen=True)
class TableLayout:
    """One sample's table: the parameters in effect and the objects placed (instance ids 1..n)."""

    params: dict[str, Any]
    objects: list[dict[str, Any]]


def hsv_to_rgb(h: np.ndarray, s: np.ndarray, v: np.ndarray) -> np.ndarray:
    """``colorsys.hsv_to_rgb`` over arrays: (n,) each -> (n, 3)."""
    i = np.floor(h * 6.0)
    f = h * 6.0 - i
    p, q, t = v * (1.0 - s), v * (1.0 - s * f), v * (1.0 - s * (1.0 - f))
    sector = i.astype(np.int64) % 6
    table = np.stack(
        [
            np.stack([v, t, p], -1),
            np.stack([q, v, p], -1),
            np.stack([p, v, t], -1),
            np.stack([p, q, v], -1),
            np.stack([t, p, v], -1),
            np.stack([v, p, q], -1),
        ],
        1,
    )
    out: np.ndarray = table[np.arange(len(h)), sector]
    return out


def place_objects(
    params: Sequence[dict[str, Any]], seeds: np.ndarray, classes: Sequence[str]
) -> list[list[dict[str, Any]]]:
    """The objects of each sample (``params[j]`` checked, ``seeds[j]`` its seed), drawn for the batch at once."""
    n = len(params)
    count = np.array([int(p["objects"]) for p in params], np.int64)
    lo = np.array([float(p["object_size"][0]) for p in params])
    hi = np.array([float(p["object_size"][1]) for p in params])
    half = np.array([float(p["table_size"]) / 2 for p in params])
    nshapes = np.array([len(p["shapes"]) for p in params], np.int64)
    most = int(count.max(initial=0))
    xs, zs, rs = np.zeros((n, most)), np.zeros((n, most)), np.zeros((n, most))
    placed = np.zeros((n, most), bool)
    slots = np.full((n, most), -1, np.int64)  # the slot's row in `draws`, or -1 when left out
    draws = uniforms(seeds, "table:object", _PER_OBJECT * most).reshape(n, most, _PER_OBJECT) if most else None
    for k in range(most):
        assert draws is not None
        active = np.flatnonzero(count > k)
        scale = lo[active] + (hi[active] - lo[active]) * draws[active, k, 1]
        radius = scale * 0.71  # footprint circle of the unit solid (the cube's half diagonal)
        # Every try at once: the object takes its first try that overlaps no object placed before it.
        u = uniforms(seeds[active], "table:place", 2 * TRIES, first=2 * k * TRIES).reshape(len(active), TRIES, 2)
        h = half[active][:, None]
        r = radius[:, None]
        room = h > r
        span = np.where(room, 2 * (h - r), 0.0)
        x = np.where(room, -h + r + span * u[:, :, 0], 0.0)
        z = np.where(room, -h + r + span * u[:, :, 1], 0.0)
        if k:
            dist = np.hypot(x[:, :, None] - xs[active, None, :k], z[:, :, None] - zs[active, None, :k])
            clear = (dist > r[:, :, None] + rs[active, None, :k]) | ~placed[active, None, :k]
            ok = clear.all(axis=2)
        else:
            ok = np.ones((len(active), TRIES), bool)
        found = ok.any(axis=1)
        first = ok.argmax(axis=1)
        rows = active[found]
        xs[rows, k] = x[found, first[found]]
        zs[rows, k] = z[found, first[found]]
        rs[rows, k] = radius[found]
        placed[rows, k] = True
        slots[active, k] = np.where(placed[active, k], 1, -1)
    result: list[list[dict[str, Any]]] = [[] for _ in range(n)]
    if not most:
        return result
    assert draws is not None
    scales = lo[:, None] + (hi - lo)[:, None] * draws[:, :, 1]
    colours = hsv_to_rgb(
        draws[:, :, 2].ravel(), 0.5 + 0.5 * draws[:, :, 3].ravel(), 0.55 + 0.45 * draws[:, :, 4].ravel()
    ).reshape(n, most, 3)
    yaws = 2 * math.pi * draws[:, :, 5]
    shape_ix = np.minimum(np.floor(draws[:, :, 0] * nshapes[:, None]), nshapes[:, None] - 1).astype(np.int64)
    # Python floats for the whole batch at once (tolist), then one dict per placed object.
    colour_l, xs_l, zs_l, scales_l = colours.tolist(), xs.tolist(), zs.tolist(), scales.tolist()
    yaws_l, rs_l, shape_l, placed_l = yaws.tolist(), rs.tolist(), shape_ix.tolist(), (slots >= 0).tolist()
    for j in range(n):
        shapes = list(params[j]["shapes"])
        class_of = {shape: classes.index(shape) for shape in shapes}
        objs = result[j]
        for k in range(most):
            if not placed_l[j][k]:
                continue
            shape = shapes[shape_l[j][k]]
            objs.append({"instance": len(objs) + 1, "shape": shape, "class": class_of[shape],
                         "colour": colour_l[j][k], "x": xs_l[j][k], "z": zs_l[j][k], "scale": scales_l[j][k],
                         "yaw": yaws_l[j][k], "radius": rs_l[j][k]})  # fmt: skip
    return result
