"""End to end on the CPU path: render -> convert -> readback -> PyAV encode -> file -> independent decode."""

import threading
from fractions import Fraction

import av
import numpy as np
import pytest
from conftest import psnr
from helpers import decode_planes, decode_times, reference_rgb, reference_yuv420

import glrec
from glrec.scenes.bars import read_time_code

SIZE = (320, 240)
FPS = 30


@pytest.mark.parametrize(
    "name, codec, fmt",
    [
        ("a.mp4", "h264", "mov,mp4,m4a,3gp,3g2,mj2"),
        ("a.mkv", "h264", "matroska,webm"),
        ("a.mov", "hevc", "mov,mp4,m4a,3gp,3g2,mj2"),
        ("a.mp4", "hevc", "mov,mp4,m4a,3gp,3g2,mj2"),
        ("a.h264", "h264", "h264"),
        ("a.hevc", "hevc", "hevc"),
        ("a.ivf", "av1", "ivf"),
        ("a.mkv", "mjpeg", "matroska,webm"),
    ],
)
def test_each_output_decodes_with_right_count_size_and_timing(gl, tmp_path, name, codec, fmt):
    path = tmp_path / name
    result = glrec.record("cube", path, size=SIZE, fps=FPS, frames=20, codec=codec)
    assert result.frames == 20 and result.bytes == path.stat().st_size > 0
    with av.open(str(path)) as c:
        assert c.format.name == fmt
        s = c.streams.video[0]
        assert s.codec_context.name in {codec, "libdav1d", "mjpeg"} or codec in s.codec_context.name
        frames = list(c.decode(s))
    assert len(frames) == 20
    assert (frames[0].width, frames[0].height) == SIZE
    if fmt not in ("h264", "hevc"):  # raw Annex-B carries no timestamps
        times = [float(f.time) for f in frames]
        assert times == pytest.approx([i / FPS for i in range(20)], abs=1e-3)


def test_colour_tags_and_stream_fields(gl, tmp_path, ffprobe):
    path = tmp_path / "tags.mp4"
    glrec.record("bars", path, size=SIZE, fps=FPS, frames=10)
    info = ffprobe(path, "codec_name", "width", "height", "pix_fmt", "color_range", "color_space",
                   "color_transfer", "color_primaries", "r_frame_rate", "nb_read_frames", "duration")  # fmt: skip
    assert info == {
        "codec_name": "h264", "width": "320", "height": "240", "pix_fmt": "yuv420p", "color_range": "tv",
        "color_space": "bt709", "color_transfer": "bt709", "color_primaries": "bt709", "r_frame_rate": "30/1",
        "duration": "0.333333", "nb_read_frames": "10",
    }  # fmt: skip


@pytest.mark.parametrize("path, kwargs", [("full601.mkv", {"colour_range": "full", "matrix": "bt601"}),
                                          ("mj.mov", {"codec": "mjpeg"}), ("a.hevc", {"codec": "hevc"})])  # fmt: skip
def test_colour_tags_follow_options(gl, tmp_path, ffprobe, path, kwargs):
    glrec.record("bars", tmp_path / path, size=SIZE, fps=FPS, frames=3, **kwargs)
    info = ffprobe(tmp_path / path, "color_range", "color_space", "color_transfer", "color_primaries")
    assert "unknown" not in info.values(), info
    full = kwargs.get("colour_range") == "full" or kwargs.get("codec") == "mjpeg"
    assert info["color_range"] == ("pc" if full else "tv")


def test_mp4_is_normal_and_seekable_after_clean_finish(gl, tmp_path):
    path = tmp_path / "clean.mp4"
    glrec.record("plasma", path, size=SIZE, fps=FPS, frames=95, gop=30)
    data = path.read_bytes()
    assert b"moof" not in data, "a clean finish leaves a plain (unfragmented) MP4"
    assert data.find(b"moov") < data.find(b"mdat"), "index first (faststart)"
    with av.open(str(path)) as c:
        s = c.streams.video[0]
        assert s.frames == 95
        c.seek(int(2.0 / s.time_base), stream=s)
        first = next(c.decode(s))
        assert 1.0 - 1e-6 <= float(first.time) <= 2.0 + 1e-6  # landed on the keyframe at or before 2 s
    assert not list(tmp_path.glob(".*glrec-tmp*"))


def test_bars_near_lossless_psnr_and_exact_time_codes(gl, tmp_path):
    """Decoded frames match what was rendered (same colour conversion) at >= 40 dB, every frame in order."""
    path = tmp_path / "bars.mkv"
    n = 12
    glrec.record("bars", path, size=SIZE, fps=FPS, frames=n, crf=4, preset="medium")
    decoded = decode_planes(path)
    assert len(decoded) == n
    refs = reference_rgb("bars", SIZE, [i / FPS for i in range(n)])
    for i, (planes, rgb) in enumerate(zip(decoded, refs, strict=True)):
        ref = reference_yuv420(rgb)
        for got, want in zip(planes, ref, strict=True):
            assert psnr(got, want) >= 40.0, f"frame {i}"
        assert read_time_code(planes[0]) == round(i / FPS * 1000)


def test_lossless_h264_reproduces_the_conversion_exactly(gl, tmp_path):
    path = tmp_path / "lossless.mkv"
    glrec.record("plasma", path, size=SIZE, fps=FPS, frames=3, qp=0)
    refs = reference_rgb("plasma", SIZE, [i / FPS for i in range(3)])
    for planes, rgb in zip(decode_planes(path), refs, strict=True):
        for got, want in zip(planes, reference_yuv420(rgb), strict=True):
            assert np.abs(got.astype(int) - want).max() <= 1
            assert psnr(got, want) > 55


