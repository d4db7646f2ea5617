"""GPU tier (``-m gpu``): NVDEC input through PyNvVideoCodec into CUDA memory that GL reads in place.

H.264, HEVC and VP9 decoding is exact, so NVDEC and FFmpeg produce the same
YUV samples: they are compared sample for sample, and after glrec's RGB
conversion (which reads each stored sample back as its integer code, whatever
layout holds it) the two paths' textures must be identical too. A transcode
through each decoder, lossless so that no encoder decision stands between the
two, must give the same output. Needs an NVIDIA GPU with NVDEC, PyNvVideoCodec,
cuda-python and the driver's GL_EXT_memory_object_fd. Where one of these
fails, ``benchmarks/nvdec_check.py`` says at which stage the paths part.
"""

from __future__ import annotations

from pathlib import Path

import av
import numpy as np
import pytest
from conftest import psnr
from media import pyav_clip, texture_rgb
from where import ROOT

import glrec
from glrec import transcode
from glrec.cli import main
from glrec.sources import VideoSource

pytestmark = pytest.mark.gpu


@pytest.fixture
def nvgl():
    """A GL context on the EGL device that is CUDA device 0 (where NVDEC's memory lives)."""
    from glrec.cuda.driver import device_info
    from glrec.gl.context import create_cuda_context
    from glrec.sources.video.nvdec import nvdec_problem

    problem = nvdec_problem()
    if problem is not None:
        pytest.skip(f"needs NVDEC: {problem}")
    with create_cuda_context(0, device_info(0).pci_bus_id) as gl:  # current for the test, released after
        yield gl


