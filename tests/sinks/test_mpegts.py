"""MPEG-TS output (``.ts``): every frame, the frames the same recording gives in MP4, also when tiny.

Two readers check each file, PyAV and ffprobe. A recording of two 64x64 frames
is only a few TS packets long, which FFmpeg's probe takes for an MPEG program
stream unless the sink pads it (glrec.sinks.mpegts); a full disk leaves a file
of whole frames, as many as the error says.
"""

from __future__ import annotations

import errno
import json
import subprocess

import av
import numpy as np
import pytest
from conftest import psnr
from crash_helpers import contiguous_prefix, decode_indices, start_child
from helpers import reference_rgb

import glrec
from glrec.cli import main
from glrec.sinks import container, mpegts
from glrec.sinks.trim import trim_to_complete_fragments

FPS = 30.0


def _decoded(path):
    with av.open(str(path)) as c:
        assert c.format.name == "mpegts" or path.suffix != ".ts", c.format.name
        return [f.to_ndarray(format="rgb24") for f in c.decode(video=0)]


def _probe(path, entries="stream=nb_read_frames,codec_name,color_space,color_range,color_primaries:format=format_name"):
    out = subprocess.run(
        ["ffprobe", "-v", "error", "-select_streams", "v:0", "-count_frames", "-show_entries", entries,
         "-of", "json", str(path)],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    data = json.loads(out)
    return {**data["streams"][0], **data["format"]}


def _pids(path):
    data = path.read_bytes()
    assert len(data) % mpegts.PACKET == 0
    return [((data[i + 1] & 0x1F) << 8) | data[i + 2] for i in range(0, len(data), mpegts.PACKET)]


@pytest.mark.parametrize("codec", ["h264", "hevc"])
@pytest.mark.parametrize("scene, size, frames", [("cube", (64, 64), 2), ("plasma", (320, 180), 45)])
def test_ts_holds_the_frames_the_same_recording_holds_in_mp4(gl, tmp_path, ffprobe, codec, scene, size, frames):
    ts, mp4 = tmp_path / "out.ts", tmp_path / "out.mp4"
    for path in (ts, mp4):
        result = glrec.record(scene, path, size=size, fps=FPS, frames=frames, codec=codec, encoder="cpu")
        assert result.frames == frames
    got, same = _decoded(ts), _decoded(mp4)
    assert len(got) == len(same) == frames
    # Two encodes, not one: x264's AVX-512 code gives different bits for the same input from run to run
    # (plain PyAV too), so each file is compared with the independent render, and the two with each other
    # within the codec's error (plasma at 320x180: ~31 dB against the render, ~37 dB between two runs).
    assert min(psnr(a, b) for a, b in zip(got, same, strict=True)) > 34
    probe = _probe(ts)
    assert probe["format_name"] == "mpegts" and probe["codec_name"] == codec
    assert int(probe["nb_read_frames"]) == frames
    # A transport stream has no colour fields: the tags come from the bitstream (VUI), as glrec converted.
    assert (probe["color_space"], probe["color_range"], probe["color_primaries"]) == ("bt709", "tv", "bt709")
    ref = reference_rgb(scene, size, [i / FPS for i in range(frames)])
    for decoded in (got, same):
        assert min(psnr(a, b) for a, b in zip(decoded, ref, strict=True)) > 30
    with av.open(str(ts)) as c:  # one frame time apart, whatever the stream starts at
        times = [float(f.time) for f in c.decode(video=0)]
    assert np.allclose(np.diff(times), 1 / FPS, atol=1e-4)


def test_short_files_are_padded_with_null_packets_and_long_ones_are_not(gl, tmp_path):
    short, long = tmp_path / "short.ts", tmp_path / "long.ts"
    glrec.record("cube", short, size=(64, 64), frames=2, encoder="cpu")
    glrec.record("plasma", long, size=(320, 180), frames=30, encoder="cpu")
    pids = _pids(short)
    assert len(pids) == mpegts.MIN_PACKETS and pids[-1] == 0x1FFF  # stuffing at the end only
    first_null = pids.index(0x1FFF)
    assert set(pids[first_null:]) == {0x1FFF} and first_null < 12  # without it the file was too short to probe
    assert 0x1FFF not in _pids(long)
    # Unpadded, FFmpeg takes it for a program stream: the padding is what makes it open.
    bare = tmp_path / "bare.ts"
    bare.write_bytes(short.read_bytes()[: first_null * mpegts.PACKET])
    with pytest.raises(av.FFmpegError):
        _decoded(bare)
    assert len(_decoded(short)) == 2


@pytest.mark.parametrize("bframes, start", [(0, 0), (None, 2)])
def test_frame_i_is_shown_at_i_over_fps_from_the_reorder_delay(gl, tmp_path, bframes, start):
    """A TS decode time cannot be negative, so with B-frames (x264 veryfast: 2 frames of delay) the first
    frame is stamped at that delay; without them at 0. Players start at the first frame either way."""
    path = tmp_path / "t.ts"
    glrec.record("bars", path, size=(64, 64), fps=FPS, frames=8, bframes=bframes, encoder="cpu")
    with av.open(str(path)) as c:
        times = [float(f.time) for f in c.decode(video=0)]
    assert times == pytest.approx([(start + i) / FPS for i in range(8)], abs=1e-4)


def test_cli_records_ts(gl, tmp_path):
    out = tmp_path / "cli.ts"
    assert main(["record", "bars", "-o", str(out), "--size", "64x48", "--frames", "12", "-q"]) == 0
    assert decode_indices(out, FPS) == list(range(12))


def test_ts_refuses_codecs_it_does_not_carry_here(tmp_path):
    with pytest.raises(glrec.ConfigError, match=r"A \.ts file cannot carry av1"):
        glrec.Recorder(tmp_path / "x.ts", codec="av1")
    assert not (tmp_path / "x.ts").exists()


def test_file_size_limit_keeps_whole_frames_as_many_as_the_error_says(gl, tmp_path, ffprobe):
    path = tmp_path / "full.ts"
    child = start_child(str(path), "--fsize", "12000", "--frames", "3000")
    out, err = child.communicate(timeout=300)
    results = [json.loads(line[len("result ") :]) for line in out.splitlines() if line.startswith("result ")]
    assert child.returncode == 1 and results, err
    result = results[0]
    assert result["type"] == "DiskFullError" and result["errno"] == errno.EFBIG, result
    kept = result["frames_kept"]
    assert kept == result["frames_written"] > 0  # cut back to the frames written whole, none lost
    assert f"keeps the first {kept} frames" in result["message"]
    assert path.stat().st_size <= 12000 and path.stat().st_size % mpegts.PACKET == 0
    indices = decode_indices(path, FPS)
    # The first ``kept`` packets in decode order: with B-frames the last few shown need not be contiguous.
    assert len(indices) == kept and indices == sorted(set(indices)) and contiguous_prefix(indices) >= kept - 4
    assert int(ffprobe(path, "nb_read_frames")["nb_read_frames"]) == kept


def test_a_file_cut_at_any_byte_is_trimmed_to_whole_frames(gl, tmp_path):
    whole = tmp_path / "whole.ts"
    glrec.record("bars", whole, size=(96, 64), fps=FPS, frames=60, encoder="cpu")
    data = whole.read_bytes()
    counts = []
    for cut in range(len(data) // 11, len(data), len(data) // 11):
        part = tmp_path / f"part{cut}.ts"
        part.write_bytes(data[:cut])
        trim_to_complete_fragments(part)  # without the sink's count: the last frame is not trusted
        assert part.stat().st_size <= cut and part.stat().st_size % mpegts.PACKET == 0
        packets = container.count_packets(part, "mpegts")
        with av.open(str(part), format="mpegts") as c:
            frames = sum(1 for _ in c.decode(video=0))
        assert frames == packets
        indices = decode_indices_forced(part)
        assert indices == sorted(set(indices)) and contiguous_prefix(indices) >= frames - 4
        counts.append(frames)
    assert counts == sorted(counts) and len(set(counts)) > 3


def decode_indices_forced(path):
    """decode_indices for a file too short to be probed (the trimmed parts are not padded)."""
    from glrec.scenes.bars import read_time_code

    with av.open(str(path), format="mpegts") as c:
        return [round(read_time_code(f.to_ndarray(format="gray")) * FPS / 1000) for f in c.decode(video=0)]
