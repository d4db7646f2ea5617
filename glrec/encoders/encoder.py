"""The encoder stage's protocol: frames in, :class:`~glrec.frame.Packet` lists out, one frame or a batch at a time.

Packets carry in-band parameter sets (Annex-B for H.264/HEVC), so any sink can
take packets from any encoder, and the pts of every packet is the index of the
frame it encodes, whatever the encoder's own delay (see :class:`Encoder`).
Each encoder lives in a room of its own beside this module (``cpu/``,
``nvenc/``, ``nvjpeg/``, ``gl_jpeg/``, ``png/``), with its row for the registry.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from ..errors import EncoderError
from ..frame import DeviceFrame, EncodedFrame, Frame, HostFrame, Packet


class Encoder(Protocol):
    """The encoder stage.

    ``encode`` may return fewer packets than frames (reordering, lookahead);
    ``flush`` returns the rest. Every packet's ``pts`` is its frame's
    ``index``. ``encode_batch`` takes up to the row's ``batch`` frames in one
    call and gives the same packets, in the same order, as ``encode`` on each.
    ``request_keyframe`` may be called from any thread and makes the next frame
    passed to ``encode`` a keyframe.
    """

    @property
    def codec(self) -> str:
        """The codec of the packets (h264, hevc, av1, mjpeg)."""

    @property
    def name(self) -> str:
        """What the user sees in logs and summaries (e.g. ``libx264``, ``nvenc``)."""

    def encode(self, frame: Frame) -> list[Packet]:
        """Encode one frame; returns the packets ready now.

        Maybe none, maybe earlier frames' (reordering, lookahead); each packet's pts is its frame's index.
        """

    def encode_batch(self, frames: Sequence[Frame]) -> list[Packet]:
        """Encode up to the row's ``batch`` frames in one call.

        The packets are the same, in the same order, as ``encode`` on each frame would give.
        """

    def flush(self) -> list[Packet]:
        """Return every packet still inside the encoder (at the end of the recording)."""

    def request_keyframe(self) -> None:
        """Make the next frame passed to ``encode`` a keyframe; may be called from any thread."""

    def close(self) -> None:
        """Free the encoder's resources; safe to call twice."""


def encode_each(encoder: Encoder, frames: Sequence[Frame]) -> list[Packet]:
    """``encode_batch`` of an encoder that encodes frame by frame (its row's ``batch`` is 1): each in turn.

    An encoder that takes a batch in one call (nvJPEG) has its own ``encode_batch`` instead.
    """
    return [packet for frame in frames for packet in encoder.encode(frame)]


def host_picture(frame: Frame, encoder: str) -> HostFrame:
    """``frame`` in host memory, for encoders that read the host (the CPU's, PNG's): a CUDA device frame is
    copied once, on the calling thread, and released; an encoded frame is refused."""
    if isinstance(frame, EncodedFrame):
        raise EncoderError(f"{encoder} takes pictures, not frame {frame.index} already encoded.")
    if isinstance(frame, HostFrame):
        return frame
    try:
        return frame.to_host()
    finally:
        frame.release()


def device_frame(frame: Frame, encoder: str) -> DeviceFrame:
    """``frame`` as a CUDA device frame, for encoders that read CUDA memory only (NVENC, nvJPEG)."""
    if isinstance(frame, (HostFrame, EncodedFrame)):
        what = "host frame" if isinstance(frame, HostFrame) else "encoded frame"
        raise TypeError(f"{encoder} reads CUDA device frames; it was given {what} {frame.index}.")
    return frame


__all__ = ["Encoder", "Packet", "device_frame", "encode_each", "host_picture"]
