"""Choosing the backend: which encoder, fed by which handoff, and why.

``--encoder auto`` prefers, in order:

1. NVENC, when the output is H.264/HEVC/AV1 and an NVENC session opens;
2. nvJPEG, when the output is JPEG/MJPEG and nvImageCodec works;
3. the CPU encoder fed from CUDA device frames (GPU convert -> CUDA handoff ->
   one device-to-host copy per frame), on NVIDIA machines with cuda-python;
4. the CPU encoder fed by the PBO host readback (any GL, Mesa included).

One log line states the choice and the reason; an explicit ``--encoder`` that
cannot work raises an error naming the reason and the alternatives instead of
falling back silently.
"""

from __future__ import annotations

import functools
import logging
from dataclasses import dataclass
from typing import Any

from ..errors import ConfigError, EncoderUnavailableError, GlrecError
from ..frame import Packet
from ..options import VideoOptions

log = logging.getLogger("glrec")


@dataclass
class Plan:
    """The chosen backend. ``handoff`` is ``host`` or a CUDA handoff (``auto``, ``register``, ``shared``)."""

    encoder: str
    handoff: str
    reason: str
    device: Any = None  # the opened CudaDevice for CUDA plans

    @property
    def uses_cuda(self) -> bool:
        return self.handoff != "host"

    def describe(self) -> str:
        via = "PBO host readback" if self.handoff == "host" else f"CUDA {self.handoff} handoff"
        return f"encoder {self.encoder} via {via} ({self.reason})"


@functools.lru_cache(maxsize=16)
def _nvenc_problem_cached(codec: str, ordinal: int, context: int) -> str | None:
    from .nvenc import explain_nvenc_error, load_pynvvideocodec

    try:
        nvc = load_pynvvideocodec()
    except GlrecError as exc:
        return str(exc)
    try:
        # A small host-input session: enough to learn whether this GPU has an encoder for the codec.
        enc = nvc.CreateEncoder(256, 256, "NV12", True, codec=codec, gpuid=ordinal, cudacontext=context)
        del enc
    except Exception as exc:
        return explain_nvenc_error(exc)[1]
    return None


def nvenc_problem(codec: str, device: Any) -> str | None:
    """Why NVENC cannot encode ``codec`` on ``device`` (None when a session opens). Cached per process."""
    device.bind()
    return _nvenc_problem_cached(codec, device.ordinal, device.context_handle)


def nvenc_status(codecs: tuple[str, ...] = ("h264",), ordinal: int = 0) -> dict[str, str | None]:
    """:func:`nvenc_problem` per codec on CUDA device ``ordinal``, opening and releasing the device."""
    from ..interop.cuda import CudaDevice

    device = CudaDevice.open(ordinal)
    try:
        return {codec: nvenc_problem(codec, device) for codec in codecs}
    finally:
        device.release()


def nvjpeg_problem() -> str | None:
    from .nvjpeg import load_nvimgcodec

    try:
        load_nvimgcodec()
    except GlrecError as exc:
        return str(exc)
    return None


def _open_cuda(cuda_device: int) -> tuple[Any, str | None]:
    from ..interop.cuda import CudaDevice, cuda_problem

    problem = cuda_problem()
    if problem is not None:
        return None, problem
    return CudaDevice.open(cuda_device), None


def plan_backend(
    options: VideoOptions, *, handoff: str = "auto", cuda_device: int = 0, raw_output: bool = False
) -> Plan:
    """Pick encoder and handoff for ``options`` on this machine (see the module docstring)."""
    enc, codec = options.encoder, options.codec
    if options.pix_fmt == "rgba" and enc not in ("nvenc", "auto"):
        raise ConfigError("pix_fmt rgba is NVENC's ABGR input; use encoder nvenc, or yuv420p/nv12/yuv444p.")
    if enc == "cpu" or (enc == "auto" and handoff == "host"):
        if options.pix_fmt == "rgba":
            raise ConfigError("pix_fmt rgba needs NVENC; the CPU encoders take yuv420p, nv12 or yuv444p.")
        if handoff == "host" or (handoff == "auto" and enc == "cpu"):
            return Plan("cpu", "host", "asked for" if enc == "cpu" else "host handoff asked for")
        device, problem = _open_cuda(cuda_device)
        if device is None:
            raise EncoderUnavailableError(f"handoff {handoff!r} needs CUDA: {problem}. Use handoff 'host'.")
        return Plan("cpu", handoff, "CPU encoder fed from CUDA device frames, as asked", device)

    if enc == "nvjpeg" and codec != "mjpeg":
        raise ConfigError(f"nvjpeg makes JPEG; use codec mjpeg with a .mkv/.mov/.avi or .jpg output, not {codec}.")
    if enc == "nvenc":
        from .nvenc import check_nvenc_options

        check_nvenc_options(options, raw_output=raw_output)
    if enc in ("nvenc", "nvjpeg") and handoff == "host":
        raise ConfigError(f"encoder {enc} reads CUDA memory; use handoff auto, register or shared, not host.")

    device, problem = _open_cuda(cuda_device)
    if device is None:
        if enc != "auto":
            raise EncoderUnavailableError(
                f"encoder {enc} needs CUDA, which is unusable here: {problem}. Use --encoder cpu."
            )
        if options.pix_fmt == "rgba":
            raise ConfigError(f"pix_fmt rgba needs NVENC, and CUDA is unusable here: {problem}.")
        return Plan("cpu", "host", f"no CUDA: {problem}")

    try:
        if codec == "mjpeg":
            why = nvjpeg_problem()
            if why is None:
                return Plan("nvjpeg", handoff, "asked for" if enc == "nvjpeg" else "MJPEG output, nvJPEG available",
                            device)  # fmt: skip
            if enc == "nvjpeg":
                raise EncoderUnavailableError(f"nvJPEG is unavailable: {why}. Use --encoder cpu.")
            return Plan("cpu", handoff, f"no nvJPEG ({why}); CPU mjpeg fed from CUDA device frames", device)
        why = nvenc_problem(codec, device)
        if why is None:
            if enc == "auto":
                from .nvenc import check_nvenc_options

                check_nvenc_options(options, raw_output=raw_output)
            return Plan("nvenc", handoff, "asked for" if enc == "nvenc" else "an NVENC session opens", device)
        if enc == "nvenc" or options.pix_fmt == "rgba":
            raise EncoderUnavailableError(
                f"NVENC is unavailable: {why}. Use --encoder cpu (or nvjpeg with codec mjpeg)."
            )
        return Plan("cpu", handoff, f"no NVENC: {why}; CPU encoder fed from CUDA device frames", device)
    except BaseException:
        device.release()
        raise


class DeviceFedEncoder:
    """Wrap a host encoder so it takes device frames: one device-to-host copy each, on the encode thread."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.codec = inner.codec
        self.name = inner.name

    def encode(self, frame: Any) -> list[Packet]:
        if hasattr(frame, "to_host"):
            try:
                host = frame.to_host()
            finally:
                frame.release()
            return self.inner.encode(host)
        return self.inner.encode(frame)

    def request_keyframe(self) -> None:
        self.inner.request_keyframe()

    def flush(self) -> list[Packet]:
        return self.inner.flush()

    def close(self) -> None:
        self.inner.close()
