"""encoder="gl" end to end on Mesa: MJPEG in .mkv/.mov/.avi, JPEG sequences, written arrays, dataset colour.

Outputs are decoded by PyAV (FFmpeg) and Pillow (libjpeg-turbo) and compared
with independent renders; frame counts and pts are checked.
"""

from __future__ import annotations

import io

import av
import numpy as np
import pytest
from conftest import psnr
from helpers import reference_rgb, shard_members
from PIL import Image

import glrec
from glrec.errors import ConfigError
from glrec.options import PipelineOptions, VideoOptions
from glrec.pipeline.plan import make_plan
from glrec.sinks.registry import output_kind

SIZE, FPS, FRAMES = (64, 48), 10.0, 5


def decode(path) -> tuple[list[np.ndarray], list[int], str, str]:
    with av.open(str(path)) as c:
        stream = c.streams.video[0]
        frames = list(c.decode(stream))
        cc = stream.codec_context
        return [f.to_ndarray(format="rgb24") for f in frames], [f.pts for f in frames], cc.name, cc.pix_fmt


@pytest.mark.gl
@pytest.mark.parametrize("ext", ["mkv", "mov", "avi"])
def test_mjpeg_containers(tmp_path, ext):
    path = tmp_path / f"out.{ext}"
    result = glrec.record("plasma", path, size=SIZE, fps=FPS, frames=FRAMES, codec="mjpeg", encoder="gl")
    assert result.frames == FRAMES and result.encoder == "gl (GL-compute JPEG)"
    frames, pts, codec, pix_fmt = decode(path)
    assert codec == "mjpeg" and pix_fmt == "yuvj420p" and len(frames) == FRAMES
    assert len(set(pts)) == FRAMES and pts == sorted(pts)
    refs = reference_rgb("plasma", SIZE, [i / FPS for i in range(FRAMES)])
    for got, ref in zip(frames, refs, strict=True):  # as good as libjpeg's JPEG of the same render, both by FFmpeg
        assert psnr(got, ref) > psnr(ffmpeg_decode(_pillow(ref), tmp_path), ref) - 0.5


@pytest.mark.gl
@pytest.mark.parametrize("pix_fmt", ["yuv420p", "yuv444p"])
def test_jpeg_sequence(tmp_path, pix_fmt):
    pattern = tmp_path / "f_%04d.jpg"
    glrec.record("cube", pattern, size=SIZE, fps=FPS, frames=3, codec="mjpeg", encoder="gl", pix_fmt=pix_fmt,
                 quality=85)  # fmt: skip
    files = sorted(tmp_path.glob("f_*.jpg"))
    assert [f.name for f in files] == ["f_0000.jpg", "f_0001.jpg", "f_0002.jpg"]
    refs = reference_rgb("cube", SIZE, [i / FPS for i in range(3)])
    for f, ref in zip(files, refs, strict=True):
        im = Image.open(f)
        assert im.format == "JPEG" and im.size == SIZE
        theirs = Image.open(io.BytesIO(_pillow(ref, 85, pix_fmt))).convert("RGB")
        assert psnr(np.asarray(im.convert("RGB")), ref) > psnr(np.asarray(theirs), ref) - 0.5
        assert decode(f)[0][0].shape == ref.shape  # FFmpeg reads it too


@pytest.mark.gl
def test_written_arrays_and_pad(tmp_path):
    rng = np.random.default_rng(4)
    frames = [np.clip(rng.normal(128, 30, (17, 33, 3)), 0, 255).astype(np.uint8) for _ in range(3)]
    path = tmp_path / "arrays.mkv"
    with glrec.Recorder(path, size=(33, 17), fps=FPS, codec="mjpeg", encoder="gl", pad=True) as rec:
        for f in frames:
            rec.write(f)
    got, _, _, _ = decode(path)
    assert len(got) == 3 and got[0].shape == (18, 34, 3)  # pad: the last column and row repeated
    for g, f in zip(got, frames, strict=True):
        padded = np.pad(f, ((0, 1), (0, 1), (0, 0)), mode="edge")
        assert psnr(g, padded) > psnr(ffmpeg_decode(_pillow(padded), tmp_path), padded) - 0.5


