"""Backend choice, device matching and NVENC settings: pure Python (fakes), plus the CLI and image sequences on GL.

These run everywhere (CI included); the GPU tier checks the same code on real hardware.
"""

from __future__ import annotations

import logging
import re

import av
import numpy as np
import pytest
from helpers import encoder_parts

import glrec
from glrec.cli import main
from glrec.colour import ColourSpec
from glrec.encoders.cpu import CpuEncoder
from glrec.encoders.cpu.limits import check_cpu_options
from glrec.encoders.nvenc import NVENC_FORMATS, check_nvenc_options, explain_nvenc_error, nvenc_config
from glrec.encoders.nvenc import probe as nvenc_probe
from glrec.encoders.nvenc.probe import NvencCaps
from glrec.encoders.nvjpeg import row as nvjpeg_row
from glrec.frame import HostFrame
from glrec.gl.devices import EglDevice, match_egl_device
from glrec.options import PipelineOptions, VideoOptions
from glrec.pipeline import plan as select
from glrec.sinks.registry import output_kind


def _egl(index, cuda, pci, ext="EGL_NV_device_cuda EGL_EXT_device_drm"):
    return EglDevice(index, ext, cuda, f"/dev/dri/card{index}" if pci else None, pci, None)


# -- device matching ---------------------------------------------------------------------------

TWO_GPUS = [_egl(0, 1, "0000:3b:00.0"), _egl(1, 0, "0000:86:00.0"), _egl(2, None, None, "EGL_MESA_device_software")]


def test_matching_uses_pci_not_egl_order():
    assert match_egl_device(TWO_GPUS, 0, "0000:86:00.0") == 1
    assert match_egl_device(TWO_GPUS, 1, "0000:3B:00.0") == 0  # case of the bus id does not matter


def test_matching_falls_back_to_egl_cuda_attribute_without_pci():
    devs = [_egl(0, None, None, "EGL_MESA_device_software"), _egl(1, 0, None, "EGL_NV_device_cuda")]
    assert match_egl_device(devs, 0, "0000:86:00.0") == 1


def test_matching_honours_cuda_visible_devices_renumbering():
    # CUDA_VISIBLE_DEVICES=1 makes the second GPU CUDA 0 inside the process; the PCI id decides.
    assert match_egl_device(TWO_GPUS, 0, "0000:3b:00.0") == 0


def test_matching_rejects_a_wrong_requested_device_and_lists_devices():
    with pytest.raises(glrec.DeviceError) as info:
        match_egl_device(TWO_GPUS, 0, "0000:86:00.0", requested=0)
    msg = str(info.value)
    assert "EGL device 0 is not CUDA device 0" in msg and "Use device=1" in msg and "0000:3b:00.0" in msg
    assert match_egl_device(TWO_GPUS, 0, "0000:86:00.0", requested=1) == 1


def test_matching_fails_loudly_when_nothing_matches():
    with pytest.raises(glrec.DeviceError, match="No EGL device is CUDA device 3"):
        match_egl_device(TWO_GPUS, 3, "0000:af:00.0")
    with pytest.raises(glrec.DeviceError, match="EGL_EXT_device_enumeration missing"):
        match_egl_device([], 0, None)


# -- NVENC settings and status codes -----------------------------------------------------------


def test_nvenc_status_codes_become_advice():
    code, why = explain_nvenc_error(RuntimeError("m_nvenc.nvEncOpenEncodeSessionEx(...) returned error 2"))
    assert code == 2 and "NV_ENC_ERR_UNSUPPORTED_DEVICE" in why and "nvjpeg" in why
    code, why = explain_nvenc_error(RuntimeError("NV_ENC_ERR_OUT_OF_MEMORY"))
    assert code == 10 and "consumer GPUs (GeForce)" in why and "concurrent" in why
    # PyNvVideoCodec 2.2.4's own words for a session refused with status 10
    code, why = explain_nvenc_error(
        RuntimeError(
            "PyNvEncoderCaps : \nError code : 10\nError Type : m_nvenc."
            "nvEncOpenEncodeSessionEx(&p, &h) returned error 10\n"
        )
    )
    assert code == 10 and why.startswith("NV_ENC_ERR_OUT_OF_MEMORY (10)")
    # 801 is PyNvVideoCodec's own code, not an NVENCSTATUS: its "Error Type" line is the reason
    code, why = explain_nvenc_error(
        RuntimeError(
            "ValidateGpuId : \nError code : 801\nError Type : GPU ordinal out of range. Should be within [0, 0]\n"
        )
    )
    assert code is None and why == "GPU ordinal out of range. Should be within [0, 0]"
    code, why = explain_nvenc_error(RuntimeError("Current Driver Version does not support this NvEncodeAPI version"))
    assert code == 15 and "driver" in why
    assert explain_nvenc_error(RuntimeError("something else"))[0] is None


