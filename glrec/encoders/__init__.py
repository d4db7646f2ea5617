"""Encoders: frames in, :class:`~glrec.frame.Packet` lists out.

Every encoder has ``encode(frame) -> list[Packet]``, ``flush() -> list[Packet]``
and ``close()``. Packets carry in-band parameter sets (Annex-B for H.264/HEVC),
so any sink can take packets from any encoder.
"""

from __future__ import annotations

from typing import Protocol

from ..frame import HostFrame, Packet


class Encoder(Protocol):
    """The encoder stage."""

    #: The codec of the packets (h264, hevc, av1, mjpeg).
    codec: str

    def encode(self, frame: HostFrame) -> list[Packet]: ...

    def flush(self) -> list[Packet]: ...

    def close(self) -> None: ...


__all__ = ["Encoder", "Packet"]
