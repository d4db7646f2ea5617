"""Recording frames made elsewhere (numpy, PIL, matplotlib, CPU tensors), decoded with PyAV and compared.

Near-lossless settings (qp 0, yuv444p) make the comparison a check of glrec's own conversion:
PSNR >= 40 dB against the frames that went in, markers where they were put, colours as given.
Both routes a host frame can take are run: ``gl`` (PBO upload, GL convert, readback) and ``cpu``
(swscale, what ``auto`` picks on Mesa's software GL: in ``write()`` while the encoder is behind,
else on the encode thread from a copy; both placements are checked to give the same bytes).
"""

from __future__ import annotations

from pathlib import Path

import av
import numpy as np
import pytest
from conftest import psnr
from helpers import decode_planes, reference_yuv420

import glrec
from glrec.colour import ColourSpec
from glrec.errors import ConfigError

pytestmark = pytest.mark.gl
LOSSLESS = {"qp": 0, "pix_fmt": "yuv444p"}


@pytest.fixture(params=["gl", "cpu"])
def route(request) -> dict[str, str]:
    # The swscale route feeds the CPU encoder host frames: with the host handoff also on a GPU machine.
    return {"array_convert": "gl"} if request.param == "gl" else {"array_convert": "cpu", "handoff": "host"}


def decode_rgb(path: Path) -> list[np.ndarray]:
    """Every frame as RGB uint8, converted from the decoded YUV with BT.709 limited range in numpy."""
    kr, kb = ColourSpec().kr_kb
    kg = 1 - kr - kb
    out = []
    with av.open(str(path)) as c:
        for f in c.decode(video=0):
            yuv = f.reformat(format="yuv444p").to_ndarray().astype(np.float64)
            y, cb, cr = (yuv[0] - 16) / 219, (yuv[1] - 128) / 224, (yuv[2] - 128) / 224
            r = y + 2 * (1 - kr) * cr
            b = y + 2 * (1 - kb) * cb
            g = (y - kr * r - kb * b) / kg
            out.append(np.clip(np.rint(np.stack([r, g, b], -1) * 255), 0, 255).astype(np.uint8))
    return out


