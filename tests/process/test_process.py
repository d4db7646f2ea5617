"""The processing stage on the host path (Mesa llvmpipe in CI): numpy and torch (CPU) functions on every frame.

Outputs are decoded with PyAV and compared with the same operation done on the host
copy of the frame: exactly for integer operations (lossless x264 of yuv444p, against
glrec's converter run on the expected frame), by PSNR for the seeded model.
"""

from __future__ import annotations

import logging
import sys

import av
import numpy as np
import pytest
from conftest import psnr
from helpers import decode_planes, reference_rgb
from process_helpers import LOSSLESS, assert_planes_equal, converted, decoded_444, require, sobel
from where import EXAMPLES

import glrec
from glrec.errors import ConfigError, ProcessOutputError, ProcessUnavailableError
from glrec.process import Boxes, Lines, Mask, Overlay, Points, Process

SIZE = (64, 48)
FPS = 30


def bars_rgba(n: int, size: tuple[int, int] = SIZE) -> list[np.ndarray]:
    """The bars scene rendered independently (plain moderngl), rows top-down, opaque."""
    frames = []
    for rgb in reference_rgb("bars", size, [i / FPS for i in range(n)]):
        frames.append(np.dstack([rgb, np.full(rgb.shape[:2], 255, np.uint8)]))
    return frames


def record(path, fn, n=6, **options):
    options = {"size": SIZE, "fps": FPS, **LOSSLESS, **options}
    return glrec.record("bars", path, frames=n, process=fn, **options)


def test_the_function_gets_the_rendered_frame_top_down(gl, tmp_path):
    seen = []
    record(tmp_path / "a.mkv", lambda frame: seen.append((frame.shape, frame.dtype, frame.copy())), n=4)
    assert [s[:2] for s in seen] == [((48, 64, 4), np.uint8)] * 4
    for (_, _, got), want in zip(seen, bars_rgba(4), strict=True):
        np.testing.assert_array_equal(got[..., :3], want[..., :3])  # rows top-down, RGBA order, exact


def test_a_stage_that_changes_nothing_changes_no_byte(gl, tmp_path):
    record(tmp_path / "none.mkv", lambda frame: None)
    glrec.record("bars", tmp_path / "plain.mkv", frames=6, size=SIZE, fps=FPS, **LOSSLESS)
    got, plain = decoded_444(tmp_path / "none.mkv"), decoded_444(tmp_path / "plain.mkv")
    assert len(got) == len(plain) == 6
    for a, b in zip(got, plain, strict=True):
        np.testing.assert_array_equal(a, b)
    with av.open(str(tmp_path / "none.mkv")) as c:
        assert [f.pts for f in c.decode(video=0)] == [round(i * 1000 / FPS) for i in range(6)]


def test_colour_inversion_in_place_is_exact(gl, tmp_path):
    def invert(frame):
        frame[..., :3] = 255 - frame[..., :3]

    record(tmp_path / "inv.mkv", invert)
    expected = [f.copy() for f in bars_rgba(6)]
    for f in expected:
        f[..., :3] = 255 - f[..., :3]
    assert_planes_equal(tmp_path / "inv.mkv", converted(expected))


def test_without_a_size_the_first_written_frame_gives_it_also_with_a_stage(gl, tmp_path):
    def invert(frame):
        frame[..., :3] = 255 - frame[..., :3]

    frames = [f.copy() for f in bars_rgba(3)]
    with glrec.Recorder(tmp_path / "w.mkv", fps=FPS, process=invert, **LOSSLESS) as rec:
        for f in frames:
            rec.write(f[..., :3].copy())
    assert rec.close().frames == 3
    for f in frames:
        f[..., :3] = 255 - f[..., :3]
    assert_planes_equal(tmp_path / "w.mkv", converted(frames))  # 64x48, as written, inverted


