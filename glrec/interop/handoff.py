"""Choosing and opening a handoff: host readback, or a CUDA handoff (register / shared).

All three share one interface: ``submit(index) -> frames``, ``drain() -> frames``,
``release()``, after the convert stage has run. Host frames are
:class:`~glrec.frame.HostFrame`; CUDA frames are
:class:`~glrec.interop.pool.DeviceFrame`.
"""

from __future__ import annotations

import logging
from typing import Any, Literal

import moderngl

from ..errors import ConfigError
from .cuda import CudaDevice

log = logging.getLogger("glrec")

HandoffName = Literal["auto", "host", "register", "shared"]
HANDOFFS: tuple[str, ...] = ("auto", "host", "register", "shared")


def check_handoff(name: str) -> str:
    if name not in HANDOFFS:
        raise ConfigError(f"Unknown handoff {name!r}. Valid: {', '.join(sorted(HANDOFFS))}.")
    return name


def cuda_handoff_kind(requested: str, ctx: moderngl.Context) -> str:
    """``register`` or ``shared`` for ``requested`` (``auto``: shared where GL can import CUDA memory)."""
    from .shared import EXTENSION

    if requested in ("register", "shared"):
        return requested
    return "shared" if EXTENSION in ctx.extensions else "register"


def open_cuda_handoff(
    kind: str, ctx: moderngl.Context, source: Any, device: CudaDevice, *, depth: int, consumer_slots: int
) -> Any:
    """Open the ``register`` or ``shared`` handoff with enough pool slots for ``consumer_slots`` held frames."""
    if kind == "shared":
        from .shared import SharedHandoff

        return SharedHandoff(ctx, source, device, depth=depth, slots=depth + consumer_slots + 2)
    from .register import RegisterHandoff

    # Measured on an H200 at 1080p NV12: overhead per frame 344 us mapping every frame,
    # 104 us mapping 8 frames per call, 66 us mapping 16 (benchmarks/handoff.py).
    batch = 16
    return RegisterHandoff(source, device, batch=batch, pool_size=batch + consumer_slots + 2)
