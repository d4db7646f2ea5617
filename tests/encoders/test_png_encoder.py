"""The PNG encoder on its own: packets in frame order, the same bytes as the writer, a bounded number in flight,
and no thread left once the last encoder closes."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from glrec.encoders.png import encoder as png
from glrec.encoders.png.options import PngOptions
from glrec.encoders.png.writer import encode_png
from glrec.errors import EncoderError
from glrec.frame import EncodedFrame, HostFrame
from glrec.options import VideoOptions


def _pool_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("glrec-png")]


def _frames(n: int, w: int = 40, h: int = 24) -> list[np.ndarray]:
    rng = np.random.default_rng(9)
    return [rng.integers(0, 256, (h, w, 3), dtype=np.uint8) for _ in range(n)]


@pytest.mark.parametrize("in_flight_bytes", [png.IN_FLIGHT_BYTES, 1])  # 1: a window of one frame
def test_packets_come_in_frame_order_with_the_writers_bytes(monkeypatch, in_flight_bytes):
    monkeypatch.setattr(png, "IN_FLIGHT_BYTES", in_flight_bytes)
    frames = _frames(12)
    facts = VideoOptions.create((40, 24), 30, codec="png").facts
    a, b = png.PngEncoder(facts, PngOptions()), png.PngEncoder(facts, PngOptions(png_compression=9))
    got: dict[str, list] = {"a": [], "b": []}
    most = 0
    for i, f in enumerate(frames):
        got["a"] += a.encode(HostFrame(i, "rgb24", 40, 24, f.copy()))
        got["b"] += b.encode_batch([HostFrame(i, "rgb24", 40, 24, f)])
        most = max(most, len(a._pending))
    got["a"] += a.flush()
    got["b"] += b.flush()
    assert most <= (1 if in_flight_bytes == 1 else 2 * png.usable_cores()) + 1
    assert len(_pool_threads()) >= 1  # one pool, shared by both
    a.close()
    assert _pool_threads(), "the pool stopped while another encoder had it"
    b.close()
    b.close()  # twice is fine
    assert _pool_threads() == []
    for name, level in (("a", 2), ("b", 9)):
        assert [p.pts for p in got[name]] == list(range(12)) == [p.dts for p in got[name]]
        assert all(p.keyframe for p in got[name])
        assert [p.data for p in got[name]] == [encode_png(f, level) for f in frames]


def test_grey_and_rgba_frames_are_brought_to_the_streams_format():
    grey = np.arange(24 * 40, dtype=np.uint8).reshape(24, 40, 1)
    rgba = np.dstack([_frames(1)[0], np.full((24, 40), 7, np.uint8)])
    for pix_fmt, frame, want in [
        ("rgb24", grey, np.repeat(grey, 3, axis=2)),
        ("rgba", grey, np.dstack([np.repeat(grey, 3, axis=2), np.full((24, 40), 255, np.uint8)])),
        ("rgb24", rgba, rgba[..., :3]),
    ]:
        enc = png.PngEncoder(VideoOptions.create((40, 24), 30, codec="png", pix_fmt=pix_fmt).facts, PngOptions())
        try:
            (packet,) = enc.encode(HostFrame(0, "gray" if frame.shape[2] == 1 else "rgba", 40, 24, frame)) + enc.flush()
        finally:
            enc.close()
        assert packet.data == encode_png(np.ascontiguousarray(want))


def test_an_encoded_frame_is_refused():
    enc = png.PngEncoder(VideoOptions.create((8, 8), 30, codec="png").facts, PngOptions())
    try:
        with pytest.raises(EncoderError, match="The PNG encoder takes pictures, not frame 3 already encoded"):
            enc.encode(EncodedFrame(3, "mjpeg", 8, 8, b"\xff\xd8"))
    finally:
        enc.close()
