"""MPEG-TS files (``.ts``): padded so that short ones are recognised, and cut back to whole frames after a failure.

A transport stream needs no index and is written packet by packet (FFmpeg's
``mpegts`` muxer writes each video frame as one PES packet at once), so a
killed recording plays up to where it stopped. Two things need the sink's help:

- FFmpeg tells a transport stream from other formats by counting sync bytes
  188 bytes apart, and trusts the count only past ten 204-byte packets' worth
  of file. A shorter recording (two frames of a small picture) is taken for an
  MPEG program stream and does not open ("End of file"). So a file shorter than
  :data:`MIN_PACKETS` packets ends in null packets (PID 0x1FFF), the stuffing
  the standard defines and every demuxer drops; longer files are left alone.
- After a failed write the last PES packet may be cut short. :func:`complete_prefix`
  keeps the frames that were written whole.
"""

from __future__ import annotations

PACKET = 188
#: 3008 bytes: past FFmpeg's threshold of 11 x 204 bytes (2244), with a margin.
MIN_PACKETS = 16
NULL_PACKET = bytes([0x47, 0x1F, 0xFF, 0x10]) + b"\xff" * (PACKET - 4)  # payload only, all stuffing


def padding(size: int) -> bytes:
    """The null packets that bring a transport stream of ``size`` bytes to :data:`MIN_PACKETS` packets."""
    return NULL_PACKET * max(0, MIN_PACKETS - size // PACKET)


def _video_pes_start(data: bytes, at: int) -> bool:
    """Whether the packet at ``at`` starts a video PES packet (payload_unit_start, stream id 0xE0-0xEF)."""
    if not data[at + 1] & 0x40:  # payload_unit_start_indicator
        return False
    control = (data[at + 3] >> 4) & 3
    if not control & 1:  # no payload
        return False
    body = at + 4 + (1 + data[at + 4] if control & 2 else 0)  # after the adaptation field
    return body + 4 <= at + PACKET and data[body : body + 3] == b"\x00\x00\x01" and data[body + 3] & 0xF0 == 0xE0


def complete_prefix(data: bytes, frames: int | None = None) -> int:
    """Length of the longest prefix of whole 188-byte packets that holds only whole frames.

    ``frames`` is how many frames were written in full (a failed write stopped in the
    next one): the prefix ends where video PES packet number ``frames`` begins, if it
    is there. Without ``frames`` the last frame is not trusted and is cut off.
    """
    starts: list[int] = []
    at = 0
    while at + PACKET <= len(data) and data[at] == 0x47:
        if _video_pes_start(data, at):
            starts.append(at)
        at += PACKET
    if frames is None:
        return starts[-1] if starts else 0
    return starts[frames] if frames < len(starts) else at
