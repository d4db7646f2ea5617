"""GPU tier (``-m gpu``): CUDA-GL handoffs, nvJPEG, NVDEC, NVENC, device matching, doctor.

Skips with the reason on machines without an NVIDIA GPU, CUDA-GL interop and
cuda-python (CI, Mesa). Outputs are checked against glReadPixels and by
decoding with independent decoders (PyAV/FFmpeg, NVDEC).
"""

from __future__ import annotations

import contextlib
import logging

import av
import numpy as np
import pytest
from conftest import psnr
from gl_reference import read_pixels
from helpers import decode_planes, reference_rgb

import glrec
from glrec.convert import Converter
from glrec.gl.target import RenderTarget
from glrec.scenes import load_scene

pytestmark = pytest.mark.gpu

SIZE = (320, 240)
FPS = 30


@pytest.fixture
def cuda():
    from glrec.cuda.driver import CudaDevice

    dev = CudaDevice.open(0)
    yield dev
    dev.release()


@pytest.fixture
def nvgl(cuda):
    """A GL context on the EGL device that is CUDA device 0."""
    from glrec.gl.context import create_cuda_context

    with create_cuda_context(0, cuda.info.pci_bus_id) as gl:  # current for the test, released after
        yield gl


def _source(ctx, pix_fmt, size):
    from glrec.colour import ColourSpec
    from glrec.convert.pack import RgbPacker

    if pix_fmt in ("rgb24", "rgba"):
        return RgbPacker(ctx, size, pix_fmt)
    return Converter(ctx, size, size, pix_fmt, ColourSpec())


@contextlib.contextmanager
def _stages(gl, cuda, scene_name, pix_fmt, kind, size=SIZE):
    """Render target, scene, convert/pack stage and CUDA handoff on ``gl``, released in reverse."""
    from glrec.interop.handoff import open_handoff

    ctx = gl.mgl
    with contextlib.ExitStack() as stack:
        target = RenderTarget(ctx, size)
        stack.callback(target.release)
        scene = load_scene(scene_name)
        scene.setup(ctx, size)
        stack.callback(scene.close)
        source = _source(ctx, pix_fmt, size)
        stack.callback(source.release)
        handoff = open_handoff(kind, ctx, source, cuda, depth=3, consumer_slots=4)
        stack.callback(handoff.release)

        def draw(t):
            target.use()
            scene.render(t)
            source.run(target.colour)

        yield target, source, handoff, draw


@pytest.mark.parametrize("kind", ["register", "shared"])
@pytest.mark.parametrize("pix_fmt", ["nv12", "yuv420p", "yuv444p", "rgb24", "rgba"])
# 320: every plane packed 4 bytes to a texel; 322: Y and RGB rows 2 to a texel, 4:2:0 chroma 1.
@pytest.mark.parametrize("size", [SIZE, (322, 242)])
def test_handoff_equals_glreadpixels_bit_for_bit(nvgl, cuda, kind, pix_fmt, size):
    ctx = nvgl.mgl
    expected, got = {}, {}
    with _stages(nvgl, cuda, "bars", pix_fmt, kind, size) as (target, source, handoff, draw):
        for i in range(19):  # not a multiple of the register batch (16): the partial batch is drained
            draw(i / FPS)
            # Reference: glReadPixels of what the GPU stage produced (planes, or the flipped render).
            if pix_fmt in ("rgb24", "rgba"):
                c = 3 if pix_fmt == "rgb24" else 4
                rgba = np.frombuffer(target.fbo.read(components=4, alignment=1), np.uint8).reshape(size[1], size[0], 4)
                ref = rgba[::-1, :, :c].copy()
                if c == 4:
                    ref[..., 3] = 255  # the pack stage writes opaque alpha
                expected[i] = ref.tobytes()
            else:
                # Each texture holds its plane's bytes packed 4, 2 or 1 to a texel: reading all
                # of a texel's components gives the plane's rows as they are.
                planes = [read_pixels(ctx, t, t.components) for t in source.planes]
                expected[i] = b"".join(p.tobytes() for p in planes)
            for frame in handoff.submit(i):
                got[frame.index] = frame.to_host().data.tobytes()
                frame.release()
        for frame in handoff.drain():
            got[frame.index] = frame.to_host().data.tobytes()
            frame.release()
    assert sorted(got) == list(range(19))
    differing = [i for i in range(19) if got[i] != expected[i]]
    assert not differing, f"frames {differing} differ from glReadPixels"
    assert len(set(expected.values())) > 1, "the scene must change between frames for the check to mean anything"


def test_device_frames_are_zero_copy_through_cai_and_dlpack(nvgl, cuda):
    torch = pytest.importorskip("torch")
    with _stages(nvgl, cuda, "cube", "nv12", "register") as (_, _, handoff, draw):
        draw(0.5)
        handoff.submit(0)
        (frame,) = handoff.drain()
        host = frame.to_host().data
        t = torch.from_dlpack(frame)
        assert t.device.type == "cuda" and t.data_ptr() == frame.ptr
        assert np.array_equal(t.cpu().numpy(), host)
        t2 = torch.as_tensor(frame, device="cuda")  # __cuda_array_interface__
        assert t2.data_ptr() == frame.ptr and torch.equal(t, t2)
        del t, t2
        frame.release()


