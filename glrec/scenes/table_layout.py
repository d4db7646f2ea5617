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

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .draws import uniforms

__all__ = ["TRIES", "PlacedObjects", "TableLayout", "columns_ok", "gather", "hsv_to_rgb", "place_objects"]

#: Places tried for one object before it is left out (no room left on the table).
TRIES = 100
_PER_OBJECT = 8  # draws reserved per object slot in "table:object" (6 used)


#: PlacedObjects' columns, in order (one value per object).
_FIELDS = ("instance", "shape", "klass", "colour", "x", "z", "scale", "yaw", "radius")


@dataclass(frozen=True, eq=False)
class PlacedObjects:
    """The objects of a batch of samples as arrays, sample after sample: sample j's are rows
    ``start[j]:start[j + 1]``, in placement order (instance ids 1..n)."""

    start: np.ndarray  # (n + 1,) int64
    instance: np.ndarray  # (m,) int64: the instance id (1..n in each sample, in placement order)
    shape: np.ndarray  # (m,) object: the mesh kind's name
    klass: np.ndarray  # (m,) int64: the class id
    colour: np.ndarray  # (m, 3) float64
    x: np.ndarray
    z: np.ndarray
    scale: np.ndarray
    yaw: np.ndarray
    radius: np.ndarray

    @classmethod
    def from_dicts(cls, objects: Sequence[dict[str, Any]]) -> PlacedObjects:
        """One sample's objects given as :attr:`TableLayout.objects` dicts (their instance ids, else their order)."""
        col = {k: [o[k] for o in objects] for k in ("shape", "class", "colour", "x", "z", "scale", "yaw", "radius")}
        ids = np.array([o.get("instance", i + 1) for i, o in enumerate(objects)], np.int64)
        return cls(np.array([0, len(objects)], np.int64), ids, np.array(col["shape"], dtype=object),
                   np.array(col["class"], np.int64), np.array(col["colour"], np.float64).reshape(-1, 3),
                   *(np.array(col[k], np.float64) for k in ("x", "z", "scale", "yaw", "radius")))  # fmt: skip

    def dicts(self, row: int) -> list[dict[str, Any]]:
        """Sample ``row``'s objects as the dicts :attr:`TableLayout.objects` holds."""
        a, b = int(self.start[row]), int(self.start[row + 1])
        cols = zip(*(getattr(self, f)[a:b].tolist() for f in _FIELDS), strict=True)
        return [{"instance": i, "shape": sh, "class": c, "colour": col, "x": x, "z": z, "scale": sc, "yaw": yw,
                 "radius": r} for i, sh, c, col, x, z, sc, yw, r in cols]  # fmt: skip


_EMPTY = PlacedObjects(
    np.zeros(1, np.int64),
    np.zeros(0, np.int64),
    np.empty(0, dtype=object),
    np.zeros(0, np.int64),
    np.zeros((0, 3)),
    *(np.zeros(0) for _ in range(5)),
)


@dataclass(frozen=True, eq=False)
class TableLayout:
    """One sample's table: the parameters in effect and the objects placed (instance ids 1..n): row ``row``
    of a batch's :class:`PlacedObjects` (the draw and the annotations read those arrays for the whole batch)."""

    params: dict[str, Any]
    placed: PlacedObjects
    row: int

    def __eq__(self, other: object) -> bool:  # the same table: the same params and objects (wherever stored)
        if not isinstance(other, TableLayout):
            return NotImplemented
        return self.params == other.params and self.objects == other.objects

    __hash__ = None  # type: ignore[assignment]

    @property
    def object_count(self) -> int:
        """How many objects the sample has (without making their dicts)."""
        return int(self.placed.start[self.row + 1] - self.placed.start[self.row])

    @functools.cached_property
    def objects(self) -> list[dict[str, Any]]:
        """The objects as dicts: ``instance``, ``shape``, ``class``, ``colour``, ``x``, ``z``, ``scale``, ``yaw``,
        ``radius`` (made when first asked for)."""
        return self.placed.dicts(self.row)


def gather(layouts: Sequence[TableLayout]) -> tuple[np.ndarray, PlacedObjects]:
    """Each layout's object count, and every object of ``layouts`` as one :class:`PlacedObjects` (layout after
    layout); one gather where the layouts come from one batch (the dataset renderer's case)."""
    placed = layouts[0].placed if layouts else None
    if placed is not None and all(lay.placed is placed for lay in layouts):
        rows = np.fromiter((lay.row for lay in layouts), np.int64, len(layouts))
        first, counts = placed.start[rows], placed.start[rows + 1] - placed.start[rows]
        ends = np.cumsum(counts)
        pick = np.repeat(first - (ends - counts), counts) + np.arange(int(ends[-1]))
        columns = [getattr(placed, f)[pick] for f in _FIELDS]
    else:
        spans = [(lay.placed, int(lay.placed.start[lay.row]), int(lay.placed.start[lay.row + 1])) for lay in layouts]
        counts = np.array([b - a for _, a, b in spans], np.int64)
        columns = [np.concatenate([getattr(p, f)[a:b] for p, a, b in spans]) if spans else getattr(_EMPTY, f)
                   for f in _FIELDS]  # fmt: skip
    return counts, PlacedObjects(np.concatenate([[0], np.cumsum(counts)]).astype(np.int64), *columns)


