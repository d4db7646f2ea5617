"""The nvJPEG encoder's bytes out of nvImageCodec's code streams (no GPU needed: the stream is a buffer)."""

from __future__ import annotations

import pytest

from glrec.encoders.nvjpeg.encoder import _bitstream


class CodeStream(bytearray):
    """A buffer with a ``size`` attribute, as nvImageCodec's CodeStream has: its buffer may be the capacity."""

    size = 0


@pytest.mark.parametrize(("size", "expected"), [(4, b"\xff\xd8\xff\xd9"), (0, b"\xff\xd8\xff\xd9....")])
def test_the_bytes_stop_at_the_stream_size_and_all_are_kept_without_one(size: int, expected: bytes) -> None:
    stream = CodeStream(b"\xff\xd8\xff\xd9....")
    stream.size = size
    assert _bitstream(stream) == expected


def test_a_size_past_the_buffer_keeps_the_whole_buffer() -> None:
    stream = CodeStream(b"\xff\xd8\xff\xd9")
    stream.size = 99
    assert _bitstream(stream) == b"\xff\xd8\xff\xd9"
