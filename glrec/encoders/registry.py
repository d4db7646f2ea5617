"""The encoder registry: one row per encoder, what it takes, why it cannot run here, and how to open it.

On the model of the output registry (:mod:`glrec.sinks.registry`): each
:class:`EncoderRow` declares the codecs and pixel formats it encodes, the
memory it reads (host, CUDA, or the GL texture itself), what the convert stage
must make for it, the frames it holds, its own option tables, and three
checks that return a reason or None: :attr:`~EncoderRow.refuse` (options it
cannot take, known without touching the machine), :attr:`~EncoderRow.problem`
(why it cannot run on this machine) and :attr:`~EncoderRow.limits` (this
device's limits for these options). The plan (:mod:`glrec.pipeline.plan`)
walks :data:`AUTO_ORDER` for ``encoder="auto"`` and uses nothing but these
rows, so a new encoder is one row here and its module beside this one.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Literal

from ..errors import ConfigError
from .cpu_options import CpuOptions
from .jpeg_options import JpegOptions, quality_problem
from .nvenc_options import NvencOptions

#: Frames nvJPEG encodes per nvImageCodec call. Measured on an H200 at 1080p (benchmarks/handoff.py):
#: 4,471 frames/s one per call, 3,124 eight per call, 2,980 thirty-two per call, so one it is;
#: the setting stays for GPUs and sizes where batching pays.
NVJPEG_BATCH = 1

if TYPE_CHECKING:
    from ..cuda.driver import CudaDevice
    from ..options import VideoOptions
    from . import Encoder


@dataclass(frozen=True)
class EncodeRequest:
    """What an encoder is asked for: the stream's options, the output, and the CUDA device if one is open."""

    video: VideoOptions
    raw_output: bool = False  # an elementary stream (.h264, .hevc, .ivf): no container reorders for it
    device: CudaDevice | None = None


def _none(request: EncodeRequest) -> str | None:
    return None


def _yuv(video: VideoOptions) -> str:
    return "yuv"


@dataclass(frozen=True)
class EncoderRow:
    """One encoder (see the module docstring)."""

    name: str
    label: str  # how messages name it: NVENC, nvJPEG, the CPU encoder
    codecs: tuple[str, ...]
    pix_fmts: tuple[str, ...]
    #: The memory it reads, in the order it prefers: ``host`` (PBO readback), ``cuda`` (a CUDA handoff),
    #: ``gl`` (the GL texture, in the GL context: no handoff at all).
    reads: tuple[str, ...]
    encoder: str  # "module:Class" under glrec.encoders, imported when opened; Class.from_request(request)
    options: tuple[type, ...] = ()  # its own option tables; options of any other encoder's tables are refused
    convert: Callable[[VideoOptions], str] = _yuv  # what the convert stage makes: yuv planes, rgb24 or rgba
    held: int = 0  # frames it may hold beyond the one being encoded (a batch)
    refuse: Callable[[EncodeRequest], str | None] = _none
    problem: Callable[[EncodeRequest], str | None] = _none
    limits: Callable[[EncodeRequest], str | None] = _none
    absent: str = "no {label}: {why}"  # the reason auto gives when ``problem`` answers ``why``
    chosen: str = ""  # why auto takes it when it is the first that fits (e.g. "an NVENC session opens")
    note: str = ""

    @property
    def reads_host(self) -> bool:
        return "host" in self.reads

    @property
    def reads_gl(self) -> bool:
        """It encodes the GL texture in the GL context itself (its own readback of finished bytes)."""
        return "gl" in self.reads

    @property
    def needs_cuda(self) -> bool:
        return self.reads == ("cuda",)

    def unfit(self, request: EncodeRequest) -> str | None:
        """Why these options do not fit this encoder, whatever the machine (None if they do)."""
        video = request.video
        own = self.refuse(request)  # the encoder's own words first, where it has them
        if own is not None:
            return own
        if video.codec not in self.codecs:
            return f"encodes {', '.join(self.codecs)}, not {video.codec}"
        if video.pix_fmt not in self.pix_fmts:
            return f"takes pix_fmt {', '.join(self.pix_fmts)}, not {video.pix_fmt}"
        return _foreign_options(self, video)

    def open(self, request: EncodeRequest) -> Encoder:
        module, _, cls = self.encoder.partition(":")
        enc_cls = getattr(importlib.import_module(f"glrec.encoders.{module}"), cls)
        return enc_cls.from_request(request)


def _foreign_options(row: EncoderRow, video: VideoOptions) -> str | None:
    """The first option set that belongs to another encoder's table, named with its owner."""
    for other in ENCODERS.values():
        for table in other.options:
            if table in row.options:
                continue
            for f in fields(table):
                value = getattr(video, f.name)
                if value != f.default:
                    what = getattr(table, "OWNER", f"{f.name} is an option of {other.label}")
                    return f"{what} ({f.name} {value!r} given), which {row.label} does not take"
    return None


# -- the rows' own checks (each encoder module owns its limits; imported when asked) ---------------------


def _cpu_refuse(request: EncodeRequest) -> str | None:
    from .cpu_limits import cpu_options_problem

    video = request.video
    return quality_problem(video.codec, video.quality) or cpu_options_problem(video)


def _cpu_problem(request: EncodeRequest) -> str | None:
    from .cpu_limits import cpu_encoder_problem

    return cpu_encoder_problem(request.video.codec)