def torch_sobel(frame):
    """The Sobel of process_helpers.sobel in torch ops (float32 holds these integer sums exactly)."""
    import torch

    x = frame[..., :3].permute(2, 0, 1)[None].to(torch.float32)
    x = torch.nn.functional.pad(x, (1, 1, 1, 1), mode="replicate")[0].permute(1, 2, 0)
    gx = (x[:-2, 2:] + 2 * x[1:-1, 2:] + x[2:, 2:]) - (x[:-2, :-2] + 2 * x[1:-1, :-2] + x[2:, :-2])
    gy = (x[2:, :-2] + 2 * x[2:, 1:-1] + x[2:, 2:]) - (x[:-2, :-2] + 2 * x[:-2, 1:-1] + x[:-2, 2:])
    out = frame.clone()
    out[..., :3] = (gx.abs() + gy.abs()).clamp(0, 255).to(torch.uint8)
    return out


def test_torch_sobel_on_cpu_tensors_matches_numpy_on_the_host_copy(gl, tmp_path):
    torch = require("torch", "pip install torch==2.13.0 (CPU build)")
    kinds = []

    def fn(frame):
        kinds.append((type(frame), frame.device.type))
        return torch_sobel(frame)

    record(tmp_path / "sobel.mkv", Process(fn, array="torch"))
    assert kinds == [(torch.Tensor, "cpu")] * 6
    assert_planes_equal(tmp_path / "sobel.mkv", converted([sobel(f) for f in bars_rgba(6)]))


def seeded_model():
    import torch

    torch.manual_seed(1234)
    conv1, conv2 = torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.Conv2d(8, 3, 1)
    model = torch.nn.Sequential(conv1, torch.nn.ReLU(), conv2, torch.nn.Tanh()).eval()

    def apply(frame):
        """A residual filter: the frame plus a quarter of the model's output (keeps the picture's structure)."""
        x = frame[..., :3].permute(2, 0, 1)[None].to(model[0].weight.device, torch.float32) / 255
        with torch.no_grad():
            y = (x + 0.25 * model(x)).clamp(0, 1)[0].permute(1, 2, 0)
        out = frame.clone()
        out[..., :3] = (y * 255).round().to(torch.uint8)
        return out

    return model, apply


def test_seeded_conv_model_matches_the_same_model_on_the_host_copy(gl, tmp_path):
    torch = require("torch", "pip install torch==2.13.0 (CPU build)")
    _, apply = seeded_model()
    size = (96, 64)
    glrec.record("bars", tmp_path / "m.mp4", frames=5, size=size, fps=FPS, process=Process(apply, array="torch"))
    host = bars_rgba(5, size)
    expected = converted([apply(torch.from_numpy(f)).numpy() for f in host], "yuv420p")
    unprocessed = converted(host, "yuv420p")
    got = decode_planes(tmp_path / "m.mp4")
    assert len(got) == 5
    for g, e, u in zip(got, expected, unprocessed, strict=True):
        ours = psnr(np.concatenate([p.ravel() for p in g]), np.concatenate([p.ravel() for p in e]))
        before = psnr(np.concatenate([p.ravel() for p in g]), np.concatenate([p.ravel() for p in u]))
        assert ours > 35, ours
        assert before < ours - 6, (before, ours)  # the model's effect is in the file, not just the input


def test_a_declared_new_size_is_what_gets_encoded(gl, tmp_path, ffprobe):
    record(tmp_path / "half.mkv", Process(lambda f: f[::2, ::2].copy(), size=(32, 24)))
    assert ffprobe(tmp_path / "half.mkv", "width", "height", "nb_read_frames") == {
        "width": "32", "height": "24", "nb_read_frames": "6",
    }  # fmt: skip
    assert_planes_equal(tmp_path / "half.mkv", converted([f[::2, ::2].copy() for f in bars_rgba(6)]))


def test_overlay_shapes_are_drawn_on_the_frame_by_gl(gl, tmp_path):
    """Boxes and lines at integer coordinates with even widths cover whole pixels: an exact reference."""

    def detect(frame):
        frame[...] = (0, 0, 0, 255)
        return Overlay(Boxes(np.array([[10, 8, 30, 20]]), colour=(1, 1, 1), width=2),
                       Lines([[40, 4, 40, 40]], colour=(0, 1, 0), width=4))  # fmt: skip

    record(tmp_path / "o.mkv", detect, n=2)
    want = np.zeros((48, 64, 4), np.uint8)
    want[..., 3] = 255
    white = (255, 255, 255, 255)
    want[7:9, 9:31] = want[19:21, 9:31] = want[9:19, 9:11] = want[9:19, 29:31] = white
    want[4:40, 38:42, :3] = (0, 255, 0)
    assert_planes_equal(tmp_path / "o.mkv", converted([want, want]))