_PLAIN_NUMBERS = {float, int}


def columns_ok(merged: list[dict[str, Any]], defaults: dict[str, Any], meshes: Sequence[str]) -> bool:
    """Whether every sample of ``merged`` (the table's params over ``defaults``; ``meshes``: its mesh kinds)
    passes ``Table.check``, each column tested at once (False: check them one at a time)."""
    numbers = {}
    for key, default in defaults.items():
        if isinstance(default, float):
            column = [p[key] for p in merged]
            if not set(map(type, column)) <= _PLAIN_NUMBERS:
                return False  # bools, numpy scalars, strings: the one-sample check decides
            numbers[key] = np.array(column, np.float64)
    if not all(np.isfinite(v).all() for v in numbers.values()):
        return False
    fov = numbers["fov"]
    if not ((fov > 0) & (fov < 180)).all() or not (numbers["camera_distance"] > 0).all():
        return False
    if not (numbers["table_size"] > 0).all():
        return False
    shapes = {tuple(p["shapes"]) if isinstance(p["shapes"], (list, tuple)) else None for p in merged}
    if None in shapes or not all(s and all(x in meshes for x in s) for s in shapes):
        return False
    objects, sizes = [p["objects"] for p in merged], [p["object_size"] for p in merged]
    if not all(type(v) is int for v in objects) or not all(0 <= v <= 1000 for v in objects):
        return False
    if not all(type(v) in (list, tuple) and len(v) == 2 for v in sizes):
        return False
    lo_hi = np.array(sizes, dtype=object)
    if not all(type(v) is float or type(v) is int for v in lo_hi.ravel().tolist()):
        return False
    lo, hi = lo_hi.astype(np.float64).T
    return bool(((lo > 0) & (lo <= hi)).all())


#: Which of (v, t, p, q) each of r, g, b is, per sector of the hue circle (as colorsys picks them).
_HSV_PICK = np.array([[0, 1, 2], [3, 0, 2], [2, 0, 1], [2, 3, 0], [1, 2, 0], [0, 2, 3]])


def hsv_to_rgb(h: np.ndarray, s: np.ndarray, v: np.ndarray) -> np.ndarray:
    """``colorsys.hsv_to_rgb`` over arrays: (n,) each -> (n, 3)."""
    i = np.floor(h * 6.0)
    f = h * 6.0 - i
    p, q, t = v * (1.0 - s), v * (1.0 - s * f), v * (1.0 - s * (1.0 - f))
    sector = i.astype(np.int64) % 6
    out: np.ndarray = np.stack([v, t, p, q])[_HSV_PICK[sector], np.arange(len(h))[:, None]]
    return out


#: Tries tested together, stage after stage, each only for the samples no earlier stage placed.
_STAGES = ((0, 4), (4, 16), (16, TRIES))


