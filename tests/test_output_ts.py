"""MPEG-TS files (.ts): an output kind added as one registry entry plus its trim rule."""

from __future__ import annotations

import av

import glrec
from glrec.sinks.trim import trim_to_complete_fragments


def test_ts_file_decodes_with_every_frame_and_its_time(gl, tmp_path, ffprobe):
    path = tmp_path / "out.ts"
    result = glrec.record("bars", path, size=(64, 64), fps=30, frames=12)
    assert result.frames == 12
    with av.open(str(path)) as c:
        frames = list(c.decode(video=0))
        start = float(c.streams.video[0].start_time * c.streams.video[0].time_base)
    assert len(frames) == 12
    assert [round(float(f.time) - start, 4) for f in frames] == [round(i / 30, 4) for i in range(12)]
    assert ffprobe(path, "codec_name", "color_space")["color_space"] == "bt709"


def test_a_cut_ts_file_is_trimmed_to_whole_packets_and_still_decodes(gl, tmp_path):
    path = tmp_path / "cut.ts"
    glrec.record("bars", path, size=(64, 64), fps=30, frames=30)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2 + 77])  # a write that stopped mid-packet
    assert trim_to_complete_fragments(path) == (len(data) // 2 + 77) % 188
    assert path.stat().st_size % 188 == 0
    with av.open(str(path)) as c:
        assert 0 < sum(1 for _ in c.decode(video=0)) < 30