def test_overlay_points_and_mask(gl, tmp_path):
    def fn(frame):
        frame[...] = (0, 0, 0, 255)
        mask = np.zeros(frame.shape[:2], np.uint8)
        mask[:, :16] = 255  # full coverage at alpha 0.5
        return Overlay(Points([[48.0, 24.0]], colour=(1, 0, 0), radius=6), Mask(mask, colour=(0, 0, 1, 0.5)))

    frames = []
    record(tmp_path / "p.mkv", fn, n=1)
    with av.open(str(tmp_path / "p.mkv")) as c:
        frames = [f.to_ndarray(format="rgb24") for f in c.decode(video=0)]
    rgb = frames[0].astype(int)
    assert np.abs(rgb[24, 48] - (255, 0, 0)).max() <= 3  # the point's centre
    assert np.abs(rgb[24, 56] - (0, 0, 0)).max() <= 3  # outside its radius
    assert np.abs(rgb[24, 43] - (255, 0, 0)).max() <= 3  # inside (5 px from the centre)
    assert np.abs(rgb[30, 8] - (0, 0, 128)).max() <= 3  # half-transparent blue over black
    assert np.abs(rgb[30, 20] - (0, 0, 0)).max() <= 3  # outside the mask


def test_a_palette_mask_colours_each_class(gl, tmp_path):
    def fn(frame):
        frame[...] = (0, 0, 0, 255)
        labels = np.zeros(frame.shape[:2], np.uint8)
        labels[:24] = 1
        labels[24:, 32:] = 2
        return Overlay(Mask(labels, palette=[(1, 0, 0), (0, 1, 0)]))

    record(tmp_path / "l.mkv", fn, n=1)
    want = np.zeros((48, 64, 4), np.uint8)
    want[..., 3] = 255
    want[:24, :, 0] = 255
    want[24:, 32:, 1] = 255
    assert_planes_equal(tmp_path / "l.mkv", converted([want]))


# -- bad input ------------------------------------------------------------------------------------


def test_a_raising_function_finishes_the_file_with_the_frames_before_and_raises_once(gl, tmp_path):
    calls = []

    def fn(frame):
        calls.append(1)
        if len(calls) == 6:  # frame index 5
            raise RuntimeError("the model ran out of ideas")

    out = tmp_path / "r.mkv"
    raised = []
    try:
        with glrec.Recorder(out, size=SIZE, fps=FPS, **LOSSLESS, process=fn) as rec:
            for _ in range(10):
                rec.render("bars")
    except RuntimeError as exc:
        raised.append(exc)
    assert len(raised) == 1 and "ran out of ideas" in str(raised[0])
    assert rec.close().frames == 5  # closing again raises nothing and reports the frames kept
    assert_planes_equal(out, converted(bars_rgba(5)))


@pytest.mark.parametrize(
    ("result", "words"),
    [
        (np.zeros((48, 64, 3), np.uint8), r"shape \(48, 64, 3\).*expected a frame of shape \(48, 64, 4\)"),
        (np.zeros((48, 64, 4), np.float32), "dtype float32"),
        ("a string", "return None"),
    ],
)
def test_a_wrong_return_stops_with_a_clear_error_and_keeps_the_frames_before(gl, tmp_path, result, words):
    calls = []

    def fn(frame):
        calls.append(1)
        return result if len(calls) == 3 else None

    out = tmp_path / "w.mkv"
    with pytest.raises(ProcessOutputError, match=words) as info:
        record(out, fn)
    assert isinstance(info.value, ValueError)
    assert len(decoded_444(out)) == 2


def test_a_frame_on_another_device_is_refused(gl, tmp_path):
    torch = require("torch", "pip install torch==2.13.0 (CPU build)")
    with pytest.raises(ProcessOutputError, match="device meta.*host memory"):
        record(tmp_path / "d.mkv", Process(lambda f: torch.empty(48, 64, 4, dtype=torch.uint8, device="meta"),
                                            array="torch"))  # fmt: skip


