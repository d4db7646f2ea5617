"""Which EGL device renders for which CUDA device.

On a multi-GPU machine EGL's device order and CUDA's ordinals need not agree
(CUDA_VISIBLE_DEVICES, set by hand or by Ray, renumbers CUDA devices but not
EGL ones). Rendering on one GPU and encoding on another either fails at the
CUDA–GL interop call or silently crosses the PCIe bus, so glrec matches the
two explicitly and refuses a mismatch:

1. EGL devices are listed with ``eglQueryDevicesEXT``; for each, the NVIDIA
   driver reports the CUDA device it is (``EGL_CUDA_DEVICE_NV``) and the DRM
   node, whose PCI address comes from sysfs.
2. The CUDA device's PCI bus id is compared with each EGL device's; where no
   PCI address is known, ``EGL_CUDA_DEVICE_NV`` is compared with the ordinal.
3. After the GL context exists, ``cuGLGetDevices`` asks the driver which CUDA
   devices run it; the recorder's device must be among them.
"""

from __future__ import annotations

import ctypes
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import DeviceError

log = logging.getLogger("glrec")

EGL_EXTENSIONS = 0x3055
EGL_CUDA_DEVICE_NV = 0x323A  # EGL_NV_device_cuda
EGL_DRM_DEVICE_FILE_EXT = 0x3233  # EGL_EXT_device_drm
EGL_RENDERER_EXT = 0x335F  # EGL_EXT_device_query_name


@dataclass(frozen=True)
class EglDevice:
    """One EGL device: its index (what moderngl's ``device_index`` takes) and what it says about itself."""

    index: int
    extensions: str
    cuda_device: int | None  # EGL_CUDA_DEVICE_NV, NVIDIA only
    drm_file: str | None
    pci_bus_id: str | None
    renderer: str | None

    @property
    def is_nvidia(self) -> bool:
        return "EGL_NV_device_cuda" in self.extensions

    def describe(self) -> str:
        cuda = "-" if self.cuda_device is None else str(self.cuda_device)
        what = self.renderer or ("NVIDIA" if self.is_nvidia else "software" if self.drm_file is None else "GPU")
        return f"EGL {self.index}: {what}, CUDA {cuda}, PCI {self.pci_bus_id or '-'}, {self.drm_file or 'no DRM node'}"


def _pci_of_drm(drm_file: str) -> str | None:
    """``/dev/dri/card1`` -> ``0000:3b:00.0`` through sysfs (None where sysfs does not say)."""
    try:
        link = Path("/sys/class/drm") / Path(drm_file).name / "device"
        target = os.path.realpath(link)
    except OSError:
        return None
    name = Path(target).name.lower()
    return name if name.count(":") == 2 and "." in name else None


