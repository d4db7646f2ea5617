"""Frames as they travel between stages."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Union

if TYPE_CHECKING:
    import numpy as np  # annotations only: the command line imports this before its Ctrl-C handling

    from .cuda.pool import DeviceFrame  # type-only: the ground imports no platform at run time


@dataclass
class HostFrame:
    """A converted frame in host memory: planar YUV bytes for the encoder.

    ``data`` is uint8, laid out as PyAV's ``VideoFrame.from_ndarray`` expects
    for ``pix_fmt``: ``(h * 3 // 2, w)`` for yuv420p and nv12, ``(h, w, 3)``
    planar-as-packed is never used; yuv444p is ``(3, h, w)``. Written arrays
    where GL is software (:mod:`glrec.sources.direct`, for the CPU encoder only)
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


#: A frame as it leaves a handoff and reaches an encoder: host memory, or CUDA memory
#: (:class:`glrec.cuda.pool.DeviceFrame`).
Frame = Union[HostFrame, "DeviceFrame"]
