"""How a step's batch reaches the env streams, per encoder: the route picks where pixels go and how often.

- :class:`CpuRoute` (libx264, libx265, SVT-AV1, libvpx-vp9, mjpeg and gif through PyAV, and PNG): each env's
  frame is copied once into a buffer of its own (the caller may reuse its batch
  when ``write()`` returns) and converted by swscale on the env's worker. A CUDA
  batch is copied to the host once per step, in one piece where it is contiguous:
  the CPU encoders read host memory (counted in :data:`HOST_COPIES`).
- :class:`NvjpegRoute`: the CUDA batch's env frames go to nvImageCodec as they lie,
  all N in one call per step (the JPEG encoders' batch interface); nothing touches
  host memory but the JPEG bytes.
- The GL JPEG route (:mod:`glrec.batch.gl_route`): one upload of the whole step
  into an array texture, one dispatch encodes all N.

A route hands back ``(step, env, frame)`` for the streams, in step order (the
GL JPEG route hands a step's frames back some steps later: its GPU work runs
behind the writes), and tells the streams how to open their encoder
(:attr:`Route.stream_encoder`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from ..convert.swscale import PACKED_FORMATS
from ..encoders import Encoder
from ..encoders.registry import EncodeRequest, encoder_row
from ..errors import ConfigError
from ..frame import EncodedFrame, Frame, HostFrame, Packet
from ..video_facts import VideoFacts
from .frames import Batch, CudaBatch, HostBatch

log = logging.getLogger("glrec")

#: Raw frames of CUDA batches copied to host memory (frames, not calls), for the GPU tier's zero-copy check.
HOST_COPIES = [0]


#: What a route hands on: ``(step, env, frame)``, in step order.
Handed = list[tuple[int, int, Frame]]


@dataclass(frozen=True)
class ChildEncoder:
    """How an encode process opens the host encoder the recorder planned (the CPU's or PNG's), and what its
    frames are."""

    options: dict[str, Any]  # the encoder row's options, as planned (the CPU's threads included)
    pix_fmt: str  # the host frames handed: rgb24 or rgba, converted by swscale (or kept, for PNG) in the child
    shape: tuple[int, ...]  # their arrays' shape
    encoder: str = "cpu"  # the row: cpu or png


class Route(Protocol):
    name: str  # the encoder as the summary names it
    muxes_only: bool  # the GPU made the packets: the env streams only mux them (see mux_procs.choose_pool)
    #: What a child process needs to encode these streams (mux_procs); None: in-process only.
    child_encoder: ChildEncoder | None

    def frames(self, batch: Batch, active: Sequence[int], step: int) -> Handed: ...

    def drain(self) -> Handed: ...

    def stream_encoder(self) -> Encoder: ...

    def release(self) -> None: ...


class Passthrough:
    """An env stream's encoder where the route already encoded: each JPEG becomes one keyframe packet."""

    name = "batch"
    codec = "mjpeg"

    def encode(self, frame: Frame) -> list[Packet]:
        assert isinstance(frame, EncodedFrame)
        return [Packet(frame.data, frame.index, frame.index, True)]

    def encode_batch(self, frames: Sequence[Frame]) -> list[Packet]:
        return [p for f in frames for p in self.encode(f)]

    def flush(self) -> list[Packet]:
        return []

    def request_keyframe(self) -> None:
        """Every JPEG is a keyframe."""

    def close(self) -> None:
        """Nothing held."""


class CpuRoute:
    """Host frames for the CPU encoders and PNG's (see the module docstring)."""

    muxes_only = False

    def __init__(self, facts: VideoFacts, open_encoder: Callable[[], Encoder], name: str,
                 child_encoder: ChildEncoder | None = None) -> None:  # fmt: skip
        self.facts = facts
        self.name = name
        self._open = open_encoder
        self.child_encoder = child_encoder  # the options a child process opens the same encoder with

    def stream_encoder(self) -> Encoder:
        return self._open()

    def frames(self, batch: Batch, active: Sequence[int], step: int) -> Handed:
        arrays = self._host(batch, active)
        own = not isinstance(batch, HostBatch)  # a CUDA batch's host copy is new: its views are the frames' own
        ew, eh = self.facts.encoded_size
        out: Handed = []
        for env in active:
            array = arrays[env]
            h, w, c = array.shape
            if own and (h, w) == (eh, ew):
                out.append((step, env, HostFrame(0, PACKED_FORMATS[c], ew, eh, array)))
                continue
            data = np.empty((eh, ew, c), np.uint8)  # the frame's own until its worker has converted it
            data[:h, :w] = array
            if eh > h:  # odd sizes padded for 4:2:0 repeat the edge, as the GL convert does
                data[h:, :w] = data[h - 1 : h, :w]
            if ew > w:
                data[:, w:] = data[:, w - 1 : w]
            out.append((step, env, HostFrame(0, PACKED_FORMATS[c], ew, eh, data)))
        return out

    def _host(self, batch: Batch, active: Sequence[int]) -> Sequence[np.ndarray]:
        if isinstance(batch, HostBatch):
            return batch.frames
        HOST_COPIES[0] += len(active)
        return list(cuda_to_host(batch))  # views of one new host array

    def drain(self) -> Handed:
        return []

    def release(self) -> None:
        """Nothing held."""