def test_nvenc_config_follows_documented_parameters():
    opts = VideoOptions.create((1280, 720), 60, codec="hevc", encoder="nvenc", preset="p6", gop=60, qp=20,
                               tuning="ull", rc="constqp")  # fmt: skip
    cfg = nvenc_config(*encoder_parts(opts), gpu=1, context=123, stream=456)
    assert cfg == {"codec": "hevc", "gpu_id": 1, "fps": "60/1", "preset": "P6", "tuning_info": "ultra_low_latency",
                   "rc": "constqp", "constqp": 20, "gop": 60, "idrperiod": 60, "bf": 0, "repeatspspps": 1,
                   "cudacontext": 123, "cudastream": 456}  # fmt: skip
    vbr = nvenc_config(*encoder_parts(VideoOptions.create((64, 64), 30, encoder="nvenc", bitrate=8_000_000)), gpu=0)
    assert vbr["rc"] == "vbr" and vbr["bitrate"] == 8_000_000 and vbr["maxbitrate"] == 16_000_000
    # colour is glrec's VUI writer's job: PyNvVideoCodec's colorspace would mark the stream full range
    abgr = nvenc_config(*encoder_parts(VideoOptions.create((64, 64), 30, encoder="nvenc", pix_fmt="rgba")), gpu=0)
    assert "colorspace" not in abgr and "gpuid" not in abgr
    quality = nvenc_config(*encoder_parts(VideoOptions.create((64, 64), 30, encoder="nvenc")), gpu=0)
    assert quality["rc"] == "vbr" and quality["cq"] == 20 and "bitrate" not in quality
    assert nvenc_config(*encoder_parts(VideoOptions.create((64, 64), 30, encoder="nvenc", crf=30)), gpu=0)["cq"] == 30
    lossless = nvenc_config(
        *encoder_parts(VideoOptions.create((64, 64), 30, encoder="nvenc", tuning="lossless")), gpu=0
    )
    assert (lossless["tuning_info"], lossless["rc"], lossless["constqp"]) == ("lossless", "constqp", 0)
    assert nvenc_config(*encoder_parts(VideoOptions.create((64, 64), 30, codec="av1", encoder="nvenc", pix_fmt="nv12")),
                        gpu=0)["use_ivf_container"] == 0  # fmt: skip
    live = nvenc_config(*encoder_parts(VideoOptions.create((64, 64), 30, encoder="nvenc", live=True)), gpu=0)
    assert (live["tuning_info"], live["rc"], live["bf"], live["preset"]) == ("ultra_low_latency", "cbr", "0", "P2")
    assert NVENC_FORMATS == {"yuv420p": "YUV420", "nv12": "NV12", "yuv444p": "YUV444", "rgba": "ABGR"}


@pytest.mark.parametrize(
    "kwargs, raw, words",
    [
        ({"preset": "veryfast"}, False, "Unknown NVENC preset"),
        ({"tuning": "fast"}, False, "Unknown NVENC tuning"),
        ({"rc": "cbr"}, False, "rc cbr needs a bitrate"),
        ({"qp": 20, "rc": "vbr"}, False, "use rc constqp"),
        ({"tuning": "lossless", "qp": 10}, False, "lossless is constant QP 0"),
        ({"live": True, "preset": "p6"}, False, "P1, P2 or P3"),
        ({"live": True, "qp": 20}, False, "Live NVENC is CBR"),
    ],
)
def test_nvenc_rejects_options_it_cannot_honour(kwargs, raw, words):
    with pytest.raises(glrec.ConfigError, match=words):
        nvenc_config(*encoder_parts(VideoOptions.create((64, 64), 30, encoder="nvenc", **kwargs)), gpu=0)


