"""One sample's files: its pass files and meta.json, its manifest line; encode threads per worker."""

from __future__ import annotations

import json
from typing import Any

from ..._children import usable_cores
from ...errors import SceneError
from ..rendering.sample import Sample
from ..spec.document import DatasetSpec
from .encode import encode_clip_pass, encode_pass

__all__ = ["encode_threads", "manifest_line", "meta_json", "sample_files"]


def sample_files(
    spec: DatasetSpec, sample: Sample, video: bytes | None = None, *, colour_later: bool = False
) -> dict[str, bytes]:
    """The files of one sample, in member order: colour, the other passes, ``meta.json``.

    ``colour_later``: leave the colour image out (a batched GPU encoder has it; the caller puts it first).
    """
    out = spec.output
    files: dict[str, bytes] = {}
    packed = sample.packed
    if spec.is_clip:
        assert video is not None, "clips carry their colour as video"
        files["rgb.mp4"] = video
        for name in out.passes:
            if name != "rgb":
                fname, data = encode_clip_pass(name, [f[name] for f in sample.frames], out, packed=packed)
                files[fname] = data
    else:
        if not colour_later:
            files[f"rgb.{out.rgb}"] = sample.colour[0]
        for name in out.passes:
            if name != "rgb":
                fname, data = encode_pass(name, sample.frames[0][name], out, packed=packed)
                files[fname] = data
    files["meta.json"] = (meta_json(sample.meta, sample.key) + "\n").encode()
    return files


def meta_json(meta: dict[str, Any], key: str) -> str:
    """``meta`` as strict JSON: a NaN or infinity (which no JSON reader takes) is an error, not a broken file."""
    try:
        return json.dumps(meta, allow_nan=False)
    except ValueError:
        raise SceneError(
            f"Sample {key}: meta.json would hold NaN or infinity (from the scene's parameters or annotations), "
            "which JSON cannot; check the [params] values."
        ) from None


def manifest_line(
    sample: Sample, shard: int, where: str, render: dict[str, Any], digests: dict[str, dict[str, Any]]
) -> dict[str, Any]:
    """One manifest line: what the sample is (index, key, seed, sampled params), where its files are, and each
    file's size and digest (``digests``: :func:`glrec.dataset.files.digests.file_digests`)."""
    return {
        "index": sample.index,
        "key": sample.key,
        "seed": sample.seed,
        "params": sample.params,
        "shard": shard,
        "location": where,
        "files": digests,
        **render,
    }


def encode_threads() -> int:
    """Threads that encode samples' files beside the GL thread: one per usable core, at most 8.

    PNG (FFmpeg's encoder through PyAV) and SHA-256 release the GIL, so these
    threads encode in parallel with each other and with the next sample's draw.
    """
    return max(1, min(8, usable_cores()))


Encoded = tuple[dict[str, bytes], dict[str, dict[str, Any]]]
