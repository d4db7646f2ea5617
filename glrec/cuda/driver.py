"""CUDA through cuda-python's driver bindings, imported lazily.

Everything CUDA in glrec goes through :func:`check` (or :func:`call`, which
names the call for it): cuda-python returns ``(err, *values)`` tuples, and
one checkpoint turns them into values or a :class:`~glrec.errors.CudaError`
that names the call and the driver's words. glrec uses the driver API with the
device's *primary* context, the one the CUDA runtime, PyTorch and CuPy use, so
device buffers glrec hands out interoperate with them without copies.

Without cuda-python (``pip install glrec[cuda]``) or without an NVIDIA driver,
:func:`cuda_problem` says why, and glrec records on the CPU path.
"""

from __future__ import annotations

import functools
import logging
import threading
from dataclasses import dataclass
from typing import Any

from ..errors import CudaError, DeviceError

log = logging.getLogger("glrec")

INSTALL_HINT = "pip install glrec[cuda] (cuda-python) on a machine with an NVIDIA driver"
#: What a machine without NVIDIA's driver lacks, in the words every message uses (a clause: no full stop).
NO_DRIVER = "the NVIDIA driver (libcuda.so.1) is not installed"


def driver_installed() -> bool:
    """Whether NVIDIA's driver library loads here, asked without cuda-python (which needs it)."""
    import ctypes

    try:
        ctypes.CDLL("libcuda.so.1")
    except OSError:
        return False
    return True


@functools.lru_cache(maxsize=1)
def driver() -> Any:
    """The ``cuda.bindings.driver`` module, with ``cuInit`` done; raises CudaError if unusable."""
    try:
        from cuda.bindings import driver as cu
    except ImportError:
        try:  # cuda-python < 12.6 spells it cuda.cuda
            from cuda import cuda as cu  # type: ignore[no-redef]
        except ImportError as exc:
            # Without the driver there is nothing cuda-python could do: that is the news, not the package.
            if not driver_installed():
                raise CudaError(NO_DRIVER) from None
            raise CudaError(f"cuda-python is not installed ({exc}); pip install glrec[cuda]") from None
    try:
        err = cu.cuInit(0)[0]
    except Exception as exc:  # the bindings raise when libcuda.so itself is missing
        log.debug("cuda-python could not load the driver: %s", exc)
        raise CudaError(NO_DRIVER) from None  # a clause: callers go on after it ("...: {problem}. Use ...")
    if int(err) != 0:
        raise CudaError(f"cuInit failed: {_error_text(cu, err)}. Is an NVIDIA GPU visible (nvidia-smi)?")
    return cu


def _error_text(cu: Any, err: Any) -> str:
    try:
        name = cu.cuGetErrorName(err)[1]
        text = cu.cuGetErrorString(err)[1]
        name = name.decode() if isinstance(name, bytes) else str(name)
        text = text.decode() if isinstance(text, bytes) else str(text)
        return f"{name} ({int(err)}): {text}"
    except Exception:
        return f"CUresult {int(err)}"


def check(result: tuple[Any, ...], call: str) -> Any:
    """Turn a cuda-python ``(err, *values)`` tuple into its value(s), or raise CudaError naming ``call``.

    Returns ``None`` for no values, the value for one, a tuple for several.

    >>> check(driver().cuDeviceGetCount(), "cuDeviceGetCount")  # doctest: +SKIP
    1
    """
    err, *values = result
    if int(err) != 0:
        raise CudaError(f"{call} failed: {_error_text(driver(), err)}")
    if not values:
        return None
    return values[0] if len(values) == 1 else tuple(values)


def call(name: str, *args: Any) -> Any:
    """Call the driver function ``name`` and :func:`check` its result."""
    return check(getattr(driver(), name)(*args), name)


def cuda_problem() -> str | None:
    """Why CUDA cannot be used here (None when it can): missing driver, package or GPU, as one clause."""
    try:
        if call("cuDeviceGetCount") < 1:
            return "the NVIDIA driver reports no CUDA device (check CUDA_VISIBLE_DEVICES)"
    except CudaError as exc:
        return str(exc).rstrip(".")  # a clause callers end (no doubled full stop)
    return None


def cuda_brief(problem: str) -> str:
    """:func:`cuda_problem`'s answer in a few words, for a summary line: ``no NVIDIA GPU`` where it is that."""
    if problem.startswith(NO_DRIVER) or "no CUDA device" in problem:
        return "no NVIDIA GPU"
    if problem.startswith("cuda-python is not installed"):
        return "cuda-python not installed"
    return "CUDA unusable"


def cuda_remedy(problem: str) -> str:
    """What to do about :func:`cuda_problem`'s answer, for the GPU path (``glrec doctor``)."""
    if problem.startswith(NO_DRIVER):
        extra = "" if _cuda_python_installed() else ", then pip install glrec[cuda]"
        return f"for the GPU path: a machine with an NVIDIA GPU and its driver{extra}; the CPU path needs neither"
    if problem.startswith("cuda-python is not installed"):
        return "for the GPU path: pip install glrec[cuda]"
    return "for the GPU path: check the GPU with nvidia-smi (and CUDA_VISIBLE_DEVICES)"


