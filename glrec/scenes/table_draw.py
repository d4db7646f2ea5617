"""The table's batch draw in two halves: the arrays the CPU computes (any thread) and what GL is then given.

:func:`prepare` computes everything a draw of ``layouts`` at ``times`` needs, with
no GL: each sample's camera and light (the ``Samples`` storage buffer of
``table.vert``) and each mesh kind's instance records, in the order the draw
takes them. ``Table.render_prepared`` hands them to GL: a buffer write per mesh
kind and one instanced draw each. So the dataset renderer can prepare the next
chunk on its planning thread while the GPU draws this one
(:class:`~glrec.scenes.capabilities.BatchPrepared`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from .camera import matmul_stack
from .primitives import MESHES
from .table_batch import cameras, column, lights
from .table_layout import gather

if TYPE_CHECKING:
    from .table import Table
    from .table_layout import TableLayout

__all__ = ["INSTANCE", "VIEW", "TableDraw", "prepare"]

#: One object's record in its mesh kind's instance buffer (matches table.vert's i_* inputs).
INSTANCE = np.dtype([("model", "<f4", (16,)), ("colour", "<f4", (4,)), ("ids", "<u4", (3,))])
#: One sample's record in the Samples storage buffer (matches table.vert's SampleView, std430).
VIEW = np.dtype([("view", "<f4", (16,)), ("projection", "<f4", (16,)), ("light", "<f4", (4,)), ("eye", "<f4", (4,))])


@dataclass(frozen=True, eq=False)
class TableDraw:
    """What GL is given to draw a batch of the table: per sample its background and :data:`VIEW` record,
    per mesh kind (in draw order) its :data:`INSTANCE` records; ``last``: the layout drawn last."""

    backgrounds: list[tuple[float, float, float]]
    views: np.ndarray
    kinds: dict[str, np.ndarray]
    last: TableLayout


def prepare(table: Table, layouts: Sequence[TableLayout], times: Sequence[float]) -> TableDraw:
    """The arrays of a draw of sample j (``layouts[j]`` at ``times[j]``) into layer j (no GL: any thread).

    Instance records run sample by sample, each the table top (a cube) then the objects in
    placement order, so each mesh kind's draw meets a sample's instances in the order the
    one-sample draw does (ties in depth resolve alike); matrices are computed for the batch at once.
    """
    from .table import _TOP_SHIFT, models_of

    n = len(layouts)
    views = np.zeros(n, VIEW)
    params = [lay.params for lay in layouts]
    times = [float(t) for t in times]
    eyes, gl_views = cameras(params, times)
    fovs = column(params, "fov")
    if len(fovs) and (fovs == fovs[0]).all():  # one field of view for the batch (a constant parameter)
        projections = np.broadcast_to(table._projection(float(fovs[0])), (n, 4, 4))
    else:
        projections = np.stack([table._projection(float(f)) for f in fovs.tolist()])
    views["view"] = gl_views.transpose(0, 2, 1).reshape(n, 16)  # GL reads column-major
    views["projection"] = projections.transpose(0, 2, 1).reshape(n, 16)
    views["light"] = lights(params)
    views["eye"][:, :3] = eyes
    sizes = column(params, "table_size")
    turns = column(params, "spin") * np.asarray(times, np.float64)
    table_colours = np.array([[float(c) for c in p["table_colour"]] for p in params]).reshape(n, 3)
    counts, objs = gather(layouts)
    m = len(objs.x)
    scale = np.zeros((n, 4, 4))
    scale[:, 0, 0], scale[:, 1, 1], scale[:, 2, 2], scale[:, 3, 3] = sizes, 0.1, sizes, 1.0
    tops = matmul_stack(_TOP_SHIFT, scale)  # translation @ scale, in matmul's order
    rows = np.zeros(n + m, INSTANCE)
    at_top = np.cumsum(counts + 1) - (counts + 1)
    is_object = np.ones(len(rows), bool)
    is_object[at_top] = False
    rows["model"][at_top] = tops.transpose(0, 2, 1).reshape(n, 16)
    rows["colour"][at_top, :3] = table_colours
    rows["colour"][at_top, 3] = 0.25
    rows["ids"][at_top] = np.stack([np.zeros(n), np.full(n, table.classes.index("table")), np.arange(n)], 1)
    code = {shape: i for i, shape in enumerate(MESHES)}
    kind = np.full(len(rows), code["cube"], np.int64)  # each record's mesh kind
    if m:
        models = models_of(objs.scale, objs.yaw, objs.x, objs.z, np.repeat(turns, counts))
        rows["model"][is_object] = models.transpose(0, 2, 1).reshape(m, 16)
        rows["colour"][is_object, :3] = objs.colour
        rows["ids"][is_object] = np.column_stack([objs.instance, objs.klass, np.repeat(np.arange(n), counts)])
        kind[is_object] = np.fromiter((code[s] for s in objs.shape.tolist()), np.int64, m)
    kinds = {}
    for shape, i in code.items():  # the draw order
        pick = kind == i
        if pick.any():
            kinds[shape] = rows[pick]
    first = params[0]["background"] if params else None
    if all(p["background"] is first for p in params):  # one value for the batch (a constant parameter)
        backgrounds = [tuple(float(c) for c in first)] * n  # type: ignore[union-attr]
    else:
        backgrounds = [tuple(float(c) for c in p["background"]) for p in params]
    return TableDraw(backgrounds, views, kinds, layouts[-1])  # type: ignore[arg-type]