def test_a_new_size_needs_a_returned_frame(gl, tmp_path):
    with pytest.raises(ProcessOutputError, match=r"declares a new size.*\(24, 32, 4\)"):
        record(tmp_path / "s.mkv", Process(lambda f: None, size=(32, 24)))


def test_torch_missing_names_the_extra_before_anything_is_written(gl, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)  # import torch raises ImportError
    out = tmp_path / "t.mkv"
    with pytest.raises(ProcessUnavailableError, match=r"glrec\[torch\]") as info:
        record(out, Process(lambda f: None, array="torch"))
    assert isinstance(info.value, ImportError)
    assert not out.exists()


def test_bad_process_values_are_config_errors(tmp_path):
    with pytest.raises(ConfigError, match="neither callable"):
        glrec.Recorder(tmp_path / "x.mkv", process=42)
    with pytest.raises(ConfigError, match="Unknown process array 'jax'"):
        Process(lambda f: None, array="jax")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="does not exist"):
        glrec.Recorder(tmp_path / "x.mkv", process=str(tmp_path / "nope.py:fn"))
    (tmp_path / "f.py").write_text("def other(frame):\n    pass\n")
    with pytest.raises(ConfigError, match="defines no 'fn'. Candidates it defines: other"):
        glrec.Recorder(tmp_path / "x.mkv", process=f"{tmp_path / 'f.py'}:fn")
    with pytest.raises(ConfigError, match="memory 'cuda' needs frames in CUDA memory"):
        # the plan's check: when the chain is built (with a size, now; without, at the first frame)
        glrec.Recorder(tmp_path / "x.mkv", size=SIZE, handoff="host", process=Process(lambda f: None, memory="cuda"))
    assert not (tmp_path / "x.mkv").exists()


# -- CLI and logging --------------------------------------------------------------------------------


def test_cli_process_flag_loads_a_function_from_a_file(gl, tmp_path):
    from glrec.cli import main

    (tmp_path / "filters.py").write_text("def invert(frame):\n    frame[..., :3] = 255 - frame[..., :3]\n")
    out = tmp_path / "cli.mkv"
    code = main(["record", "bars", "-o", str(out), "--size", "64x48", "--frames", "3", "--qp", "0",
                 "--pix-fmt", "yuv444p", "--process", f"{tmp_path / 'filters.py'}:invert", "-q"])  # fmt: skip
    assert code == 0
    expected = [f.copy() for f in bars_rgba(3)]
    for f in expected:
        f[..., :3] = 255 - f[..., :3]
    assert_planes_equal(out, converted(expected))


def test_cli_bad_process_is_a_usage_error(tmp_path, capsys):
    from glrec.cli import main

    code = main(["record", "bars", "-o", str(tmp_path / "x.mkv"), "--process", "filters.txt", "-q"])
    assert code == 2
    assert "FILE.py:FUNCTION" in capsys.readouterr().err


def test_the_log_says_where_the_function_runs(gl, tmp_path, caplog):
    with caplog.at_level(logging.INFO, logger="glrec"):
        record(tmp_path / "l.mkv", lambda f: None, n=1)
    assert any("on numpy arrays in host memory" in r.getMessage() for r in caplog.records)


def test_the_torch_example_runs_and_draws_its_result(gl, tmp_path):
    require("torch", "pip install torch==2.13.0 (CPU build)")
    import os
    import subprocess

    example = EXAMPLES / "process_torch.py"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(example.parent.parent), os.environ.get("PYTHONPATH", "")])}
    out = tmp_path / "detect.mp4"
    proc = subprocess.run([sys.executable, str(example), str(out), "--size", "160x90", "--frames", "6"],
                          capture_output=True, text=True, timeout=300, env=env)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "process function Detect" in proc.stderr  # the log line saying where the model ran
    with av.open(str(out)) as c:
        frames = [f.to_ndarray(format="rgb24") for f in c.decode(video=0)]
    assert len(frames) == 6
    # The box is drawn in pure green (0, 1, 0) by GL; the cube scene has no such colour.
    green = (frames[-1][..., 1] > 200) & (frames[-1][..., 0] < 60) & (frames[-1][..., 2] < 60)
    assert green.sum() > 50


