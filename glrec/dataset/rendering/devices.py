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

from ...errors import ConfigError

__all__ = ["check_egl_device", "egl_device_for_gpus", "match_cuda_device"]

Matcher = Callable[[int], int]


def match_cuda_device(cuda_ordinal: int) -> int:
    """The EGL device index that is CUDA device ``cuda_ordinal`` of this process (glrec.gl.devices' matching)."""
    from ...cuda.driver import device_info
    from ...gl.devices import egl_devices, match_egl_device

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


def check_egl_device(device: object, what: str = "device") -> None:
    """Raise ConfigError unless ``device`` is None or an EGL device index this machine has.

    Checked where the dataset front door is called, so a wrong ``--device`` is
    one line before any folder is touched, not an error of sample 0 in every worker.
    """
    if device is None:
        return
    if isinstance(device, bool) or not isinstance(device, int) or device < 0:
        raise ConfigError(f"{what} {device!r} must be an EGL device index: a whole number of 0 or more, e.g. 0.")
    from ...gl.devices import egl_devices

    count = len(egl_devices())
    if count and device >= count:  # no count (EGL cannot list its devices): the context says
        raise ConfigError(
            f"{what} {device} is not an EGL device of this machine: EGL lists {count} (0..{count - 1}); "
            "'glrec doctor' lists them."
        )
