"""Damaged and network video inputs lose no more than FFmpeg's own CLI does (issue: nothing lost, round 3).

Inputs are made by the ffmpeg CLI and damaged here; counts are compared with what
ffprobe decodes from the same input, and pictures with the input's own pictures.
HTTP servers run on 127.0.0.1 in a thread and stop by themselves.
"""

from __future__ import annotations

import http.server
import os
import shutil
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import av
import numpy as np
import pytest
from media import ffmpeg

from glrec import transcode

pytestmark = pytest.mark.gl
SIZE = "96x64"


def clip(path: Path, frames: int = 90, *extra: str, vf: str = "null") -> Path:
    ffmpeg("-f", "lavfi", "-i", f"testsrc2=size={SIZE}:rate=30", "-frames:v", str(frames), "-vf", vf,
           "-c:v", "libx264", "-g", "30", "-bf", "0", "-pix_fmt", "yuv420p", *extra, str(path))  # fmt: skip
    return path


def probe_count(path: Path | str) -> int:
    exe = shutil.which("ffprobe")
    if exe is None:
        pytest.skip("needs ffprobe (apt-get install ffmpeg)")
    out = subprocess.run([exe, "-v", "quiet", "-count_frames", "-select_streams", "v:0", "-show_entries",
                          "stream=nb_read_frames", "-of", "csv=p=0", str(path)],
                         capture_output=True, text=True, timeout=60).stdout  # fmt: skip
    return int(out.strip().splitlines()[0])


def frames_of(path: Path | str) -> list[np.ndarray]:
    with av.open(str(path)) as c:
        return [f.to_ndarray(format="rgb24").astype(np.float64) for f in c.decode(video=0)]


def psnr(a: np.ndarray, b: np.ndarray) -> float:
    mse = float(np.mean((a - b) ** 2))
    return 99.0 if mse == 0 else 10 * np.log10(255.0**2 / mse)


def assert_same_pictures(got: list[np.ndarray], want: list[np.ndarray]) -> None:
    """Each recorded frame is the input's picture of the same index (no repeats, none skipped)."""
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        best = max(range(max(0, i - 2), min(len(want), i + 3)), key=lambda j: psnr(g, want[j]))
        assert best == i and psnr(g, w) > 24, f"frame {i} shows input picture {best} ({psnr(g, w):.1f} dB)"


def test_a_corrupt_packet_is_skipped_not_the_end(tmp_path: Path) -> None:
    good = clip(tmp_path / "good.mp4")
    with av.open(str(good)) as c:
        packets = list(c.demux(video=0))
    data = bytearray(good.read_bytes())
    pos = packets[45].pos
    data[pos : pos + 4] = b"\xff\xff\xff\x7f"  # a broken NAL length in packet 45 of 90
    bad = tmp_path / "bad.mp4"
    bad.write_bytes(bytes(data))
    assert probe_count(bad) >= 88  # FFmpeg skips the one picture (and may lose its successor)
    # What FFmpeg's CLI decodes (its pictures, with their times, losslessly), sampled at the recording's rate:
    # the gap shows the picture before it, as any player would.
    ffmpeg("-i", str(bad), "-fps_mode", "passthrough", "-c:v", "ffv1", str(tmp_path / "ref.mkv"))
    with av.open(str(tmp_path / "ref.mkv")) as c:
        decoded = [(float(f.pts * f.time_base), f.to_ndarray(format="rgb24").astype(np.float64))
                   for f in c.decode(video=0)]  # fmt: skip
    start = decoded[0][0]
    shown = [max((p for p in decoded if p[0] - start <= i / 30 + 1e-3), key=lambda p: p[0])[1] for i in range(90)]
    result = transcode(bad, tmp_path / "out.mkv")
    got = frames_of(tmp_path / "out.mkv")
    assert len(got) == 90
    for i, (g, w) in enumerate(zip(got, shown, strict=True)):
        assert psnr(g, w) > 24, f"frame {i}: {psnr(g, w):.1f} dB from what FFmpeg decodes there"
    assert result.frames == 90
    assert any("damaged packet" in note for note in result.notes), result.notes
    assert "damaged packet" in result.summary()