def pictures(n: int, size: tuple[int, int] = (64, 48)) -> list[np.ndarray]:
    """Smooth gradients that change per frame, with a red marker top-left and a blue one bottom-right."""
    w, h = size
    yy, xx = np.mgrid[0:h, 0:w]
    frames = []
    for i in range(n):
        a = np.stack([xx * 255 // (w - 1), yy * 255 // (h - 1), np.full_like(xx, (37 * i) % 256)], -1)
        a = a.astype(np.uint8)
        a[:8, :8] = (255, 0, 0)
        a[-8:, -8:] = (0, 0, 255)
        frames.append(a)
    return frames


def test_numpy_frames_round_trip_near_lossless(tmp_path, route):
    frames = pictures(6)
    path = tmp_path / "np.mp4"
    with glrec.Recorder(path, fps=10, **LOSSLESS, **route) as rec:
        for i, a in enumerate(frames):
            assert rec.write(a) == i
    assert rec.close().frames == 6
    decoded = decode_rgb(path)
    assert len(decoded) == 6
    for got, want in zip(decoded, frames, strict=True):
        assert got.shape == (48, 64, 3)  # the size came from the first frame
        assert psnr(got, want) >= 40
        assert (np.abs(got[2, 2].astype(int) - [255, 0, 0]) <= 3).all(), "top-left marker"
        assert (np.abs(got[-3, -3].astype(int) - [0, 0, 255]) <= 3).all(), "bottom-right marker"


def test_default_settings_keep_orientation_and_colour(tmp_path, route):
    frames = pictures(4, (96, 64))
    path = tmp_path / "default.mp4"
    result = glrec.write_video(path, frames, fps=25, **route)
    assert result.frames == 4 and result.codec == "h264"
    for got, want in zip(decode_rgb(path), frames, strict=True):
        assert psnr(got, want) >= 30  # crf 20, 4:2:0: lossy, but the picture is the one that went in
        assert got[3, 3, 0] > 200 and got[3, 3, 2] < 60
        assert got[-4, -4, 2] > 200 and got[-4, -4, 0] < 60


def test_every_kind_of_host_frame(tmp_path, route):
    PIL = pytest.importorskip("PIL.Image")
    torch = pytest.importorskip("torch")
    base = pictures(1)[0]
    rgba = np.dstack([base, np.full(base.shape[:2], 128, np.uint8)])  # alpha is dropped, not composited
    wide = np.zeros((48, 80, 3), np.uint8)
    wide[:, :64] = base
    inputs = [
        wide[:, :64],  # rows further apart than the picture is wide (read in place by swscale)
        base,
        PIL.fromarray(base),
        rgba,
        base.astype(np.float32) / 255,
        base.astype(np.uint16) * 257,
        torch.from_numpy(base.copy()),
        np.ascontiguousarray(base[::-1])[::-1],  # negative row stride
        np.asfortranarray(base),  # nothing contiguous in C order
        base[:, :, ::-1][:, :, ::-1],  # negative channel stride
    ]
    path = tmp_path / "kinds.mp4"
    glrec.write_video(path, inputs, fps=10, **LOSSLESS, **route)
    decoded = decode_rgb(path)
    assert len(decoded) == len(inputs)
    for i, got in enumerate(decoded):
        assert psnr(got, base) >= 40, f"input {i}"


def test_one_array_reused_for_every_frame(tmp_path, route):
    # write() is done with the array when it returns: the caller may draw the next frame into it at once.
    frames = pictures(6)
    buffer = np.empty_like(frames[0])
    with glrec.Recorder(tmp_path / "reused.mp4", fps=10, **LOSSLESS, **route) as rec:
        for a in frames:
            buffer[:] = a
            rec.write(buffer)
    decoded = decode_rgb(tmp_path / "reused.mp4")
    assert len(decoded) == 6
    for i, (got, want) in enumerate(zip(decoded, frames, strict=True)):
        assert psnr(got, want) >= 40, f"frame {i}"
    assert psnr(frames[0], frames[5]) < 30, "the frames differ, so a frame showing another would fail"


def test_swscale_route_gives_the_same_bytes_wherever_it_converts():
    from glrec.convert.swscale import SwsConverter
    from glrec.options import VideoOptions
    from glrec.sources.frames import inspect_frame
    from glrec.sources.frames.direct import DirectFrames

    base = pictures(1, (63, 47))[0]
    wide = np.zeros((47, 80, 3), np.uint8)
    wide[:, :63] = base
    kinds = [
        base,
        wide[:, :63],
        base[::-1],
        base.astype(np.float32) / 255,
        base[:, :, :1],
        np.dstack([base, base[..., :1]]),
    ]
    for pix_fmt in ("yuv420p", "yuv444p"):
        direct = DirectFrames(VideoOptions.create(size=(63, 47), pix_fmt=pix_fmt, pad=True), pix_fmt)
        on_encode_thread = SwsConverter(pix_fmt, ColourSpec())
        for i, kind in enumerate(kinds):
            item = inspect_frame(kind)
            direct.pace_by(lambda: False)
            copied = direct.frame(item, 0)
            assert copied.av_frame is None and copied.data.shape[:2] == direct.encoded_size[::-1]
            later = on_encode_thread.convert(copied.data)
            direct.pace_by(lambda: True)
            now = direct.frame(item, 0).av_frame
            assert now is not None and (now.width, now.height) == (later.width, later.height)
            assert np.array_equal(now.to_ndarray(), later.to_ndarray()), f"{pix_fmt}, input {i}"


def test_swscale_route_converts_on_the_side_with_time(tmp_path, monkeypatch):
    # A queue of one frame and lossless 720p frames: the encoder falls behind at once, so write() converts;
    # the first frame (an empty queue) is copied and converted on the encode thread.
    import threading

    from glrec.convert.swscale import SwsConverter

    threads: list[str] = []
    real = SwsConverter.convert
    monkeypatch.setattr(SwsConverter, "convert", lambda self, px: threads.append(threading.current_thread().name)
                        or real(self, px))  # fmt: skip
    frames = pictures(8, (1280, 720))
    path = tmp_path / "paced.mkv"
    glrec.write_video(path, frames, fps=10, queue_size=1, array_convert="cpu", handoff="host", **LOSSLESS)
    assert len(threads) == 8 and "glrec-encode" in threads and threading.main_thread().name in threads, threads
    decoded = decode_rgb(path)
    assert len(decoded) == 8
    for i, (got, want) in enumerate(zip(decoded, frames, strict=True)):
        assert psnr(got, want) >= 40, f"frame {i}"


def test_grey_frames(tmp_path, route):
    grey = pictures(1)[0][:, :, 1].copy()
    path = tmp_path / "grey.mp4"
    glrec.write_video(path, [grey, grey[:, :, None]], fps=10, **LOSSLESS, **route)
    for got in decode_rgb(path):
        assert psnr(got, np.dstack([grey] * 3)) >= 40


def test_matplotlib_figures(tmp_path):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(3.2, 2.4), dpi=50)  # 160x120
    line = ax.plot([0, 1], [0, 0], lw=4)[0]
    expected = []
    path = tmp_path / "fig.mp4"
    with glrec.Recorder(path, fps=10, **LOSSLESS) as rec:
        for i in range(4):
            line.set_ydata([0, i / 3])
            rec.write(fig)  # the figure itself ...
            expected.append(np.asarray(fig.canvas.buffer_rgba())[:, :, :3].copy())
            rec.write(fig.canvas.buffer_rgba())  # ... and its buffer, as users pass it
            expected.append(expected[-1])
    plt.close(fig)
    decoded = decode_rgb(path)
    assert len(decoded) == 8
    for got, want in zip(decoded, expected, strict=True):
        assert got.shape == (120, 160, 3) and psnr(got, want) >= 40
    assert psnr(decoded[0], decoded[6]) < 40, "the line moved between frames"


def test_size_change_mid_recording_keeps_the_good_frames(tmp_path, route):
    path = tmp_path / "change.mp4"
    frames = pictures(3)
    with glrec.Recorder(path, fps=10, **LOSSLESS, **route) as rec:
        for a in frames:
            rec.write(a)
        with pytest.raises(ConfigError, match=r"Frame 3 is 80x48; this recording is 64x48"):
            rec.write(np.zeros((48, 80, 3), np.uint8))
        rec.write(frames[0])  # still open: the bad frame recorded nothing
    assert rec.close().frames == 4
    decoded = decode_rgb(path)
    assert len(decoded) == 4 and psnr(decoded[3], frames[0]) >= 40


def test_bad_frame_inside_with_block_finishes_the_file_up_to_the_last_good_frame(tmp_path):
    path = tmp_path / "nan.mp4"
    frames = [a.astype(np.float32) / 255 for a in pictures(3)]
    bad = frames[1].copy()
    bad[5, 5, 1] = np.nan
    with pytest.raises(ConfigError, match="NaN"), glrec.Recorder(path, fps=10, **LOSSLESS) as rec:
        for a in [*frames, bad, frames[0]]:
            rec.write(a)
    decoded = decode_rgb(path)
    assert len(decoded) == 3
    for got, want in zip(decoded, pictures(3), strict=True):
        assert psnr(got, want) >= 40


@pytest.mark.parametrize(
    ("frame", "words"),
    [
        (np.zeros((48, 64, 2), np.uint8), "2 channels"),
        (np.zeros((48, 64, 3), np.int64), "dtype is int64"),
        (np.zeros((47, 64, 3), np.uint8), "odd dimension"),
        (np.full((48, 64, 3), np.nan, np.float32), "NaN"),
    ],
)
def test_bad_first_frame_writes_nothing(tmp_path, frame, words):
    path = tmp_path / "bad.mp4"
    rec = glrec.Recorder(path, fps=10)
    with pytest.raises(ConfigError, match=words):
        rec.write(frame)
    assert rec.close().frames == 0
    assert not path.exists()


def test_odd_sizes_pad_or_444(tmp_path, route):
    frame = pictures(1, (63, 47))[0]
    glrec.write_video(tmp_path / "pad.mp4", [frame], pad=True, qp=0, **route)
    with av.open(str(tmp_path / "pad.mp4")) as c:
        assert (c.streams.video[0].width, c.streams.video[0].height) == (64, 48)
    (y, _, _), *_ = decode_planes(tmp_path / "pad.mp4")  # qp 0: the luma glrec made, exactly
    padded = np.concatenate([frame, frame[-1:]], 0)
    padded = np.concatenate([padded, padded[:, -1:]], 1)
    assert np.abs(y.astype(int) - reference_yuv420(padded)[0]).max() <= 1, "edge rows and columns repeated"
    glrec.write_video(tmp_path / "444.mp4", [frame], **LOSSLESS, **route)
    got = decode_rgb(tmp_path / "444.mp4")[0]
    assert got.shape == (47, 63, 3) and psnr(got, frame) >= 40


def test_a_given_size_is_checked_against_every_frame(tmp_path):
    with glrec.Recorder(tmp_path / "given.mp4", size=(64, 48)) as rec:
        with pytest.raises(ConfigError, match=r"this recording is 64x48, set before any frame.*pass size=\(32, 32\)"):
            rec.write(np.zeros((32, 32, 3), np.uint8))
        rec.write(pictures(1)[0])


def test_write_video_takes_a_batch_array_and_generators(tmp_path):
    batch = np.stack(pictures(5))
    assert glrec.write_video(tmp_path / "batch.mp4", batch, fps=10).frames == 5
    assert glrec.write_video(tmp_path / "gen.mkv", (a for a in batch), fps=10).frames == 5
    assert glrec.write_video(tmp_path / "none.mp4", [], fps=10).frames == 0
    assert not (tmp_path / "none.mp4").exists()


def test_sizeless_recorder_renders_scenes_at_the_default_size(tmp_path):
    with glrec.Recorder(tmp_path / "scene.mp4", fps=10) as rec:
        rec.render("plasma")
        assert rec.size == (1280, 720)
        with pytest.raises(ConfigError, match="this recording is 1280x720"):
            rec.write(pictures(1)[0])
    assert rec.close().frames == 1


def test_closed_recorder_refuses_frames(tmp_path):
    rec = glrec.Recorder(tmp_path / "closed.mp4", fps=10)
    rec.close()
    with pytest.raises(glrec.GlrecError, match="closed"):
        rec.write(pictures(1)[0])


def test_routes_give_the_same_picture(tmp_path):
    frames = [a.astype(np.float32) / 255 for a in pictures(3)]
    out = {}
    for name in ("gl", "cpu"):
        glrec.write_video(tmp_path / f"{name}.mp4", frames, fps=10, array_convert=name, handoff="host", **LOSSLESS)
        with av.open(str(tmp_path / f"{name}.mp4")) as c:
            out[name] = [f.to_ndarray().astype(int) for f in c.decode(video=0)]  # the YUV 4:4:4 planes, exactly
    assert len(out["gl"]) == len(out["cpu"]) == 3
    for a, b in zip(out["gl"], out["cpu"], strict=True):
        assert np.abs(a - b).max() <= 1  # swscale's fixed point and the shader's floats agree to one step


def test_route_choice():
    from glrec.sources.frames.direct import direct_route

    assert direct_route("auto", cpu_encoder=True, host_frames=True, software_gl=True)
    assert not direct_route("auto", cpu_encoder=True, host_frames=True, software_gl=False)
    assert not direct_route("auto", cpu_encoder=True, host_frames=False, software_gl=True)  # CUDA handoff
    assert not direct_route("gl", cpu_encoder=True, host_frames=True, software_gl=True)
    assert direct_route("cpu", cpu_encoder=True, host_frames=True, software_gl=False)
    with pytest.raises(ConfigError, match="array_convert 'cpu'"):
        direct_route("cpu", cpu_encoder=False, host_frames=False, software_gl=False)  # nvJPEG / NVENC
    with pytest.raises(ConfigError, match="Unknown array_convert 'cuda'"):
        glrec.Recorder("unused.mp4", array_convert="cuda")


def test_a_write_after_close_says_the_recorder_is_closed(tmp_path):
    rec = glrec.Recorder(tmp_path / "c.mp4", fps=10)
    rec.write(pictures(1)[0])
    rec.close()
    with pytest.raises(glrec.RecorderClosedError, match=r"c\.mp4' is closed; make a new Recorder") as info:
        rec.write(pictures(1)[0])
    assert isinstance(info.value, ValueError) and not isinstance(info.value, glrec.SceneError)
