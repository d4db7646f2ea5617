"""A full disk: a typed error naming the path and the frames, and a file that plays up to its last complete fragment.

The file-size limit (RLIMIT_FSIZE, in a child process with SIGXFSZ ignored)
makes writes fail with EFBIG exactly as a full disk fails them with ENOSPC,
without mounting anything; a character device like /dev/full (made with
mknod where that is allowed) gives a real ENOSPC.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import stat

import av
import pytest
from crash_helpers import contiguous_prefix, decode_indices, start_child

import glrec
from glrec.gl.leaks import glrec_threads, live_gl_objects
from glrec.sinks import container

FPS = 30.0
LIMIT = 12_000  # bytes: a few seconds of the 192x128 bars scene
MAX_BFRAMES = 4


@pytest.mark.parametrize(
    "name, codec",
    [("full.mp4", "h264"), ("full.mkv", "h264"), ("full.h264", "h264"), ("full.ivf", "av1"), ("full.avi", "mjpeg")],
)
def test_file_size_limit_raises_disk_full_and_keeps_complete_fragments(gl, tmp_path, ffprobe, name, codec):
    path = tmp_path / name
    child = start_child(str(path), "--fsize", str(LIMIT), "--codec", codec, "--frames", "3000")
    out, err = child.communicate(timeout=300)
    results = [json.loads(line[len("result ") :]) for line in out.splitlines() if line.startswith("result ")]
    assert child.returncode == 1 and results, err
    result = results[0]

    assert result["type"] == "DiskFullError", result
    assert result["errno"] == errno.EFBIG
    message = result["message"]
    assert str(path) in message and f"failed after {result['frames_written']} frames" in message
    assert "Errno" not in message and "(File too large)" in message, message  # the system's words, no number
    kept = result["frames_kept"]
    assert 0 < kept <= result["frames_written"] <= result["submitted"]
    assert f"keeps the first {kept} frames" in message

    assert path.stat().st_size <= LIMIT
    indices = decode_indices(path, FPS)
    assert len(indices) == kept  # exactly what the error says the file holds
    assert int(ffprobe(path, "nb_read_frames")["nb_read_frames"]) == kept
    assert indices == sorted(set(indices)) and contiguous_prefix(indices) >= kept - MAX_BFRAMES
    if path.suffix in (".mp4", ".mkv"):
        # Containers lose at most the fragment that did not fit (<= 1 s of video).
        assert kept >= result["frames_written"] - FPS - MAX_BFRAMES
    else:
        assert kept == result["frames_written"]  # raw and AVI: cut back to the last whole packet only
    if path.suffix == ".avi":
        with av.open(str(path)) as c:  # every JPEG whole, to its end-of-image marker
            assert all(bytes(p).endswith(b"\xff\xd9") for p in c.demux(video=0) if p.size)
    assert not list(tmp_path.glob(".*glrec-tmp*"))


def _dev_full(path):
    """A character device at ``path`` that is /dev/full (every write: ENOSPC), or skip."""
    if not os.path.exists("/dev/full"):
        pytest.skip("needs /dev/full (Linux)")
    st = os.stat("/dev/full")
    try:
        os.mknod(path, 0o666 | stat.S_IFCHR, st.st_rdev)
    except (PermissionError, OSError) as exc:
        pytest.skip(f"needs permission to make a device node (mknod): {exc}")


@pytest.mark.parametrize("name", ["devfull.h264", "devfull.mkv", "devfull.mp4"])
def test_enospc_from_a_full_device_is_a_disk_full_error(gl, tmp_path, name):
    path = tmp_path / name
    _dev_full(path)  # every write fails with ENOSPC; a device is written in place, without --overwrite
    rec = glrec.Recorder(path, size=(64, 48), fps=FPS, encoder="cpu")
    mgl = rec.ctx
    with pytest.raises(glrec.DiskFullError) as info:
        for _ in range(300):
            rec.render("plasma")
    err = info.value
    assert err.errno == errno.ENOSPC
    assert str(path) in str(err) and err.frames_kept is None  # nothing can be read back from /dev/full
    assert err.frames_written is not None and f"failed after {err.frames_written} frames" in str(err)
    assert isinstance(err.__cause__, OSError)  # the writer's own error, kept as the cause
    # The recorder stopped itself: worker joined, GL objects released, file not touched further.
    assert glrec_threads() == [] and live_gl_objects(mgl) == []
    with pytest.raises(glrec.GlrecError, match="closed"):
        rec.render("plasma")
    assert stat.S_ISCHR(os.lstat(path).st_mode)


@pytest.mark.parametrize("name", ["devfull.h264", "devfull.mkv"])
def test_the_command_line_says_disk_full_in_one_plain_line(gl, tmp_path, capsys, name):
    """Issue 30 item 12: the line read "[Errno 28] Writing ... ([Errno 28] No space left on device)"."""
    from glrec.cli import main

    path = tmp_path / name
    _dev_full(path)
    code = main(["record", "plasma", "-q", "--size", "64x48", "--frames", "300", "--encoder", "cpu", "-o", str(path)])
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert code == 1 and len(lines) == 1, lines
    (line,) = lines
    assert line.startswith(f"glrec: error: Writing {str(path)!r} failed after "), line
    assert "(No space left on device): the disk is full" in line and "Free space" in line, line
    assert "Errno" not in line, line
    assert stat.S_ISCHR(os.lstat(path).st_mode)


@pytest.mark.parametrize("name", ["short.mp4", "short.mkv", "short.h264"])
def test_a_full_device_at_the_finish_is_a_disk_full_error_not_a_success(gl, tmp_path, name):
    """10 frames fit in FFmpeg's buffers; the only write is the one at the finish, and it fails."""
    path = tmp_path / name
    _dev_full(path)
    with pytest.raises(glrec.DiskFullError) as info:
        glrec.record("plasma", path, size=(64, 48), fps=FPS, frames=10, encoder="cpu")
    assert info.value.errno == errno.ENOSPC and info.value.frames_kept is None


