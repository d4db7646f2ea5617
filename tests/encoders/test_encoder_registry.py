"""The encoder registry and the plan that walks it: explicit choices honoured or refused, auto falls back and says why.

Pure Python (a stand-in CUDA device) and, for what is recorded, GL on Mesa with
PyAV decoding the output. NVENC's side of the same rules runs against the real
PyNvVideoCodec in ``tests/encoders/test_nvenc_contract.py``.
"""

from __future__ import annotations

import logging

import av
import numpy as np
import pytest

import glrec
from glrec.cli import main
from glrec.encoders import registry
from glrec.encoders.nvenc import probe as nvenc_probe
from glrec.encoders.nvenc.probe import NvencCaps
from glrec.encoders.nvjpeg import row as nvjpeg_row
from glrec.options import PipelineOptions, VideoOptions
from glrec.pipeline import plan as select
from glrec.sinks.registry import output_kind


@pytest.fixture
def no_cuda(monkeypatch):
    monkeypatch.setattr(select, "_open_cuda", lambda ordinal: (None, "cuda-python is not installed"))


class _FakeDevice:
    ordinal = 0

    def __init__(self):
        self.released = False

    def release(self):
        self.released = True


@pytest.fixture
def gpu_without_nvenc(monkeypatch):
    dev = _FakeDevice()
    monkeypatch.setattr(select, "_open_cuda", lambda ordinal: (dev, None))
    monkeypatch.setattr(nvenc_probe, "nvenc_problem", lambda c, d: "NV_ENC_ERR_UNSUPPORTED_DEVICE (2)")
    monkeypatch.setattr(nvenc_probe, "nvenc_caps", lambda c, o: NvencCaps(c, (33, 17), (4096, 4096), 4, True, True))
    monkeypatch.setattr(nvjpeg_row, "nvjpeg_problem", lambda: None)
    return dev


def plan(handoff="auto", ext=".mp4", **kwargs):
    video = VideoOptions.create((64, 64), 30, **kwargs)
    return select.make_plan(video, PipelineOptions(handoff=handoff), output_kind(f"out{ext}", video.codec))


# -- the rows ------------------------------------------------------------------------------------------


def test_every_encoder_is_a_row_and_auto_walks_them_in_order():
    # Every row; for MJPEG the GL JPEG encoder first (on hardware GL only: its auto_problem), the CPU last.
    assert set(registry.AUTO_ORDER) == set(registry.ENCODERS)
    assert registry.AUTO_ORDER.index("gl") < registry.AUTO_ORDER.index("nvjpeg") < registry.AUTO_ORDER.index("cpu")
    from typing import get_args

    from glrec.options import EncoderName

    assert set(get_args(EncoderName)) == {"auto", *registry.ENCODERS}  # the Literal the options check is the rows'
    for row in registry.ENCODERS.values():
        assert row.reads and set(row.reads) <= {"host", "cuda", "gl"}, row
        assert row.encoder.count(":") == 1
    with pytest.raises(glrec.ConfigError, match=r"Unknown encoder 'x264'\. Valid: auto, cpu, gl, nvenc, nvjpeg, png"):
        registry.encoder_row("x264")


def test_the_plan_holds_no_encoder_name():
    import inspect

    source = inspect.getsource(select)
    for name in registry.ENCODERS:
        assert f'"{name}"' not in source, name


# -- explicit choices are honoured or refused ------------------------------------------------------------


@pytest.mark.parametrize("handoff", ["register", "shared"])
def test_an_explicit_cuda_handoff_under_auto_without_cuda_is_refused(no_cuda, handoff):
    with pytest.raises(glrec.EncoderUnavailableError, match=f"handoff '{handoff}' needs CUDA: cuda-python"):
        plan(handoff=handoff)


def test_an_explicit_cuda_device_under_auto_without_cuda_is_refused(no_cuda):
    video = VideoOptions.create((64, 64), 30)
    with pytest.raises(glrec.EncoderUnavailableError, match="cuda_device 1 was asked for"):
        select.make_plan(video, PipelineOptions(cuda_device=1), output_kind("out.mp4", "h264"))


@pytest.mark.parametrize("command", ["record", "stream"])
def test_cli_handoff_register_without_cuda_is_refused_not_dropped(gl, no_cuda, tmp_path, capsys, command):
    out = tmp_path / "x.mp4"
    target = ["-o", str(out)] if command == "record" else ["--to", "udp://127.0.0.1:5998"]
    code = main([command, "cube", *target, "--frames", "2", "--size", "64x64", "--handoff", "register", "-q"])
    err = capsys.readouterr().err
    assert code != 0 and "handoff 'register' needs CUDA" in err and "Traceback" not in err, err
    assert not out.exists()


def test_options_of_another_encoder_are_refused_with_their_owner():
    with pytest.raises(glrec.ConfigError, match="tuning and rc are NVENC settings"):
        plan(encoder="cpu", tuning="hq")
    with pytest.raises(glrec.ConfigError, match="threads is a setting of the CPU encoders.*NVENC does not take"):
        plan(encoder="nvenc", threads=2)
    with pytest.raises(glrec.ConfigError, match="nvJPEG does not take"):
        plan(encoder="nvjpeg", codec="mjpeg", ext=".mkv", threads=2)


def test_nvjpeg_refuses_encoder_options_it_cannot_apply(gpu_without_nvenc):
    with pytest.raises(glrec.ConfigError, match="takes no encoder_options .-x., got q"):
        plan(encoder="nvjpeg", codec="mjpeg", ext=".mkv", encoder_options={"q": "3"})
    # under auto the CPU mjpeg encoder, which applies PyAV options, takes it, and the plan says why
    p = plan(codec="mjpeg", ext=".mkv", encoder_options={"q": "3"})
    assert p.encoder == "cpu" and "nvJPEG cannot take these options" in p.reason


