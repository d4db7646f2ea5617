"""What ``BatchRecorder.write`` accepts: one step's frames, checked before anything is queued or written.

A batch is ``(N, H, W, C)`` uint8 with C 3 (RGB) or 4 (RGBA, alpha dropped), top
row first, as vectorised simulators render it:

- a host array (numpy, or anything ``numpy.asarray`` takes: CPU tensors), or a
  sequence of N host frames (what ``SyncVectorEnv.render()`` returns: a tuple);
- a CUDA array: ``__cuda_array_interface__`` (PyTorch, CuPy) or DLPack on a CUDA
  device (JAX, PyTorch, CuPy). Only its address and layout are read here; the
  pixels stay where they are (:mod:`glrec.batch.routes` says where they go).

The first batch fixes N, the size, the channels and where frames live; a later
batch that differs is refused with one line, and the recording stays open.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from ..errors import ConfigError
from ..sources.frames.written import CudaFrameIn, HostFrameIn, inspect_frame

_EXPECTED = "a batch is (N, H, W, C) uint8 with C 3 (RGB) or 4 (RGBA), top row first"


@dataclass(frozen=True)
class HostBatch:
    """A checked host batch: ``frames[i]`` is env i's ``(H, W, C)`` uint8 array (views of the caller's memory)."""

    frames: Sequence[np.ndarray]
    kind: ClassVar[str] = "host"

    @property
    def shape(self) -> tuple[int, int, int, int]:
        h, w, c = self.frames[0].shape
        return len(self.frames), h, w, c

    def release(self) -> None:
        """Nothing to hand back (the same call as :meth:`CudaBatch.release`)."""


@dataclass(frozen=True)
class CudaBatch:
    """A checked CUDA batch: element ``[0, 0, 0, 0]`` at ``ptr``, byte ``strides``, on CUDA ``device``.

    ``stream`` is the producer's stream glrec's copies wait for (None: ready); ``release`` hands
    a DLPack tensor back to its producer once glrec has what it needs (safe twice).
    """

    ptr: int
    shape: tuple[int, int, int, int]
    strides: tuple[int, int, int, int]
    device: int
    stream: int | None
    owner: object
    release: Callable[[], None]
    kind: ClassVar[str] = "cuda"

    @property
    def contiguous(self) -> bool:
        """C-contiguous: the whole step is one block of ``N * H * W * C`` bytes (one copy moves it)."""
        _, h, w, c = self.shape
        return self.strides == (h * w * c, w * c, c, 1)

    @property
    def nbytes(self) -> int:
        n, h, w, c = self.shape
        return n * h * w * c

    def frame(self, env: int) -> CudaFrameIn:
        """Env ``env``'s frame as the single-frame path's CUDA frame (a view: no copy, released with the batch)."""
        _, h, w, c = self.shape
        s = self.strides
        return CudaFrameIn(self.ptr + env * s[0], (h, w, c), (s[1], s[2], s[3]), np.dtype("uint8"), self.device,
                           self.stream, self.owner, lambda: None)  # fmt: skip


Batch = HostBatch | CudaBatch


def _check_shape(shape: tuple[int, ...], dtype: str, what: str) -> tuple[int, int, int, int]:
    if len(shape) != 4:
        hint = " One frame? Use glrec.Recorder, or add the batch axis (frames[None])." if len(shape) == 3 else ""
        raise ConfigError(f"The batch ({what}) has shape {shape}; {_EXPECTED}.{hint}")
    n, h, w, c = (int(v) for v in shape)
    if c not in (3, 4):
        hint = " It looks channels-first: use .permute(0, 2, 3, 1)." if h in (3, 4) and c > 4 else ""
        raise ConfigError(f"The batch has {c} channels (shape {shape}); {_EXPECTED}.{hint}")
    if min(n, h, w) < 1:
        raise ConfigError(f"The batch has shape {shape}, which holds no picture; {_EXPECTED}.")
    if dtype != "uint8":
        hint = " Floats in [0, 1]: (x * 255).round().to(torch.uint8) or (x * 255).round().astype(numpy.uint8)."
        raise ConfigError(f"The batch's dtype is {dtype}; {_EXPECTED}.{hint if dtype.startswith('float') else ''}")
    return n, h, w, c


def inspect_batch(frames: object) -> Batch:
    """Check ``frames`` (see the module docstring); ConfigError naming what came and what is expected."""
    if isinstance(frames, np.ndarray):
        _check_shape(frames.shape, frames.dtype.name, "numpy")
        return HostBatch(list(frames))
    if isinstance(frames, (list, tuple)):
        return _from_sequence(frames)
    cai = getattr(frames, "__cuda_array_interface__", None)
    device_of = getattr(frames, "__dlpack_device__", None)
    dl_device = device_of() if callable(device_of) else None
    if isinstance(cai, dict) and not (dl_device is not None and int(dl_device[0]) in (2, 13)):
        return _from_cai(frames, cai)
    if dl_device is not None and int(dl_device[0]) in (2, 13):  # kDLCUDA, kDLCUDAManaged
        return _from_dlpack(frames)
    try:
        array = np.asarray(frames)
    except Exception as exc:  # a tensor that requires grad, an object that is no array
        raise ConfigError(f"A {type(frames).__name__} could not be read as a batch ({exc}); {_EXPECTED}.") from None
    _check_shape(array.shape, array.dtype.name, type(frames).__name__)
    return HostBatch(list(array))


def _from_sequence(frames: Sequence[Any]) -> Batch:
    if not frames:
        raise ConfigError(f"The batch is an empty {type(frames).__name__}; {_EXPECTED}.")
    items = [inspect_frame(f) for f in frames]
    first = items[0]
    shapes = {(i.size, i.channels) for i in items}
    if len(shapes) > 1:
        raise ConfigError(f"The batch's frames differ in size or channels ({sorted(shapes)}); every env renders alike.")
    if all(isinstance(i, HostFrameIn) for i in items):
        arrays = [i.array for i in items]  # type: ignore[union-attr]
        _check_shape((len(arrays), *arrays[0].shape), arrays[0].dtype.name, "sequence of host frames")
        return HostBatch(arrays)
    for item in items:
        item.release()
    raise ConfigError(
        f"The batch is a {type(frames).__name__} of {first.describe()}s; pass CUDA frames as one (N, H, W, C) "
        "tensor (torch.stack(frames)), which glrec reads in one piece."
    )


def _from_cai(frames: object, cai: dict[str, Any]) -> CudaBatch:
    from ..sources.frames.written import _pointer_device  # the single-frame path's own lookup (device of a pointer)

    dtype = np.dtype(cai["typestr"])
    shape = _check_shape(tuple(int(v) for v in cai["shape"]), dtype.name, type(frames).__name__)
    strides = cai.get("strides") or _c_strides(shape)
    ptr = int(cai["data"][0])
    stream = cai.get("stream") if int(cai.get("version", 2)) >= 3 else None
    s = tuple(int(v) for v in strides)
    return CudaBatch(ptr, shape, (s[0], s[1], s[2], s[3]), _pointer_device(ptr),
                     None if stream is None else int(stream), frames, lambda: None)  # fmt: skip


def _from_dlpack(frames: Any) -> CudaBatch:
    from ..cuda.dlpack import import_capsule

    try:
        capsule = frames.__dlpack__(stream=1)  # the producer orders its work before the legacy default stream
    except TypeError:
        capsule = frames.__dlpack__()
    tensor = import_capsule(capsule)
    try:
        name = np.dtype(tensor.dtype).name if ":" not in tensor.dtype and tensor.dtype != "bfloat16" else tensor.dtype
        shape = _check_shape(tensor.shape, name, type(frames).__name__)
    except BaseException:
        tensor.release()
        raise
    s = tensor.strides
    return CudaBatch(tensor.ptr, shape, (s[0], s[1], s[2], s[3]), tensor.device_id, 1, frames, tensor.release)


def _c_strides(shape: tuple[int, int, int, int]) -> tuple[int, int, int, int]:
    _, h, w, c = shape
    return h * w * c, w * c, c, 1


@dataclass(frozen=True)
class BatchShape:
    """What the first batch fixed: N, the size, the channels and where frames live."""

    envs: int
    size: tuple[int, int]  # (W, H)
    channels: int
    kind: str

    @classmethod
    def of(cls, batch: Batch) -> BatchShape:
        n, h, w, c = batch.shape
        return cls(n, (w, h), c, batch.kind)

    def check(self, batch: Batch, step: int) -> None:
        """ConfigError (one line: what changed, what to do) unless ``batch`` is shaped as the first one."""
        other = BatchShape.of(batch)
        if other.kind != self.kind:
            raise ConfigError(
                f"Step {step} is a {other.kind} batch; this recording takes {self.kind} batches (fixed by its "
                f"{'device= option' if step < 0 else 'first batch'}). Pass every step the same way "
                f"({'tensor.cuda()' if self.kind == 'cuda' else 'tensor.cpu()'})."
            )
        if other.envs != self.envs:
            raise ConfigError(
                f"Step {step} has {other.envs} envs; this recording has {self.envs} (fixed by its first batch). "
                "Write inactive envs too (use write(..., active=mask)), or start a new BatchRecorder."
            )
        if (other.size, other.channels) != (self.size, self.channels):
            raise ConfigError(
                f"Step {step} is {other.size[0]}x{other.size[1]}x{other.channels}; this recording is "
                f"{self.size[0]}x{self.size[1]}x{self.channels}. Every frame of a video has one size."
            )


def active_envs(active: Sequence[int] | Sequence[bool] | None, n: int, selected: Sequence[int]) -> list[int]:
    """The envs recorded this step: ``active`` as indices or a mask of N (None: all selected), within ``selected``."""
    if active is None:
        return list(selected)
    values = list(active)
    if values and all(isinstance(v, (bool,)) or type(v).__name__ == "bool_" for v in values):
        mask = [i for i, v in enumerate(values) if v]
    else:
        mask = [int(v) for v in values]
    if any(not 0 <= i < n for i in mask):
        raise ConfigError(f"active names envs outside 0..{n - 1}: {active!r}.")
    return [i for i in mask if i in selected]
