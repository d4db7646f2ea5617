"""Which EGL device a scheduled worker renders on: the seam between Ray's GPU ids and EGL.

Ray gives a GPU task its GPU ids (``ray.get_gpu_ids()``) and sets
``CUDA_VISIBLE_DEVICES`` to them, so inside the task the GPU is CUDA device 0.
EGL enumerates every GPU whatever ``CUDA_VISIBLE_DEVICES`` says, and its order
need not match CUDA's, so the EGL device is found by asking which EGL device
is that CUDA device: ``glrec.context.egl_device_for_cuda(cuda_ordinal)``, the
GPU path's EGL<->CUDA matching. This module only maps the scheduler's view to
that question; a task with no GPU renders on EGL's default device (Mesa on a
CPU node).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence

from ..errors import DeviceError

__all__ = ["assigned_gpus", "egl_device_for_gpus"]

Matcher = Callable[[int], int]


def assigned_gpus() -> list[str]:
    """The GPU ids the scheduler gave this process: Ray's, else ``CUDA_VISIBLE_DEVICES``, else none."""
    try:
        import ray

        if ray.is_initialized():
            return [str(g) for g in ray.get_gpu_ids()]
    except ImportError:
        pass
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "").strip()
    return [g for g in visible.split(",") if g.strip() and g.strip() != "-1"] if visible else []


def _context_matcher() -> Matcher:
    from .. import context

    match = getattr(context, "egl_device_for_cuda", None)
    if match is None:
        raise DeviceError(
            "This worker was given a GPU, but this build of glrec has no EGL<->CUDA device matching "
            "(glrec.context.egl_device_for_cuda, from the GPU path), so it cannot tell which EGL device "
            "that GPU is. Install a glrec with the GPU path, or run the workers without GPUs (CPU tasks)."
        )
    return match  # type: ignore[no-any-return]


def egl_device_for_gpus(gpu_ids: Sequence[str | int], matcher: Matcher | None = None) -> int | None:
    """The EGL device index to render on for a task assigned ``gpu_ids`` (None: no GPU, EGL's default).

    With GPUs, CUDA device 0 of this process is the first assigned one (the scheduler
    restricted ``CUDA_VISIBLE_DEVICES``); ``matcher`` (default: the GPU path's
    ``egl_device_for_cuda``) names its EGL device.

    >>> egl_device_for_gpus([])  # a CPU task
    >>> egl_device_for_gpus(["1"], matcher=lambda cuda: 3)
    3
    """
    if not gpu_ids:
        return None
    match = matcher or _context_matcher()
    device = int(match(0))
    if device < 0:
        raise DeviceError(f"No EGL device is CUDA device 0 of this process (GPU {gpu_ids[0]} as assigned).")
    return device