def test_quality_for_h264_is_refused_naming_crf(no_cuda):
    """Issue 23 item 7: imageio's quality=8 was silently ignored for H.264."""
    for kwargs in ({"encoder": "cpu"}, {}):
        with pytest.raises(glrec.ConfigError, match="quality 8 is JPEG quality .codec mjpeg.; h264 takes crf"):
            plan(quality=8, **kwargs)
    # JPEG quality stays JPEG's: a JPEG encoder takes it (the GL one where GL is hardware, as on an NVIDIA GPU)
    assert plan(codec="mjpeg", ext=".mkv", quality=8).encoder in ("cpu", "gl")


def test_auto_reasons_name_each_row_passed_over(gpu_without_nvenc):
    p = plan()
    assert p.encoder == "cpu" and p.handoff == "auto"
    assert p.fallbacks == ("no NVENC: NV_ENC_ERR_UNSUPPORTED_DEVICE (2)",)
    assert p.reason.endswith("the CPU encoder fed from CUDA device frames")


def test_when_nothing_fits_every_reason_is_listed(no_cuda):
    with pytest.raises(glrec.ConfigError) as info:
        plan(pix_fmt="rgba")
    msg = str(info.value)
    assert "h264 in pix_fmt rgba needs NVENC" in msg and "no CUDA: cuda-python" in msg and ".." not in msg
    assert "takes yuv420p or nv12 or yuv444p, not rgba" in msg  # the CPU encoder's own reason


# -- auto falls back when the encoder it chose cannot open -------------------------------------------------


class _FailingRow(registry.EncoderRow):
    def open(self, request):
        raise glrec.EncoderUnavailableError("the stand-in encoder could not open a session (session limit)")


def test_auto_falls_back_when_its_encoder_fails_to_open(gl, no_cuda, monkeypatch, tmp_path, caplog):
    failing = _FailingRow(**{**registry.ENCODERS["cpu"].__dict__, "name": "flaky", "label": "the flaky encoder"})
    monkeypatch.setitem(registry.ENCODERS, "flaky", failing)
    monkeypatch.setattr(select, "AUTO_ORDER", ("flaky", "cpu"))
    out = tmp_path / "fallback.mp4"
    with caplog.at_level(logging.INFO, logger="glrec"):
        result = glrec.record("bars", out, size=(64, 48), fps=30, frames=6)
    assert result.encoder == "libx264" and "the flaky encoder could not open" in result.fallback
    assert "session limit" in result.summary()
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("the flaky encoder could not open" in w and "auto tries the next encoder" in w for w in warnings)
    with av.open(str(out)) as c:
        frames = [f.to_ndarray(format="rgb24") for f in c.decode(video=0)]
    assert len(frames) == 6 and frames[0].shape == (48, 64, 3)
    ref = out.with_name("ref.mp4")
    glrec.record("bars", ref, size=(64, 48), fps=30, frames=6, encoder="cpu")
    with av.open(str(ref)) as c:
        want = [f.to_ndarray(format="rgb24") for f in c.decode(video=0)]
    mse = np.mean((np.asarray(frames, float) - np.asarray(want, float)) ** 2)
    assert mse == 0 or 10 * np.log10(255**2 / mse) > 40


def test_an_explicit_choice_is_not_replaced_when_it_fails_to_open():
    p = select.Plan("cpu", "host", "asked for", explicit=True)
    with pytest.raises(glrec.ConfigError, match="encoder cpu was asked for"):
        select.next_plan(p, VideoOptions.create((64, 64), 30), PipelineOptions(), output_kind("o.mp4", "h264"),
                         "it could not open", keep_cuda=True)  # fmt: skip


# -- the codec the output implies (issue 23 item 6) ---------------------------------------------------------


@pytest.mark.parametrize("name, codec", [("x.hevc", "hevc"), ("x.ivf", "av1"), ("x.avi", "mjpeg"),
                                         ("x_%03d.jpg", "mjpeg"), ("x.h264", "h264")])  # fmt: skip
def test_an_output_with_one_possible_codec_needs_no_codec(gl, tmp_path, name, codec):
    out = tmp_path / name
    result = glrec.record("bars", out, size=(64, 48), fps=30, frames=3)
    assert result.codec == codec
    first = tmp_path / (name % 0) if "%" in name else out
    with av.open(str(first)) as c:
        stream = c.streams.video[0]
        assert stream.codec_context.name in {"hevc": ("hevc",), "av1": ("av1", "libdav1d", "libaom-av1"),
                                             "mjpeg": ("mjpeg",), "h264": ("h264",)}[codec]  # fmt: skip
        assert sum(1 for _ in c.decode(video=0)) == (1 if "%" in name else 3)


def test_an_output_with_several_codecs_keeps_the_default_and_a_wrong_codec_is_still_refused(tmp_path):
    from glrec.options import with_output_codec

    assert with_output_codec({}, "x.mkv") == {} and with_output_codec({"codec": "hevc"}, "x.ivf")["codec"] == "hevc"
    with pytest.raises(glrec.ConfigError, match="A .hevc file cannot carry h264"):
        glrec.Recorder(tmp_path / "x.hevc", codec="h264")


def test_cli_infers_the_codec_of_a_hevc_output(gl, tmp_path):
    out = tmp_path / "clip.hevc"
    assert main(["record", "bars", "-o", str(out), "--frames", "2", "--size", "64x64", "-q"]) == 0
    with av.open(str(out)) as c:
        assert c.streams.video[0].codec_context.name == "hevc" and sum(1 for _ in c.decode(video=0)) == 2