def test_a_truncated_file_keeps_every_picture_ffmpeg_decodes(tmp_path: Path) -> None:
    # 320x180 with B-frames: big enough for several decoder threads, whose pictures in flight were lost.
    good = tmp_path / "good.mp4"
    ffmpeg("-f", "lavfi", "-i", "testsrc2=size=320x180:rate=30", "-frames:v", "60", "-c:v", "libx264", "-g", "30",
           "-movflags", "+frag_keyframe+empty_moov", str(good))  # readable when cut  # fmt: skip
    data = good.read_bytes()
    for cut in (0.4, 0.8):
        cut_file = tmp_path / f"cut{cut}.mp4"
        cut_file.write_bytes(data[: int(len(data) * cut)])
        ref = tmp_path / f"ref{cut}.mkv"
        ffmpeg("-i", str(cut_file), "-fps_mode", "passthrough", "-c:v", "ffv1", str(ref))
        theirs = frames_of(ref)
        assert len(theirs) == probe_count(cut_file)
        transcode(cut_file, tmp_path / f"out{cut}.mkv")
        ours = frames_of(tmp_path / f"out{cut}.mkv")
        # Every picture FFmpeg decodes is in the recording (a constant-rate recording holds a picture over
        # the gap a rejected packet leaves, so it may have more frames, never fewer pictures).
        for i, want in enumerate(theirs):
            assert max(psnr(g, want) for g in ours) > 30, f"cut {cut}: FFmpeg's picture {i} is missing"


@pytest.mark.parametrize(
    ("offset_a", "offset_b"),
    [(0, 0), (20, 0), (0, 100)],
    ids=["restarted", "backwards", "jump-ahead"],
)
def test_joined_ts_segments_continue_the_timeline(tmp_path: Path, offset_a: int, offset_b: int) -> None:
    """``cat a.ts b.ts``: b's timestamps start again (or go back, or jump ahead): all 90 pictures, in order."""
    a = clip(tmp_path / "a.ts", 45, "-output_ts_offset", str(offset_a))
    b = clip(tmp_path / "b.ts", 45, "-output_ts_offset", str(offset_b), vf="negate")
    ab = tmp_path / "ab.ts"
    ab.write_bytes(a.read_bytes() + b.read_bytes())
    assert probe_count(ab) == 90
    result = transcode(ab, tmp_path / "out.mkv", fps=30)
    assert_same_pictures(frames_of(tmp_path / "out.mkv"), frames_of(a) + frames_of(b))
    assert result.frames == 90
    assert any("timestamp jump" in note for note in result.notes)


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True