def _luma_psnrs(path, scene, colour, n):
    from glrec.diagnostics import decoded_luma

    got = decoded_luma(path)
    ref = [
        np.clip(np.floor(colour.to_yuv(r / 255.0)[..., 0] + 0.5), 0, 255)
        for r in reference_rgb(scene, SIZE, [i / FPS for i in range(n)])
    ]
    if len(got) != n:
        with av.open(str(path)) as c:
            packets = [p.size for p in c.demux(video=0) if p.size]
            what = f"{c.format.name}, {c.streams.video[0].codec_context.name}, packets {packets}"
        raise AssertionError(f"{path.name}: decoded {len(got)} frames, expected {n} ({what})")
    return [psnr(a, b) for a, b in zip(got, ref, strict=True)]


# .mov used to lose its last MJPEG frame under PyAV 19 in the final MP4 rewrite; the
# rewrite now gives the last packet a duration (fixed with issue 5), so .mov is checked like the rest.
@pytest.mark.parametrize("name", ["cube.mkv", "cube.avi", "cube.mov", "cube_%04d.jpg"])
@pytest.mark.parametrize("handoff", ["register", "shared"])
def test_render_nvjpeg_decode_psnr(tmp_path, name, handoff):
    pytest.importorskip("nvidia.nvimgcodec")
    from glrec.colour import ColourSpec

    path = tmp_path / name
    result = glrec.record("cube", path, size=SIZE, fps=FPS, frames=12, encoder="nvjpeg", codec="mjpeg",
                          handoff=handoff)  # fmt: skip
    assert result.encoder == "nvjpeg" and result.frames == 12
    values = _luma_psnrs(path, "cube", ColourSpec("bt601", "full"), 12)
    assert min(values) >= 35.0, values


def test_nvjpeg_444_rgb_psnr(tmp_path):
    pytest.importorskip("nvidia.nvimgcodec")
    path = tmp_path / "p.mkv"
    glrec.record("plasma", path, size=SIZE, fps=FPS, frames=5, encoder="nvjpeg", codec="mjpeg", pix_fmt="yuv444p")
    with av.open(str(path)) as c:
        got = [f.to_ndarray(format="rgb24") for f in c.decode(video=0)]
    ref = reference_rgb("plasma", SIZE, [i / FPS for i in range(5)])
    values = [psnr(a, b) for a, b in zip(got, ref, strict=True)]
    assert len(got) == 5 and min(values) >= 35.0, values


@pytest.mark.parametrize("scene", ["bars", "cube"])
def test_gpu_convert_cpu_encoder_matches_cpu_path(tmp_path, scene):
    outs = {}
    for handoff in ("host", "register", "shared"):
        path = tmp_path / f"{handoff}.mp4"
        # qp 0 is lossless in x264: decoded frames are exactly the frames the encoder was given.
        r = glrec.record(scene, path, size=SIZE, fps=FPS, frames=20, encoder="cpu", handoff=handoff, qp=0)
        assert r.frames == 20
        assert ("CUDA" in r.encoder) == (handoff != "host"), r.encoder
        outs[handoff] = decode_planes(path)
    for handoff in ("register", "shared"):
        assert len(outs[handoff]) == 20
        for i, (a, b) in enumerate(zip(outs[handoff], outs["host"], strict=True)):
            for p, (pa, pb) in enumerate(zip(a, b, strict=True)):
                diff = np.abs(pa.astype(int) - pb.astype(int))
                assert not diff.any(), (
                    f"{handoff}: frame {i} plane {p}: {int((diff > 0).sum())} samples differ, max {diff.max()}"
                )


def test_nvdec_decodes_expected_frame_count(tmp_path):
    nvc = pytest.importorskip("PyNvVideoCodec")
    from glrec.diagnostics import count_nvdec_frames

    path = tmp_path / "c.mp4"
    glrec.record("cube", path, size=SIZE, fps=FPS, frames=37, encoder="cpu", handoff="shared")
    assert count_nvdec_frames(nvc, path) == 37
    with av.open(str(path)) as c:  # and FFmpeg agrees
        assert sum(1 for _ in c.decode(video=0)) == 37


def test_device_matching_picks_the_cuda_device(cuda):
    from glrec.gl.context import create_cuda_context
    from glrec.gl.devices import egl_devices, match_egl_device, verify_gl_device

    devs = egl_devices()
    index = match_egl_device(devs, 0, cuda.info.pci_bus_id)
    assert devs[index].is_nvidia
    assert devs[index].pci_bus_id in (None, cuda.info.pci_bus_id)
    with create_cuda_context(0, cuda.info.pci_bus_id) as gl:
        assert "nvidia" in (gl.info.vendor + gl.info.renderer).lower()
        assert verify_gl_device(0) in (True, None)
        cuda.bind()
        assert verify_gl_device(0) is not False


