"""Sinks see a small frozen description of the stream (StreamInfo), never the encoder's knobs."""

from __future__ import annotations

import dataclasses
from fractions import Fraction

import av
import pytest

import glrec
from glrec.options import VideoOptions
from glrec.sinks import open_sink
from glrec.sinks.stream_info import StreamInfo


def test_a_sink_holds_the_description_not_the_options(tmp_path):
    options = VideoOptions.create((64, 48), 29.97, codec="hevc", crf=30, preset="slow", bframes=0)
    sink = open_sink(tmp_path / "x.mkv", options)
    try:
        assert isinstance(sink.options, StreamInfo)  # type: ignore[attr-defined]
        assert sink.options == StreamInfo("hevc", (64, 48), 29.97, "yuv420p", options.colour, 0)  # type: ignore[attr-defined]
        assert sink.options.rate == Fraction(30000, 1001)  # type: ignore[attr-defined]
    finally:
        sink.close()
    names = {f.name for f in dataclasses.fields(StreamInfo)}
    assert names == {"codec", "encoded_size", "fps", "pix_fmt", "colour", "bframes"}
    assert not names & {"crf", "preset", "tuning", "rc", "threads", "quality", "encoder_options"}
    with pytest.raises(dataclasses.FrozenInstanceError):
        sink.options.codec = "h264"  # type: ignore[attr-defined,misc]


def test_a_recording_is_timed_by_the_exact_rate(gl, tmp_path):
    out = tmp_path / "ntsc.mkv"
    glrec.record("bars", out, size=(64, 48), fps=29.97, frames=4)
    with av.open(str(out)) as c:
        stream = c.streams.video[0]
        assert stream.average_rate == Fraction(30000, 1001)
        assert sum(1 for _ in c.decode(video=0)) == 4