def test_orientation_marker_is_top_left(gl, tmp_path):
    path = tmp_path / "o.mp4"
    glrec.record("bars", path, size=SIZE, fps=FPS, frames=1)
    _, _, v = decode_planes(path)[0]
    cell = SIZE[1] // 16
    assert float(v[: cell // 4, : cell // 4].mean()) > 220  # red: high Cr at top-left
    assert float(v[-cell // 4 :, : cell // 4].mean()) < 160  # not at bottom-left
    assert float(v[: cell // 4, -cell // 4 :].mean()) < 160  # not at top-right


def test_odd_size_pad(gl, tmp_path):
    path = tmp_path / "odd.mp4"
    with pytest.raises(glrec.ConfigError, match="--pad"):
        glrec.record("cube", path, size=(161, 121), fps=FPS, frames=2)
    assert not path.exists()
    glrec.record("cube", path, size=(161, 121), fps=FPS, frames=2, pad=True)
    with av.open(str(path)) as c:
        f = next(c.decode(video=0))
    assert (f.width, f.height) == (162, 122)


def test_user_drawn_frames_through_recorder_frame(gl, tmp_path):
    path = tmp_path / "user.mkv"
    with glrec.Recorder(path, size=(64, 48), fps=10, qp=0, colour_range="full") as rec:
        for i in range(5):
            with rec.frame():
                rec.ctx.clear(i / 5, i / 5, i / 5)  # exact in 8 bits: no rounding ties
    lumas = [int(p[0].mean()) for p in decode_planes(path)]
    assert lumas == [round(i / 5 * 255) for i in range(5)]
    assert decode_times(path) == pytest.approx([0.0, 0.1, 0.2, 0.3, 0.4])


def test_recorder_accepts_scene_objects_and_explicit_times(gl, tmp_path):
    class Flat:
        def setup(self, ctx, size):
            self.ctx = ctx

        def render(self, t):
            self.ctx.clear(t, t, t)

        def close(self):
            self.closed = True

    scene = Flat()
    with glrec.Recorder(tmp_path / "f.mkv", size=(32, 32), fps=25, qp=0, colour_range="full") as rec:
        rec.render(scene, t=1.0)
        rec.render(scene, t=0.0)
    assert scene.closed
    assert [int(p[0].mean()) for p in decode_planes(tmp_path / "f.mkv")] == [255, 0]


def test_scene_raising_at_frame_k_keeps_frames_before_it(gl, tmp_path):
    class Boom:
        def setup(self, ctx, size):
            self.ctx = ctx

        def render(self, t):
            if t >= 7 / 30:
                raise RuntimeError("scene bug")
            self.ctx.clear(0.5, 0.5, 0.5)

        def close(self):
            pass

    path = tmp_path / "boom.mp4"
    with pytest.raises(glrec.SceneError, match="raised at frame 7: RuntimeError: scene bug") as info:
        glrec.record(Boom(), path, size=SIZE, fps=30, frames=20)
    assert isinstance(info.value.__cause__, RuntimeError)
    assert len(decode_planes(path)) == 7


def test_close_is_idempotent_and_reports(gl, tmp_path):
    rec = glrec.Recorder(tmp_path / "c.mp4", size=(64, 64), fps=30)
    rec.render("plasma")
    first = rec.close()
    assert rec.close() is first
    assert first.frames == 1 and first.bytes > 0 and "1 frames" in first.summary()
    with pytest.raises(glrec.GlrecError, match="closed"):
        rec.render("plasma")


def test_recorder_refuses_other_threads(gl, tmp_path):
    rec = glrec.Recorder(tmp_path / "t.mp4", size=(64, 64), fps=30)
    errors = []

    def other():
        try:
            rec.render("plasma")
        except Exception as exc:
            errors.append(exc)

    t = threading.Thread(target=other)
    t.start()
    t.join()
    assert isinstance(errors[0], glrec.ContextThreadError)
    assert "another thread" in str(errors[0])
    rec.render("plasma")
    assert rec.close().frames == 1


def test_size_above_max_texture(gl, tmp_path):
    big = gl.mgl.info["GL_MAX_TEXTURE_SIZE"] * 2
    # hevc: x264 stops at 16384 a side, which is also llvmpipe's texture limit
    with pytest.raises(glrec.ConfigError, match="largest texture"):
        glrec.record("plasma", tmp_path / "big.mp4", size=(big, 64), fps=30, frames=1, codec="hevc")
    assert not (tmp_path / "big.mp4").exists()


def test_no_worker_threads_left(gl, tmp_path):
    # Thread objects, not names: every worker is called glrec-encode, so a leak from an earlier
    # test would hide a new one if names were compared.
    before = set(threading.enumerate())
    with glrec.Recorder(tmp_path / "x.mp4", size=(64, 64), fps=30) as rec:
        rec.render("plasma")
        during = [t for t in threading.enumerate() if t.name == "glrec-encode" and t not in before]
        assert len(during) == 1  # the check below can see a worker: this recorder has one running
    assert not [t for t in threading.enumerate() if t.name == "glrec-encode" and t not in before]


def test_ntsc_rate(gl, tmp_path):
    path = tmp_path / "ntsc.mp4"
    glrec.record("plasma", path, size=(64, 64), fps=29.97, frames=4)
    with av.open(str(path)) as c:
        assert c.streams.video[0].average_rate == Fraction(30000, 1001)