def test_nvenc_option_checks():
    with pytest.raises(glrec.ConfigError, match="maximum of 4096x4096"):
        check_nvenc_options(*encoder_parts(VideoOptions.create((4100, 64), 30, encoder="nvenc")), raw_output=False)
    with pytest.raises(glrec.ConfigError, match="B-frames are supported for raw"):
        check_nvenc_options(
            *encoder_parts(VideoOptions.create((64, 64), 30, encoder="nvenc", bframes=2)), raw_output=False
        )
    check_nvenc_options(*encoder_parts(VideoOptions.create((64, 64), 30, encoder="nvenc", bframes=2)), raw_output=True)
    # NVENC converts rgba itself: glrec tags it BT.601 limited and refuses to claim anything else
    assert VideoOptions.create((64, 64), 30, encoder="nvenc", pix_fmt="rgba").colour == ColourSpec("bt601", "limited")
    for colour in ({"colour_range": "full"}, {"matrix": "bt709"}):
        with pytest.raises(glrec.ConfigError, match="NVENC converts rgba input to YUV itself"):
            check_nvenc_options(*encoder_parts(VideoOptions.create((64, 64), 30, encoder="nvenc", pix_fmt="rgba",
                                                                   **colour)), raw_output=False)  # fmt: skip
    caps = NvencCaps("h264", (145, 49), (4096, 4096), 4, True, False)
    with pytest.raises(glrec.ConfigError, match="below this GPU's NVENC h264 minimum of 145x49"):
        check_nvenc_options(
            *encoder_parts(VideoOptions.create((144, 64), 30, encoder="nvenc")), raw_output=False, caps=caps
        )
    with pytest.raises(glrec.ConfigError, match="no 4:4:4"):
        check_nvenc_options(*encoder_parts(VideoOptions.create((160, 64), 30, encoder="nvenc", pix_fmt="yuv444p")),
                            raw_output=False, caps=caps)  # fmt: skip
    check_nvenc_options(
        *encoder_parts(VideoOptions.create((160, 64), 30, encoder="nvenc")), raw_output=False, caps=caps
    )


@pytest.mark.parametrize("codec, pix_fmt", [("hevc", "nv12"), ("av1", "nv12"), ("av1", "rgba")])
def test_formats_only_the_cpu_encoders_refuse_are_allowed_for_nvenc(codec, pix_fmt):
    opts = VideoOptions.create((64, 64), 30, codec=codec, encoder="nvenc", pix_fmt=pix_fmt)
    check_nvenc_options(*encoder_parts(opts), raw_output=False)
    if pix_fmt == "nv12":  # the CPU encoders still refuse it, once the plan has chosen them
        with pytest.raises(glrec.ConfigError, match="CPU encoder"):
            check_cpu_options(*encoder_parts(VideoOptions.create((64, 64), 30, codec=codec, pix_fmt=pix_fmt), "cpu"))


# -- backend choice without CUDA ------------------------------------------------------------------


def plan_backend(options, handoff="auto"):
    ext = ".mkv" if options.codec == "mjpeg" else ".ivf" if options.codec == "av1" else ".mp4"
    return select.make_plan(options, PipelineOptions(handoff=handoff), output_kind(f"out{ext}", options.codec))


@pytest.fixture
def no_cuda(monkeypatch):
    monkeypatch.setattr(select, "_open_cuda", lambda ordinal: (None, "cuda-python is not installed"))


def test_auto_without_cuda_picks_cpu_host_and_says_why(no_cuda):
    plan = plan_backend(VideoOptions.create((64, 64), 30))
    assert (plan.encoder, plan.handoff) == ("cpu", "host")
    assert "no CUDA: cuda-python is not installed" in plan.describe()


@pytest.mark.parametrize(
    "kwargs, handoff, error, words",
    [
        ({"encoder": "nvenc"}, "auto", glrec.EncoderUnavailableError, "needs CUDA"),
        ({"encoder": "nvjpeg", "codec": "mjpeg"}, "auto", glrec.EncoderUnavailableError, "Use --encoder cpu"),
        ({"encoder": "nvjpeg"}, "auto", glrec.ConfigError, "nvjpeg makes JPEG"),
        ({"encoder": "nvenc"}, "host", glrec.ConfigError, "reads CUDA memory"),
        ({"encoder": "cpu"}, "register", glrec.EncoderUnavailableError, "needs CUDA"),
        ({"encoder": "auto", "pix_fmt": "rgba"}, "auto", glrec.ConfigError, "rgba needs NVENC"),
    ],
)
def test_explicit_gpu_choices_fail_with_the_reason(no_cuda, kwargs, handoff, error, words):
    with pytest.raises(error, match=words):
        plan_backend(VideoOptions.create((64, 64), 30, **kwargs), handoff=handoff)


def test_rgba_is_only_for_nvenc():
    with pytest.raises(glrec.ConfigError, match="NVENC's ABGR input"):
        VideoOptions.create((64, 64), 30, encoder="cpu", pix_fmt="rgba")


class _FakeDevice:
    ordinal = 0
    context_handle = 1

    def __init__(self):
        self.released = False

    def bind(self):
        pass

    def release(self):
        self.released = True


