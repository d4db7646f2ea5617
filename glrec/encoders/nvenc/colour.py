"""Which RGB -> YUV conversion NVENC applied to rgba (ABGR) input, measured from a decoded clip.

NVENC has no setting for the matrix or range it uses on RGB input, and NVIDIA
does not document them; glrec tags such streams as
:data:`~glrec.encoders.nvenc.encoder.RGB_INPUT_COLOUR`. ``glrec doctor`` on a GPU with
NVENC encodes colour bars from rgba input, decodes them, and asks
:func:`rank_conversions` which candidate conversion of the same RGB frames
predicts the decoded planes best: that is the measurement the tag rests on.
"""

from __future__ import annotations

import numpy as np

from ...colour import ColourSpec

CANDIDATES: tuple[ColourSpec, ...] = tuple(ColourSpec(m, r) for m in ("bt601", "bt709") for r in ("limited", "full"))


def _psnr(mse: float) -> float:
    return float("inf") if mse == 0 else float(10 * np.log10(255.0**2 / mse))


def _predict(spec: ColourSpec, rgb: np.ndarray, chroma_shape: tuple[int, int]) -> list[np.ndarray]:
    yuv = spec.to_yuv(rgb.astype(np.float64) / 255.0)
    planes = [yuv[..., 0]]
    for c in (1, 2):
        plane = yuv[..., c]
        if chroma_shape != plane.shape:  # 4:2:0: the mean of each 2x2 block
            h, w = chroma_shape
            plane = plane[: 2 * h, : 2 * w].reshape(h, 2, w, 2).mean(axis=(1, 3))
        planes.append(plane)
    return [np.clip(np.floor(p + 0.5), 0, 255) for p in planes]


def rank_conversions(
    decoded: list[list[np.ndarray]], reference_rgb: list[np.ndarray]
) -> list[tuple[ColourSpec, float]]:
    """Candidate conversions with the PSNR (dB, over Y, U and V of every frame) of their prediction, best first.

    ``decoded``: per frame, the decoded Y, U, V planes (chroma full or half size);
    ``reference_rgb``: per frame, the RGB picture that went in, ``(h, w, 3)`` uint8.
    """
    if len(decoded) != len(reference_rgb) or not decoded:
        raise ValueError(f"{len(decoded)} decoded frames for {len(reference_rgb)} references; need equal, non-zero")
    scores = []
    for spec in CANDIDATES:
        se, n = 0.0, 0
        for planes, rgb in zip(decoded, reference_rgb, strict=True):
            for got, want in zip(planes, _predict(spec, rgb, planes[1].shape), strict=True):
                se += float(np.sum((got.astype(np.float64) - want) ** 2))
                n += got.size
        scores.append((spec, _psnr(se / n)))
    return sorted(scores, key=lambda item: -item[1])


def describe(ranking: list[tuple[ColourSpec, float]]) -> str:
    """One line: the best conversion and how far the runner-up trails it."""
    (best, db), (second, db2) = ranking[0], ranking[1]
    return (f"NVENC converted rgba input as {best.matrix} {best.range} (YUV PSNR {db:.1f} dB; "
            f"next best {second.matrix} {second.range}, {db2:.1f} dB)")  # fmt: skip
