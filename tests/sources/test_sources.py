"""Video sources: FFmpeg-made inputs decoded to GL textures and compared with an independent decoder."""

from __future__ import annotations

import os
import random
import subprocess
import threading
import time
from pathlib import Path

import av
import numpy as np
import pytest
from conftest import psnr
from media import FFMPEG, ffmpeg, free_port, make_clip, texture_rgb, vfr

import glrec
from glrec.sources import VideoSource, classify
from glrec.sources.video.formats import yuv_to_rgb


@pytest.fixture(scope="module")
def media(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("media")


def _decoded(path: Path) -> list[av.VideoFrame]:
    with av.open(str(path)) as c:
        return list(c.decode(video=0))


def _walk(gl, path: Path, **kw) -> list[tuple[float, int, np.ndarray]]:
    """Every picture of ``path`` through a VideoSource: (time, index, RGB)."""
    out = []
    with VideoSource(path, **kw) as src:
        src.setup(gl.mgl)
        times = [float(f.time - _decoded(path)[0].time) for f in _decoded(path)]
        for t in times:
            pic = src.update(t)
            out.append((pic.time, pic.index, texture_rgb(src)))
    return out


CODECS = {
    "h264": ("in.mp4", ["-c:v", "libx264", "-pix_fmt", "yuv420p", "-qp", "0"]),
    "hevc": ("in.mkv", ["-c:v", "libx265", "-pix_fmt", "yuv420p", "-x265-params", "log-level=error:lossless=1"]),
    "vp9": ("in.webm", ["-c:v", "libvpx-vp9", "-pix_fmt", "yuv420p", "-lossless", "1"]),
    "av1": ("in.mkv", ["-c:v", "libaom-av1", "-cpu-used", "8", "-crf", "10"]),
    "mjpeg": ("in.avi", ["-c:v", "mjpeg", "-q:v", "2"]),
}


@pytest.mark.parametrize("codec", sorted(CODECS))
def test_each_codec_decodes_like_ffmpeg(gl, media, codec):
    name, args = CODECS[codec]
    path = make_clip(media / f"{codec}-{name}", *args, size="96x64")
    ref = _decoded(path)
    got = _walk(gl, path)
    assert [i for _, i, _ in got] == list(range(len(ref))) == list(range(5))
    assert [round(t, 6) for t, _, _ in got] == [round(float(f.time - ref[0].time), 6) for f in ref]
    for (_, _, rgb), frame in zip(got, ref, strict=True):
        expected = frame.to_ndarray(format="rgb24")  # swscale: nearest chroma, the stream's own matrix
        assert psnr(rgb, expected) > 44, codec
        assert np.abs(rgb.astype(int) - expected).max() <= 4, codec


@pytest.mark.parametrize(("name", "args"), [
    ("odd-vp9.webm", ["-c:v", "libvpx-vp9", "-pix_fmt", "yuv420p", "-lossless", "1"]),
    ("odd-ffv1.mkv", ["-c:v", "ffv1", "-pix_fmt", "yuv420p"]),
])  # fmt: skip
def test_odd_sizes_keep_every_pixel_and_the_row_order(gl, media, name, args):
    path = make_clip(media / name, *args, size="33x17", source="testsrc")  # testsrc2 rounds odd sizes down
    ref = _decoded(path)
    got = _walk(gl, path)
    assert got[0][2].shape == (17, 33, 3)
    for (_, _, rgb), frame in zip(got, ref, strict=True):
        # swscale's own odd-width 4:2:0 -> RGB path is off by up to 182 here, so the reference is the
        # standard formula applied to the decoded planes.
        expected = _reference_rgb(frame, 2, False, 8)
        assert np.abs(rgb - expected).max() <= 1
        # Upside down would swap the top and bottom rows: the luma of the top row must be the top row's.
        luma = np.frombuffer(memoryview(frame.planes[0]), np.uint8).reshape(17, -1)[:, :33].astype(float)
        top = rgb[0] @ np.array([0.299, 0.587, 0.114])
        assert np.abs(top * 219 / 255 + 16 - luma[0]).mean() < 3 < np.abs(top * 219 / 255 + 16 - luma[-1]).mean()


def _reference_rgb(frame: av.VideoFrame, colorspace: int, full: bool, bits: int) -> np.ndarray:
    """The standard YUV -> RGB formula on the decoded planes (nearest chroma), computed here in numpy."""
    dtype = np.uint8 if bits == 8 else np.uint16
    planes = []
    for p in frame.planes:
        a = np.frombuffer(memoryview(p), dtype).reshape(p.height, -1)[:, : p.width].astype(np.float64)
        planes.append(a)
    h, w = frame.height, frame.width
    yy, xx = np.mgrid[0:h, 0:w]
    # Each pixel takes the chroma sample it was coded with (an odd size's last sample covers one pixel).
    up = [planes[0]]
    for c in planes[1:]:
        sy, sx = (2 if c.shape[0] < h else 1), (2 if c.shape[1] < w else 1)
        up.append(c[yy // sy, xx // sx])
    conv = yuv_to_rgb(colorspace, full, bits)
    n = np.stack(up, -1) / ((1 << bits) - 1)
    rgb = ((n - conv.offset) / conv.scale) @ conv.matrix.T
    return np.clip(np.floor(rgb * 255 + 0.5), 0, 255)


def test_ten_bit_hevc_follows_the_standard_formula(gl, media):
    path = make_clip(media / "hevc10.mkv", "-c:v", "libx265", "-pix_fmt", "yuv420p10le", "-x265-params",
                   "log-level=error", size="96x64")  # fmt: skip
    frame = _decoded(path)[0]
    assert frame.format.name == "yuv420p10le"
    with VideoSource(path) as src:
        src.setup(gl.mgl)
        src.update(0)
        assert src.colour == "smpte170m limited"
        got = texture_rgb(src)
    assert np.abs(got - _reference_rgb(frame, 2, False, 10)).max() <= 1


def test_stream_colour_tags_choose_matrix_and_range(gl, media):
    tagged = make_clip(media / "bt709.mp4", "-c:v", "libx264", "-qp", "0", "-vf", "scale=out_color_matrix=bt709",
                     "-colorspace", "bt709", "-color_primaries", "bt709", "-color_trc", "bt709")  # fmt: skip
    full = make_clip(media / "full.mp4", "-c:v", "libx264", "-qp", "0", "-vf", "scale=out_range=full",
                   "-color_range", "pc")  # fmt: skip
    for path, name in ((tagged, "bt709 limited"), (full, "smpte170m full")):
        frame = _decoded(path)[0]
        with VideoSource(path) as src:
            src.setup(gl.mgl)
            src.update(0)
            assert src.colour == name
            assert np.abs(texture_rgb(src).astype(int) - frame.to_ndarray(format="rgb24")).max() <= 4
    # An explicit matrix overrides the stream's tag.
    with VideoSource(tagged, matrix="bt601") as src:
        src.setup(gl.mgl)
        src.update(0)
        assert src.colour == "smpte170m limited"


def test_images_and_sequences(gl, media):
    rgb = make_clip(media / "rgb.png", "-pix_fmt", "rgb24", frames=1)
    rgba = make_clip(media / "rgba.png", "-pix_fmt", "rgba", "-vf", "geq=r='X*4':g='Y*5':b=128:a='X*3'", frames=1)
    grey = make_clip(media / "grey.png", "-pix_fmt", "gray", frames=1)
    for path in (rgb, rgba, grey):
        expected = _decoded(path)[0].to_ndarray(format="rgba")
        with VideoSource(path, vflip=True) as src:
            assert src.still
            src.setup(gl.mgl)
            src.update(123.0)  # a still shows at any time
            w, h = src.size
            got = np.frombuffer(src.texture.read(), np.uint8).reshape(h, w, 4)[::-1]
            assert np.array_equal(got, expected), path.name
    seq = media / "seq"
    seq.mkdir()
    make_clip(seq / "f%03d.png", "-pix_fmt", "rgb24", frames=4)
    frames = [_decoded(p)[0].to_ndarray(format="rgb24") for p in sorted(seq.glob("*.png"))]
    for pattern in (seq / "f%03d.png", seq / "f*.png"):
        with VideoSource(pattern, fps=5) as src:
            assert not src.still and src.rate == 5
            src.setup(gl.mgl)
            for i, expected in enumerate(frames):
                assert src.update(i / 5 + 0.01).index == i
                assert np.array_equal(texture_rgb(src), expected)
            assert src.update(4 / 5 + 0.01) is None  # the sequence has ended


def test_variable_frame_rate_shows_the_picture_of_each_moment(gl, media):
    times = [0, 100, 150, 400, 450]
    colours = vfr(media / "vfr.mkv", times)
    with VideoSource(media / "vfr.mkv") as src:
        src.setup(gl.mgl)
        for t_ms in range(0, 451, 25):
            pic = src.update(t_ms / 1000)
            shown = max(i for i, t in enumerate(times) if t <= t_ms)
            assert pic.index == shown and abs(pic.time - times[shown] / 1000) < 1e-9
            assert tuple(texture_rgb(src)[3, 3]) == colours[shown]
        assert src.update(0.5) is None


def test_display_rotation_matches_ffmpegs_autorotate(gl, media):
    plain = make_clip(media / "upright.mp4", "-c:v", "libx264", "-pix_fmt", "yuv444p", "-qp", "0", size="64x32")
    rotated = media / "rotated.mp4"
    with av.open(str(plain)) as i, av.open(str(rotated), "w") as o:
        s = o.add_stream_from_template(i.streams.video[0])
        s.set_display_rotation(90)
        for p in i.demux(i.streams.video[0]):
            if p.dts is not None:
                p.stream = s
                o.mux(p)
    raw = media / "rotated.rgb"
    ffmpeg("-i", str(rotated), "-frames:v", "1", "-f", "rawvideo", "-pix_fmt", "rgb24", str(raw))
    expected = np.fromfile(raw, np.uint8).reshape(64, 32, 3)
    with VideoSource(rotated) as src:
        assert src.rotation == 90 and src.size == (32, 64)
        src.setup(gl.mgl)
        src.update(0)
        assert np.abs(texture_rgb(src).astype(int) - expected).max() <= 2


def test_loop_and_rewind(gl, media):
    path = make_clip(media / "loop.mkv", "-c:v", "ffv1", frames=3)
    first = _decoded(path)[0].to_ndarray(format="rgb24")
    with VideoSource(path, loop=True) as src:
        src.setup(gl.mgl)
        assert src.update(0.25).index == 2
        pic = src.update(0.35)  # 3 frames of 0.1 s: t = 0.35 is frame 0 of the second pass
        assert pic.index == 0 and abs(src.position - 0.0) < 1e-9 and abs(pic.time - 0.3) < 1e-9
        assert np.abs(texture_rgb(src).astype(int) - first).max() <= 4
        assert src.update(1.05).index == 1  # many loops later
    with VideoSource(path) as src:
        src.setup(gl.mgl)
        assert src.update(0.2).index == 2
        assert src.update(0.0).index == 0  # time went back: decoded again from the start


def test_bad_inputs_say_what_and_what_to_do(media, tmp_path):
    with pytest.raises(glrec.InputNotFoundError, match="does not exist"):
        VideoSource(tmp_path / "missing.mp4")
    with pytest.raises(glrec.UnsupportedInputError, match="is a folder"):
        VideoSource(tmp_path)
    junk = tmp_path / "junk.mp4"
    # Fixed bytes: a rare draw of os.urandom probes as a subtitle format (then the error says "no video stream").
    junk.write_bytes(random.Random(0).randbytes(4096))
    with pytest.raises(glrec.InputError, match="FFmpeg cannot read .*junk.mp4"):
        VideoSource(junk)
    wav = media / "tone.wav"
    ffmpeg("-f", "lavfi", "-i", "sine=duration=0.2", str(wav))
    with pytest.raises(glrec.UnsupportedInputError, match=r"no video stream \(it holds: audio pcm_s16le\)"):
        VideoSource(wav)
    jxl = media / "picture.jxl"
    try:
        make_clip(jxl, "-c:v", "libjxl", frames=1)
    except subprocess.CalledProcessError:
        pytest.skip("this ffmpeg cannot write JPEG XL")
    with pytest.raises(glrec.UnsupportedInputError) as info:
        VideoSource(jxl)
    assert "'jpegxl'" in str(info.value) and "h264, hevc" in str(info.value) and "cannot decode" in str(info.value)


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any file: permission errors cannot happen")
def test_unreadable_file(tmp_path, media):
    path = make_clip(media / "locked.mkv", "-c:v", "ffv1", frames=1)
    path.chmod(0)
    try:
        with pytest.raises(glrec.InputError, match="cannot be read"):
            VideoSource(path)
    finally:
        path.chmod(0o644)


def test_network_inputs_that_do_not_answer_fail_in_bounded_time():
    port = free_port()
    started = time.monotonic()
    with pytest.raises(glrec.InputTimeoutError, match=r"No answer from 'udp://127.0.0.1:\d+' within 1 s"):
        VideoSource(f"udp://127.0.0.1:{port}", timeout=1.0)
    assert time.monotonic() - started < 5
    tcp = free_port(__import__("socket").SOCK_STREAM)
    with pytest.raises(glrec.InputError, match="connection refused"):
        VideoSource(f"rtsp://127.0.0.1:{tcp}/live", timeout=1.0)


def test_camera_options_and_errors():
    spec = classify("/dev/video7", options={"input_format": "mjpeg", "video_size": "1280x720"}, fps=30)
    assert spec.kind == "camera" and spec.live and spec.format == "video4linux2"
    assert spec.options == {"fflags": "nobuffer", "flags": "low_delay", "framerate": "30",
                            "input_format": "mjpeg", "video_size": "1280x720"}  # fmt: skip
    assert classify("udp://127.0.0.1:5000").options["fflags"] == "nobuffer"
    assert classify("rtsp://127.0.0.1/x").options["rtsp_transport"] == "tcp"
    assert classify("rtsp://127.0.0.1/x", options={"rtsp_transport": "udp"}).options["rtsp_transport"] == "udp"
    if not Path("/dev/video7").exists():
        with pytest.raises(glrec.InputNotFoundError, match="No camera at /dev/video7"):
            VideoSource("/dev/video7")
    # FFmpeg's real V4L2 input on something that is not a capture device:
    with pytest.raises(glrec.InputError, match="Cannot open /dev/null as a V4L2 camera"):
        VideoSource("/dev/null", format="v4l2")


def _sender(args: list[str], delay: float = 0.0) -> subprocess.Popen:
    if delay:
        time.sleep(delay)
    assert FFMPEG is not None
    return subprocess.Popen([FFMPEG, "-hide_banner", "-loglevel", "error", *args], stdin=subprocess.DEVNULL)


@pytest.mark.skipif(FFMPEG is None, reason="needs the ffmpeg command line (apt-get install ffmpeg)")
def test_live_udp_mpegts_newest_picture_and_end(gl):
    port = free_port()
    sender = _sender(["-re", "-f", "lavfi", "-i", "testsrc2=size=64x48:rate=25", "-t", "3", "-c:v", "libx264",
                      "-g", "10", "-f", "mpegts", f"udp://127.0.0.1:{port}?pkt_size=1316"])  # fmt: skip
    try:
        with VideoSource(f"udp://127.0.0.1:{port}", timeout=2.0, retries=0) as src:
            assert src.live and src.size == (64, 48)
            src.setup(gl.mgl)
            seen = []
            deadline = time.monotonic() + 15
            while time.monotonic() < deadline:
                pic = src.update(0.0)  # live: the time asked for does not matter, the newest picture shows
                seen.append(pic.index)
                if src._worker.ended:
                    break
                time.sleep(0.2)  # slower than the sender: older pictures are dropped
            assert seen == sorted(seen) and seen[-1] > seen[0]
            assert src.dropped > 0
            assert src._worker.ended  # the sender stopped: the input ended within the read timeout
    finally:
        sender.kill()
        sender.wait()


@pytest.mark.skipif(FFMPEG is None, reason="needs the ffmpeg command line (apt-get install ffmpeg)")
def test_live_rtsp_listen_receives_what_ffmpeg_pushes(gl):
    port = free_port(__import__("socket").SOCK_STREAM)
    url = f"rtsp://127.0.0.1:{port}/live"
    procs: list[subprocess.Popen] = []
    push = threading.Thread(target=lambda: procs.append(_sender(
        ["-re", "-f", "lavfi", "-i", "testsrc2=size=64x48:rate=25", "-t", "2", "-c:v", "libx264", "-g", "5",
         "-f", "rtsp", "-rtsp_transport", "tcp", url], delay=0.5)))  # fmt: skip
    push.start()
    try:
        with VideoSource(url, options={"rtsp_flags": "listen"}, timeout=8.0, retries=0) as src:
            src.setup(gl.mgl)
            assert src.codec == "h264" and src.size == (64, 48)
            pic = src.update(0.0)
            assert pic is not None and texture_rgb(src).std() > 10  # a picture, not a blank texture
    finally:
        push.join()
        for p in procs:
            p.kill()
            p.wait()


def test_pbo_ring_and_direct_uploads_give_the_same_planes(gl, media):
    """The PBO ring (hardware GL's path) and direct uploads (software GL's) fill the planes identically."""
    from glrec.sources.video.upload import PboUploader

    path = make_clip(media / "up.mkv", "-c:v", "ffv1", "-pix_fmt", "yuv420p", size="33x17", source="testsrc")
    frames = _decoded(path)
    for use_pbo in (True, False):
        up = PboUploader(gl.mgl, pbo=use_pbo)
        try:
            for frame in frames:  # more pictures than PBOs: every slot is reused behind its fence
                up.upload(frame)
                for tex, p in zip(up.planes, frame.planes, strict=True):
                    got = np.frombuffer(tex.read(alignment=1), np.uint8).reshape(p.height, p.width)
                    want = np.frombuffer(memoryview(p), np.uint8).reshape(p.height, -1)[:, : p.width]
                    assert np.array_equal(got, want), (use_pbo, p.width)
        finally:
            up.release()
