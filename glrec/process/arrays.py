"""What the process function holds: the slot's memory as a numpy, torch or CuPy array, and back.

An adapter wraps a slot region once (no per-frame allocation), runs the
function on glrec's CUDA stream (torch and CuPy see it as their current
stream, so their kernels are ordered with glrec's copies and no
synchronisation is needed inside the function), checks what the function
returned and copies it into the slot unless it already is the slot.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import ProcessOutputError, ProcessUnavailableError

if TYPE_CHECKING:
    from ..cuda.driver import CudaDevice

TORCH_HINT = "pip install glrec[torch] (on the CUDA path it must be a CUDA build of PyTorch)"
CUPY_HINT = "pip install cupy-cuda12x (or cupy-cuda13x, matching the driver's CUDA)"


def import_torch() -> Any:
    try:
        import torch
    except ImportError as exc:
        raise ProcessUnavailableError(
            f"array 'torch' needs PyTorch, which is not installed ({exc}); {TORCH_HINT}."
        ) from None
    return torch


def import_cupy() -> Any:
    try:
        import cupy
    except ImportError as exc:
        raise ProcessUnavailableError(
            f"array 'cupy' needs CuPy, which is not installed ({exc}); {CUPY_HINT}."
        ) from None
    return cupy


def _describe(value: object) -> str:
    shape = getattr(value, "shape", None)
    dtype = getattr(value, "dtype", None)
    device = getattr(value, "device", None)
    parts = [type(value).__module__.split(".")[0] + "." + type(value).__name__]
    if shape is not None:
        parts.append(f"shape {tuple(shape)}")
    if dtype is not None:
        parts.append(f"dtype {dtype}")
    if device is not None:
        parts.append(f"device {device}")
    return ", ".join(parts)


def _on_cuda(value: object) -> bool:
    device = getattr(value, "device", None)
    return hasattr(value, "__cuda_array_interface__") or getattr(device, "type", None) == "cuda"


def bad_frame(label: str, value: object, shape: tuple[int, ...], where: str, fix: str) -> ProcessOutputError:
    return ProcessOutputError(
        f"{label} returned {_describe(value)}; expected a frame of shape {shape}, dtype uint8, {where} "
        f"(or None after changing the frame in place). {fix}"
    )


class HostArrays:
    """Frames in host memory, as numpy arrays or (``library='torch'``) zero-copy CPU tensors."""

    device = "host"

    def __init__(self, library: str, label: str) -> None:
        self.library = library
        self.label = label
        self._torch = import_torch() if library == "torch" else None

    def wrap(self, flat: np.ndarray, shape: tuple[int, ...]) -> Any:
        view = flat.reshape(shape)
        return self._torch.from_numpy(view) if self._torch is not None else view

    def stream(self) -> contextlib.AbstractContextManager[None]:
        return contextlib.nullcontext()

    def _host_view(self, value: Any, shape: tuple[int, ...], role: str) -> np.ndarray:
        off_host = _on_cuda(value) or getattr(getattr(value, "device", None), "type", "cpu") != "cpu"
        if off_host:
            fix = f"This {role} is in host memory here; return a host array (numpy, or tensor.cpu())."
            raise bad_frame(self.label, value, shape, "in host memory", fix)
        if self._torch is not None and isinstance(value, self._torch.Tensor):
            value = value.detach().numpy()
        if not isinstance(value, np.ndarray) or value.dtype != np.uint8 or value.shape != shape:
            raise bad_frame(self.label, value, shape, "in host memory",
                            "Convert it, e.g. np.clip(x, 0, 255).astype(np.uint8).")  # fmt: skip
        return value

    def store(self, dst: Any, value: Any, shape: tuple[int, ...]) -> None:
        """Copy the function's frame ``value`` into the slot view ``dst`` (nothing when it is ``dst``)."""
        if value is dst:
            return
        target = dst.numpy() if self._torch is not None else dst
        np.copyto(target, self._host_view(value, shape, "frame"))

    def store_mask(self, dst: Any, values: Any, shape: tuple[int, ...], palette: bool) -> float:
        """Write a Mask's values as bytes into the slot's mask view; returns the shader's scale (255 for 0/1)."""
        if self._torch is not None and isinstance(values, self._torch.Tensor) and not _on_cuda(values):
            values = values.detach().numpy()
        if _on_cuda(values):
            raise ProcessOutputError(f"{self.label}: Mask values are on a CUDA device; the frame is in host memory.")
        a = np.asarray(values)
        if a.shape != shape:
            raise ProcessOutputError(f"{self.label}: Mask of shape {a.shape}; expected the frame's {shape}.")
        data, scale = mask_bytes_numpy(a, palette, self.label)
        (dst.numpy() if self._torch is not None else dst)[...] = data
        return scale