def _nvenc_refuse(request: EncodeRequest) -> str | None:
    from .nvenc import nvenc_options_problem

    return nvenc_options_problem(request.video, raw_output=request.raw_output)


def _nvenc_problem(request: EncodeRequest) -> str | None:
    from . import available

    assert request.device is not None
    return available.nvenc_problem(request.video.codec, request.device)


def _nvenc_limits(request: EncodeRequest) -> str | None:
    from . import available
    from .nvenc import nvenc_caps_problem

    assert request.device is not None
    caps = available.nvenc_caps(request.video.codec, request.device.ordinal)
    return nvenc_caps_problem(request.video, caps, raw_output=request.raw_output)


def _nvenc_convert(video: VideoOptions) -> str:
    return "rgba" if video.pix_fmt == "rgba" else "yuv"  # rgba: NVENC's ABGR input, converted by NVENC


def _nvjpeg_refuse(request: EncodeRequest) -> str | None:
    codec = request.video.codec
    if codec != "mjpeg":
        return f"nvjpeg makes JPEG; use codec mjpeg with a .mkv/.mov/.avi or .jpg output, not {codec}."
    if request.video.encoder_options:
        keys = ", ".join(k for k, _ in request.video.encoder_options)
        return f"takes no encoder_options (-x), got {keys}; its one setting is quality"
    return None


def _nvjpeg_problem(request: EncodeRequest) -> str | None:
    from . import available

    return available.nvjpeg_problem()


def _rgb24(video: VideoOptions) -> str:
    return "rgb24"  # nvJPEG converts interleaved RGB to YCbCr itself (JFIF: BT.601, full range)


CPU = EncoderRow(
    "cpu", "the CPU encoder", ("h264", "hevc", "av1", "mjpeg"), ("yuv420p", "nv12", "yuv444p"), ("host", "cuda"),
    "cpu:CpuEncoder",
    options=(CpuOptions, JpegOptions), refuse=_cpu_refuse, problem=_cpu_problem,
    note="libx264, libx265, SVT-AV1 or mjpeg through PyAV; CUDA frames are copied to the host once",
)  # fmt: skip
NVENC = EncoderRow(
    "nvenc", "NVENC", ("h264", "hevc", "av1"), ("yuv420p", "nv12", "yuv444p", "rgba"), ("cuda",), "nvenc:NvencEncoder",
    options=(NvencOptions,), convert=_nvenc_convert, refuse=_nvenc_refuse, problem=_nvenc_problem,
    limits=_nvenc_limits, chosen="an NVENC session opens", note="NVIDIA's hardware encoder through PyNvVideoCodec",
)  # fmt: skip
NVJPEG = EncoderRow(
    "nvjpeg", "nvJPEG", ("mjpeg",), ("yuv420p", "yuv444p"), ("cuda",), "nvjpeg:NvJpegEncoder", options=(JpegOptions,),
    convert=_rgb24, held=NVJPEG_BATCH, refuse=_nvjpeg_refuse, problem=_nvjpeg_problem,
    absent="no {label} ({why})", chosen="MJPEG output, nvJPEG available", note="nvJPEG through nvImageCodec",
)  # fmt: skip


def _gl_refuse(request: EncodeRequest) -> str | None:
    from .gl_jpeg_pipeline import gl_jpeg_refuse

    return gl_jpeg_refuse(request)


def _jpeg(video: VideoOptions) -> str:
    return "jpeg"  # the GL JPEG passes run in the convert slot and leave finished bytes, not planes


GL = EncoderRow(
    "gl", "the GL JPEG encoder", ("mjpeg",), ("yuv420p", "yuv444p"), ("gl",), "gl_jpeg_pipeline:GlJpegEncoder",
    options=(JpegOptions,), convert=_jpeg, refuse=_gl_refuse,
    note="baseline JPEG in GL compute shaders, in glrec's own GL context: no CUDA, any GPU with GL 4.3; "
    "auto does not pick it (not yet measured faster on any GPU)",
)  # fmt: skip

#: What ``encoder=`` takes, for the typed front door (tests keep it equal to ``auto`` and the rows' names).
EncoderName = Literal["auto", "cpu", "nvenc", "nvjpeg", "gl"]

#: Every encoder by name.
ENCODERS: dict[str, EncoderRow] = {row.name: row for row in (NVENC, NVJPEG, CPU, GL)}
#: What ``encoder="auto"`` tries, first to last: the first row that fits the options and runs here is taken.
#: The GL JPEG encoder is not in it: auto takes it only once it is measured faster than nvJPEG or the CPU.
AUTO_ORDER: tuple[str, ...] = ("nvenc", "nvjpeg", "cpu")


def encoder_row(name: str) -> EncoderRow:
    """The row of encoder ``name``, or ConfigError listing the encoders."""
    row = ENCODERS.get(name)
    if row is None:
        raise ConfigError(f"Unknown encoder {name!r}. Valid: auto, {', '.join(sorted(ENCODERS))}.")
    return row


def held_frames(name: str) -> int:
    return encoder_row(name).held


def describe() -> str:
    """One line per encoder, for ``--help`` and ``glrec info``."""
    return "; ".join(f"{r.name}: {', '.join(r.codecs)} ({r.note})" for r in ENCODERS.values())
