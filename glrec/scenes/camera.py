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

__all__ = ["GL_TO_CV", "as_list", "intrinsics", "mask_boxes", "pixel_box", "project"]

#: OpenGL eye space (y up, z towards the viewer) to OpenCV camera space (y down, z forward).
GL_TO_CV = np.diag([1.0, -1.0, -1.0, 1.0])


def intrinsics(fov_y_degrees: float, size: tuple[int, int]) -> np.ndarray:
    """The 3x3 K of a symmetric perspective camera with square pixels and vertical field of view ``fov_y``."""
    w, h = size
    f = (h / 2) / math.tan(math.radians(fov_y_degrees) / 2)
    return np.array([[f, 0.0, w / 2], [0.0, f, h / 2], [0.0, 0.0, 1.0]])


def project(points: np.ndarray, world_to_camera: np.ndarray, k: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Pixel coordinates (n, 2) and camera z (n,) of world points (n, 3)."""
    p = np.asarray(points, dtype=np.float64)
    cam = p @ world_to_camera[:3, :3].T + world_to_camera[:3, 3]
    z = cam[:, 2]
    with np.errstate(divide="ignore", invalid="ignore"):
        uv = (cam @ k.T)[:, :2] / z[:, None]
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
    uv, z = project(points, world_to_camera, k)
    uv = uv[z > near]
    if len(uv) == 0:
        return None
    eps = 1e-3  # float32 on the GPU vs float64 here: err towards enclosing
    x0 = math.ceil(uv[:, 0].min() - 0.5 - eps)
    y0 = math.ceil(uv[:, 1].min() - 0.5 - eps)
    x1 = math.floor(uv[:, 0].max() - 0.5 + eps) + 1
    y1 = math.floor(uv[:, 1].max() - 0.5 + eps) + 1
    w, h = size
    x0, x1 = max(0, x0), min(w, x1)
    y0, y1 = max(0, y0), min(h, y1)
    if x1 <= x0 or y1 <= y0:
        return None
    return [x0, y0, x1, y1]


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
    """A matrix as nested lists of floats, rounded to float32 precision for stable JSON."""
    rows: list[Any] = np.asarray(m, dtype=np.float64).round(9).tolist()
    return rows
