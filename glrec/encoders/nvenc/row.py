"""NVENC's row: H.264, HEVC and AV1 on NVIDIA's hardware encoder, through PyNvVideoCodec, from CUDA frames."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...video_facts import VideoFacts
from ..row import EncodeRequest, EncoderRow
from . import probe
from .options import NvencOptions


def refuse(request: EncodeRequest[NvencOptions]) -> str | None:
    from .encoder import nvenc_options_problem

    return nvenc_options_problem(request.facts, request.options, raw_output=request.raw_output)


def problem(request: EncodeRequest[Any]) -> str | None:
    assert request.device is not None
    return probe.nvenc_problem(request.facts.codec, request.device)


def limits(request: EncodeRequest[NvencOptions]) -> str | None:
    from .encoder import nvenc_caps_problem

    assert request.device is not None
    caps = probe.nvenc_caps(request.facts.codec, request.device.ordinal)
    return nvenc_caps_problem(request.facts, request.options, caps)


def convert(facts: VideoFacts) -> str:
    return "rgba" if facts.pix_fmt == "rgba" else "yuv"  # rgba: NVENC's ABGR input, converted by NVENC


def status(devices: Sequence[int], no_cuda: str | None) -> list[str]:
    """``glrec info``'s lines: per CUDA device (one NVENC session each), whether each codec opens a session."""
    if no_cuda is not None:
        from ...cuda.driver import NO_DRIVER, cuda_brief

        if no_cuda.startswith(NO_DRIVER):  # no NVIDIA driver: nothing of NVENC's own to report
            return [f"nvenc: needs CUDA ({cuda_brief(no_cuda)})"]
        why = probe.nvenc_library_problem()
        return [f"nvenc: needs CUDA; {'PyNvVideoCodec loads' if why is None else why}"]
    lines = []
    for ordinal in devices:
        on = f" (CUDA {ordinal})" if len(devices) > 1 else ""
        for codec, why in probe.nvenc_status(("h264", "hevc", "av1"), ordinal).items():
            lines.append(f"nvenc {codec}{on}: {'opens a session' if why is None else 'unavailable: ' + why}")
    return lines


ROW = EncoderRow(
    "nvenc", "NVENC", ("h264", "hevc", "av1"), ("yuv420p", "nv12", "yuv444p", "rgba"), ("cuda",),
    "glrec.encoders.nvenc.encoder:NvencEncoder", options=NvencOptions, convert=convert, refuse=refuse,
    problem=problem, limits=limits, status=status, doctor="NVENC", chosen="an NVENC session opens",
    note="NVIDIA's hardware encoder through PyNvVideoCodec",
)  # fmt: skip
