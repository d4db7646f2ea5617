"""Encoders: frames in, :class:`~glrec.frame.Packet` lists out.

Packets carry in-band parameter sets (Annex-B for H.264/HEVC), so any sink can
take packets from any encoder, and the pts of every packet is the index of the
frame it encodes, whatever the encoder's own delay (see :class:`Encoder`).
Each encoder module owns its tables: what it accepts and its defaults.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from ..frame import Packet

if TYPE_CHECKING:
    from ..cuda.pool import DeviceFrame
    from ..frame import Frame


class Encoder(Protocol):
    """The encoder stage.

    ``encode`` may return fewer packets than frames (reordering, lookahead);
    ``flush`` returns the rest. Every packet's ``pts`` is its frame's
    ``index``. ``request_keyframe`` may be called from any thread and makes the
    next frame passed to ``encode`` a keyframe.
    """

    @property
    def codec(self) -> str:
        """The codec of the packets (h264, hevc, av1, mjpeg)."""

    @property
    def name(self) -> str:
        """What the user sees in logs and summaries (e.g. ``libx264``, ``nvenc``)."""

    def encode(self, frame: Frame) -> list[Packet]: ...

    def flush(self) -> list[Packet]: ...

    def request_keyframe(self) -> None: ...

    def close(self) -> None: ...


def device_frame(frame: Frame, encoder: str) -> DeviceFrame:
    """``frame`` as a CUDA device frame, for encoders that read CUDA memory only (NVENC, nvJPEG)."""
    from ..frame import HostFrame

    if isinstance(frame, HostFrame):
        raise TypeError(f"{encoder} reads CUDA device frames; it was given host frame {frame.index}.")
    return frame


__all__ = ["Encoder", "Packet", "device_frame"]