def mask_bytes_numpy(a: np.ndarray, palette: bool, label: str) -> tuple[np.ndarray, float]:
    if a.dtype == np.bool_:
        return a.view(np.uint8), 1.0 if palette else 255.0
    if a.dtype == np.uint8:
        return a, 1.0
    if np.issubdtype(a.dtype, np.floating) and not palette:
        return np.rint(np.clip(a, 0.0, 1.0) * 255.0).astype(np.uint8), 1.0
    if np.issubdtype(a.dtype, np.integer) and a.size and (a.min() < 0 or a.max() > 255):
        raise ProcessOutputError(f"{label}: Mask values run {a.min()}..{a.max()}; they must fit 0..255.")
    if np.issubdtype(a.dtype, np.integer):
        return a.astype(np.uint8), 1.0
    raise ProcessOutputError(f"{label}: Mask of dtype {a.dtype}; use uint8, bool, or (coverage) float 0..1.")


class CudaRegion:
    """A region of CUDA memory as an array: ``__cuda_array_interface__`` and DLPack, uint8, C order."""

    def __init__(self, ptr: int, shape: tuple[int, ...], device: CudaDevice) -> None:
        self.ptr, self.shape, self._device = ptr, shape, device
        self.__cuda_array_interface__ = {
            "shape": shape, "strides": None, "typestr": "|u1", "data": (ptr, False), "version": 3, "stream": None,
        }  # fmt: skip

    def __dlpack_device__(self) -> tuple[int, int]:
        return (2, self._device.ordinal)  # kDLCUDA

    def __dlpack__(self, stream: Any = None, **kwargs: Any) -> Any:
        from ..cuda.dlpack import capsule

        # The data is complete before the function runs (GL's fence was waited for): no stream to order.
        return capsule(self.ptr, self.shape, self._device.ordinal, owner=self)


