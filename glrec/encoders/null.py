"""A throwaway encoder (the registry demonstration): every frame becomes an empty keyframe packet."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..frame import Packet

if TYPE_CHECKING:
    from ..interop import Frame
    from .registry import EncodeRequest


class NullEncoder:
    name = "null"
    codec = "mjpeg"

    @classmethod
    def from_request(cls, request: EncodeRequest) -> NullEncoder:
        return cls()

    def encode(self, frame: Frame) -> list[Packet]:
        if hasattr(frame, "release"):
            frame.release()
        return [Packet(b"", frame.index, frame.index, True)]

    def flush(self) -> list[Packet]:
        return []

    def request_keyframe(self) -> None:
        pass

    def close(self) -> None:
        pass
