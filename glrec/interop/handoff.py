"""Opening a handoff: the host readback, or a CUDA handoff (register / shared)."""

from __future__ import annotations

import logging

import moderngl

from ..convert import ConvertStage
from ..cuda.driver import CudaDevice
from .host import HostReadback
from .protocol import Handoff

log = logging.getLogger("glrec")

# Measured on an H200 at 1080p NV12: overhead per frame 344 us mapping every frame,
# 104 us mapping 8 frames per call, 66 us mapping 16 (benchmarks/handoff.py).
REGISTER_BATCH = 16
# Shared handoff: frames per fence and whether GL and CUDA take turns per batch
# (glrec.interop.batching). The GPU time-slices between a GL and a CUDA context: measured
# on an H200 (benchmarks/gpu_ceiling.py, 2026-12-01), nvJPEG alone encodes 4,678 frames/s
# at 1080p but 573 while another thread renders GL nonstop, and the Recorder went from
# 636 frames/s (a fence per frame) to 743 with turns of 32 frames in the same run
# (benchmarks/results/h200-2026-12-01/gpu_ceiling_images.json). So recordings take
# turns in batches of up to SHARED_BATCH frames, capped at SHARED_BATCH_BYTES of frames
# per batch; live ones (latency first) hand each frame over as soon as it is written.
# None: decide per recording (shared_batching); an int / bool: fixed, for measurements.
# Turns of 64 frames wrote 4-8 % more frames/s than 32 at 1080p in three interleaved rounds on the
# H200 (2026-12-03, results/..._seventh-d-turns-*; about even in ..._ninth-a-turns-*), for twice the
# GPU memory (at 1080p RGB 398 MB a turn); the default since the ninth session, whose GPU tier ran it.
SHARED_BATCH: int | None = None
SHARED_PHASED: bool | None = None
SHARED_BATCH_MAX = 64
SHARED_BATCH_BYTES = 512 << 20


def shared_batching(frame_bytes: int, *, live: bool) -> tuple[int, bool]:
    """(frames per batch, phased) for the shared handoff; see SHARED_BATCH above.

    >>> shared_batching(1920 * 1080 * 3, live=False), shared_batching(3840 * 2160 * 3, live=False)
    ((64, True), (21, True))
    >>> shared_batching(1920 * 1080 * 3, live=True)
    (1, False)
    """
    batch = 1 if live else max(1, min(SHARED_BATCH_MAX, SHARED_BATCH_BYTES // max(1, frame_bytes)))
    if SHARED_BATCH is not None:
        batch = SHARED_BATCH
    phased = batch > 1 if SHARED_PHASED is None else SHARED_PHASED
    return batch, phased


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
    live: bool = False,
) -> Handoff:
    """Open handoff ``kind`` (host, register, shared) with pool slots for ``consumer_slots`` held frames.

    ``live``: frames go out as soon as they are written (no batching), for latency.
    """
    if kind == "host":
        return HostReadback(ctx, source, depth)
    assert device is not None, "a CUDA handoff needs a CUDA device"
    if kind == "shared":
        from .shared import SharedHandoff

        batch, phased = shared_batching(source.layout.nbytes, live=live)
        # Phased: one batch being written while the consumer holds the one before it.
        slots = (2 if phased else depth + 1) * batch + consumer_slots + 2
        return SharedHandoff(ctx, source, device, depth=depth, slots=slots, batch=batch, phased=phased)
    from .register import RegisterHandoff

    return RegisterHandoff(source, device, batch=REGISTER_BATCH, pool_size=REGISTER_BATCH + consumer_slots + 2)