def _cuda_python_installed() -> bool:
    try:
        import cuda.bindings  # the package alone: loads no driver
    except ImportError:
        try:  # cuda-python < 12.6
            from cuda import cuda  # type: ignore[attr-defined]  # noqa: F401
        except ImportError:
            return False
    return True


@dataclass(frozen=True)
class DeviceInfo:
    """What CUDA says about one visible device. ``ordinal`` counts visible devices only."""

    ordinal: int
    name: str
    pci_bus_id: str  # domain:bus:device.function, lower case, as in /sys/bus/pci/devices
    uuid: str
    memory: int


def device_info(ordinal: int) -> DeviceInfo:
    """Describe the visible CUDA device ``ordinal`` (raises DeviceError if there is none)."""
    count = call("cuDeviceGetCount")
    if not 0 <= ordinal < count:
        raise DeviceError(
            f"CUDA device {ordinal} does not exist: {count} device(s) are visible to this process "
            f"(CUDA_VISIBLE_DEVICES renumbers them from 0). Use cuda_device 0..{count - 1}."
        )
    dev = call("cuDeviceGet", ordinal)
    name = call("cuDeviceGetName", 256, dev)
    name = (name.decode() if isinstance(name, bytes) else str(name)).split("\x00", 1)[0]
    bus = call("cuDeviceGetPCIBusId", 64, dev)
    bus = (bus.decode() if isinstance(bus, bytes) else str(bus)).split("\x00", 1)[0].lower()
    uuid = bytes(call("cuDeviceGetUuid", dev).bytes)
    return DeviceInfo(ordinal, name, bus, uuid.hex(), int(call("cuDeviceTotalMem", dev)))


def visible_devices() -> list[DeviceInfo]:
    """Every CUDA device visible to this process, in ordinal order."""
    return [device_info(i) for i in range(call("cuDeviceGetCount"))]


def driver_version() -> str:
    """The CUDA version the driver supports, e.g. ``'13.0'``."""
    v = call("cuDriverGetVersion")
    return f"{v // 1000}.{v % 1000 // 10}"


class CudaDevice:
    """A CUDA device with its retained primary context and one stream for glrec's copies.

    Make it with :meth:`open`. :meth:`bind` makes the context current on the
    calling thread (each thread needs it once before CUDA calls); ``release()``
    is safe twice.

    >>> dev = CudaDevice.open(0)  # doctest: +SKIP
    >>> dev.info.name  # doctest: +SKIP
    'NVIDIA H200'
    """

    def __init__(self, info: DeviceInfo, dev: Any, context: Any, stream: Any) -> None:
        self.info = info
        self._dev = dev
        self.context = context
        self.stream = stream
        self._lock = threading.Lock()
        self._released = False

    @classmethod
    def open(cls, ordinal: int = 0) -> CudaDevice:
        info = device_info(ordinal)
        dev = call("cuDeviceGet", ordinal)
        context = call("cuDevicePrimaryCtxRetain", dev)
        call("cuCtxSetCurrent", context)
        # Non-blocking: glrec's copies must not serialise with the legacy default stream
        # other libraries in the process may be using.
        stream = call("cuStreamCreate", driver().CUstream_flags.CU_STREAM_NON_BLOCKING)
        log.info("CUDA device %d: %s (PCI %s), primary context", ordinal, info.name, info.pci_bus_id)
        return cls(info, dev, context, stream)

    @property
    def ordinal(self) -> int:
        return self.info.ordinal

    @property
    def stream_handle(self) -> int:
        """The stream as an integer (``cudaStream_t``), for libraries that take one."""
        return int(self.stream)

    @property
    def context_handle(self) -> int:
        return int(self.context)

    def bind(self) -> None:
        """Make this device's primary context current on the calling thread."""
        if self._released:
            raise CudaError("This CUDA device was released; create a new recorder.")
        call("cuCtxSetCurrent", self.context)

    def synchronize(self) -> None:
        """Wait for everything queued on glrec's stream."""
        self.bind()
        call("cuStreamSynchronize", self.stream)

    def event(self) -> Any:
        """A new event without timing (cheaper to record and wait for)."""
        return call("cuEventCreate", driver().CUevent_flags.CU_EVENT_DISABLE_TIMING)

    def release(self) -> None:
        with self._lock:
            if self._released:
                return
            self._released = True
        try:
            call("cuCtxSetCurrent", self.context)
            call("cuStreamSynchronize", self.stream)
            call("cuStreamDestroy", self.stream)
        finally:
            call("cuDevicePrimaryCtxRelease", self._dev)

    def __repr__(self) -> str:
        return f"<CudaDevice {self.info.ordinal}: {self.info.name} PCI {self.info.pci_bus_id}>"
