"""Camera conventions and 2D boxes for dataset annotations.

glrec records cameras in the OpenCV convention: camera x right, y down, z
forward; ``world_to_camera`` is a 4x4 matrix taking world points (column
vectors) to camera coordinates; ``K`` maps camera coordinates to pixel
coordinates in which pixel (col, row) covers ``[col, col + 1) x [row, row + 1)``,
so its centre is ``(col + 0.5, row + 0.5)`` and the image spans ``[0, w] x [0, h]``.
Depth passes hold the camera z of the surface, so a pixel unprojects to
``z * inv(K) @ (col + 0.5, row + 0.5, 1)``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = [
    "GL_TO_CV",
    "as_list",
    "intrinsics",
    "look_at",
    "look_at_batch",
    "mask_boxes",
    "matmul",
    "matmul_pairs",
    "matmul_stack",
    "pixel_box",
    "pixel_boxes",
    "pixel_boxes_each",
    "project",
]

#: OpenGL eye space (y up, z towards the viewer) to OpenCV camera space (y down, z forward).
GL_TO_CV = np.diag([1.0, -1.0, -1.0, 1.0])


def intrinsics(fov_y_degrees: float, size: tuple[int, int]) -> np.ndarray:
    """The 3x3 K of a symmetric perspective camera with square pixels and vertical field of view ``fov_y``."""
    w, h = size
    f = (h / 2) / math.tan(math.radians(fov_y_degrees) / 2)
    return np.array([[f, 0.0, w / 2], [0.0, f, h / 2], [0.0, 0.0, 1.0]])


def matmul(*matrices: np.ndarray) -> np.ndarray:
    """The product of float64 matrices, left to right, with the same bits on every CPU.

    ``@`` hands float64 products to BLAS, whose kernel (picked at run time by the
    CPU: OpenBLAS's AVX-512 one differs from its Haswell one) chooses the
    summation order and the sign of a zero; annotations written into datasets
    must not depend on that. Here each element is summed in index order from
    separately rounded products (numpy's element-wise ufuncs, no FMA).
    """
    out = np.asarray(matrices[0], dtype=np.float64)
    for m in matrices[1:]:
        b = np.asarray(m, dtype=np.float64)
        acc = out[:, 0:1] * b[0:1, :]
        for k in range(1, out.shape[1]):
            acc = acc + out[:, k : k + 1] * b[k : k + 1, :]
        out = acc
    return out


def matmul_stack(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a @ b[j]`` for every matrix of the stack ``b`` (n, k, m), summed in index order like :func:`matmul`."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    acc = a[None, :, 0:1] * b[:, 0:1, :]
    for k in range(1, a.shape[1]):
        acc = acc + a[None, :, k : k + 1] * b[:, k : k + 1, :]
    out: np.ndarray = acc
    return out


def matmul_pairs(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a[j] @ b[j]`` for stacks (n, k, m) and (n, m, p), summed in index order like :func:`matmul` (its bits)."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    acc = a[:, :, 0:1] * b[:, 0:1, :]
    for k in range(1, a.shape[2]):
        acc = acc + a[:, :, k : k + 1] * b[:, k : k + 1, :]
    out: np.ndarray = acc
    return out


def look_at(eye: np.ndarray, target: np.ndarray, up: np.ndarray) -> np.ndarray:
    """The GL view matrix (column vectors) of a camera at ``eye`` looking at ``target``; CPU-independent bits."""

    def unit(v: np.ndarray) -> np.ndarray:
        return v / math.sqrt(float(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]))

    def cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.array([a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]])

    eye, target, up = (np.asarray(v, dtype=np.float64) for v in (eye, target, up))
    forward = unit(target - eye)
    side = unit(cross(forward, up))
    upward = unit(cross(side, forward))
    view = np.eye(4)
    view[0, :3], view[1, :3], view[2, :3] = side, upward, -forward
    view[:3, 3] = -matmul(view[:3, :3], eye[:, None])[:, 0]
    return view


def look_at_batch(eyes: np.ndarray, up: np.ndarray) -> np.ndarray:
    """:func:`look_at` of cameras at ``eyes`` (n, 3) looking at the origin: (n, 4, 4), each with look_at's bits
    (the same operations in the same order, element-wise; ``tests/dataset/test_batch_annotations.py`` checks it)."""
    eyes = np.asarray(eyes, dtype=np.float64)
    up = np.broadcast_to(np.asarray(up, dtype=np.float64), eyes.shape)

    def unit(v: np.ndarray) -> np.ndarray:
        with np.errstate(
            over="ignore", invalid="ignore", divide="ignore"
        ):  # a camera at the target: NaN, checked later
            return v / np.sqrt(v[:, 0] * v[:, 0] + v[:, 1] * v[:, 1] + v[:, 2] * v[:, 2])[:, None]

    def cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.stack(
            [a[:, 1] * b[:, 2] - a[:, 2] * b[:, 1], a[:, 2] * b[:, 0] - a[:, 0] * b[:, 2],
             a[:, 0] * b[:, 1] - a[:, 1] * b[:, 0]], axis=1,
        )  # fmt: skip

    forward = unit(np.zeros(3) - eyes)
    side = unit(cross(forward, up))
    upward = unit(cross(side, forward))
    view = np.zeros((len(eyes), 4, 4))
    view[:, 0, :3], view[:, 1, :3], view[:, 2, :3], view[:, 3, 3] = side, upward, -forward, 1.0
    rot = view[:, :3, :3]
    view[:, :3, 3] = -(rot[:, :, 0] * eyes[:, 0:1] + rot[:, :, 1] * eyes[:, 1:2] + rot[:, :, 2] * eyes[:, 2:3])
    return view


def project(points: np.ndarray, world_to_camera: np.ndarray, k: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Pixel coordinates (n, 2) and camera z (n,) of world points (n, 3)."""
    p = np.asarray(points, dtype=np.float64)
    cam = matmul(p, world_to_camera[:3, :3].T) + world_to_camera[:3, 3]
    z = cam[:, 2]
    with np.errstate(divide="ignore", invalid="ignore"):
        uv = matmul(cam, k.T)[:, :2] / z[:, None]
    return uv, z


def pixel_box(
    points: np.ndarray, world_to_camera: np.ndarray, k: np.ndarray, size: tuple[int, int], near: float
) -> list[int] | None:
    """The pixels a mesh with these vertices can cover: ``[x0, y0, x1, y1)`` (x1, y1 exclusive), or None.

    The rasteriser covers a pixel when its centre is inside a triangle, so the
    box holds every pixel whose centre lies within the projected extent; it
    encloses the object's mask exactly (occlusion only removes pixels) and is
    clipped to the image. Vertices behind the near plane are left out.
    """
    return pixel_boxes(np.asarray(points, dtype=np.float64)[None], world_to_camera, k, size, near)[0]


def pixel_boxes(
    points: np.ndarray, world_to_camera: np.ndarray, k: np.ndarray, size: tuple[int, int], near: float
) -> list[list[int] | None]:
    """:func:`pixel_box` of many meshes at once: ``points`` (n, v, 3), the vertices of each (same count)."""
    p = np.asarray(points, dtype=np.float64)
    n, v = p.shape[:2]
    uv, z = project(p.reshape(n * v, 3), world_to_camera, k)
    uv, z = uv.reshape(n, v, 2), z.reshape(n, v)
    seen = z > near
    lo = np.where(seen[..., None], uv, np.inf).min(axis=1)
    hi = np.where(seen[..., None], uv, -np.inf).max(axis=1)
    eps = 1e-3  # float32 on the GPU vs float64 here: err towards enclosing
    w, h = size
    out: list[list[int] | None] = []
    for j in range(n):
        if not seen[j].any():
            out.append(None)
            continue
        x0 = max(0, math.ceil(lo[j, 0] - 0.5 - eps))
        y0 = max(0, math.ceil(lo[j, 1] - 0.5 - eps))
        x1 = min(w, math.floor(hi[j, 0] - 0.5 + eps) + 1)
        y1 = min(h, math.floor(hi[j, 1] - 0.5 + eps) + 1)
        out.append(None if x1 <= x0 or y1 <= y0 else [x0, y0, x1, y1])
    return out


def pixel_boxes_each(
    points: np.ndarray, world_to_camera: np.ndarray, k: np.ndarray, size: tuple[int, int], near: float
) -> list[list[int] | None]:
    """:func:`pixel_boxes` of meshes seen by cameras of their own: mesh j (``points[j]``, (v, 3)) through
    ``world_to_camera[j]`` (4, 4) and ``k[j]`` (3, 3); the same operations, so the same boxes."""
    p = np.asarray(points, dtype=np.float64)  # (n, v, 3); each camera broadcast over its mesh's vertices
    rot, kk = world_to_camera[:, None, :3, :3], k[:, None, :2, :]
    cam = p[..., 0:1] * rot[..., 0] + p[..., 1:2] * rot[..., 1] + p[..., 2:3] * rot[..., 2]
    cam = cam + world_to_camera[:, None, :3, 3]
    z = cam[..., 2]
    with np.errstate(divide="ignore", invalid="ignore"):
        uv = (cam[..., 0:1] * kk[..., 0] + cam[..., 1:2] * kk[..., 1] + cam[..., 2:3] * kk[..., 2]) / z[..., None]
    seen = z > near
    lo = np.where(seen[..., None], uv, np.inf).min(axis=1)
    hi = np.where(seen[..., None], uv, -np.inf).max(axis=1)
    eps = 1e-3  # as pixel_boxes
    w, h = size
    any_seen = seen.any(axis=1)
    lo, hi = np.where(any_seen[:, None], lo, 0.0), np.where(any_seen[:, None], hi, 0.0)
    x0 = np.maximum(0, np.ceil(lo[:, 0] - 0.5 - eps))
    y0 = np.maximum(0, np.ceil(lo[:, 1] - 0.5 - eps))
    x1 = np.minimum(w, np.floor(hi[:, 0] - 0.5 + eps) + 1)
    y1 = np.minimum(h, np.floor(hi[:, 1] - 0.5 + eps) + 1)
    keep = any_seen & (x1 > x0) & (y1 > y0)
    boxes = np.stack([x0, y0, x1, y1], axis=1)
    boxes = np.where(keep[:, None], boxes, 0).astype(np.int64).tolist()
    return [box if kept else None for box, kept in zip(boxes, keep.tolist(), strict=True)]


def mask_boxes(instance: np.ndarray) -> dict[int, tuple[list[int], int]]:
    """For each instance id > 0 in a mask: its tight box ``[x0, y0, x1, y1)`` and its pixel count."""
    counts = np.bincount(instance.ravel())
    out: dict[int, tuple[list[int], int]] = {}
    for i in np.flatnonzero(counts[1:]) + 1:
        mask = instance == i
        rows, cols = np.flatnonzero(mask.any(axis=1)), np.flatnonzero(mask.any(axis=0))
        out[int(i)] = ([int(cols[0]), int(rows[0]), int(cols[-1]) + 1, int(rows[-1]) + 1], int(counts[i]))
    return out


def as_list(m: np.ndarray) -> list[Any]:
    """A matrix as nested lists of floats, rounded to 9 decimals for stable JSON; never ``-0.0``.

    Adding 0.0 turns a negative zero (the sign a product or a rounding can leave) into 0.0.
    """
    rows: list[Any] = (np.asarray(m, dtype=np.float64).round(9) + 0.0).tolist()
    return rows
