"""Live network outputs, received by a real client: ffmpeg listens on loopback, glrec pushes to it.

ffmpeg (Debian's package) receives MPEG-TS over UDP, RTSP (as a listening RTSP
server) and RTMP (as a listening RTMP server), copies the stream to a file, and
ffprobe decodes that file: every frame glrec rendered arrives, at the right size.
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from glrec.errors import OutputError
from glrec.options import VideoOptions
from glrec.sinks.frame_times import FrameTimes, LatencyStats
from glrec.sinks.network import NetworkSink
from glrec.stream.live import LiveSession

SIZE, FPS, FRAMES = (160, 120), 60.0, 30

pytestmark = pytest.mark.skipif(shutil.which("ffmpeg") is None, reason="needs ffmpeg (apt-get install ffmpeg)")


def free_port(kind: int = socket.SOCK_STREAM) -> int:
    with socket.socket(socket.AF_INET, kind) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_bound(port: int, table: str, timeout: float = 10.0) -> None:
    """Wait until something listens on ``port``, read from /proc (a probe connection
    would use up ffmpeg's single accept)."""
    want = f":{port:04X}"  # ffmpeg binds UDP inputs to any address, TCP listeners to the one given
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for line in Path(f"/proc/net/{table}").read_text().splitlines()[1:]:
            fields = line.split()
            if fields[1].endswith(want) and (table == "udp" or fields[3] == "0A"):  # 0A = LISTEN
                return
        time.sleep(0.02)
    raise AssertionError(f"nothing bound {want} in /proc/net/{table} within {timeout} s")


def receive(args: list[str], out: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        ["ffmpeg", "-nostdin", "-v", "error", "-y", *args, "-c", "copy", str(out)],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def stream_to(url: str) -> tuple[int, int, dict[str, float]]:
    opts = VideoOptions.create(SIZE, FPS, live=True)
    times, latency = FrameTimes(), LatencyStats()
    sink = NetworkSink(url, opts, times=times, latency=latency)
    result = LiveSession("cube", sink, size=SIZE, fps=FPS, times=times, latency=latency).run(frames=FRAMES)
    return result.frames, result.skipped, result.latency


def check_received(proc: subprocess.Popen[str], out: Path, ffprobe, sent: int, skipped: int) -> None:
    try:
        _, err = proc.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise
    assert out.exists() and out.stat().st_size > 0, err
    info = ffprobe(out, "width", "height", "nb_read_frames", "codec_name")
    assert (int(info["width"]), int(info["height"])) == SIZE
    assert info["codec_name"] == "h264"
    # every frame glrec rendered arrived and decodes; skipped slots (if the machine was busy) are counted
    assert int(info["nb_read_frames"]) == sent
    # (a loaded machine skips more slots, by design: how many were sent is the sender's count, not a share of FRAMES)
    assert sent + skipped == FRAMES and sent >= 1


def test_mpegts_over_udp_from_the_cli(gl, tmp_path, ffprobe):
    port = free_port(socket.SOCK_DGRAM)
    out = tmp_path / "udp.ts"
    proc = receive(["-i", f"udp://127.0.0.1:{port}?timeout=1000000"], out)  # ends 1 s after the last datagram
    wait_bound(port, "udp")
    glrec = subprocess.run(
        [sys.executable, "-m", "glrec", "stream", "cube", "--to", f"udp://127.0.0.1:{port}", "--size", "160x120",
         "--fps", str(FPS), "--frames", str(FRAMES), "--measure", "-q"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert glrec.returncode == 0, glrec.stderr
    measured = json.loads(glrec.stdout.strip().splitlines()[-1])
    sent, skipped = measured["frames"], measured["skipped"]
    assert measured["render_to_packet"]["count"] == sent  # every packet was timed from its render to its send
    check_received(proc, out, ffprobe, sent, skipped)


def test_rtsp_push(gl, tmp_path, ffprobe):
    port = free_port()
    out = tmp_path / "rtsp.mkv"
    proc = receive(["-rtsp_flags", "listen", "-timeout", "15", "-i", f"rtsp://127.0.0.1:{port}/live"], out)
    wait_bound(port, "tcp")
    sent, skipped, _ = stream_to(f"rtsp://127.0.0.1:{port}/live")
    check_received(proc, out, ffprobe, sent, skipped)


def test_rtmp_push(gl, tmp_path, ffprobe):
    port = free_port()
    out = tmp_path / "rtmp.mkv"
    proc = receive(["-listen", "1", "-i", f"rtmp://127.0.0.1:{port}/app/stream"], out)
    wait_bound(port, "tcp")
    sent, skipped, _ = stream_to(f"rtmp://127.0.0.1:{port}/app/stream")
    check_received(proc, out, ffprobe, sent, skipped)


def test_push_without_a_receiver_says_so(gl):
    port = free_port()  # nobody listens here
    with pytest.raises(OutputError, match="receiver"):
        stream_to(f"rtmp://127.0.0.1:{port}/app/stream")
