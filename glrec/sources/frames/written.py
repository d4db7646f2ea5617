"""What ``Recorder.write`` accepts, checked before anything reaches GL or the file.

A frame is a picture of ``H×W×3`` (RGB), ``H×W×4`` (RGBA; alpha is dropped,
not composited) or ``H×W`` / ``H×W×1`` (grey) values, **top row first** (the
convention of numpy, PIL, imageio, MuJoCo and Gymnasium). It comes as:

- a host array: a numpy array, or anything ``numpy.asarray`` takes (PIL
  images, matplotlib's ``canvas.buffer_rgba()``, CPU tensors), or a matplotlib
  figure (drawn, then its RGBA buffer taken);
- a CUDA array: anything with ``__cuda_array_interface__`` (PyTorch, CuPy,
  Numba) or a DLPack producer on a CUDA device (JAX, PyTorch, CuPy).

Values: ``uint8`` as is; ``uint16`` scaled by 255/65535 to the nearest
integer; floats in [0, 1] become ``round(255 · v)`` with halves to even (numpy's
``rint``, GLSL's ``roundEven``) after clipping to [0, 1], computed in float32
(float64 for float64 frames), the same on the host and on the GPU. A float value more
than one code step (1/255) outside [0, 1], infinite or NaN is an error, as
are other dtypes: they are usually a frame in the wrong units, which clipping
would hide. Any strides are accepted (views, crops, negative steps, transposes).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from ...errors import ConfigError

#: Float values up to one code step outside [0, 1] (rounding noise of a computation) are clipped, not refused.
FLOAT_TOLERANCE = 1 / 255
HOST_DTYPES = ("uint8", "uint16", "float16", "float32", "float64")
CUDA_DTYPES = ("uint8", "uint16", "float16", "float32")
_EXPECTED = "frames are H×W×3 (RGB), H×W×4 (RGBA) or H×W (grey) arrays, top row first"
_EXPECTED_SENTENCE = _EXPECTED[0].upper() + _EXPECTED[1:]


@dataclass(frozen=True)
class HostFrameIn:
    """A checked host frame: ``array`` is ``(H, W, C)`` with C in 1, 3, 4 and an accepted dtype."""

    array: np.ndarray
    kind: ClassVar[str] = "host"

    def release(self) -> None:
        """Nothing to hand back (the same call as :meth:`CudaFrameIn.release`)."""

    @property
    def size(self) -> tuple[int, int]:
        return self.array.shape[1], self.array.shape[0]

    @property
    def channels(self) -> int:
        return int(self.array.shape[2])

    def describe(self) -> str:
        h, w, c = self.array.shape
        return f"a {w}x{h} {c}-channel {self.array.dtype} host array"


@dataclass(frozen=True)
class CudaFrameIn:
    """A checked CUDA frame: ``shape`` ``(H, W, C)``, byte ``strides`` (any sign) from element 0 at ``ptr``.

    ``stream`` is the producer's stream that glrec's copy must wait for (None: the data is ready).
    ``release`` hands a DLPack tensor back to its producer once glrec has its own copy.
    """

    ptr: int
    shape: tuple[int, int, int]
    strides: tuple[int, int, int]
    dtype: np.dtype
    device: int
    stream: int | None
    owner: object
    release: Callable[[], None]
    kind: ClassVar[str] = "cuda"

    @property
    def size(self) -> tuple[int, int]:
        return self.shape[1], self.shape[0]

    @property
    def channels(self) -> int:
        return self.shape[2]

    def describe(self) -> str:
        h, w, c = self.shape
        return f"a {w}x{h} {c}-channel {self.dtype} CUDA array on device {self.device}"


FrameIn = HostFrameIn | CudaFrameIn


def inspect_frame(frame: object) -> FrameIn:
    """Check ``frame`` and say where it lives; raise ConfigError naming what came and what is expected."""
    if isinstance(frame, np.ndarray):
        return _host(frame)
    cai = _cuda_interface(frame)
    device = _dlpack_device(frame)
    cuda_dlpack = device is not None and device[0] in (2, 13)  # kDLCUDA, kDLCUDAManaged
    if cai is not None and (_names_stream(cai) or not cuda_dlpack):
        return _from_cai(frame, cai)
    if cuda_dlpack:
        # Also for arrays whose __cuda_array_interface__ names no stream (PyTorch's is version 2): DLPack
        # makes the producer order its pending work (on whatever stream it used) before glrec's copy.
        return _from_dlpack(frame)
    if device is not None and device[0] not in (1, 3):  # not host memory either (ROCm, Metal, ...)
        from ...cuda.dlpack import DEVICE_TYPES

        name = DEVICE_TYPES.get(device[0], f"type {device[0]}")
        raise ConfigError(
            f"The frame is a {type(frame).__name__} on a {name} device, which glrec cannot read; "
            "pass a host copy (e.g. numpy.asarray(x) or x.cpu()) or a CUDA array."
        )
    return _host(_as_host_array(frame))


# -- host arrays -------------------------------------------------------------------------------------


def _as_host_array(frame: object) -> np.ndarray:
    if frame is None:
        raise ConfigError(f"The frame is None; {_EXPECTED}. (Did render() return nothing?)")
    if _is_pil_image(frame):
        frame = _pil_as_array(frame)
    elif _is_figure(frame):
        canvas: Any = frame.canvas  # type: ignore[attr-defined]
        canvas.draw()
        frame = canvas.buffer_rgba()
    try:
        array = np.asarray(frame)
    except Exception as exc:  # e.g. a tensor that requires grad
        hint = " (call .detach() first)" if "grad" in str(exc) else ""
        reason = str(exc).rstrip(".")
        raise ConfigError(
            f"A {type(frame).__name__} could not be read as an array{hint}: {reason}. {_EXPECTED_SENTENCE}."
        ) from None
    if array.dtype == object or array.ndim == 0:
        raise ConfigError(f"A {type(frame).__name__} is not a picture; {_EXPECTED}.")
    return array


def _is_pil_image(obj: object) -> bool:
    return type(obj).__module__.startswith("PIL.") and hasattr(obj, "mode") and hasattr(obj, "convert")


def _pil_as_array(image: Any) -> Any:
    # RGB, RGBA and L map straight to arrays; palette, CMYK, LA, YCbCr, 1-bit... are converted to what
    # they show. 16-bit grey (I;16) stays 16-bit; I and F (32-bit) come out as int32/float32 arrays.
    if image.mode in ("RGB", "RGBA", "L") or image.mode.startswith("I;16") or image.mode in ("I", "F"):
        return image
    alpha = "A" in image.mode or "transparency" in image.info
    return image.convert("RGBA" if alpha else "RGB")


def _is_figure(obj: object) -> bool:
    return type(obj).__module__.startswith("matplotlib.") and hasattr(getattr(obj, "canvas", None), "buffer_rgba")


def _host(array: np.ndarray) -> HostFrameIn:
    shape = _frame_shape(array.shape, type(array).__name__)
    if array.ndim == 2:
        array = array[:, :, None]
    name = array.dtype.name
    if name not in HOST_DTYPES:
        raise ConfigError(_dtype_message(name, HOST_DTYPES))
    if array.dtype.kind == "f":
        check_float_range(array)
    assert array.shape == shape
    return HostFrameIn(array)


def check_float_range(array: np.ndarray) -> None:
    """Raise ConfigError for NaN, infinities or values outside [0, 1] (beyond :data:`FLOAT_TOLERANCE`)."""
    lo, hi = float(np.min(array)), float(np.max(array))  # NaN propagates through both
    if math.isnan(lo) or math.isnan(hi):
        count = int(np.count_nonzero(np.isnan(array)))
        raise ConfigError(
            f"The float frame has {count} NaN value(s); frames must be finite values in [0, 1]. "
            "Replace them first, e.g. numpy.nan_to_num(frame)."
        )
    if lo < -FLOAT_TOLERANCE or hi > 1 + FLOAT_TOLERANCE:
        hint = " It looks like 0..255: divide by 255 or use .astype(numpy.uint8)." if hi > 1.5 else ""
        raise ConfigError(f"The float frame has values in [{lo:g}, {hi:g}]; float frames are in [0, 1].{hint}")


# -- shape and dtype (host and CUDA alike) ------------------------------------------------------------


def _frame_shape(shape: tuple[int, ...], what: str) -> tuple[int, int, int]:
    """``(H, W, C)`` for a frame of ``shape``, or a ConfigError saying what is wrong and what to do."""
    shape = tuple(int(n) for n in shape)
    if len(shape) == 2:
        shape = (*shape, 1)
    if len(shape) == 4:
        raise ConfigError(
            f"The frame has shape {shape}, a batch of {shape[0]} pictures? {_EXPECTED_SENTENCE}; "
            "write them one at a time, or pass the batch to glrec.write_video()."
        )
    if len(shape) != 3:
        raise ConfigError(f"The frame ({what}) has shape {shape}; {_EXPECTED}.")
    h, w, c = shape
    if c not in (1, 3, 4):
        if h in (1, 3, 4) and min(w, c) >= 16:  # a C×H×W picture, not a tiny odd array
            raise ConfigError(
                f"The frame has shape {shape}, which looks channels-first (C×H×W); {_EXPECTED}. "
                "Use frame.transpose(1, 2, 0) (numpy) or frame.permute(1, 2, 0) (PyTorch)."
            )
        raise ConfigError(f"The frame has {c} channels (shape {shape}); {_EXPECTED}.")
    if h < 1 or w < 1:
        raise ConfigError(f"The frame has shape {shape}, an empty picture; {_EXPECTED}.")
    return h, w, c


def _dtype_message(name: str, accepted: tuple[str, ...]) -> str:
    if name.startswith(("int", "uint")):
        hint = " If its values are 0..255, use .astype(numpy.uint8) (numpy) or .to(torch.uint8) (PyTorch)."
    elif name == "bool":
        hint = " For a mask, use mask.astype(numpy.uint8) * 255."
    else:
        hint = ""
    return f"The frame's dtype is {name}; frames are {', '.join(accepted)} (floats in [0, 1]).{hint}"


# -- CUDA arrays -------------------------------------------------------------------------------------


def _cuda_interface(frame: object) -> dict[str, Any] | None:
    try:
        cai = frame.__cuda_array_interface__  # type: ignore[attr-defined]
    except AttributeError:
        return None
    except Exception as exc:  # PyTorch raises RuntimeError for tensors that require grad
        hint = " (call .detach() first)" if "grad" in str(exc) else ""
        raise ConfigError(f"The frame's __cuda_array_interface__ failed{hint}: {exc}") from None
    return cai if isinstance(cai, dict) else None


def _dlpack_device(frame: object) -> tuple[int, int] | None:
    get = getattr(frame, "__dlpack_device__", None)
    if get is None or isinstance(frame, np.ndarray):
        return None
    try:
        kind, index = get()
        return int(kind), int(index)
    except Exception:
        return None


def _cuda_dtype(name: str) -> np.dtype:
    if name not in CUDA_DTYPES:
        raise ConfigError(_dtype_message(name, CUDA_DTYPES).replace("(PyTorch)", "(PyTorch; on the GPU)"))
    return np.dtype(name)


def _names_stream(cai: dict[str, Any]) -> bool:
    """Whether the interface names the stream to wait for (version 3 ``stream``; None there: nothing to wait for)."""
    return int(cai.get("version", 2)) >= 3 and "stream" in cai


def _from_cai(frame: object, cai: dict[str, Any]) -> CudaFrameIn:
    if cai.get("mask") is not None:
        raise ConfigError("The CUDA frame is a masked array; pass its data without a mask.")
    try:
        dtype = np.dtype(cai["typestr"])
        ptr = int(cai["data"][0])
        shape_in = tuple(int(n) for n in cai["shape"])
    except (KeyError, TypeError, ValueError) as exc:
        raise ConfigError(f"The frame's __cuda_array_interface__ is malformed ({exc!r}).") from None
    if dtype.byteorder == ">":
        raise ConfigError(f"The CUDA frame is big-endian ({cai['typestr']}); glrec reads little-endian data.")
    shape = _frame_shape(shape_in, type(frame).__name__)
    dtype = _cuda_dtype(dtype.name)
    strides = cai.get("strides")
    if strides is None:
        strides = _c_strides(shape_in, dtype.itemsize)
    strides = _with_channel_stride(tuple(int(s) for s in strides), dtype.itemsize)
    stream = cai.get("stream") if int(cai.get("version", 2)) >= 3 else None
    if stream == 0:
        raise ConfigError("The CUDA frame names stream 0, which __cuda_array_interface__ forbids (ambiguous).")
    device = _pointer_device(ptr)
    return CudaFrameIn(ptr, shape, strides, dtype, device, None if stream is None else int(stream), frame,
                       lambda: None)  # fmt: skip


def _from_dlpack(frame: Any) -> CudaFrameIn:
    from ...cuda.dlpack import import_capsule

    try:
        # Stream 1: the producer orders the data on the legacy default stream, which glrec's copy then waits for.
        capsule = frame.__dlpack__(stream=1)
    except TypeError:  # producers that predate the stream keyword
        capsule = frame.__dlpack__()
    except Exception as exc:
        hint = " (call .detach() first)" if "grad" in str(exc) else ""
        raise ConfigError(f"The frame's __dlpack__ failed{hint}: {exc}") from None
    tensor = import_capsule(capsule)
    try:
        shape = _frame_shape(tensor.shape, type(frame).__name__)
        try:
            name = np.dtype(tensor.dtype).name
        except TypeError:  # bfloat16 and other types numpy has no name for
            name = tensor.dtype
        dtype = _cuda_dtype(name)
        strides = _with_channel_stride(tensor.strides, tensor.itemsize)
    except BaseException:
        tensor.release()
        raise
    return CudaFrameIn(tensor.ptr, shape, strides, dtype, tensor.device_id, 1, frame, tensor.release)


def _c_strides(shape: tuple[int, ...], itemsize: int) -> tuple[int, ...]:
    out: list[int] = []
    step = itemsize
    for n in reversed(shape):
        out.insert(0, step)
        step *= n
    return tuple(out)


def _with_channel_stride(strides: tuple[int, ...], itemsize: int) -> tuple[int, int, int]:
    if len(strides) == 2:
        return strides[0], strides[1], itemsize
    return strides[0], strides[1], strides[2]


def _pointer_device(ptr: int) -> int:
    """The CUDA device that owns ``ptr``; ConfigError when CUDA is unusable or ``ptr`` is not device memory."""
    from ...cuda.driver import INSTALL_HINT, call, driver
    from ...errors import CudaError

    try:
        attribute = driver().CUpointer_attribute.CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL
        try:
            return int(call("cuPointerGetAttribute", attribute, ptr))
        except CudaError as exc:
            if "CONTEXT" not in str(exc):
                raise
            # No CUDA context on this thread yet (the producer made the array on another one): ask
            # again inside device 0's primary context, the one PyTorch and CuPy use, and leave none current.
            context = call("cuDevicePrimaryCtxRetain", call("cuDeviceGet", 0))
            call("cuCtxSetCurrent", context)
            try:
                return int(call("cuPointerGetAttribute", attribute, ptr))
            finally:
                call("cuCtxSetCurrent", None)
                call("cuDevicePrimaryCtxRelease", call("cuDeviceGet", 0))
    except CudaError as exc:
        raise ConfigError(
            f"The frame is a CUDA array, but glrec cannot read it: {exc}. Install {INSTALL_HINT}, "
            "or pass a host copy (tensor.cpu(), cupy.asnumpy(a))."
        ) from None
