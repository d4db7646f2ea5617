"""Inputs that stall (issue 30, items 3 and 6): an HTTP server that stalls on every connection gives each
picture once and in order; a named pipe whose writer stalls while holding it open ends at --input-timeout,
also for a Shadertoy channel, in words that say what glrec did.

Every picture carries its index (tests/media.py), read back from the recording as PyAV decodes it and
counted by ffprobe. Servers listen on 127.0.0.1 and stop by themselves; writers hold their pipe for a
bounded time; nothing here asserts how long something took.
"""

from __future__ import annotations

import http.server
import logging
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from media import ffmpeg, ffprobe_count, indexed_clip, indices_of

from glrec import transcode

pytestmark = pytest.mark.gl
SHADER = "void mainImage(out vec4 c, in vec2 p) { c = texture(iChannel0, p / iResolution.xy); }"


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True


@contextmanager
def stalling_server(root: Path, chunk: int, hold: float) -> Iterator[tuple[str, list[int]]]:
    """Serve ``root`` (with ranges); every response sends ``chunk`` bytes at most, then holds the connection
    ``hold`` seconds and closes it. Yields the URL and the start offsets of the requests so far."""
    starts: list[int] = []
    release = threading.Event()

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            data = (root / self.path.lstrip("/")).read_bytes()
            rng = self.headers.get("Range", "")
            start = int(rng[6:].split("-")[0]) if rng.startswith("bytes=") and rng[6:].split("-")[0] else 0
            starts.append(start)
            self.send_response(206 if start else 200)
            if start:
                self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
            self.send_header("Content-Length", str(len(data) - start))
            self.send_header("Accept-Ranges", "bytes")
            self.end_headers()
            try:
                self.wfile.write(data[start : start + chunk])
                self.wfile.flush()
                if start + chunk < len(data):
                    release.wait(hold)  # the stall: bounded, and cut short when the test ends
            except OSError:
                pass

    server = _Server(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", starts
    finally:
        release.set()
        server.shutdown()
        server.server_close()


def test_a_server_that_stalls_on_every_connection_gives_each_picture_once_in_order(tmp_path: Path) -> None:
    clip = indexed_clip(tmp_path / "in.mp4", 90)  # B-frames: pictures decode out of presentation order
    assert indices_of(clip) == list(range(90))
    chunk = clip.stat().st_size * 2 // 5  # each connection stops short of the end: several reconnects
    with stalling_server(tmp_path, chunk, hold=4.0) as (url, starts):
        result = transcode(f"{url}/in.mp4", tmp_path / "out.mkv", input_timeout=1.0, input_retries=10)
    assert len([s for s in starts if s > 0]) >= 2, starts  # it did resume, more than once
    # Before: two pictures recorded again, out of order, after each reconnect (92 frames of 90).
    assert ffprobe_count(tmp_path / "out.mkv") == 90
    assert indices_of(tmp_path / "out.mkv") == list(range(90))
    assert result.frames == 90


def test_a_late_picture_of_the_replayed_stretch_is_skipped_for_the_whole_segment() -> None:
    """The resume filter holds past the first new picture: a B-frame that presents before the last picture
    recorded, handed out after a later one, is not queued (before: it was, out of order)."""
    from glrec.sources.video.decode import DecodeWorker
    from glrec.sources.video.media import InputSpec

    worker = DecodeWorker(InputSpec("http://127.0.0.1:9/in.mp4", "url"), None, live=False, depth=16)  # type: ignore[arg-type]
    for k in range(3):
        worker._put(f"picture {k}", k / 30, None)
    worker._reconnect(OSError("connection reset"), 1)  # the break: resume after picture 2
    # After the reconnect: the stretch from the keyframe again, then new pictures with a late B-frame.
    for name, seconds in [("1", 1 / 30), ("2", 2 / 30), ("3", 3 / 30), ("late", 1.5 / 30), ("4", 4 / 30)]:
        worker._put(f"picture {name}", seconds, None)
    assert [p.frame for p in worker._queue] == [f"picture {k}" for k in range(5)]


def test_timestamps_that_restart_after_a_reconnect_are_kept() -> None:
    """Far before the last recorded picture, after new ones: a new segment (a joined MPEG-TS), not a replay."""
    from glrec.sources.video.decode import DecodeWorker
    from glrec.sources.video.media import InputSpec

    worker = DecodeWorker(InputSpec("http://127.0.0.1:9/in.ts", "url"), None, live=False, depth=16)  # type: ignore[arg-type]
    for k in range(60, 63):
        worker._put(f"picture {k}", k / 30, None)
    worker._reconnect(OSError("connection reset"), 1)
    for name, seconds in [("62", 62 / 30), ("63", 63 / 30), ("b0", 0.0), ("b1", 1 / 30)]:  # the clock restarted
        worker._put(f"picture {name}", seconds, None)
    assert [p.frame for p in worker._queue][3:] == ["picture 63", "picture b0", "picture b1"]


def _writer(fifo: Path, data: bytes, stop: threading.Event, released: threading.Event) -> threading.Thread:
    """Write ``data`` into ``fifo``, then hold it open (stalled) until ``stop`` or 45 s."""

    def run() -> None:
        try:
            with open(fifo, "wb") as w:
                w.write(data)
                w.flush()
                stop.wait(45)
        except OSError:
            pass
        released.set()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def test_a_pipe_whose_writer_stalls_ends_at_the_input_timeout(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    indexed_clip(tmp_path / "in.mp4", 60)
    ffmpeg("-i", str(tmp_path / "in.mp4"), "-c", "copy", str(tmp_path / "in.mkv"))  # readable from a pipe
    data = (tmp_path / "in.mkv").read_bytes()
    fifo = tmp_path / "in.fifo"
    os.mkfifo(fifo)
    stop, released = threading.Event(), threading.Event()
    writer = _writer(fifo, data[: len(data) // 2], stop, released)
    try:
        with caplog.at_level(logging.WARNING, logger="glrec"):
            result = transcode(fifo, tmp_path / "out.mkv", input_timeout=1.0, fps=30)
        # It ended by itself while the writer still held the pipe (before: it waited for as long as the
        # writer did, past its own 30 s bound, as FFmpeg read a blocking descriptor).
        still_held = not released.is_set()
    finally:
        stop.set()
        writer.join(10)
    assert still_held
    got = indices_of(tmp_path / "out.mkv")
    assert 0 < len(got) < 60 and got == list(range(len(got))), got  # what came, in order
    assert result.frames == len(got)
    words = caplog.text + " ".join(result.notes)
    assert "Immediate exit requested" not in words
    assert "nothing arrived for 1 s (--input-timeout) and glrec stopped waiting" in caplog.text, caplog.text
    assert any("kept the" in n and "nothing arrived for 1 s" in n for n in result.notes), result.notes


def test_input_timeout_reaches_a_shadertoy_channel_on_the_command_line(tmp_path: Path) -> None:
    shader = tmp_path / "toy.glsl"
    shader.write_text(SHADER)
    fifo = tmp_path / "in.fifo"
    os.mkfifo(fifo)  # no writer: the channel waits for one
    out = tmp_path / "out.mp4"
    run = subprocess.run([sys.executable, "-m", "glrec", "record", str(shader), "--channel0", str(fifo),
                          "--input-timeout", "1", "--frames", "2", "--size", "32x24", "-o", str(out)],
                         capture_output=True, text=True, timeout=120)  # fmt: skip
    # Before: the channel waited its own 10 s and then advised the --input-timeout just given.
    assert "within 1 s" in run.stderr and "within 10 s" not in run.stderr, run.stderr
    assert "Nothing was written to the pipe" in run.stderr, run.stderr
    assert run.returncode != 0 and not out.exists()


def test_input_timeout_reaches_an_overlay_channel(tmp_path: Path) -> None:
    from glrec.errors import InputTimeoutError

    ffmpeg("-f", "lavfi", "-i", "testsrc2=size=64x48:rate=10", "-frames:v", "5", str(tmp_path / "in.mp4"))
    shader = tmp_path / "toy.glsl"
    shader.write_text(SHADER)
    fifo = tmp_path / "in.fifo"
    os.mkfifo(fifo)
    with pytest.raises(InputTimeoutError, match=r"within 1 s"):
        transcode(tmp_path / "in.mp4", tmp_path / "out.mp4", overlay=str(shader), channels={1: str(fifo)},
                  input_timeout=1.0)  # fmt: skip
    assert not (tmp_path / "out.mp4").exists()