def test_device_matching_rejects_a_wrong_device(cuda, tmp_path):
    from glrec.cuda.driver import call
    from glrec.gl.devices import egl_devices, match_egl_device

    devs = egl_devices()
    count = call("cuDeviceGetCount")
    with pytest.raises(glrec.DeviceError, match="No EGL device is CUDA device"):
        match_egl_device(devs, count, None)  # an ordinal no EGL device reports
    if any(d.pci_bus_id for d in devs):  # where EGL knows PCI addresses, a foreign one matches nothing
        with pytest.raises(glrec.DeviceError, match="No EGL device is CUDA device"):
            match_egl_device(devs, 0, "0000:ff:1f.7")
    right = match_egl_device(devs, 0, cuda.info.pci_bus_id)
    wrong = next((d.index for d in devs if d.index != right), len(devs))
    with pytest.raises(glrec.DeviceError, match="is not CUDA device 0"):
        match_egl_device(devs, 0, cuda.info.pci_bus_id, requested=wrong)
    missing = call("cuDeviceGetCount")
    with pytest.raises(glrec.DeviceError, match=f"CUDA device {missing} does not exist"):
        glrec.Recorder(tmp_path / "x.mp4", size=SIZE, encoder="cpu", handoff="register", cuda_device=missing)
    assert not (tmp_path / "x.mp4").exists()


def test_auto_says_what_it_chose_and_why(tmp_path, caplog):
    from glrec.encoders.nvenc.probe import nvenc_status

    why = nvenc_status()["h264"]
    with caplog.at_level(logging.INFO, logger="glrec"):
        r = glrec.record("cube", tmp_path / "a.mp4", size=SIZE, fps=FPS, frames=5)
    lines = [rec.getMessage() for rec in caplog.records if rec.getMessage().startswith("plan:")]
    assert len(lines) == 1, lines
    if why is None:
        assert "encoder nvenc" in lines[0] and r.encoder == "nvenc"
    else:
        assert "encoder cpu via CUDA" in lines[0] and "no NVENC" in lines[0], lines[0]
        assert "CUDA" in r.encoder


def _nvenc_or_skip():
    from glrec.encoders.nvenc.probe import nvenc_status

    why = nvenc_status()["h264"]
    if why is not None:
        pytest.skip(f"no NVENC on this GPU: {why}")


@pytest.mark.parametrize("pix_fmt", ["yuv420p", "nv12", "yuv444p", "rgba"])
@pytest.mark.parametrize("name, codec", [("n.mp4", "h264"), ("n.mkv", "hevc"), ("n.h264", "h264")])
def test_nvenc_round_trip(tmp_path, name, codec, pix_fmt):
    _nvenc_or_skip()
    from glrec.colour import ColourSpec
    from glrec.encoders.nvenc import RGB_INPUT_COLOUR

    path = tmp_path / name
    r = glrec.record("cube", path, size=SIZE, fps=FPS, frames=15, encoder="nvenc", codec=codec, pix_fmt=pix_fmt, qp=18,
                     rc="constqp")  # fmt: skip
    assert r.encoder == "nvenc" and r.frames == 15
    # rgba: NVENC converts, and glrec tags what it is believed to use (doctor measures it)
    values = _luma_psnrs(path, "cube", RGB_INPUT_COLOUR if pix_fmt == "rgba" else ColourSpec(), 15)
    assert min(values) >= 35.0, values


def test_nvenc_explicit_on_a_gpu_without_it_names_the_reason(tmp_path):
    from glrec.encoders.nvenc.probe import nvenc_status

    why = nvenc_status()["h264"]
    if why is None:
        pytest.skip("this GPU has NVENC; the round-trip tests cover it")
    with pytest.raises(glrec.EncoderUnavailableError, match="NVENC is unavailable") as info:
        glrec.Recorder(tmp_path / "x.mp4", size=SIZE, encoder="nvenc")
    assert why in str(info.value) and "--encoder cpu" in str(info.value)


def test_doctor_reports_every_stage(tmp_path):
    from glrec.diagnostics import FAIL, NA, PASS, run_doctor

    checks = {c.name: c for c in run_doctor(tmp_path)}
    for name in ("EGL/OpenGL", "PyAV codecs", "CPU encode", "CUDA", "CUDA-GL register", "CUDA-GL shared", "nvJPEG",
                 "NVDEC"):  # fmt: skip
        assert checks[name].status == PASS, (name, checks[name].detail)
    assert checks["NVENC"].status in (PASS, NA) and checks["NVENC"].status != FAIL
    if checks["NVENC"].status == NA:
        assert "NV_ENC_ERR" in checks["NVENC"].detail or "PyNvVideoCodec" in checks["NVENC"].detail
