"""The CPU encoder's row: libx264, libx265, SVT-AV1, libvpx-vp9, mjpeg or gif through PyAV, from host or CUDA frames."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..jpeg_options import quality_problem
from ..row import EncodeRequest, EncoderRow
from .limits import CPU_ENCODERS, cpu_encoder_problem, cpu_options_problem, input_format
from .options import CpuOptions


def refuse(request: EncodeRequest[CpuOptions]) -> str | None:
    facts = request.facts
    return quality_problem(facts.codec, request.options.quality) or cpu_options_problem(facts, request.options)


def problem(request: EncodeRequest[Any]) -> str | None:
    return cpu_encoder_problem(request.facts.codec)


def status(devices: Sequence[int], no_cuda: str | None) -> list[str]:
    """``glrec info``'s line: PyAV's version and the CPU encoders its build has."""
    import av

    found = [name for name in dict.fromkeys(CPU_ENCODERS.values()) if name in av.codecs_available]
    return [f"cpu: PyAV {av.__version__}: {', '.join(found) or 'none'}"]


ROW = EncoderRow(
    "cpu", "the CPU encoder", ("h264", "hevc", "av1", "vp9", "mjpeg", "gif"), ("yuv420p", "nv12", "yuv444p"),
    ("host", "cuda"),
    "glrec.encoders.cpu.encoder:CpuEncoder", options=CpuOptions, input_format=input_format, refuse=refuse,
    problem=problem, status=status, doctor="CPU encode",
    note="libx264, libx265, SVT-AV1, libvpx-vp9, mjpeg or gif through PyAV; CUDA frames are copied to the host once",
)  # fmt: skip
