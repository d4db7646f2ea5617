"""A picture of one sample: colour (with each object's box) | depth | instance ids | normals."""

from __future__ import annotations

import colorsys

import numpy as np

from ..rendering.sample import Sample
from .encode import normal8

__all__ = ["compose", "depth_image", "instance_image"]


# near -> far: pale yellow, orange, magenta, violet, deep blue (no surface: black)
_RAMP = np.array([[255, 244, 170], [245, 140, 60], [190, 50, 110], [90, 30, 130], [25, 25, 70]], np.float64)


def depth_image(depth: np.ndarray) -> np.ndarray:
    """Depth through a colour ramp, near bright and far dark, scaled to this image; no surface black."""
    surface = depth > 0
    out = np.zeros((*depth.shape, 3), np.uint8)
    if surface.any():
        d = depth[surface].astype(np.float64)
        x = (d - d.min()) / max(float(d.max() - d.min()), 1e-9) * (len(_RAMP) - 1)
        stops = np.arange(len(_RAMP))
        out[surface] = np.rint(np.stack([np.interp(x, stops, _RAMP[:, c]) for c in range(3)], axis=-1))
    return out


def _palette(n: int) -> np.ndarray:
    # golden-ratio hues: neighbouring ids get clearly different colours
    colours = [(0.0, 0.0, 0.0)] + [colorsys.hsv_to_rgb((i * 0.618034) % 1.0, 0.75, 1.0) for i in range(1, n)]
    palette: np.ndarray = np.rint(np.array(colours) * 255).astype(np.uint8)
    return palette


def instance_image(instance: np.ndarray) -> np.ndarray:
    """Each instance id its own colour, 0 black; (h, w, 3) uint8."""
    coloured: np.ndarray = _palette(int(instance.max(initial=0)) + 1)[instance]
    return coloured


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