@pytest.mark.parametrize(
    "codec, nvenc, nvjpeg, expect",
    [
        ("h264", None, None, ("nvenc", "an NVENC session opens")),
        ("h264", "NV_ENC_ERR_UNSUPPORTED_DEVICE (2)", None, ("cpu", "no NVENC: NV_ENC_ERR_UNSUPPORTED_DEVICE (2)")),
        ("mjpeg", "x", None, ("nvjpeg", "MJPEG output, nvJPEG available")),
        ("mjpeg", "x", "nvImageCodec is not installed", ("cpu", "no nvJPEG (nvImageCodec is not installed)")),
    ],
)
def test_auto_with_cuda_prefers_gpu_encoders(monkeypatch, codec, nvenc, nvjpeg, expect):
    dev = _FakeDevice()
    monkeypatch.setattr(select, "_open_cuda", lambda ordinal: (dev, None))
    monkeypatch.setattr(nvenc_probe, "nvenc_problem", lambda c, d: nvenc)
    monkeypatch.setattr(nvenc_probe, "nvenc_caps", lambda c, o: NvencCaps(c, (33, 17), (4096, 4096), 4, True, True))
    monkeypatch.setattr(nvjpeg_row, "nvjpeg_problem", lambda: nvjpeg)
    plan = plan_backend(VideoOptions.create((64, 64), 30, codec=codec))
    assert plan.encoder == expect[0] and expect[1] in plan.reason and plan.handoff == "auto"
    assert plan.device is dev and not dev.released


def test_explicit_nvenc_without_a_session_releases_cuda_and_names_the_status(monkeypatch):
    dev = _FakeDevice()
    monkeypatch.setattr(select, "_open_cuda", lambda ordinal: (dev, None))
    monkeypatch.setattr(nvenc_probe, "nvenc_problem", lambda c, d: "NV_ENC_ERR_UNSUPPORTED_DEVICE (2): no NVENC")
    with pytest.raises(glrec.EncoderUnavailableError, match=r"NVENC is unavailable: NV_ENC_ERR_UNSUPPORTED_DEVICE"):
        plan_backend(VideoOptions.create((64, 64), 30, encoder="nvenc"))
    assert dev.released


def test_cpu_encoder_copies_device_frames_to_host_and_releases_them():
    class FakeDeviceFrame:
        index, released = 7, False

        def to_host(self):
            return HostFrame(7, "yuv420p", 64, 64, np.full((96, 64), 128, np.uint8))

        def release(self):
            self.released = True

    encoder, frame = (
        CpuEncoder(*encoder_parts(VideoOptions.create((64, 64), 30, qp=0, bframes=0), "cpu")),
        FakeDeviceFrame(),
    )
    packets = encoder.encode(frame) + encoder.flush()
    encoder.close()
    assert frame.released and [p.pts for p in packets] == [7]


# -- image sequences, CLI ------------------------------------------------------------------------


def test_image_sequence_output(gl, tmp_path):
    pattern = tmp_path / "f_%03d.jpg"
    r = glrec.record("bars", pattern, size=(64, 48), fps=30, frames=4, codec="mjpeg")
    files = sorted(tmp_path.glob("f_*.jpg"))
    assert [f.name for f in files] == ["f_000.jpg", "f_001.jpg", "f_002.jpg", "f_003.jpg"]
    assert r.bytes == sum(f.stat().st_size for f in files) > 0
    for f in files:
        with av.open(str(f)) as c:
            frame = next(c.decode(video=0))
            assert (frame.width, frame.height) == (64, 48)
    with pytest.raises(glrec.OutputExistsError, match="existing frame"):
        glrec.record("bars", pattern, size=(64, 48), fps=30, frames=1, codec="mjpeg", overwrite=False)


def test_image_sequence_needs_a_pattern(tmp_path):
    with pytest.raises(glrec.ConfigError, match=r"frame-number pattern.*_%06d\.jpg"):
        glrec.Recorder(tmp_path / "still.jpg", codec="mjpeg")


def test_info_and_doctor_commands(gl, capsys):
    assert main(["info"]) == 0
    out = capsys.readouterr().out
    assert "GL:" in out and "EGL devices:" in out and "CUDA:" in out and "cpu: PyAV" in out
    assert main(["doctor"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"^CPU encode +ok +libx264 round trip, 10 frames, luma PSNR \d", out, re.M)
    assert "doctor: all available stages work" in out


def test_doctor_require_makes_a_missing_stage_fail(gl, capsys, monkeypatch):
    from glrec.diagnostics import common

    monkeypatch.setattr(common, "cuda_summary", lambda: ("no NVIDIA driver", []))
    assert main(["doctor", "--require", "cuda"]) == 1
    assert re.search(r"^CUDA +FAIL +no NVIDIA driver", capsys.readouterr().out, re.M)


def test_auto_logs_one_backend_line(gl, tmp_path, caplog):
    with caplog.at_level(logging.INFO, logger="glrec"):
        glrec.record("bars", tmp_path / "a.mp4", size=(64, 48), fps=30, frames=2)
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("plan:")]
    assert len(lines) == 1 and "encoder" in lines[0] and "(" in lines[0]
