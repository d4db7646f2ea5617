"""Opening a handoff: the host readback, or a CUDA handoff (register / shared)."""

from __future__ import annotations

import logging

import moderngl

from ..convert import ConvertStage
from . import Handoff
from .cuda import CudaDevice
from .host import HostReadback

log = logging.getLogger("glrec")

# Measured on an H200 at 1080p NV12: overhead per frame 344 us mapping every frame,
# 104 us mapping 8 frames per call, 66 us mapping 16 (benchmarks/handoff.py).
REGISTER_BATCH = 16
# Shared handoff: frames per fence and whether GL and CUDA take turns per batch
# (glrec.interop.batching). 1 and False keep the behaviour measured at 733 frames/s
# render -> nvJPEG on an H200; benchmarks/gpu_ceiling.py measures the alternatives
# (pipe:recorder-b8, pipe:recorder-b8-phased, ...) so these can be set from a measurement.
SHARED_BATCH = 1
SHARED_PHASED = False


def cuda_handoff_kind(requested: str, ctx: moderngl.Context) -> str:
    """``register`` or ``shared`` for ``requested`` (``auto``: shared where GL can import CUDA memory)."""
    from .shared import EXTENSION

    if requested in ("register", "shared"):
        return requested
    return "shared" if EXTENSION in ctx.extensions else "register"


def open_handoff(
    kind: str,
    ctx: moderngl.Context,
    source: ConvertStage,
    device: CudaDevice | None,
    *,
    depth: int,
    consumer_slots: int,
) -> Handoff:
    """Open handoff ``kind`` (host, register, shared) with pool slots for ``consumer_slots`` held frames."""
    if kind == "host":
        return HostReadback(ctx, source, depth)
    assert device is not None, "a CUDA handoff needs a CUDA device"
    if kind == "shared":
        from .shared import SharedHandoff

        batch = SHARED_BATCH
        slots = (depth + 1) * batch + consumer_slots + 2
        return SharedHandoff(ctx, source, device, depth=depth, slots=slots, batch=batch, phased=SHARED_PHASED)
    from .register import RegisterHandoff

    return RegisterHandoff(source, device, batch=REGISTER_BATCH, pool_size=REGISTER_BATCH + consumer_slots + 2)
