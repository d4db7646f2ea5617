"""Which EGL device a scheduled worker renders on: the seam between Ray's GPU ids and EGL.

Ray gives a GPU task its GPU ids (``ray.get_gpu_ids()``) and sets
``CUDA_VISIBLE_DEVICES`` to them, so inside the task the GPU is CUDA device 0.
EGL enumerates every GPU whatever ``CUDA_VISIBLE_DEVICES`` says, and its order
need not match CUDA's, so the EGL device is found by asking which EGL device
is that CUDA device, with the GPU path's matching (:mod:`glrec.gl.devices`: PCI
bus ids, else ``EGL_CUDA_DEVICE_NV``). This module only maps the scheduler's
view to that question; a task with no GPU renders on EGL's default device
(Mesa on a CPU node).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

__all__ = ["egl_device_for_gpus", "match_cuda_device"]

Matcher = Callable[[int], int]


def match_cuda_device(cuda_ordinal: int) -> int:
    """The EGL device index that is CUDA device ``cuda_ordinal`` of this process (glrec.gl.devices' matching)."""
    from ..cuda.driver import device_info
    from ..gl.devices import egl_devices, match_egl_device

    return match_egl_device(egl_devices(), cuda_ordinal, device_info(cuda_ordinal).pci_bus_id)


def egl_device_for_gpus(gpu_ids: Sequence[str | int], matcher: Matcher | None = None) -> int | None:
    """The EGL device index to render on for a task assigned ``gpu_ids`` (None: no GPU, EGL's default).

    With GPUs, CUDA device 0 of this process is the first assigned one (the scheduler
    restricted ``CUDA_VISIBLE_DEVICES``); ``matcher`` (default :func:`match_cuda_device`)
    names its EGL device, or raises DeviceError when none is.

    >>> egl_device_for_gpus([])  # a CPU task
    >>> egl_device_for_gpus(["1"], matcher=lambda cuda: 3)
    3
    """
    if not gpu_ids:
        return None
    return int((matcher or match_cuda_device)(0))