def _fragmented_reference(tmp_path, name, frames):
    """The bytes of the fragmented file a recording of ``frames`` frames writes, and where its last fragment starts."""
    ref = tmp_path / f"ref-{name}"
    original = container.ContainerSink._rewrite_unfragmented
    try:
        container.ContainerSink._rewrite_unfragmented = lambda self: self._out.commit()
        glrec.record("bars", ref, size=(192, 128), fps=FPS, frames=frames, encoder="cpu")
    finally:
        container.ContainerSink._rewrite_unfragmented = original
    data = ref.read_bytes()
    marker = b"moof" if name.endswith(".mp4") else bytes.fromhex("1F43B675")  # MP4 fragment / Matroska cluster
    return data, data.rfind(marker)


@pytest.mark.parametrize("name", ["finish.mp4", "finish.mkv"])
def test_disk_full_while_the_last_fragment_is_written_at_the_finish(gl, tmp_path, ffprobe, name):
    """The last fragment goes to disk only when the file is closed; if that write fails, the recording failed.

    FFmpeg does not report an error of that last write: glrec used to say "100
    frames" for a file that decoded 91-97.
    """
    frames = 100
    data, last_fragment = _fragmented_reference(tmp_path, name, frames)
    assert 0 < last_fragment < len(data) - 200
    path = tmp_path / name
    limit = (last_fragment + len(data)) // 2  # room for everything but the second half of the last fragment
    child = start_child(str(path), "--fsize", str(limit), "--frames", str(frames))
    out, err = child.communicate(timeout=300)
    results = [json.loads(line[len("result ") :]) for line in out.splitlines() if line.startswith("result ")]
    assert results, err
    result = results[0]
    assert child.returncode == 1 and result["type"] == "DiskFullError", result
    assert result["errno"] == errno.EFBIG
    kept = result["frames_kept"]
    assert result["frames_written"] == frames and 0 < kept < frames
    assert f"keeps the first {kept} frames" in result["message"]
    assert decode_indices(path, FPS) == list(range(kept))  # exactly what the error says, nothing half
    assert int(ffprobe(path, "nb_read_frames")["nb_read_frames"]) == kept
    assert not list(tmp_path.glob(".*glrec-tmp*"))


