"""Triangle meshes of simple solids as numpy arrays of (x, y, z, nx, ny, nz) rows.

Each solid fits the cube [-0.5, 0.5]^3 (unit size, centred on the origin,
y up), so a scale ``s`` and a lift of ``s / 2`` stand it on the plane y = 0.
"""

from __future__ import annotations

import functools

import numpy as np

from .cube import _cube_vertices

__all__ = ["MESHES", "cone", "cube", "cylinder", "indexed_meshes", "sphere"]


def cube() -> np.ndarray:
    return _cube_vertices().reshape(-1, 6)


def _grid_triangles(pos: np.ndarray, nrm: np.ndarray) -> np.ndarray:
    """Two triangles per cell of a (rows, cols) grid of vertices; returns (n, 6) rows."""
    a, b = pos[:-1, :-1], pos[:-1, 1:]
    c, d = pos[1:, 1:], pos[1:, :-1]
    na, nb, nc, nd = nrm[:-1, :-1], nrm[:-1, 1:], nrm[1:, 1:], nrm[1:, :-1]
    # counter-clockwise seen from outside: a, d, c and a, c, b
    tri_p = np.stack([a, d, c, a, c, b], axis=2).reshape(-1, 3)
    tri_n = np.stack([na, nd, nc, na, nc, nb], axis=2).reshape(-1, 3)
    return np.hstack([tri_p, tri_n])


def sphere(stacks: int = 16, slices: int = 24) -> np.ndarray:
    """A UV sphere of radius 0.5 with smooth normals."""
    phi = np.linspace(0.0, np.pi, stacks + 1)[:, None]  # from +y down to -y
    theta = np.linspace(0.0, 2 * np.pi, slices + 1)[None, :]
    n = np.stack(np.broadcast_arrays(np.sin(phi) * np.sin(theta), np.cos(phi), np.sin(phi) * np.cos(theta)), axis=-1)
    tris = _grid_triangles(0.5 * n, n)
    # drop the degenerate triangles at the poles
    p = tris[:, :3].reshape(-1, 3, 3)
    area = np.linalg.norm(np.cross(p[:, 1] - p[:, 0], p[:, 2] - p[:, 0]), axis=1)
    kept: np.ndarray = tris.reshape(-1, 18)[area > 1e-9].reshape(-1, 6)
    return kept


def _disc(y: float, up: bool, slices: int, radius: float = 0.5) -> np.ndarray:
    theta = np.linspace(0.0, 2 * np.pi, slices + 1)
    rim = np.stack([radius * np.sin(theta), np.full_like(theta, y), radius * np.cos(theta)], axis=1)
    centre = np.array([0.0, y, 0.0])
    normal = np.array([0.0, 1.0 if up else -1.0, 0.0])
    rows: list[np.ndarray] = []
    for i in range(slices):
        tri = [centre, rim[i], rim[i + 1]] if up else [centre, rim[i + 1], rim[i]]
        rows.extend(np.hstack([v, normal]) for v in tri)
    return np.array(rows)


def _lathe(radius_top: float, slices: int) -> np.ndarray:
    """The side of a cylinder (radius_top 0.5) or a cone (radius_top 0) from y = -0.5 to 0.5."""
    theta = np.linspace(0.0, 2 * np.pi, slices + 1)[None, :]
    y = np.array([[0.5], [-0.5]])
    r = np.where(y > 0, radius_top, 0.5)
    pos = np.stack(np.broadcast_arrays(r * np.sin(theta), y + 0 * theta, r * np.cos(theta)), axis=-1)
    slope = 0.5 - radius_top  # outward normal of a side whose radius shrinks by `slope` over height 1
    n = np.stack(np.broadcast_arrays(np.sin(theta), slope + 0 * y + 0 * theta, np.cos(theta)), axis=-1)
    n = n / np.linalg.norm(n, axis=-1, keepdims=True)
    return _grid_triangles(pos, n)


def cylinder(slices: int = 24) -> np.ndarray:
    """A cylinder of radius 0.5 and height 1, smooth side, flat caps."""
    return np.vstack([_lathe(0.5, slices), _disc(0.5, True, slices), _disc(-0.5, False, slices)])


def cone(slices: int = 24) -> np.ndarray:
    """A cone of base radius 0.5 and height 1, apex up."""
    side = _lathe(0.0, slices).reshape(-1, 3, 6)
    p = side[:, :, :3]
    area = np.linalg.norm(np.cross(p[:, 1] - p[:, 0], p[:, 2] - p[:, 0]), axis=1)
    return np.vstack([side[area > 1e-9].reshape(-1, 6), _disc(-0.5, False, slices)])


#: Shape name -> mesh builder.
MESHES = {"cube": cube, "sphere": sphere, "cylinder": cylinder, "cone": cone}


@functools.cache
def indexed_meshes() -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Every mesh kind's distinct vertices (position, normal; float32) in one array, and per kind the uint32
    indices into it that list its triangles as :data:`MESHES` does.

    The same triangles with the same vertices in the same order, so the same pixels; but a vertex that
    several triangles share is shaded once (the post-transform cache), not once per triangle: a sphere's
    2,160 listed vertices are 400 distinct ones, and the vertex work bounds a batch of small samples.
    """
    parts, indices, base = [], {}, 0
    for name, build in MESHES.items():
        mesh = np.ascontiguousarray(build().astype("f4"))
        distinct, inverse = np.unique(mesh, axis=0, return_inverse=True)
        parts.append(distinct)
        indices[name] = (inverse.reshape(-1) + base).astype("u4")
        base += len(distinct)
    return np.vstack(parts), indices
