"""GPU tier (``-m gpu``): NVDEC input through PyNvVideoCodec into CUDA memory that GL reads in place.

Every NVDEC picture is compared with the same picture decoded by FFmpeg on the
CPU and drawn through the same shader: a standard decoder produces the same
YUV samples, so the RGB textures must agree to within rounding. Needs an
NVIDIA GPU with NVDEC, PyNvVideoCodec, cuda-python and the driver's
GL_EXT_memory_object_fd.
"""

from __future__ import annotations

from pathlib import Path

import av
import numpy as np
import pytest
from conftest import psnr
from media import pyav_clip, texture_rgb

import glrec
from glrec.cli import main
from glrec.sources import VideoSource
from glrec.transcode import transcode

pytestmark = pytest.mark.gpu
ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def nvgl():
    """A GL context on the EGL device that is CUDA device 0 (where NVDEC's memory lives)."""
    from glrec.context import create_cuda_context
    from glrec.interop.cuda import device_info
    from glrec.sources.nvdec import nvdec_problem

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


@pytest.mark.parametrize("name", sorted(CLIPS))
def test_nvdec_pictures_equal_the_cpu_decoders(nvgl, media, name):
    codec, kw = CLIPS[name]
    path = pyav_clip(media / name, codec, size=(256, 144), rate=30, frames=12, **kw)
    cpu = _walk(nvgl, path, "cpu")
    try:
        gpu = _walk(nvgl, path, "nvdec")
    except glrec.UnsupportedInputError as exc:
        if "NVDEC does not decode" not in str(exc):
            raise
        pytest.skip(f"this GPU's answer: {exc}")  # the driver's capability query, not glrec, said no
    assert len(gpu) == len(cpu) == 12
    for (tc, a), (tg, b) in zip(cpu, gpu, strict=True):
        assert tg == pytest.approx(tc, abs=1e-6)
        assert np.abs(a - b).max() <= 2, name  # same samples through the same shader; P016 rounds 10-bit


def test_transcode_through_nvdec_with_an_overlay_matches_the_cpu_decoder(nvgl, media, tmp_path):
    src = pyav_clip(media / "tc.mp4", "libx264", size=(320, 180), rate=30, frames=30, audio=True)
    overlay = str(ROOT / "examples" / "grade_overlay.glsl")
    cpu_out, gpu_out = tmp_path / "cpu.mp4", tmp_path / "gpu.mp4"
    assert main(["record", str(src), "-o", str(cpu_out), "--overlay", overlay, "--decoder", "cpu", "-q"]) == 0
    assert main(["record", str(src), "-o", str(gpu_out), "--overlay", overlay, "--decoder", "nvdec", "-q"]) == 0
    frames = {}
    for p in (cpu_out, gpu_out):
        with av.open(str(p)) as c:
            frames[p] = [f.to_ndarray(format="rgb24") for f in c.decode(video=0)]
            assert c.streams.audio  # the input's audio came along
    assert len(frames[gpu_out]) == len(frames[cpu_out]) == 30
    assert min(psnr(a, b) for a, b in zip(frames[cpu_out], frames[gpu_out], strict=True)) > 45


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
