"""Transcoding video inputs through the pipeline: frames, timestamps, colour, audio and overlays,
checked by decoding the output with PyAV (FFmpeg's decoders), independently of glrec."""

from __future__ import annotations

import contextlib
import json
import select
import shutil
import socket
import subprocess
import textwrap
import threading
import time
from pathlib import Path

import av
import numpy as np
import pytest
from conftest import psnr
from media import FFMPEG, free_port, make_clip, vfr
from where import ROOT

import glrec
from glrec import transcode
from glrec.cli import main


@pytest.fixture(scope="module")
def media(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("transcode-media")


def _rgb(path: Path) -> list[np.ndarray]:
    with av.open(str(path)) as c:
        return [f.to_ndarray(format="rgb24") for f in c.decode(video=0)]


def _times(path: Path) -> list[float]:
    with av.open(str(path)) as c:
        return [float(f.time) for f in c.decode(video=0)]


def _audio_packets(path: Path) -> list[tuple[int, bytes]]:
    with av.open(str(path)) as c:
        return [(p.pts, bytes(p)) for p in c.demux(c.streams.audio[0]) if p.size]


INPUTS = {
    "h264": ("h264.mp4", ["-c:v", "libx264", "-pix_fmt", "yuv420p", "-qp", "0"]),
    "hevc": ("hevc.mkv", ["-c:v", "libx265", "-pix_fmt", "yuv420p", "-x265-params", "log-level=error:lossless=1"]),
    "vp9": ("vp9.webm", ["-c:v", "libvpx-vp9", "-pix_fmt", "yuv420p", "-lossless", "1"]),
    "av1": ("av1.mkv", ["-c:v", "libaom-av1", "-cpu-used", "8", "-crf", "8"]),
    "mjpeg": ("mjpeg.avi", ["-c:v", "mjpeg", "-q:v", "2"]),
}


@pytest.mark.parametrize("codec", sorted(INPUTS))
def test_frames_drawn_unchanged_re_encode_to_the_input(gl, media, codec):
    name, args = INPUTS[codec]
    src = make_clip(media / name, *args, size="96x64", frames=6, source="smptebars")
    out = media / f"{codec}-out.mkv"
    result = transcode(src, out, qp=0, pix_fmt="yuv444p", overwrite=True)  # near-lossless out: input errors show
    expected, got = _rgb(src), _rgb(out)
    assert result.frames == len(got) == len(expected) == 6
    assert _times(out) == pytest.approx([t - _times(src)[0] for t in _times(src)], abs=1e-6)
    for a, b in zip(expected, got, strict=True):
        assert psnr(a, b) > 40, codec  # matrix, range or row order wrong would be far below 20
    with av.open(str(out)) as c:
        s = c.streams.video[0]
        assert (s.width, s.height, round(float(s.average_rate))) == (96, 64, 10)


def test_default_encode_keeps_size_rate_and_length(gl, media):
    src = make_clip(media / "plain.mp4", "-c:v", "libx264", "-pix_fmt", "yuv420p", size="160x90", rate=25, frames=10)
    out = media / "plain-out.mp4"
    transcode(src, out, overwrite=True)
    got, expected = _rgb(out), _rgb(src)
    assert len(got) == 10 and got[0].shape == (90, 160, 3)
    assert min(psnr(a, b) for a, b in zip(expected, got, strict=True)) > 30  # x264 crf 20 over x264 input


def test_audio_is_copied_bit_exact_or_dropped_on_request(gl, media):
    src = make_clip(media / "av.mp4", "-c:v", "libx264", "-c:a", "aac", size="64x48", frames=20, audio=True)
    out = media / "av-out.mp4"
    transcode(src, out, overwrite=True)
    a, b = _audio_packets(src), _audio_packets(out)
    assert len(a) > 10 and a == b  # same packets, same bytes, same timestamps
    quiet = media / "quiet.mp4"
    transcode(src, quiet, drop_audio=True, overwrite=True)
    with av.open(str(quiet)) as c:
        assert not c.streams.audio and len(list(c.decode(video=0))) == 20
    # Matroska takes PCM; the recording is shorter than the input, so the audio is cut to it.
    pcm = make_clip(media / "pcm.mkv", "-c:v", "ffv1", "-c:a", "pcm_s16le", size="64x48", frames=20, audio=True)
    short = media / "short.mkv"
    transcode(pcm, short, frames=10, overwrite=True)
    with av.open(str(short)) as c:
        end = max(float((p.pts + p.duration) * p.time_base) for p in c.demux(c.streams.audio[0]) if p.size)
    assert 0.95 <= end <= 1.1  # 10 frames at 10 fps: one second of sound, not two
    assert _audio_packets(short) == _audio_packets(pcm)[: len(_audio_packets(short))]
    # The same cut from MP4 (AAC, interleaved by ffmpeg): the audio reaches the end of the video too.
    cut = media / "cut-av.mp4"
    transcode(src, cut, frames=10, overwrite=True)
    with av.open(str(cut)) as c:
        end = max(float((p.pts + p.duration) * p.time_base) for p in c.demux(c.streams.audio[0]) if p.size)
    assert 0.95 <= end <= 1.1
    assert _audio_packets(cut) == _audio_packets(src)[: len(_audio_packets(cut))]


def test_outputs_without_audio_and_other_streams_say_so(gl, media, caplog):
    src = make_clip(media / "subs.mkv", "-c:v", "ffv1", "-c:a", "pcm_s16le", size="64x48", frames=5, audio=True)
    with_subs = media / "with-subs.mkv"
    srt = media / "s.srt"
    srt.write_text("1\n00:00:00,000 --> 00:00:00,400\nhello\n")
    subprocess.run([FFMPEG, "-v", "error", "-y", "-i", str(src), "-i", str(srt), "-map", "0", "-map", "1", "-c", "copy",
                    str(with_subs)], check=True)  # fmt: skip
    with caplog.at_level("WARNING", logger="glrec"):
        transcode(with_subs, media / "raw.h264", overwrite=True)
    text = caplog.text
    assert "subtitle #2 is not copied" in text and "audio is not copied: a h264 output holds video only" in text


def test_vfr_input_becomes_constant_rate_frame_by_timestamp(gl, media):
    times = [0, 100, 150, 400, 450]
    colours = vfr(media / "vfr.mkv", times)
    out = media / "vfr-out.mkv"
    result = transcode(media / "vfr.mkv", out, fps=20, qp=0, pix_fmt="yuv444p", overwrite=True)
    got = [tuple(int(v) for v in f[4, 4]) for f in _rgb(out)]
    # One output frame per 50 ms until the input's end (its last frame lasts 1 ms: 0.45 s).
    expected = [colours[max(i for i, t in enumerate(times) if t <= slot * 50)] for slot in range(10)]
    assert result.frames == 10
    assert all(np.abs(np.subtract(g, e)).max() <= 3 for g, e in zip(got, expected, strict=True)), (got, expected)


def test_odd_sizes_need_an_explicit_choice(gl, media):
    src = make_clip(media / "odd.mkv", "-c:v", "ffv1", "-pix_fmt", "yuv420p", size="33x17", source="testsrc")
    with pytest.raises(glrec.ConfigError, match="odd dimension.*pad"):
        transcode(src, media / "odd.mp4", overwrite=True)
    assert not (media / "odd.mp4").exists()
    result = transcode(src, media / "odd444.mkv", pix_fmt="yuv444p", qp=0, overwrite=True)
    assert result.frames == 5 and _rgb(media / "odd444.mkv")[0].shape == (17, 33, 3)
    padded = transcode(src, media / "odd-pad.mkv", pad=True, overwrite=True)
    assert padded.frames == 5 and _rgb(media / "odd-pad.mkv")[0].shape == (18, 34, 3)


def test_shadertoy_overlay_sees_the_frame_as_ichannel0(gl, media, tmp_path):
    src = make_clip(media / "ov.mkv", "-c:v", "ffv1", size="64x48", frames=4)
    shader = tmp_path / "invert.glsl"
    shader.write_text(textwrap.dedent("""
        void mainImage(out vec4 c, in vec2 p) {
            vec3 f = texture(iChannel0, p / iResolution.xy).rgb;
            c = vec4(p.x < iResolution.x * 0.5 ? f : 1.0 - f, 1.0);
        }
    """))  # fmt: skip
    out = tmp_path / "ov.mkv"
    transcode(src, out, overlay=str(shader), qp=0, pix_fmt="yuv444p")
    for a, b in zip(_rgb(src), _rgb(out), strict=True):
        assert psnr(a[:, :32], b[:, :32]) > 40  # left half: the frame as decoded
        assert psnr(255 - a[:, 33:].astype(int), b[:, 33:]) > 40  # right half: inverted


def test_python_overlay_draws_over_the_frame_and_gets_the_source(gl, media):
    src = make_clip(media / "py.mkv", "-c:v", "ffv1", size="80x60", frames=10)
    out = media / "py-out.mkv"
    transcode(src, out, overlay=str(ROOT / "examples" / "overlay_scene.py"), qp=0, pix_fmt="yuv444p", overwrite=True)
    frames, inputs = _rgb(out), _rgb(src)
    bar = max(2, 60 // 40)
    for i, (f, a) in enumerate(zip(frames, inputs, strict=True)):
        assert psnr(f[5 : -bar - 1, : 80 - 3 * bar - 1], a[5 : -bar - 1, : 80 - 3 * bar - 1]) > 40  # frame untouched
        filled = int(80 * min(1.0, (i / 10) / 1.0))
        if filled > 4:
            assert np.abs(f[-1, 1 : filled - 1].astype(int) - (255, 89, 51)).max() <= 4  # the progress bar


def test_input_that_breaks_mid_run_finishes_the_output(gl, media):
    whole = make_clip(media / "whole.ts", "-c:v", "libx264", "-f", "mpegts", size="64x48", frames=30)
    cut = media / "cut.ts"
    cut.write_bytes(whole.read_bytes()[: whole.stat().st_size // 2])
    out = media / "cut-out.mp4"
    result = transcode(cut, out, overwrite=True)
    assert 5 <= result.frames < 30 and len(_rgb(out)) == result.frames


def test_bad_inputs_leave_no_output(media, tmp_path):
    out = tmp_path / "out.mp4"
    with pytest.raises(glrec.InputNotFoundError):
        transcode(tmp_path / "missing.mp4", out)
    wav = tmp_path / "tone.wav"
    subprocess.run([FFMPEG, "-v", "error", "-f", "lavfi", "-i", "sine=duration=0.2", str(wav)], check=True)
    with pytest.raises(glrec.UnsupportedInputError, match="no video stream"):
        transcode(wav, out)
    assert not out.exists()
    with pytest.raises(glrec.ConfigError, match="Unknown option 'bitrat'"):
        transcode(wav, out, bitrat="1M")  # checked before the input is even opened


@pytest.mark.skipif(FFMPEG is None, reason="needs the ffmpeg command line")
def test_live_udp_input_records_until_the_stream_ends(gl, tmp_path):
    from test_stream_network import wait_bound

    port = free_port()
    senders: list[subprocess.Popen[bytes]] = []

    def send() -> None:  # once glrec listens, however long it takes to start: none of the 2 s is sent to nobody
        wait_bound(port, "udp", timeout=60)
        senders.append(subprocess.Popen([FFMPEG, "-v", "error", "-re", "-f", "lavfi", "-i",
                                         "testsrc2=size=64x48:rate=25", "-t", "2", "-c:v", "libx264", "-g", "10",
                                         "-f", "mpegts", f"udp://127.0.0.1:{port}?pkt_size=1316"]))  # fmt: skip

    sending = threading.Thread(target=send, daemon=True)
    sending.start()
    try:
        started = time.monotonic()
        # The timeout bounds the wait for the sender's first packet (the sender's start, from the moment glrec
        # listens) and, after the sender stops, for the next one (then one reconnect per retry): the test
        # takes the 2 s of stream and this long after it. Of the 50 frames sent, those that come while glrec
        # probes the stream are not kept (a live input, read without buffering): about 20 remain, 10 are
        # asked for.
        result = transcode(f"udp://127.0.0.1:{port}", tmp_path / "live.mp4", input_timeout=4.0, input_retries=0)
        assert time.monotonic() - started < 60
    finally:
        sending.join(timeout=60)
        for sender in senders:
            sender.kill()
            sender.wait()
    frames = _rgb(tmp_path / "live.mp4")
    assert 10 <= result.frames == len(frames) and frames[0].shape == (48, 64, 3)


def test_cli_record_with_overlay_and_channels(gl, media, tmp_path, capsys):
    src = make_clip(media / "cli.mp4", "-c:v", "libx264", "-c:a", "aac", size="96x64", frames=10, audio=True)
    out = tmp_path / "cli-out.mp4"
    code = main(["record", str(src), "-o", str(out), "--overlay", str(ROOT / "examples" / "grade_overlay.glsl"), "-q"])
    assert code == 0
    assert len(_rgb(out)) == 10 and _audio_packets(out) == _audio_packets(src)
    # --channelN binds a Shadertoy scene's channels when the first argument is a scene.
    tex = make_clip(tmp_path / "tex.png", "-pix_fmt", "rgb24", size="32x32", frames=1)
    shader = tmp_path / "show.glsl"
    shader.write_text("void mainImage(out vec4 c, in vec2 p) { c = texture(iChannel0, p / iResolution.xy); }\n")
    out2 = tmp_path / "tex.mkv"
    code = main(["record", str(shader), "-o", str(out2), "--channel0", str(tex), "--size", "32x32", "--frames", "2",
                 "--qp", "0", "--pix-fmt", "yuv444p", "-q"])  # fmt: skip
    assert code == 0
    assert psnr(_rgb(out2)[0], _rgb(tex)[0]) > 30  # mipmapped, linear: close to the image, not identical
    code = main(["record", "cube", "-o", str(tmp_path / "x.mp4"), "--overlay", str(shader), "-q"])
    assert code == 2 and "--overlay draws over a video input" in capsys.readouterr().err


_SLOW_OVERLAY = """
import time


class Slow:  # draws nothing and takes 70 ms a frame: a machine too busy for 25 frames/s, on purpose
    def setup(self, ctx, size):
        pass

    def render(self, t):
        time.sleep(0.07)

    def close(self):
        pass
"""


class _Datagrams:
    """Every datagram sent to a UDP port on loopback, in order, kept by the socket until read at the end.

    The stream's receiver for :func:`test_stream_a_video_input_with_an_overlay`. ffmpeg receiving it (as
    tests/stream does) cannot tell when a stream of unknown length is over: its MPEG-TS demuxer hands on
    a frame's packet only when the next one starts, so it waited out its 10 s read timeout after the last
    datagram every time (10 of the test's 12 s). Here the sender's own count says when all has come.

    Nothing reads while glrec streams: the socket holds the whole stream (25 frames of 64x48 are about
    15 KB, in the 208 KiB of Linux's default receive buffer, asked to be 1 MiB here), so what arrives
    does not depend on when this process gets the CPU.
    """

    def __init__(self) -> None:
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 2**20)
        self._sock.bind(("127.0.0.1", 0))
        self._sock.setblocking(False)
        self.port = self._sock.getsockname()[1]

    def __enter__(self) -> _Datagrams:
        return self

    def __exit__(self, *exc: object) -> None:
        self._sock.close()

    def frames(self, sent: int, path: Path, timeout: float = 10.0) -> list[np.ndarray]:
        """The frames of what came (written to ``path``) once ``sent`` have come, or after ``timeout`` s.

        Everything waiting in the socket is read before each count, so more frames than were sent show
        as well as fewer. (On loopback a datagram is normally there when its send returns; the wait is
        for one whose delivery the kernel put off.)
        """
        data = bytearray()
        deadline = time.monotonic() + timeout
        while True:
            with contextlib.suppress(BlockingIOError):
                while True:
                    data += self._sock.recv(65536)
            path.write_bytes(data)
            if time.monotonic() > deadline:
                return _rgb(path)  # what came, or why it does not decode
            with contextlib.suppress(av.FFmpegError):  # cut short mid-packet: wait for the rest
                frames = _rgb(path) if data else []
                if len(frames) >= sent:
                    return frames
            select.select([self._sock], [], [], 0.1)


@pytest.mark.skipif(shutil.which("ffmpeg") is None, reason="needs ffmpeg")
@pytest.mark.parametrize("slow", [False, True], ids=["grade", "slower-than-its-rate"])
def test_stream_a_video_input_with_an_overlay(gl, media, tmp_path, capsys, slow):
    overlay = str(ROOT / "examples" / "grade_overlay.glsl")
    if slow:  # what a loaded machine does to the clock, every time: slots skipped (issue 35 item 9)
        (tmp_path / "slow.py").write_text(_SLOW_OVERLAY)
        overlay = f"{tmp_path / 'slow.py'}:Slow"
    src = make_clip(media / "st.mkv", "-c:v", "ffv1", size="64x48", rate=25, frames=25)
    # Listening before glrec starts, however long glrec then takes to open the input and compile its shaders.
    with _Datagrams() as rx:
        code = main(["stream", str(src), "--to", f"udp://127.0.0.1:{rx.port}", "--overlay", overlay, "--measure",
                     "-q"])  # fmt: skip
        assert code == 0
        # The live clock skips slots when rendering falls behind (by design, more of them on a loaded machine):
        # what arrives is what glrec says it sent, whatever the load, and never more than the file's 25 frames.
        measured = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
        sent = measured["frames"]
        frames = rx.frames(sent, tmp_path / "got.ts")
    assert 1 <= sent <= 25, measured
    assert len(frames) == sent and frames[0].shape == (48, 64, 3)  # the file's own size, every frame sent
    if slow:
        assert measured["skipped"] > 0 and sent < 20, measured  # where "at least 20 of 25" failed under load
