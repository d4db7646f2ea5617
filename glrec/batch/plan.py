"""The batch recorder's plan: the stream's facts from the first batch, which route encodes, and why.

``encoder="auto"`` for per-env files, as the single-stream plan orders them: mjpeg
goes to the GL JPEG route on hardware GL (one upload, one dispatch per pass for all
N), else CUDA batches of 3 channels to nvJPEG where it runs (all N in one call);
PNG to the PNG encoder, everything else to the CPU encoders (a CUDA batch then
crosses to the host once per step for both). ``encoder="gl"`` takes the GL JPEG
route anywhere, llvmpipe included.
NVENC is never picked by ``auto`` for per-env files (it would need a session per
env); ``encoder="nvenc"`` opens one per env, fed RGBA frames
(:mod:`glrec.batch.nvenc_route`), or refuses where the GPU allows fewer.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import Any

from ..convert.swscale import PACKED_FORMATS
from ..encoders.jpeg_options import JpegOptions
from ..encoders.registry import EncoderRow, encoder_row, request, unfit
from ..errors import ConfigError, EncoderUnavailableError
from ..options import VideoOptions
from ..video_facts import VideoFacts
from .frames import BatchShape
from .routes import ChildEncoder, CpuRoute, NvjpegRoute, Route

log = logging.getLogger("glrec")

#: Pipeline options that mean something to per-env files (the grid's recorder takes them all).
FILES_PIPELINE = ("cuda_device", "egl_device")


def video_options(video: Mapping[str, object], shape: BatchShape, fps: float) -> VideoOptions:
    """The options of every env's stream (the grid's: see the recorder), checked now that the size is known.

    Per-env NVENC sessions read RGBA (see :mod:`glrec.batch.nvenc_route`): that is their pix_fmt unless one is given.
    """
    values = {"pad": True, **video, "size": shape.size, "fps": fps}
    if video.get("encoder") == "nvenc" and video.get("pix_fmt") is None:
        values["pix_fmt"] = "rgba"
    return VideoOptions.create(**values)


def pick_encoder(opts: VideoOptions, shape: BatchShape) -> str:
    """The encoder for per-env files (see the module docstring)."""
    if opts.encoder != "auto":
        return str(opts.encoder)
    if opts.codec == "png":
        return "png"
    if opts.codec == "mjpeg":
        gl = encoder_row("gl")
        why_not_gl = gl.auto_problem(request(gl, opts.facts, opts.given()))
        if why_not_gl is None:  # hardware GL: one upload and one dispatch per pass for all N
            return "gl"
        log.info("glrec: batch: auto passes the GL JPEG encoder over: %s", why_not_gl)
    if shape.kind == "cuda" and opts.codec == "mjpeg":
        row = encoder_row("nvjpeg")
        why = row.problem(request(row, opts.facts, opts.given()))
        if why is None and shape.channels == 3:
            return "nvjpeg"
        log.info("glrec: batch: auto takes the CPU encoders, not nvJPEG (%s)", why or "4-channel frames")
    return "cpu"


def plan_files(
    opts: VideoOptions, shape: BatchShape, pipeline: Mapping[str, Any], streams: int
) -> tuple[Route, VideoFacts]:
    """The route for ``streams`` per-env files of ``shape``'s frames; ConfigError with the reason if none fits."""
    name = pick_encoder(opts, shape)
    given = dict(opts.given())
    facts = opts.facts
    row = encoder_row(name)
    if name == "nvenc":
        return _plan_nvenc(row, facts, given, pipeline, streams), facts
    if name == "cpu" and "threads" not in given and opts.codec not in ("mjpeg", "gif"):  # no threads to give
        # The pool runs the streams side by side on every core: one encoder thread each, unless they are few.
        given["threads"] = max(1, (os.cpu_count() or 1) // max(1, streams))
    why = unfit(row, facts, given, raw_output=False)
    if why is not None:
        raise ConfigError(f"encoder {name} cannot record these batches: {why}")
    asked = request(row, facts, given)
    problem = row.problem(asked)
    if problem is not None:
        raise EncoderUnavailableError(f"encoder {name} cannot run here: {problem}")
    cuda_device = int(pipeline.get("cuda_device", 0) or 0)
    if name in ("cpu", "png"):
        return _cpu_route(row, asked, facts, given, opts, shape), facts
    if name == "nvjpeg":
        if shape.kind != "cuda":
            raise ConfigError("encoder 'nvjpeg' reads CUDA batches; pass a CUDA tensor, or use encoder 'gl' or 'cpu'.")
        return NvjpegRoute(asked, cuda_device, shape.channels), facts
    if name == "gl":
        from .gl_route import GlJpegRoute

        quality = opts.table(JpegOptions).jpeg_quality
        route = GlJpegRoute(facts, quality, shape.envs, shape.channels, cuda=shape.kind == "cuda",
                            cuda_device=cuda_device, egl_device=pipeline.get("egl_device"))  # fmt: skip
        return route, facts
    raise ConfigError(f"encoder {name} has no batch route; use encoder 'cpu', 'gl', 'nvjpeg' or 'png'.")


def _plan_nvenc(
    row: EncoderRow, facts: VideoFacts, given: Mapping[str, object], pipeline: Mapping[str, Any], streams: int
) -> Route:
    """One NVENC session per env (see :mod:`glrec.batch.nvenc_route`), checked on the device that encodes."""
    from ..cuda.driver import CudaDevice, cuda_problem

    why = unfit(row, facts, given, raw_output=False)
    if why is not None:
        raise ConfigError(f"encoder nvenc cannot record these batches: {why}")
    no_cuda = cuda_problem()
    if no_cuda is not None:
        raise EncoderUnavailableError(f"encoder nvenc cannot run here: NVENC needs CUDA ({no_cuda}).")
    device = CudaDevice.open(int(pipeline.get("cuda_device", 0) or 0))
    try:
        asked = request(row, facts, given, device=device)
        problem = row.problem(asked) or row.limits(asked)
        if problem is not None:
            raise EncoderUnavailableError(f"encoder nvenc cannot run here: {problem}")
        from .nvenc_route import NvencRoute

        return NvencRoute(asked, device, streams)
    except BaseException:
        device.release()
        raise


def _cpu_route(row: EncoderRow, asked: Any, facts: VideoFacts, given: dict[str, Any], opts: VideoOptions,
               shape: BatchShape) -> Route:  # fmt: skip
    """The host encoders' route: host frames (a CUDA batch copied once a step) that swscale converts (the CPU
    encoders) or the PNG encoder brings to its format."""
    w, h = facts.encoded_size
    child = ChildEncoder(dict(given), PACKED_FORMATS[shape.channels], (h, w, shape.channels), row.name)
    return CpuRoute(facts, lambda: row.open(asked), _host_name(row, opts), child_encoder=child)


def _host_name(row: EncoderRow, opts: VideoOptions) -> str:
    from ..encoders.cpu.limits import CPU_ENCODERS

    return CPU_ENCODERS[opts.codec] if row.name == "cpu" else row.name
