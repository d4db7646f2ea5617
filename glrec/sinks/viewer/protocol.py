"""The viewer WebSocket's wire format.

Server → viewer:

- **binary**: one encoded access unit (H.264 Annex-B, parameter sets in band
  before every keyframe) after a 16-byte little-endian header::

      u8  kind        1 = video frame
      u8  flags       bit 0: keyframe
      u16 reserved    0
      u32 index       frame (slot) index; the frame's time is index / fps
      f64 render_ms   when the frame's render began, Unix epoch milliseconds

- **text** (JSON): ``hello`` on connect (``width``, ``height``, ``fps``,
  ``codec``, ``viewer``), ``pong`` (``t`` echoed, ``server`` ms) answering a ping.

Viewer → server: JSON text, validated by :func:`glrec.events.parse_message`.
"""

from __future__ import annotations

import struct

FRAME_HEADER = struct.Struct("<BBHId")
KIND_FRAME = 1
FLAG_KEY = 1


def pack_frame(data: bytes, index: int, keyframe: bool, render_time: float | None) -> bytes:
    """Header + access unit; ``render_time`` in epoch seconds (NaN when unknown)."""
    ms = float("nan") if render_time is None else render_time * 1000.0
    return FRAME_HEADER.pack(KIND_FRAME, FLAG_KEY if keyframe else 0, 0, index & 0xFFFFFFFF, ms) + data


def unpack_frame(message: bytes) -> tuple[int, bool, float, bytes]:
    """``(index, keyframe, render_ms, access_unit)`` of a binary frame message."""
    kind, flags, _, index, ms = FRAME_HEADER.unpack_from(message)
    if kind != KIND_FRAME:
        raise ValueError(f"not a frame message (kind {kind})")
    return index, bool(flags & FLAG_KEY), ms, message[FRAME_HEADER.size :]