def cuda_to_host(batch: CudaBatch) -> np.ndarray:
    """The whole CUDA batch in a new host array: one copy where it is contiguous, one per env otherwise."""
    from ..cuda.driver import call
    from ..sources.frames.cuda_array import CudaToHost

    out = np.empty(batch.shape, np.uint8)
    if batch.contiguous:
        if batch.stream is not None:
            call("cuStreamSynchronize", batch.stream)  # the producer's work on the frames is done
        call("cuMemcpyDtoH", out.ctypes.data, batch.ptr, batch.nbytes)
    else:
        to_host = CudaToHost()
        try:
            for env in range(batch.shape[0]):
                out[env] = to_host.to_host(batch.frame(env)).array
        finally:
            to_host.release()
    return out


class _EnvView:
    """Env ``env``'s frame of a contiguous CUDA batch as a CUDA device frame (packed RGB), without a copy."""

    pix_fmt = "rgb24"

    def __init__(self, batch: CudaBatch, env: int) -> None:
        _, h, w, c = batch.shape
        self.index = env
        self.width, self.height = w, h
        self._ptr = batch.ptr + env * batch.strides[0]
        self._shape = (h, w, c)
        self._strides = batch.strides[1:]

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        return {"shape": self._shape, "strides": self._strides, "typestr": "|u1", "data": (self._ptr, False),
                "version": 3, "stream": None}  # fmt: skip

    def synchronize(self) -> None:
        """The batch was synchronised with its producer before the call."""

    def plane_views(self) -> list[Any]:
        return [self]

    def to_host(self, out: np.ndarray | None = None) -> HostFrame:
        raise ConfigError("A batch view stays on the GPU.")

    def release(self, *, after: Any = None) -> None:
        """The caller's batch: nothing of glrec's to give back."""


class NvjpegRoute:
    """All N env frames of a CUDA batch to nvImageCodec in one call per step (see the module docstring)."""

    name = "nvjpeg (batch)"
    muxes_only = True  # the streams only mux what the GPU encoded (one worker by default)
    child_encoder: ChildEncoder | None = None

    def __init__(self, asked: EncodeRequest[Any], cuda_device: int, channels: int) -> None:
        if channels != 3:
            raise ConfigError(
                "nvJPEG reads packed RGB; this batch has 4 channels. Pass frames[..., :3].contiguous(), "
                "or use encoder='gl' (reads RGBA) or 'cpu'."
            )
        from ..cuda.driver import CudaDevice

        self.facts = asked.facts
        self._device = CudaDevice.open(cuda_device)
        self._encoder: Encoder | None = encoder_row("nvjpeg").open(
            EncodeRequest(asked.facts, asked.options, self._device)
        )

    def stream_encoder(self) -> Encoder:
        return Passthrough()

    def frames(self, batch: Batch, active: Sequence[int], step: int) -> Handed:
        from ..cuda.driver import call

        if not isinstance(batch, CudaBatch):
            raise ConfigError("encoder 'nvjpeg' reads CUDA batches; pass a CUDA tensor, or use encoder 'gl' or 'cpu'.")
        if batch.device != self._device.ordinal:
            raise ConfigError(f"The batch is on CUDA device {batch.device}; this recording encodes on device "
                              f"{self._device.ordinal}. Pass cuda_device={batch.device}.")  # fmt: skip
        self._device.bind()
        if batch.stream is not None:
            call("cuStreamSynchronize", batch.stream)
        views = [_EnvView(batch, env) for env in active]
        assert self._encoder is not None, "released"
        packets = self._encoder.encode_batch(views)  # the views are CUDA device frames
        w, h = self.facts.size
        return [(step, p.pts, EncodedFrame(0, "mjpeg", w, h, p.data)) for p in packets]

    def drain(self) -> Handed:
        return []

    def release(self) -> None:
        encoder, self._encoder = self._encoder, None
        if encoder is not None:
            encoder.close()
        self._device.release()