class CudaArrays:
    """Frames in CUDA memory, as torch tensors, CuPy arrays, or ``CudaRegion`` views (``library='cuda'``)."""

    device = "cuda"

    def __init__(self, library: str, label: str, device: CudaDevice) -> None:
        from ..cuda.driver import driver

        self.library, self.label, self.cuda = library, label, device
        self._lib: Any = None
        self._stream: Any = None
        if library == "torch":
            torch = self._lib = import_torch()
            if not torch.cuda.is_available():
                raise ProcessUnavailableError(
                    f"array 'torch' on the CUDA path needs a CUDA build of PyTorch; this one is {torch.__version__} "
                    "without CUDA. Install a CUDA build, or use Process(fn, memory='host') for CPU tensors."
                )
            self._stream = torch.cuda.ExternalStream(device.stream_handle, device=torch.device("cuda", device.ordinal))
        elif library == "cupy":
            cupy = self._lib = import_cupy()
            self._stream = cupy.cuda.ExternalStream(device.stream_handle, device.ordinal)
        self._wait_event = device.event()  # orders a foreign producer's stream before glrec's copy
        self._cu = driver()

    def wrap(self, ptr: int, shape: tuple[int, ...]) -> Any:
        region = CudaRegion(ptr, shape, self.cuda)
        if self.library == "torch":
            return self._lib.from_dlpack(region)
        if self.library == "cupy":
            return self._lib.asarray(region)
        return region

    @contextlib.contextmanager
    def stream(self) -> Iterator[None]:
        self.cuda.bind()
        if self.library == "torch":
            with self._lib.cuda.stream(self._stream):
                yield
        elif self.library == "cupy":
            with self._stream:
                yield
        else:
            yield

    def _is_lib(self, value: Any) -> bool:
        if self.library == "torch":
            return isinstance(value, self._lib.Tensor)
        return self.library == "cupy" and isinstance(value, self._lib.ndarray)

    def store(self, dst: Any, value: Any, shape: tuple[int, ...]) -> None:
        if value is dst:
            return
        where = f"on CUDA device {self.cuda.ordinal}"
        fix = "Return a CUDA array on that device (torch: x.to(frame.device); CuPy: with cupy.cuda.Device(...))."
        if self._is_lib(value):
            device = value.device
            index = device.index if self.library == "torch" else device.id
            on_gpu = getattr(device, "type", "cuda") == "cuda"
            if not on_gpu or index != self.cuda.ordinal or tuple(value.shape) != shape or str(value.dtype) not in (
                "torch.uint8", "uint8",
            ):  # fmt: skip
                raise bad_frame(self.label, value, shape, where, fix)
            dst[...] = value  # the library's own copy: any strides, on glrec's stream
            return
        self._store_cai(dst, value, shape, where, fix)

    def _cai(self, value: Any, shape: tuple[int, ...], where: str, fix: str) -> dict[str, Any]:
        cai: dict[str, Any] | None = getattr(value, "__cuda_array_interface__", None)
        if cai is None or tuple(cai["shape"]) != shape:
            raise bad_frame(self.label, value, shape, where, fix)
        return cai

    def _store_cai(self, dst: Any, value: Any, shape: tuple[int, ...], where: str, fix: str) -> None:
        from ..cuda.driver import call

        cai = self._cai(value, shape, where, fix)
        compact = cai.get("strides") in (None, tuple(int(np.prod(shape[i + 1 :])) for i in range(len(shape))))
        if cai["typestr"] != "|u1" or not compact:
            raise bad_frame(self.label, value, shape, where, "Make it uint8 and C-contiguous.")
        src, dst_ptr = int(cai["data"][0]), dst.__cuda_array_interface__["data"][0]
        if src == dst_ptr:
            return
        self._after_producer(cai)
        call("cuMemcpyDtoDAsync", dst_ptr, src, int(np.prod(shape)), self.cuda.stream)

    def _after_producer(self, cai: dict[str, Any]) -> None:
        from ..cuda.driver import call

        stream = cai.get("stream")
        if stream not in (None, self.cuda.stream_handle):
            # CAI v3: the producer's work is on its stream; glrec's stream waits for it on the GPU.
            call("cuEventRecord", self._wait_event, self._cu.CUstream(stream))
            call("cuStreamWaitEvent", self.cuda.stream, self._wait_event, 0)

    def store_mask(self, dst: Any, values: Any, shape: tuple[int, ...], palette: bool) -> float:
        """Write a Mask's values as bytes into the slot's mask view ``dst``; returns the shader's scale."""
        if self._is_lib(values):
            if tuple(values.shape) != shape:
                raise ProcessOutputError(f"{self.label}: Mask of shape {tuple(values.shape)}; expected {shape}.")
            kind = str(values.dtype).replace("torch.", "")
            scale = 255.0 if kind == "bool" and not palette else 1.0
            if kind.startswith("float") and not palette:
                values = (values.clip(0, 1) * 255).round()
            elif not (kind in ("bool", "uint8") or kind.startswith("int")):
                raise ProcessOutputError(f"{self.label}: Mask of dtype {kind}; use uint8, bool, or float 0..1.")
            dst[...] = values.clip(0, 255) if kind.startswith(("int", "float")) else values
            return scale
        cai = getattr(values, "__cuda_array_interface__", None)
        if cai is None or cai["typestr"] not in ("|u1", "|b1"):
            raise ProcessOutputError(
                f"{self.label}: Mask values must be a uint8 or bool CUDA array of shape {shape} here "
                f"(got {_describe(values)}); use torch or CuPy for other dtypes."
            )
        self._store_cai(dst, values if cai["typestr"] == "|u1" else _AsBytes(cai), shape, "on the GPU", "")
        return 255.0 if cai["typestr"] == "|b1" and not palette else 1.0

    def ready_event(self, event: Any) -> Any:
        """Record ``event`` on glrec's stream after the function's work; GL reads the slot once it has passed."""
        from ..cuda.driver import call

        call("cuEventRecord", event, self.cuda.stream)
        return event

    def close(self) -> None:
        from ..cuda.driver import call

        event, self._wait_event = self._wait_event, None
        if event is not None:
            call("cuEventDestroy", event)


class _AsBytes:
    """A bool CUDA array seen as uint8 (same bytes)."""

    def __init__(self, cai: dict[str, Any]) -> None:
        self.__cuda_array_interface__ = {**cai, "typestr": "|u1"}


def host_array(values: Any) -> np.ndarray:
    """A small array (boxes, points) on the host as float32, from numpy, a list, torch, CuPy or any CUDA array.

    Called after the frame's GPU work has finished, so copies from the device do not wait.
    """
    if hasattr(values, "detach"):  # torch
        values = values.detach().cpu().numpy()
    elif hasattr(values, "get") and hasattr(values, "__cuda_array_interface__"):  # CuPy
        values = values.get()
    elif hasattr(values, "__cuda_array_interface__"):
        from ..cuda.driver import call

        cai = values.__cuda_array_interface__
        out = np.empty(cai["shape"], np.dtype(cai["typestr"]))
        if cai.get("strides") not in (None, out.strides):
            raise ProcessOutputError("Overlay coordinates in CUDA memory must be C-contiguous.")
        call("cuMemcpyDtoH", out.ctypes.data, int(cai["data"][0]), out.nbytes)
        values = out
    return np.asarray(values, dtype=np.float32)