def egl_devices() -> list[EglDevice]:
    """List EGL devices through EGL_EXT_device_enumeration (empty if EGL lacks it)."""
    try:
        egl = ctypes.CDLL("libEGL.so.1")
    except OSError:
        return []
    egl.eglGetProcAddress.restype = ctypes.c_void_p
    egl.eglGetProcAddress.argtypes = [ctypes.c_char_p]

    def fn(name: str, restype: Any, *args: Any) -> Any:
        ptr = egl.eglGetProcAddress(name.encode())
        return ctypes.CFUNCTYPE(restype, *args)(ptr) if ptr else None

    query_devices = fn("eglQueryDevicesEXT", ctypes.c_uint, ctypes.c_int, ctypes.POINTER(ctypes.c_void_p),
                       ctypes.POINTER(ctypes.c_int))  # fmt: skip
    query_string = fn("eglQueryDeviceStringEXT", ctypes.c_char_p, ctypes.c_void_p, ctypes.c_int)
    query_attrib = fn("eglQueryDeviceAttribEXT", ctypes.c_uint, ctypes.c_void_p, ctypes.c_int,
                      ctypes.POINTER(ctypes.c_ssize_t))  # fmt: skip
    if query_devices is None or query_string is None or query_attrib is None:
        return []
    n = ctypes.c_int(0)
    if not query_devices(0, None, ctypes.byref(n)) or n.value <= 0:
        return []
    handles = (ctypes.c_void_p * n.value)()
    if not query_devices(n.value, handles, ctypes.byref(n)):
        return []
    out = []
    for i in range(n.value):
        h = handles[i]
        ext = (query_string(h, EGL_EXTENSIONS) or b"").decode(errors="replace")
        cuda = None
        if "EGL_NV_device_cuda" in ext:
            value = ctypes.c_ssize_t(-1)
            if query_attrib(h, EGL_CUDA_DEVICE_NV, ctypes.byref(value)) and value.value >= 0:
                cuda = int(value.value)
        drm = None
        if "EGL_EXT_device_drm" in ext:
            raw = query_string(h, EGL_DRM_DEVICE_FILE_EXT)
            drm = raw.decode() if raw else None
        renderer = None
        if "EGL_EXT_device_query_name" in ext:
            raw = query_string(h, EGL_RENDERER_EXT)
            renderer = raw.decode(errors="replace") if raw else None
        out.append(EglDevice(i, ext, cuda, drm, _pci_of_drm(drm) if drm else None, renderer))
    return out


def match_egl_device(
    devices: list[EglDevice], cuda_ordinal: int, cuda_pci: str | None, requested: int | None = None
) -> int:
    """Return the index of the EGL device that is CUDA device ``cuda_ordinal`` (PCI ``cuda_pci``).

    ``requested`` is an EGL index the caller asked for; it must be that device.
    Raises DeviceError naming every EGL device when none (or the wrong one) matches.

    >>> devs = [EglDevice(0, "EGL_NV_device_cuda", 1, None, "0000:3b:00.0", None),
    ...         EglDevice(1, "EGL_NV_device_cuda", 0, None, "0000:86:00.0", None)]
    >>> match_egl_device(devs, 0, "0000:86:00.0")
    1
    """
    pci = cuda_pci.lower() if cuda_pci else None

    def is_match(d: EglDevice) -> bool:
        if pci and d.pci_bus_id:
            return d.pci_bus_id == pci
        return d.cuda_device is not None and d.cuda_device == cuda_ordinal

    matches = [d.index for d in devices if is_match(d)]
    listing = "; ".join(d.describe() for d in devices) or "none (EGL_EXT_device_enumeration missing?)"
    if requested is not None:
        if requested in matches:
            return requested
        raise DeviceError(
            f"EGL device {requested} is not CUDA device {cuda_ordinal} (PCI {cuda_pci or '?'}); rendering there "
            f"and encoding on CUDA device {cuda_ordinal} cannot share memory. EGL devices: {listing}. "
            + (f"Use device={matches[0]} or leave device unset." if matches else "No EGL device matches it.")
        )
    if not matches:
        raise DeviceError(
            f"No EGL device is CUDA device {cuda_ordinal} (PCI {cuda_pci or '?'}). EGL devices: {listing}. "
            "Check that the NVIDIA EGL vendor library is installed (__EGL_VENDOR_LIBRARY_FILENAMES) and that "
            "CUDA_VISIBLE_DEVICES names the GPU you mean."
        )
    return matches[0]


def verify_gl_device(cuda_ordinal: int) -> bool | None:
    """Ask CUDA which devices run the current GL context: True/False, or None where the driver cannot say."""
    from ..cuda.driver import call, driver

    cu = driver()
    try:
        count, devs = call("cuGLGetDevices", 8, cu.CUGLDeviceList.CU_GL_DEVICE_LIST_ALL)
    except Exception as exc:  # EGL contexts are not always supported by cuGLGetDevices
        log.debug("cuGLGetDevices could not check the GL context's device: %s", exc)
        return None
    ordinals = [int(d) for d in list(devs)[: int(count)]]
    return cuda_ordinal in ordinals
