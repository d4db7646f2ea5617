"""A picture of one sample: colour (with each object's box) | depth | instance ids | normals."""

from __future__ import annotations

import colorsys

import numpy as np

from .encode import normal8
from .render import Sample

__all__ = ["compose", "depth_image", "instance_image"]


def depth_image(depth: np.ndarray) -> np.ndarray:
    """Near surfaces bright, far ones dark, no surface black; (h, w, 3) uint8."""
    surface = depth > 0
    out = np.zeros(depth.shape, np.float64)
    if surface.any():
        lo, hi = float(depth[surface].min()), float(depth[surface].max())
        out[surface] = 1.0 - 0.85 * (depth[surface] - lo) / max(hi - lo, 1e-9)
    grey = np.rint(out * 255).astype(np.uint8)
    return np.repeat(grey[..., None], 3, axis=2)


def _palette(n: int) -> np.ndarray:
    # golden-ratio hues: neighbouring ids get clearly different colours
    colours = [(0.0, 0.0, 0.0)] + [colorsys.hsv_to_rgb((i * 0.618034) % 1.0, 0.75, 1.0) for i in range(1, n)]
    return np.rint(np.array(colours) * 255).astype(np.uint8)


def instance_image(instance: np.ndarray) -> np.ndarray:
    """Each instance id its own colour, 0 black; (h, w, 3) uint8."""
    return _palette(int(instance.max(initial=0)) + 1)[instance]


def _draw_box(img: np.ndarray, box: list[int], colour: np.ndarray) -> None:
    x0, y0, x1, y1 = box
    img[y0, x0:x1] = colour
    img[y1 - 1, x0:x1] = colour
    img[y0:y1, x0] = colour
    img[y0:y1, x1 - 1] = colour


def compose(sample: Sample) -> np.ndarray:
    """The four panels of frame 0 side by side, (h, 4w, 3) uint8."""
    f = sample.frames[0]
    frame_meta = sample.meta.get("frames", [sample.meta])[0]
    rgb = f["rgb"].copy()
    palette = _palette(int(f["instance"].max(initial=0)) + 1)
    for obj in frame_meta.get("objects", []):
        if obj.get("visible_bbox"):
            _draw_box(rgb, obj["visible_bbox"], palette[obj["instance"]])
    return np.hstack([rgb, depth_image(f["depth"]), instance_image(f["instance"]), normal8(f["normal"])])