def _pillow(rgb: np.ndarray, quality: int = 90, pix_fmt: str = "yuv420p") -> bytes:
    buf = io.BytesIO()
    Image.fromarray(rgb).save(buf, "JPEG", quality=quality, subsampling=2 if pix_fmt == "yuv420p" else 0)
    return buf.getvalue()


def ffmpeg_decode(data: bytes, tmp_path) -> np.ndarray:
    path = tmp_path / "ref.jpg"
    path.write_bytes(data)
    return decode(path)[0][0]


@pytest.mark.gl
def test_dataset_colour(tmp_path):
    from test_dataset import make_spec

    from glrec.dataset import generate

    out = {}
    for enc, rgb in (("gl", "jpg"), ("cpu", "png")):
        generate(make_spec(dataset={"samples": 3}, output={"rgb": rgb, "rgb_encoder": enc}), tmp_path / enc)
        out[enc] = shard_members(tmp_path / enc)
    jpgs = sorted(k for k in out["gl"] if k.endswith("rgb.jpg"))
    assert len(jpgs) == 3
    for name in jpgs:
        ours = np.asarray(Image.open(io.BytesIO(out["gl"][name])).convert("RGB"))
        lossless = np.asarray(Image.open(io.BytesIO(out["cpu"][name[: -len("jpg")] + "png"])).convert("RGB"))
        assert psnr(ours, lossless) > 30
    depth = [k for k in out["gl"] if "depth" in k]
    assert depth and all(out["gl"][k] == out["cpu"][k] for k in depth)  # the other passes do not change


@pytest.mark.parametrize(
    ("video", "pipeline", "match"),
    [
        ({"codec": "h264"}, {}, "use codec mjpeg"),
        ({}, {"handoff": "register"}, "use handoff auto or host"),
        ({"crf": 20}, {}, "drop crf"),
        ({"encoder_options": ("q=3",)}, {}, "drop encoder_options"),
    ],
)
def test_plan_refuses_what_gl_cannot_honour(video, pipeline, match):
    v = VideoOptions.create(SIZE, FPS, **{"codec": "mjpeg", "encoder": "gl", **video})
    with pytest.raises(ConfigError, match=match):
        make_plan(v, PipelineOptions(**pipeline), output_kind("out.mkv", v.codec))


def test_auto_passes_gl_over_on_software_gl_and_says_why(caplog):
    from glrec.gl.devices import egl_devices

    if not all("EGL_MESA_device_software" in d.extensions for d in egl_devices()):
        pytest.skip("this machine has hardware GL: auto takes the GL JPEG encoder here (the GPU tier checks it)")
    v = VideoOptions.create(SIZE, FPS, codec="mjpeg")
    with caplog.at_level("INFO", logger="glrec"):
        plan = make_plan(v, PipelineOptions(), output_kind("out.mkv", "mjpeg"))
    try:
        assert plan.encoder != "gl"
        assert "auto passes over the GL JPEG encoder: GL here is software" in caplog.text
        assert not any("GL JPEG" in r for r in plan.fallbacks)  # an order of preference, not a fallback
    finally:
        if plan.device is not None:
            plan.device.release()


def test_auto_takes_gl_for_mjpeg_on_hardware_gl(monkeypatch):
    """Where the EGL device is hardware, auto's first MJPEG encoder is the GL one, and the plan says why."""
    from glrec.gl import devices

    hardware = devices.EglDevice(0, "EGL_NV_device_cuda EGL_EXT_device_drm", 0, "/dev/dri/card0", None, None)
    monkeypatch.setattr(devices, "egl_devices", lambda: [hardware])
    plan = make_plan(VideoOptions.create(SIZE, FPS, codec="mjpeg"), PipelineOptions(), output_kind("o.mkv", "mjpeg"))
    try:
        assert plan.encoder == "gl" and "never leaves the GL context" in plan.reason
    finally:
        if plan.device is not None:
            plan.device.release()
