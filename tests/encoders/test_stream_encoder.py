"""The CPU encoder in live mode: a packet per frame at once, no B-frames, keyframes on demand."""

from __future__ import annotations

import io

import av
import numpy as np
from helpers import encoder_parts

from glrec.encoders.cpu import CpuEncoder
from glrec.frame import HostFrame
from glrec.options import VideoOptions

W, H = 64, 48


def frame(i: int) -> HostFrame:
    # a pattern sliding by a pixel a frame: P-frames are real work, but no scene cut forces a keyframe
    y, x = np.mgrid[0 : H * 3 // 2, 0:W]
    data = (128 + 60 * np.sin((x + i) / 5.0) * np.cos(y / 7.0)).astype(np.uint8)
    return HostFrame(i, "yuv420p", W, H, data)


def nal_types(data: bytes) -> set[int]:
    out = set()
    for part in data.split(b"\x00\x00\x01")[1:]:
        if part:
            out.add(part[0] & 0x1F)
    return out


def test_live_encoder_emits_each_frame_at_once_without_reordering():
    enc = CpuEncoder(*encoder_parts(VideoOptions.create((W, H), 30, live=True), "cpu"))
    per_call = [enc.encode(frame(i)) for i in range(12)]
    assert [len(p) for p in per_call] == [1] * 12  # nothing held back: zero frames of encoder delay
    packets = [p[0] for p in per_call]
    assert [p.pts for p in packets] == list(range(12))
    assert all(p.pts == p.dts for p in packets)  # no B-frames: decode order is display order
    assert enc.flush() == []
    # the default (recording) settings do hold frames back, which is what live mode removes
    rec = CpuEncoder(*encoder_parts(VideoOptions.create((W, H), 30), "cpu"))
    assert sum(len(rec.encode(frame(i))) for i in range(4)) < 4


def test_keyframe_on_demand_and_periodic_keyframes():
    enc = CpuEncoder(*encoder_parts(VideoOptions.create((W, H), 30, live=True, gop=20), "cpu"))
    packets = []
    for i in range(30):
        if i == 7:
            enc.request_keyframe()
        packets += enc.encode(frame(i))
    keys = [p.pts for p in packets if p.keyframe]
    # the first frame, the one asked for, then periodic ones counted from the last keyframe (x264)
    assert keys == [0, 7, 27]
    # a requested keyframe is an IDR with SPS/PPS in band, so a viewer joining there can start
    assert {5, 7, 8} <= nal_types(packets[7].data)
    assert 7 not in nal_types(packets[8].data)
    # a decoder starting at the requested keyframe decodes everything after it
    stream = b"".join(p.data for p in packets[7:])
    with av.open(io.BytesIO(stream), format="h264") as c:
        decoded = [f for f in c.decode(video=0)]
    assert len(decoded) == 23 and (decoded[0].width, decoded[0].height) == (W, H)


def test_live_default_gop_is_one_second():
    enc = CpuEncoder(*encoder_parts(VideoOptions.create((W, H), 10, live=True), "cpu"))
    keys = [p.pts for i in range(25) for p in enc.encode(frame(i)) if p.keyframe]
    assert keys == [0, 10, 20]