def _handler(root: Path, stall: Callable[[int], float | None]) -> type[http.server.BaseHTTPRequestHandler]:
    """GET serves files of ``root``; ``stall(n)`` for request n: after half the bytes, hold for that long."""
    count = [0]

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            n, count[0] = count[0], count[0] + 1
            path = root / self.path.lstrip("/").split("?")[0]
            if not path.is_file():
                self.send_error(404)
                return
            data = path.read_bytes()
            start = 0
            rng = self.headers.get("Range", "")
            if rng.startswith("bytes=") and rng[6:].split("-")[0].isdigit():
                start = int(rng[6:].split("-")[0])
            if start:
                self.send_response(206)
                self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
            else:
                self.send_response(200)
            self.send_header("Content-Length", str(len(data) - start))
            self.send_header("Accept-Ranges", "bytes")
            self.end_headers()
            hold = stall(n) if path.suffix == ".mp4" else None
            body = data[start:]
            try:
                if hold is None:
                    self.wfile.write(body)
                    return
                self.wfile.write(body[: len(body) // 2])
                self.wfile.flush()
                time.sleep(hold)  # bounded: the server stops by itself
            except OSError:
                pass

    return Handler


@contextmanager
def serve(root: Path, stall: Callable[[int], float | None] = lambda n: None) -> Iterator[str]:
    server = _Server(("127.0.0.1", 0), _handler(root, stall))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_an_http_file_loses_no_first_second(tmp_path: Path) -> None:
    clip(tmp_path / "in.mp4", 90)
    want = frames_of(tmp_path / "in.mp4")
    with serve(tmp_path) as url:
        result = transcode(f"{url}/in.mp4", tmp_path / "out.mkv")
    assert result.frames == 90
    assert_same_pictures(frames_of(tmp_path / "out.mkv"), want)


def test_an_hls_vod_playlist_loses_nothing(tmp_path: Path) -> None:
    hls = tmp_path / "hls"
    hls.mkdir()
    clip(tmp_path / "in.mp4", 90)
    ffmpeg("-i", str(tmp_path / "in.mp4"), "-c", "copy", "-f", "hls", "-hls_time", "1", "-hls_playlist_type", "vod",
           str(hls / "index.m3u8"))  # fmt: skip
    with serve(hls) as url:
        result = transcode(f"{url}/index.m3u8", tmp_path / "out.mkv", fps=30)
    assert result.frames == 90
    assert_same_pictures(frames_of(tmp_path / "out.mkv"), frames_of(tmp_path / "in.mp4"))


def test_a_server_that_stalls_once_is_resumed_without_repeats(tmp_path: Path) -> None:
    clip(tmp_path / "in.mp4", 90, "-movflags", "+faststart")
    want = frames_of(tmp_path / "in.mp4")
    with serve(tmp_path, stall=lambda n: 4.0 if n == 0 else None) as url:
        result = transcode(f"{url}/in.mp4", tmp_path / "out.mkv", input_timeout=1.0)
    got = frames_of(tmp_path / "out.mkv")
    assert_same_pictures(got, want)
    assert result.frames == 90


def test_a_server_that_always_stalls_ends_with_what_came(tmp_path: Path) -> None:
    clip(tmp_path / "in.mp4", 90, "-movflags", "+faststart")
    want = frames_of(tmp_path / "in.mp4")
    started = time.monotonic()
    with serve(tmp_path, stall=lambda n: 3.0) as url:
        result = transcode(f"{url}/in.mp4", tmp_path / "out.mkv", input_timeout=1.0, input_retries=2)
    took = time.monotonic() - started
    got = frames_of(tmp_path / "out.mkv")
    assert 0 < len(got) < 90
    # What came, in order and never from before (no replay from the start). The pictures at the cut may be
    # decoded from packets the stall cut short, as FFmpeg decodes them, so they are checked for order only.
    assert_same_pictures(got[:30], want[:30])
    shown = [max(range(90), key=lambda j: psnr(g, want[j])) for g in got]
    assert shown == sorted(shown), shown
    assert any("kept the" in note and "nothing arrived" in note for note in result.notes), result.notes
    assert took < 60, took


def test_a_pipe_without_a_writer_times_out(tmp_path: Path) -> None:
    from glrec.errors import InputTimeoutError

    fifo = tmp_path / "in.fifo"
    os.mkfifo(fifo)
    started = time.monotonic()
    with pytest.raises(InputTimeoutError, match="Nothing was written to the pipe"):
        transcode(fifo, tmp_path / "out.mkv", input_timeout=1.0)
    assert time.monotonic() - started < 20
    assert not (tmp_path / "out.mkv").exists()


def test_a_pipe_with_a_writer_is_read_whole(tmp_path: Path) -> None:
    clip(tmp_path / "in.mkv", 30)
    fifo = tmp_path / "in.fifo"
    os.mkfifo(fifo)

    def write() -> None:
        time.sleep(0.5)
        with open(fifo, "wb") as w:
            w.write((tmp_path / "in.mkv").read_bytes())

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    result = transcode(fifo, tmp_path / "out.mkv", input_timeout=10.0, fps=30)
    writer.join(10)
    assert result.frames == 30
    assert_same_pictures(frames_of(tmp_path / "out.mkv"), frames_of(tmp_path / "in.mkv"))


def _holds_open(pid: int, path: Path) -> bool:
    """Whether process ``pid`` has ``path`` among its open files."""
    with suppress(FileNotFoundError):  # the process, or one of its descriptors, gone meanwhile
        return any(os.readlink(fd) == str(path.resolve()) for fd in Path(f"/proc/{pid}/fd").iterdir())
    return False


def test_sigterm_while_waiting_for_a_pipe_finishes_with_130(tmp_path: Path) -> None:
    import signal
    import sys

    fifo = tmp_path / "in.fifo"
    os.mkfifo(fifo)
    proc = subprocess.Popen([sys.executable, "-m", "glrec", "record", str(fifo), "-o", str(tmp_path / "out.mkv"),
                             "--input-timeout", "30"], stderr=subprocess.PIPE, text=True)  # fmt: skip
    # Waiting for the pipe is holding it open to poll it for a writer: signalled once the pipe is among the
    # child's open files (not after a fixed sleep, which a loaded machine can outlast while glrec starts).
    deadline = time.monotonic() + 60
    while not _holds_open(proc.pid, fifo):
        assert proc.poll() is None and time.monotonic() < deadline, "glrec never opened the pipe"
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert "Interrupted system call" not in err


def test_fps_is_the_rate_of_an_image_sequence(tmp_path: Path) -> None:
    import sys

    frames = tmp_path / "frames"
    frames.mkdir()
    ffmpeg("-f", "lavfi", "-i", "testsrc2=size=64x48:rate=10", "-frames:v", "19", str(frames / "%03d.png"))
    result = transcode(str(frames / "%03d.png"), tmp_path / "out.mkv", fps=10)
    assert result.frames == len(frames_of(tmp_path / "out.mkv")) == 19
    cli = tmp_path / "cli.mkv"
    subprocess.run([sys.executable, "-m", "glrec", "record", str(frames / "%03d.png"), "-o", str(cli), "--fps", "10"],
                   check=True, timeout=120, capture_output=True)  # fmt: skip
    assert len(frames_of(cli)) == 19


@pytest.mark.parametrize("suffix", [".wav", ".m4a", ".mka", ".mp3"])
def test_an_audio_only_input_says_it_has_no_video(tmp_path: Path, suffix: str) -> None:
    import sys

    path = tmp_path / f"tone{suffix}"
    ffmpeg("-f", "lavfi", "-i", "sine=frequency=440:duration=0.5", str(path))
    out = subprocess.run([sys.executable, "-m", "glrec", "record", str(path), "-o", str(tmp_path / "out.mp4")],
                         capture_output=True, text=True, timeout=120)  # fmt: skip
    assert out.returncode == 2  # the CLI's exit for input it cannot take, as for other unsupported inputs
    assert "has no video stream" in out.stderr and "Unknown scene" not in out.stderr, out.stderr
    assert out.stderr.strip().count("\n") == 0, out.stderr


def test_an_empty_channel_name_says_so(tmp_path: Path) -> None:
    from glrec.errors import SceneError
    from glrec.scenes.shadertoy_load import channel_from

    with pytest.raises(SceneError, match="empty name"):
        channel_from("", "iChannel0", tmp_path)


def test_an_odd_size_suggestion_stays_within_the_limit() -> None:
    import glrec

    with pytest.raises(glrec.ConfigError, match="such as 65534x2") as info:
        glrec.Recorder("never.mp4", size=(65535, 2))
    assert "65536" not in str(info.value)
    with pytest.raises(glrec.ConfigError, match="such as 4x6"):
        glrec.Recorder("never.mp4", size=(3, 5))


def test_a_header_ffmpeg_refuses_is_named(tmp_path: Path) -> None:
    from glrec.errors import InputError

    big = tmp_path / "big.y4m"
    big.write_bytes(b"YUV4MPEG2 W16384 H16384 F30:1 Ip A1:1 C420jpeg\nFRAME\n" + bytes(1000))
    with pytest.raises(InputError, match="refuses the header") as info:
        transcode(big, tmp_path / "out.mp4")
    assert "\n" not in str(info.value)
    assert not (tmp_path / "out.mp4").exists()