def _tries(
    seeds: np.ndarray, k: int, start: int, stop: int, h: np.ndarray, r: np.ndarray,
    xs: np.ndarray, zs: np.ndarray, rs: np.ndarray, placed: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:  # fmt: skip
    """Tries ``start..stop-1`` of object slot ``k`` (half table ``h``, radius ``r``, each (a, 1)) against the
    objects placed before it (``xs``, ``zs``, ``rs``, ``placed``: (k, a), slot first, so the test over them is an
    element-wise AND of k slabs, not a reduction along a short last axis): (fits (a, tries), x, z)."""
    tries = stop - start
    u = uniforms(seeds, "table:place", 2 * tries, first=2 * (k * TRIES + start)).reshape(len(seeds), tries, 2)
    room = h > r
    span = np.where(room, 2 * (h - r), 0.0)
    x = np.where(room, -h + r + span * u[:, :, 0], 0.0)
    z = np.where(room, -h + r + span * u[:, :, 1], 0.0)
    if not k:
        return np.ones((len(seeds), tries), bool), x, z
    dx, dz = x[None] - xs[:, :, None], z[None] - zs[:, :, None]  # (k, a, tries)
    apart = r[None] + rs[:, :, None]  # (k, a, 1)
    # hypot(dx, dz) > apart, decided on the squares (4x faster than hypot); where the squares are too close to
    # call (within 1e-9 of each other), hypot itself decides, so the decision is hypot's bit for bit whatever
    # the rounding of the squares. A slot left empty is "far" from every try: its bounds are below any square.
    a2 = np.where(placed[:, :, None], apart * apart, -1.0)
    d2 = np.square(dx)
    d2 += np.square(dz)
    far = d2 > a2 * (1 + 1e-9)
    unsure = d2 >= a2 * (1 - 1e-9)
    unsure &= ~far
    if unsure.any():
        far[unsure] = np.hypot(dx[unsure], dz[unsure]) > np.broadcast_to(apart, unsure.shape)[unsure]
    return far.all(axis=0), x, z


def place_objects(params: Sequence[dict[str, Any]], seeds: np.ndarray, classes: Sequence[str]) -> PlacedObjects:
    """The objects of each sample (``params[j]`` checked, ``seeds[j]`` its seed), drawn for the batch at once."""
    n = len(params)
    count = np.array([int(p["objects"]) for p in params], np.int64)
    lo = np.array([float(p["object_size"][0]) for p in params])
    hi = np.array([float(p["object_size"][1]) for p in params])
    half = np.array([float(p["table_size"]) / 2 for p in params])
    nshapes = np.array([len(p["shapes"]) for p in params], np.int64)
    most = int(count.max(initial=0))
    xs, zs, rs = np.zeros((most, n)), np.zeros((most, n)), np.zeros((most, n))  # slot first (see _tries)
    placed = np.zeros((most, n), bool)
    slots = np.full((n, most), -1, np.int64)  # the slot's row in `draws`, or -1 when left out
    draws = uniforms(seeds, "table:object", _PER_OBJECT * most).reshape(n, most, _PER_OBJECT) if most else None
    for k in range(most):
        assert draws is not None
        active = np.flatnonzero(count > k)
        scale = lo[active] + (hi[active] - lo[active]) * draws[active, k, 1]
        radius = scale * 0.71  # footprint circle of the unit solid (the cube's half diagonal)
        # The object takes its first try that overlaps no object placed before it: a few tries of every sample
        # at once, then more for the samples none of those fitted, and so on (counter-based: the same draws,
        # so the same first fit as testing all TRIES at once; most objects fit at their first try).
        h, r = half[active][:, None], radius[:, None]
        found = np.zeros(len(active), bool)
        fx, fz = np.zeros(len(active)), np.zeros(len(active))
        todo = np.arange(len(active))
        for first_try, end_try in _STAGES:
            a = active[todo]
            ok, x, z = _tries(seeds[a], k, first_try, end_try, h[todo], r[todo], xs[:k, a], zs[:k, a], rs[:k, a],
                              placed[:k, a])  # fmt: skip
            hit = ok.any(axis=1)
            first = ok.argmax(axis=1)[hit]
            fit = todo[hit]
            fx[fit], fz[fit], found[fit] = x[hit, first], z[hit, first], True
            todo = todo[~hit]
            if not len(todo):
                break
        rows = active[found]
        xs[k, rows] = fx[found]
        zs[k, rows] = fz[found]
        rs[k, rows] = radius[found]
        placed[k, rows] = True
        slots[active, k] = np.where(placed[k, active], 1, -1)
    if not most:
        return PlacedObjects(np.zeros(n + 1, np.int64), *(getattr(_EMPTY, f) for f in _FIELDS))
    assert draws is not None
    scales = lo[:, None] + (hi - lo)[:, None] * draws[:, :, 1]
    colours = hsv_to_rgb(
        draws[:, :, 2].ravel(), 0.5 + 0.5 * draws[:, :, 3].ravel(), 0.55 + 0.45 * draws[:, :, 4].ravel()
    ).reshape(n, most, 3)
    yaws = 2 * math.pi * draws[:, :, 5]
    shape_ix = np.minimum(np.floor(draws[:, :, 0] * nshapes[:, None]), nshapes[:, None] - 1).astype(np.int64)
    xs, zs, rs = xs.T, zs.T, rs.T  # sample first again
    keep = slots >= 0  # placed slots, sample after sample, in slot (= placement) order
    counts = keep.sum(axis=1)
    lists = [tuple(p["shapes"]) for p in params]
    if len(set(lists)) == 1:
        shape_name = np.asarray(lists[0], dtype=object)[shape_ix]
    else:  # each sample's own shape list (a spec may vary it)
        shape_name = np.empty((n, most), dtype=object)
        for j, names in enumerate(lists):
            shape_name[j] = np.asarray(names, dtype=object)[shape_ix[j]]
    class_ids = {shape: classes.index(shape) for shape in dict.fromkeys(shape_name[keep].tolist())}
    shape_flat = shape_name[keep]
    start = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    return PlacedObjects(
        start=start,
        instance=np.arange(int(start[-1])) - np.repeat(start[:-1], counts) + 1,  # 1..n in each sample
        shape=shape_flat,
        klass=np.array([class_ids[s] for s in shape_flat.tolist()], np.int64),
        colour=colours[keep],
        x=xs[keep],
        z=zs[keep],
        scale=scales[keep],
        yaw=yaws[keep],
        radius=rs[keep],
    )