def test_symlink_to_a_full_device_is_refused_before_recording(tmp_path):
    """A link is never written through (see glrec.sinks.paths), so /dev/full behind one is refused up front."""
    path = tmp_path / "link.mp4"
    path.symlink_to("/dev/full")
    with pytest.raises(glrec.OutputError, match="symbolic link"):
        glrec.Recorder(path, size=(64, 48), overwrite=True, encoder="cpu")
    assert path.is_symlink()


class _FailingMux:
    """Stands in for the output container of the final MP4 rewrite; runs out of space after a few packets."""

    def __init__(self, real):
        self.real, self.muxed = real, 0

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.real.close()

    def add_stream_from_template(self, template):
        return self.real.add_stream_from_template(template)

    def mux(self, packet):
        self.muxed += 1
        if self.muxed > 5:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        self.real.mux(packet)


def test_full_disk_in_the_final_rewrite_is_reported_and_keeps_the_complete_fragmented_mp4(gl, tmp_path, monkeypatch):
    real_open = av.open

    def open_failing_tmp(file, mode="r", **kwargs):
        c = real_open(file, mode, **kwargs)
        return _FailingMux(c) if mode == "w" and "glrec-tmp" in str(file) else c

    monkeypatch.setattr(container.av, "open", open_failing_tmp)
    path = tmp_path / "kept.mp4"
    with pytest.raises(glrec.DiskFullError) as info:
        glrec.record("bars", path, size=(192, 128), fps=FPS, frames=75, encoder="cpu")
    assert info.value.frames_written == info.value.frames_kept == 75
    assert "complete fragmented MP4 with all 75 frames" in str(info.value)
    assert "Errno" not in str(info.value) and "(No space left on device)" in str(info.value), str(info.value)
    assert b"moof" in path.read_bytes()  # the fragmented original, untouched
    assert decode_indices(path, FPS) == list(range(75))
    assert not list(tmp_path.glob(".*glrec-tmp*"))


def test_other_rewrite_failures_keep_the_fragmented_mp4_with_a_true_warning(gl, tmp_path, monkeypatch, caplog):
    def failing_remux(self, src, dst):
        raise av.FFmpegError(-22, "Invalid argument")

    monkeypatch.setattr(container.ContainerSink, "_remux_faststart", failing_remux)
    path = tmp_path / "kept.mp4"
    with caplog.at_level(logging.WARNING, logger="glrec"):
        result = glrec.record("bars", path, size=(64, 48), fps=FPS, frames=40, encoder="cpu")
    assert result.frames == 40 and "complete fragmented MP4 with all 40 frames" in caplog.text
    assert decode_indices(path, FPS) == list(range(40))


@pytest.mark.parametrize("name", ["cut.mp4", "cut.mkv", "cut.avi"])
def test_a_file_cut_at_any_byte_is_trimmed_to_one_that_decodes(gl, tmp_path, name):
    """Whatever byte a failed write stopped at, trimming leaves a file that decodes cleanly."""
    from glrec.sinks.trim import trim_to_complete_fragments

    whole = tmp_path / f"whole-{name}"
    # finalize=False keeps the MP4 fragmented, as it is on disk while recording
    monkey_finalize = container.ContainerSink._rewrite_unfragmented
    try:
        container.ContainerSink._rewrite_unfragmented = lambda self: self._out.commit()
        codec = "mjpeg" if name.endswith(".avi") else "h264"
        glrec.record("bars", whole, size=(96, 64), fps=FPS, frames=150, encoder="cpu", codec=codec)
    finally:
        container.ContainerSink._rewrite_unfragmented = monkey_finalize
    data = whole.read_bytes()
    counts = []
    for cut in range(len(data) // 13, len(data), len(data) // 13):
        part = tmp_path / f"part{cut}{whole.suffix}"
        part.write_bytes(data[:cut])
        trim_to_complete_fragments(part)
        assert part.stat().st_size <= cut
        packets = container.count_packets(part)
        if packets == 0:
            continue  # not one complete fragment yet: the sink removes such a file
        with av.open(str(part)) as c:
            frames = sum(1 for _ in c.decode(video=0))  # no error from a half fragment
        assert frames == packets
        counts.append(frames)
    assert counts == sorted(counts) and len(set(counts)) > 3  # more kept the later the cut