@pytest.fixture(scope="module")
def media(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("nvdec-media")


# Made with PyAV's own encoders: the GPU machine has PyAV but no ffmpeg command line.
_X265 = {"x265-params": "log-level=error"}
CLIPS = {
    "h264.mp4": ("libx264", {"pix_fmt": "yuv420p", "options": {"bf": "2"}}),
    "h264.ts": ("libx264", {"pix_fmt": "yuv420p"}),  # Annex B already: the bitstream filter passes it through
    "h264-crop.mp4": ("libx264", {"size": (320, 180)}),  # 12 rows of the coded 192 cropped away
    "hevc.mkv": ("libx265", {"pix_fmt": "yuv420p", "options": _X265}),
    "hevc10.mp4": ("libx265", {"pix_fmt": "yuv420p10le", "options": _X265}),  # NVDEC's P016 surfaces
    "vp9.webm": ("libvpx-vp9", {"pix_fmt": "yuv420p"}),
    "av1.mkv": ("libsvtav1", {"pix_fmt": "yuv420p"}),  # header OBUs from the container's extradata
}


def _walk(gl, path: Path, decoder: str) -> list[tuple[float, np.ndarray]]:
    with av.open(str(path)) as c:
        times = [float(f.time) for f in c.decode(video=0)]
    out = []
    with VideoSource(path, decoder=decoder) as src:
        src.setup(gl.mgl)
        for t in times:
            pic = src.update(t - times[0])
            assert pic is not None
            out.append((pic.time, texture_rgb(src).astype(int)))
    return out


def _clip(media: Path, name: str) -> Path:
    codec, kw = CLIPS[name]
    return pyav_clip(media / name, codec, **{"size": (256, 144), "rate": 30, "frames": 12, **kw})


def _unless_unsupported(exc: glrec.UnsupportedInputError) -> None:
    if "NVDEC does not decode" not in str(exc):
        raise exc
    pytest.skip(f"this GPU's answer: {exc}")  # the driver's capability query, not glrec, said no


def _ffmpeg_samples(path: Path) -> list[tuple[float, list[np.ndarray]]]:
    out = []
    with av.open(str(path)) as c:
        for f in c.decode(video=0):
            size = 2 if f.format.name.endswith("le") else 1
            dtype = np.uint16 if size == 2 else np.uint8
            planes = [np.frombuffer(memoryview(p), dtype).reshape(p.height, p.line_size // size)[:, : p.width].copy()
                      for p in f.planes]  # fmt: skip
            out.append((float(f.time), planes))
    t0 = out[0][0]
    return [(t - t0, planes) for t, planes in out]


def _nvdec_samples(path: Path) -> list[tuple[float, list[np.ndarray]]]:
    """Every picture NVDEC decodes, read back from glrec's pool slot as Y, U, V with the bits low."""
    from glrec.sources.video.media import classify, open_container
    from glrec.sources.video.nvdec import NvdecWorker

    spec = classify(path)
    worker = NvdecWorker(spec, open_container(spec))
    worker.start()
    out = []
    try:
        while (pic := worker.get(timeout=60)) is not None:
            nv = pic.frame
            planes = worker.host_planes(nv)
            worker._discard(pic)  # the slot goes back to the pool
            y, chroma = planes[0][..., 0], planes[1]
            yuv = [y, chroma[..., 0], chroma[..., 1]] if len(planes) == 2 else [y, *(p[..., 0] for p in planes[1:])]
            shift = 16 - nv.fmt.bits if nv.fmt.msb else 0
            out.append((pic.time, [p >> shift for p in yuv]))
    finally:
        worker.stop()
    return out


@pytest.mark.parametrize("name", sorted(CLIPS))
def test_nvdec_samples_equal_ffmpegs(nvgl, media, name):
    path = _clip(media, name)
    want = _ffmpeg_samples(path)
    try:
        got = _nvdec_samples(path)
    except glrec.UnsupportedInputError as exc:
        _unless_unsupported(exc)
    assert [round(t, 6) for t, _ in got] == [round(t, 6) for t, _ in want]
    for i, ((_, a), (_, b)) in enumerate(zip(want, got, strict=True)):
        for plane, x, y in zip("YUV", a, b, strict=True):
            assert x.shape == y.shape, f"{name} picture {i} plane {plane}: {y.shape}, FFmpeg's {x.shape}"
            diff = np.abs(x.astype(int) - y.astype(int))
            assert diff.max() == 0, f"{name} picture {i} plane {plane}: {int((diff > 0).sum())} samples differ"


@pytest.mark.parametrize("name", sorted(CLIPS))
def test_nvdec_pictures_equal_the_cpu_decoders(nvgl, media, name):
    path = _clip(media, name)
    cpu = _walk(nvgl, path, "cpu")
    try:
        gpu = _walk(nvgl, path, "nvdec")
    except glrec.UnsupportedInputError as exc:
        _unless_unsupported(exc)
    assert len(gpu) == len(cpu) == 12
    for i, ((tc, a), (tg, b)) in enumerate(zip(cpu, gpu, strict=True)):
        assert tg == pytest.approx(tc, abs=1e-6)
        diff = np.abs(a - b)
        # Equal samples, read back as equal codes, through one conversion: nothing may differ.
        assert diff.max() == 0, f"{name} picture {i}: {int((diff > 0).any(axis=2).sum())} pixels, up to {diff.max()}"


def test_transcode_through_nvdec_with_an_overlay_equals_the_cpu_decoders(nvgl, media, tmp_path):
    # Lossless (qp 0, 4:4:4), so the outputs differ exactly where the frames fed to the encoder do.
    src = pyav_clip(media / "tc.mp4", "libx264", size=(320, 180), rate=30, frames=30, audio=True)
    overlay = str(ROOT / "examples" / "grade_overlay.glsl")
    lossless = ["--qp", "0", "--pix-fmt", "yuv444p", "--encoder", "cpu", "-q"]
    outputs = {}
    for decoder in ("cpu", "nvdec"):
        out = tmp_path / f"{decoder}.mkv"
        assert main(["record", str(src), "-o", str(out), "--overlay", overlay, "--decoder", decoder, *lossless]) == 0
        with av.open(str(out)) as c:
            assert c.streams.audio  # the input's audio came along
            outputs[decoder] = [(float(f.time), f.to_ndarray()) for f in c.decode(video=0)]
    cpu, gpu = outputs["cpu"], outputs["nvdec"]
    assert len(gpu) == len(cpu) == 30
    assert [t for t, _ in gpu] == [t for t, _ in cpu]
    for i, ((_, a), (_, b)) in enumerate(zip(cpu, gpu, strict=True)):
        diff = np.abs(a.astype(int) - b.astype(int))  # yuv444p planes as encoded
        assert diff.max() == 0, f"frame {i}: {int((diff > 0).sum())} samples differ, by up to {diff.max()}"


def test_nvdec_round_trip_is_lossless_enough(nvgl, media, tmp_path):
    path = pyav_clip(media / "rt.mkv", "libx264", size=(320, 180), frames=10, options={"qp": "0"})
    out = tmp_path / "rt.mkv"
    result = transcode(path, out, decoder="nvdec", qp=0, pix_fmt="yuv444p", encoder="cpu")
    with av.open(str(path)) as a, av.open(str(out)) as b:
        pairs = list(zip(a.decode(video=0), b.decode(video=0), strict=True))
    assert result.frames == len(pairs) == 10
    assert min(psnr(x.to_ndarray(format="rgb24"), y.to_ndarray(format="rgb24")) for x, y in pairs) > 40


def test_nvdec_loops_and_refuses_what_it_cannot_decode(nvgl, media):
    path = pyav_clip(media / "loop.mp4", "libx264", size=(128, 72), rate=10, frames=3)
    with VideoSource(path, decoder="nvdec", loop=True) as src:
        src.setup(nvgl.mgl)
        first = texture_rgb(src) if src.update(0.0) else None
        assert src.update(0.35).index == 0  # second pass: a new worker and pool, the same picture
        assert first is not None and np.abs(texture_rgb(src).astype(int) - first).max() <= 1
    prores = pyav_clip(media / "p.mov", "prores_ks", size=(128, 72), frames=2, pix_fmt="yuv422p10le")
    with pytest.raises(glrec.UnsupportedInputError, match="prores, which NVDEC does not decode.*h264"):
        VideoSource(prores, decoder="nvdec")
