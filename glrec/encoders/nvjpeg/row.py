"""nvJPEG's row: JPEG from CUDA memory through nvImageCodec, a whole batch of frames in one call."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...errors import GlrecError
from ...video_facts import VideoFacts
from ..jpeg_options import JpegOptions
from ..row import EncodeRequest, EncoderRow

#: The most frames one ``encode_batch`` call hands nvImageCodec (one step of 64 vectorised environments).
BATCH = 64
#: Frames per call in a recording's turns. nvImageCodec's cost is per image: on an H200 at 1080p the Recorder
#: in turns ran 1,439 frames/s one frame a call and 1,360 thirty-two a call (benchmarks/gpu_ceiling.py,
#: 2026-12-02); alone, one a call took 0.31 ms a frame, eight a call 0.34.
TURN_BATCH = 1


def refuse(request: EncodeRequest[JpegOptions]) -> str | None:
    codec = request.facts.codec
    if codec != "mjpeg":
        return f"nvjpeg makes JPEG; use codec mjpeg with a .mkv/.mov/.avi or .jpg output, not {codec}."
    if request.options.encoder_options:
        keys = ", ".join(k for k, _ in request.options.encoder_options)
        return f"takes no encoder_options (-x), got {keys}; its one setting is quality"
    return None


def nvjpeg_problem() -> str | None:
    """Why nvImageCodec cannot load here (None when it loads)."""
    from .encoder import load_nvimgcodec

    try:
        load_nvimgcodec()
    except GlrecError as exc:
        return str(exc)
    return None


def problem(request: EncodeRequest[Any]) -> str | None:
    return nvjpeg_problem()


def convert(facts: VideoFacts) -> str:
    return "rgb24"  # nvJPEG converts interleaved RGB to YCbCr itself (JFIF: BT.601, full range)


def status(devices: Sequence[int], no_cuda: str | None) -> list[str]:
    """``glrec info``'s line: whether nvImageCodec loads."""
    if no_cuda is not None:
        from ...cuda.driver import cuda_brief

        return [f"nvjpeg: needs CUDA ({cuda_brief(no_cuda)})"]
    why = nvjpeg_problem()
    return [f"nvjpeg: {'available (nvImageCodec)' if why is None else 'unavailable: ' + why}"]


ROW = EncoderRow(
    "nvjpeg", "nvJPEG", ("mjpeg",), ("yuv420p", "yuv444p"), ("cuda",), "glrec.encoders.nvjpeg.encoder:NvJpegEncoder",
    options=JpegOptions, batch=BATCH, turn_batch=TURN_BATCH, convert=convert, refuse=refuse, problem=problem,
    status=status, doctor="nvJPEG", absent="no {label} ({why})", chosen="MJPEG output, nvJPEG available",
    note="nvJPEG through nvImageCodec",
)  # fmt: skip
