"""Frames as they travel between stages."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import numpy as np  # annotations only: the command line imports this before its Ctrl-C handling


@dataclass
class HostFrame:
    """A converted frame in host memory: planar YUV bytes for the encoder.

    ``data`` is uint8, laid out as PyAV's ``VideoFrame.from_ndarray`` expects
    for ``pix_fmt``: ``(h * 3 // 2, w)`` for yuv420p and nv12 (the planes one
    after the other), ``(3, h, w)`` for yuv444p. Written arrays where GL is
    software (:mod:`glrec.sources.frames.direct`, for the CPU encoder only)
    come unconverted, ``gray`` ``(h, w, 1)``, ``rgb24`` ``(h, w, 3)`` or ``rgba``
    ``(h, w, 4)``, or already converted by swscale as a PyAV frame: ``av_frame``
    in ``pix_fmt``, with ``data`` empty.
    """

    index: int
    pix_fmt: str
    width: int
    height: int
    data: np.ndarray
    av_frame: Any = None  # an av.VideoFrame in pix_fmt

    def planes(self) -> tuple[np.ndarray, ...]:
        """Y, U, V planes (Y, UV for nv12) as 2-D views, rows top-down."""
        w, h = self.width, self.height
        if self.pix_fmt == "yuv444p":
            return tuple(self.data.reshape(3, h, w))
        flat = self.data.reshape(-1)
        y = flat[: w * h].reshape(h, w)
        if self.pix_fmt == "nv12":
            return y, flat[w * h :].reshape(h // 2, w)
        q = (w // 2) * (h // 2)
        return y, flat[w * h : w * h + q].reshape(h // 2, w // 2), flat[w * h + q :].reshape(h // 2, w // 2)


@dataclass(frozen=True)
class Packet:
    """One encoded access unit, independent of the encoder that made it.

    ``pts``/``dts`` count in ``time_base`` units (glrec uses ``1/fps``, so the
    pts of frame ``i`` is ``i``).
    """

    data: bytes
    pts: int
    dts: int
    keyframe: bool


class DeviceFrame(Protocol):
    """A converted frame in CUDA memory, valid until :meth:`release` (what an encoder sees of it).

    :class:`glrec.cuda.pool.DeviceFrame` is the one glrec's CUDA handoffs make; the
    whole frame is one C-contiguous ``uint8`` array at its ``__cuda_array_interface__``,
    laid out as the host path's :class:`HostFrame` data.
    """

    index: int

    @property
    def pix_fmt(self) -> str: ...

    @property
    def width(self) -> int: ...

    @property
    def height(self) -> int: ...

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]: ...

    def synchronize(self) -> None:
        """Block until the copy that filled the frame has finished."""

    def plane_views(self) -> list[Any]:
        """One CUDA-array view per plane (objects with ``__cuda_array_interface__``), in layout order."""

    def to_host(self, out: np.ndarray | None = None) -> HostFrame:
        """The frame copied to host memory."""

    def release(self, *, after: Any = None) -> None:
        """Give the buffer back (``after``: a stream whose queued copy out of it must finish first)."""


@dataclass(frozen=True)
class EncodedFrame:
    """A frame already encoded where it was rendered (the GL JPEG encoder's bytes, in the GL context).

    ``data`` is the whole picture in ``codec`` (a JFIF file for ``mjpeg``); the
    encoder stage only wraps it in a :class:`Packet` whose pts is ``index``.
    """

    index: int
    codec: str
    width: int
    height: int
    data: bytes


#: A frame as it leaves a handoff and reaches an encoder: host memory, CUDA memory, or already
#: encoded (by an encoder that works in the GL context).
Frame = HostFrame | DeviceFrame | EncodedFrame
