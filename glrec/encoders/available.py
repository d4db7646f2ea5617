"""Whether the GPU encoders work on this machine, and why not: asked by the plan, ``glrec info`` and doctor."""

from __future__ import annotations

import functools
from typing import Any

from ..errors import GlrecError


@functools.lru_cache(maxsize=16)
def _nvenc_problem_cached(codec: str, ordinal: int, context: int) -> str | None:
    from .nvenc import explain_nvenc_error, load_pynvvideocodec

    try:
        nvc = load_pynvvideocodec()
    except GlrecError as exc:
        return str(exc)
    try:
        # A small host-input session: enough to learn whether this GPU has an encoder for the codec.
        enc = nvc.CreateEncoder(256, 256, "NV12", True, codec=codec, gpuid=ordinal, cudacontext=context)
        del enc
    except Exception as exc:
        return explain_nvenc_error(exc)[1]
    return None


def nvenc_problem(codec: str, device: Any) -> str | None:
    """Why NVENC cannot encode ``codec`` on ``device`` (None when a session opens). Cached per process."""
    device.bind()
    return _nvenc_problem_cached(codec, device.ordinal, device.context_handle)


def nvenc_status(codecs: tuple[str, ...] = ("h264",), ordinal: int = 0) -> dict[str, str | None]:
    """:func:`nvenc_problem` per codec on CUDA device ``ordinal``, opening and releasing the device."""
    from ..interop.cuda import CudaDevice

    device = CudaDevice.open(ordinal)
    try:
        return {codec: nvenc_problem(codec, device) for codec in codecs}
    finally:
        device.release()


def nvjpeg_problem() -> str | None:
    from .nvjpeg import load_nvimgcodec

    try:
        load_nvimgcodec()
    except GlrecError as exc:
        return str(exc)
    return None