@pytest.mark.parametrize("live", [False, True])
def test_frames_in_flight_are_bounded_and_live_mode_has_no_lag(gl, tmp_path, live):
    """The function sees frame i while i + 1 renders (one frame behind), or at once in live mode."""
    when = []
    with glrec.Recorder(tmp_path / "f.mkv", size=SIZE, fps=FPS, **LOSSLESS, live=live,
                        process=lambda frame: when.append(rec.frames_submitted)) as rec:  # fmt: skip
        for _ in range(5):
            rec.render("bars")
    assert when == ([0, 1, 2, 3, 4] if live else [1, 2, 3, 4, 5])
    assert len(decoded_444(tmp_path / "f.mkv")) == 5


class Highlight:
    """Your own GL drawing on the processed frame: a scissored clear where fn says."""

    def setup(self, ctx, size):
        self.ctx, self.size = ctx, size
        self.closed = False

    def draw(self, data):
        x, y, w, h = data  # top-left origin, as fn sees the frame; GL's scissor counts from the bottom
        self.ctx.scissor = (x, self.size[1] - y - h, w, h)
        self.ctx.clear(1.0, 1.0, 0.0, 1.0)
        self.ctx.scissor = None

    def close(self):
        self.closed = True


def test_a_custom_overlay_draws_what_fn_returns_as_data(gl, tmp_path):
    overlay = Highlight()

    def fn(frame):
        frame[...] = (0, 0, 0, 255)
        return Overlay(data=(4, 2, 10, 6))

    record(tmp_path / "c.mkv", Process(fn, overlay=overlay), n=2)
    want = np.zeros((48, 64, 4), np.uint8)
    want[..., 3] = 255
    want[2:8, 4:14] = (255, 255, 0, 255)
    assert_planes_equal(tmp_path / "c.mkv", converted([want, want]))
    assert overlay.closed


def test_drawing_the_overlay_puts_the_gl_state_back(gl):
    import ctypes

    import moderngl

    from glrec.gl.fences import gl_function
    from glrec.process.overlay import OverlayRenderer

    ctx = gl.mgl
    is_enabled = gl_function("glIsEnabled", ctypes.c_ubyte, ctypes.c_uint)
    get = gl_function("glGetIntegerv", None, ctypes.c_uint, ctypes.POINTER(ctypes.c_int))

    def state():
        value = ctypes.c_int(0)
        funcs = [get(p, ctypes.byref(value)) or value.value for p in (0x80C9, 0x80C8, 0x80CB, 0x80CA)]
        return [bool(is_enabled(c)) for c in (0x0BE2, 0x0B44, 0x0B71)], funcs

    tex = ctx.texture((32, 24), 4)
    fbo = ctx.framebuffer(color_attachments=[tex])
    renderer = OverlayRenderer(ctx, (32, 24))
    for flags in (moderngl.NOTHING, moderngl.BLEND | moderngl.CULL_FACE | moderngl.DEPTH_TEST):
        ctx.enable_only(flags)
        ctx.blend_func = moderngl.ONE, moderngl.ONE
        before = state()
        renderer.draw(fbo, [Boxes([[2, 2, 20, 20]]), Points([[8, 8]])], None)
        assert state() == before
    renderer.release()
    fbo.release()
    tex.release()


def test_closing_releases_every_gl_object_the_stage_made(gl, tmp_path):
    import moderngl

    from glrec.gl.leaks import live_fences, live_gl_objects

    def fn(frame):
        return Overlay(Boxes([[1, 1, 9, 9]]), Mask(np.ones((24, 32), bool)), frame=frame[::2, ::2])

    fences = live_fences()
    with glrec.Recorder(tmp_path / "l.mkv", size=SIZE, process=Process(fn, size=(32, 24), overlay=Highlight())) as rec:
        for _ in range(3):
            rec.render("bars")
        held = live_gl_objects(rec.ctx)  # references kept: a wrapper that was not released stays valid
        kinds = {type(o).__name__ for o in held}
    assert {"ComputeShader", "Program", "Buffer", "Texture", "Framebuffer", "VertexArray"} <= kinds
    assert [o for o in held if not isinstance(o.mglo, moderngl.InvalidObject)] == []
    assert live_fences() == fences
