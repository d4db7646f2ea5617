"""Container details real players read: the length of a Matroska file, HEVC's sample entry in MP4/MOV.

Checked with ffprobe (an independent reader); mediainfo, GStreamer and
mkvmerge read the same fields (Segment duration, the ``stsd`` sample entry).
"""

from __future__ import annotations

import shutil
import subprocess

import pytest

import glrec


def _probe(path, entries: str) -> dict[str, str]:
    exe = shutil.which("ffprobe")
    if exe is None:
        pytest.skip("needs ffprobe (apt-get install ffmpeg)")
    out = subprocess.run(
        [exe, "-v", "error", "-select_streams", "v:0", "-show_entries", entries, "-of", "default=nw=1", str(path)],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    return dict(line.split("=", 1) for line in out.strip().splitlines())


@pytest.mark.parametrize("codec", ["mjpeg", "h264"])
@pytest.mark.parametrize("fps", [30.0, 24.0])
def test_matroska_lasts_until_the_end_of_its_last_frame(gl, tmp_path, codec, fps):
    """60 frames at 30 fps last 2.000 s; without packet durations the MJPEG file read 1.967 s (59 frames' worth)."""
    path = tmp_path / f"clip-{codec}.mkv"
    glrec.record("bars", path, size=(64, 48), fps=fps, frames=60, codec=codec, encoder="cpu")
    duration = float(_probe(path, "format=duration")["duration"])
    assert duration == pytest.approx(60 / fps, abs=1.5e-3)  # Matroska counts whole milliseconds


@pytest.mark.parametrize("ext", [".mp4", ".mov"])
def test_hevc_in_mp4_and_mov_uses_the_hvc1_sample_entry(gl, tmp_path, ext):
    """Apple's players (QuickTime, Safari, iOS) open HEVC only as 'hvc1'; FFmpeg's default is 'hev1'."""
    path = tmp_path / f"hevc{ext}"
    glrec.record("bars", path, size=(64, 64), fps=30, frames=6, codec="hevc", encoder="cpu")
    info = _probe(path, "stream=codec_name,codec_tag_string,nb_frames")
    assert info == {"codec_name": "hevc", "codec_tag_string": "hvc1", "nb_frames": "6"}
