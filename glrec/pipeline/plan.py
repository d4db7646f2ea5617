"""The plan: which encoder, fed by which handoff, on which device, and why.

``encoder="auto"`` prefers, in order:

1. NVENC, when the output is H.264/HEVC/AV1 and an NVENC session opens;
2. nvJPEG, when the output is JPEG/MJPEG and nvImageCodec works;
3. the CPU encoder fed from CUDA device frames (GPU convert -> CUDA handoff ->
   one device-to-host copy per frame), on NVIDIA machines with cuda-python;
4. the CPU encoder fed by the PBO host readback (any GL, Mesa included).

One log line states the choice and the reason; an explicit encoder that cannot
work raises an error naming the reason and the alternatives instead of falling
back silently. The chosen encoder's own limits are checked here, before any GL
object exists. A plan is frozen: building may only *refine* it into a new one
(``auto`` handoff resolved, or the fallback to the host path when GL cannot
share memory with the CUDA device), see :mod:`glrec.pipeline.build`.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from ..encoders import available
from ..encoders.cpu_limits import check_cpu_options
from ..errors import ConfigError, EncoderUnavailableError
from ..options import PipelineOptions, VideoOptions
from ..sinks.registry import OutputKind

if TYPE_CHECKING:
    from ..cuda.driver import CudaDevice

log = logging.getLogger("glrec")


@dataclass(frozen=True)
class Plan:
    """The chosen chain. ``handoff`` is ``host``, or a CUDA handoff (``auto`` until built, ``register``, ``shared``)."""

    encoder: str  # cpu, nvenc, nvjpeg or gl
    handoff: str
    reason: str
    device: CudaDevice | None = None  # the opened CUDA device for CUDA plans (released with the pipeline)
    #: What the convert stage makes: ``yuv`` planes, or packed ``rgb24`` (nvJPEG) / ``rgba`` (NVENC's
    #: ABGR) for encoders that convert RGB themselves, or ``jpeg`` (the GL JPEG encoder's own passes).
    convert: str = "yuv"

    @property
    def uses_cuda(self) -> bool:
        return self.handoff != "host"

    def describe(self) -> str:
        via = "PBO host readback" if self.handoff == "host" else f"CUDA {self.handoff} handoff"
        if self.encoder == "gl":  # -- gl-jpeg hook
            via = "its fenced ring of JPEG bytes"
        return f"encoder {self.encoder} via {via} ({self.reason})"

    def with_(self, **changes: object) -> Plan:
        return replace(self, **changes)  # type: ignore[arg-type]


def _open_cuda(cuda_device: int) -> tuple[CudaDevice | None, str | None]:
    from ..cuda.driver import CudaDevice, cuda_problem

    problem = cuda_problem()
    if problem is not None:
        return None, problem
    return CudaDevice.open(cuda_device), None


def _cpu(options: VideoOptions, handoff: str, reason: str, device: CudaDevice | None = None) -> Plan:
    check_cpu_options(options)  # what libavcodec would refuse, refused before any GL object exists
    return Plan("cpu", handoff, reason, device)


def _nvenc(options: VideoOptions, output: OutputKind, handoff: str, reason: str, device: CudaDevice) -> Plan:
    from ..encoders.nvenc import check_nvenc_options

    try:  # the probe's caps add this GPU's own limits (minimum size, 4:4:4, B-frames, lossless)
        check_nvenc_options(options, raw_output=output.raw, caps=available.nvenc_caps(options.codec, device.ordinal))
    except ConfigError as exc:
        if options.encoder == "nvenc" or options.pix_fmt == "rgba":
            raise
        return _cpu(options, handoff, f"NVENC cannot take these options ({exc}); CPU encoder fed from CUDA device "
                    "frames", device)  # fmt: skip
    return Plan("nvenc", handoff, reason, device, convert="rgba" if options.pix_fmt == "rgba" else "yuv")


def make_plan(video: VideoOptions, pipeline: PipelineOptions, output: OutputKind) -> Plan:
    """Pick encoder and handoff for ``video`` into ``output`` on this machine (see the module docstring)."""
    enc, codec, handoff = video.encoder, video.codec, pipeline.handoff
    if video.pix_fmt == "rgba" and enc not in ("nvenc", "auto"):
        raise ConfigError("pix_fmt rgba is NVENC's ABGR input; use encoder nvenc, or yuv420p/nv12/yuv444p.")
    if enc == "gl":  # -- gl-jpeg hook: GL-compute JPEG, its own fenced byte ring; auto never picks it (unmeasured)
        from ..encoders.gl_jpeg_pipeline import check_gl_jpeg_options

        check_gl_jpeg_options(video, handoff)
        return Plan("gl", "host", "asked for", convert="jpeg")  # -- end gl-jpeg hook
    if enc == "cpu" or (enc == "auto" and handoff == "host"):
        if video.pix_fmt == "rgba":
            raise ConfigError("pix_fmt rgba needs NVENC; the CPU encoders take yuv420p, nv12 or yuv444p.")
        if handoff == "host" or (handoff == "auto" and enc == "cpu"):
            return _cpu(video, "host", "asked for" if enc == "cpu" else "host handoff asked for")
        check_cpu_options(video)
        device, problem = _open_cuda(pipeline.cuda_device)
        if device is None:
            raise EncoderUnavailableError(f"handoff {handoff!r} needs CUDA: {problem}. Use handoff 'host'.")
        return Plan("cpu", handoff, "CPU encoder fed from CUDA device frames, as asked", device)

    if enc == "nvjpeg" and codec != "mjpeg":
        raise ConfigError(f"nvjpeg makes JPEG; use codec mjpeg with a .mkv/.mov/.avi or .jpg output, not {codec}.")
    if enc == "nvenc":
        from ..encoders.nvenc import check_nvenc_options

        check_nvenc_options(video, raw_output=output.raw)
    if enc in ("nvenc", "nvjpeg") and handoff == "host":
        raise ConfigError(f"encoder {enc} reads CUDA memory; use handoff auto, register or shared, not host.")

    device, problem = _open_cuda(pipeline.cuda_device)
    if device is None:
        if enc != "auto":
            raise EncoderUnavailableError(
                f"encoder {enc} needs CUDA, which is unusable here: {problem}. Use --encoder cpu."
            )
        if video.pix_fmt == "rgba":
            raise ConfigError(f"pix_fmt rgba needs NVENC, and CUDA is unusable here: {problem}.")
        return _cpu(video, "host", f"no CUDA: {problem}")

    try:
        if codec == "mjpeg":
            why = available.nvjpeg_problem()
            if why is None:
                reason = "asked for" if enc == "nvjpeg" else "MJPEG output, nvJPEG available"
                return Plan("nvjpeg", handoff, reason, device, convert="rgb24")
            if enc == "nvjpeg":
                raise EncoderUnavailableError(f"nvJPEG is unavailable: {why}. Use --encoder cpu.")
            return _cpu(video, handoff, f"no nvJPEG ({why}); CPU mjpeg fed from CUDA device frames", device)
        why = available.nvenc_problem(codec, device)
        if why is None:
            return _nvenc(video, output, handoff, "asked for" if enc == "nvenc" else "an NVENC session opens", device)
        if enc == "nvenc" or video.pix_fmt == "rgba":
            raise EncoderUnavailableError(
                f"NVENC is unavailable: {why}. Use --encoder cpu (or nvjpeg with codec mjpeg)."
            )
        return _cpu(video, handoff, f"no NVENC: {why}; CPU encoder fed from CUDA device frames", device)
    except BaseException:
        device.release()
        raise
