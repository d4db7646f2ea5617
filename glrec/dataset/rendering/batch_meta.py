"""What a sample's ``meta.json`` holds (:func:`sample_meta`, :func:`frame_meta`), a streamed batch's arrays made
from its samples' meta (cameras, visible boxes), and errors named by sample."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ...errors import GlrecError, SceneError

if TYPE_CHECKING:
    from ..spec.document import DatasetSpec
    from .sample import Sample

__all__ = ["add_visible", "camera_arrays", "frame_meta", "indexed", "object_arrays", "sample_meta"]


def indexed(exc: BaseException, index: int) -> BaseException:
    """``exc`` as one GlrecError that names the sample (the same class when it is glrec's)."""
    if isinstance(exc, GlrecError):
        if re.search(rf"\bsample 0*{index}\b", str(exc), re.IGNORECASE):
            return exc
        try:
            new = type(exc)(f"Sample {index}: {exc}")
        except TypeError:
            return exc
        new.__cause__ = exc.__cause__
        return new
    new = SceneError(f"Sample {index}: {type(exc).__name__}: {exc}")
    new.__cause__ = exc
    return new


def camera_arrays(metas: Sequence[dict[str, Any]], clip: bool) -> dict[str, np.ndarray]:
    def cams(m: dict[str, Any]) -> list[Any]:
        return [f.get("camera") for f in m.get("frames", [])] if clip else [m.get("camera")]

    per = [cams(m) for m in metas]
    if not per or any(c is None or "K" not in c for p in per for c in p):
        return {}
    out = {}
    for name in ("K", "world_to_camera"):
        values = np.asarray([[c[name] for c in p] for p in per], np.float64)
        out[name] = values if clip else values[:, 0]
    return out


def object_arrays(metas: Sequence[dict[str, Any]]) -> dict[str, list[np.ndarray]]:
    if not metas or any(m.get("objects") is None for m in metas):
        return {}
    boxes, labels, instances = [], [], []
    for m in metas:
        seen = [o for o in m["objects"] if o.get("visible_bbox") is not None]
        boxes.append(np.asarray([o["visible_bbox"] for o in seen], np.int64).reshape(-1, 4))
        labels.append(np.asarray([o.get("class", 0) for o in seen], np.int64))
        instances.append(np.asarray([o.get("instance", 0) for o in seen], np.int64))
    return {"boxes": boxes, "labels": labels, "instances": instances}


def sample_meta(spec: DatasetSpec, sample: Sample, in_effect: Mapping[str, Any],
                frames_meta: list[dict[str, Any]]) -> dict[str, Any]:  # fmt: skip
    """What ``meta.json`` holds for ``sample``: its identity, the scene's params in effect under the spec's,
    and its frames' metadata (images: the one frame's, merged in)."""
    meta: dict[str, Any] = {
        "key": sample.key,
        "index": sample.index,
        "seed": sample.seed,
        "scene": spec.scene,
        "size": list(spec.size),
        "params": {**in_effect, **sample.params},
    }
    if spec.is_clip:
        meta.update(fps=spec.fps, frames=frames_meta)
    else:
        meta.update(frames_meta[0])
    return meta


def frame_meta(
    t: float, annotations: Mapping[str, Any] | None, visible: Mapping[int, tuple[list[int], int]] | None
) -> dict[str, Any]:
    """One frame's metadata: its time, the scene's annotations (if it annotates) and each object's visible box."""
    meta: dict[str, Any] = {"t": t}
    if annotations is not None:
        meta.update(annotations)
    add_visible(meta, visible)
    return meta


def add_visible(meta: dict[str, Any], visible: Mapping[int, tuple[list[int], int]] | None) -> None:
    """Each object of a frame's ``meta`` given its ``visible_bbox`` and ``visible_pixels`` from ``visible``
    (nothing where there are no boxes or the frame lists no objects)."""
    if visible is None or meta.get("objects") is None:
        return
    for obj in meta["objects"]:
        box, pixels = visible.get(int(obj.get("instance", 0)), (None, 0))
        obj["visible_bbox"] = box
        obj["visible_pixels"] = pixels
