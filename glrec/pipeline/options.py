"""The pipeline's own options: how the chain is built (which devices, which handoff, how deep the queues are).

Declared here, beside the pipeline they configure, and composed into the front
door's keywords by :mod:`glrec.options` (``Recorder(handoff=..., ring=...)``,
``--handoff``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from .._declare import OptionTable, flag, option
from .._values import _boolean, _choice, _number

HandoffName = Literal["auto", "host", "register", "shared"]
ContextMode = Literal["own", "current"]  # glrec's own EGL context, or the one current on the calling thread
ArrayConvert = Literal["auto", "gl", "cpu"]


def _process(value: object) -> Any:
    from ..process.spec import parse_process  # the stage's own declaration of what it accepts

    return parse_process(value)


@dataclass(frozen=True)
class PipelineOptions(OptionTable):
    """How the chain is built: which devices, which handoff, how deep the queues are."""

    handoff: HandoffName = option(
        "auto", "GL -> encoder handoff: auto, host (PBO readback), register or shared (CUDA)",
        _choice("handoff", HandoffName), flags=flag("handoff"),
    )  # fmt: skip
    cuda_device: int = option(
        0, "CUDA device ordinal for the GPU path (the EGL device is matched to it)",
        _number("cuda_device", 0, 1024, integer=True, example="0"), flags=flag("cuda-device"),
    )  # fmt: skip
    egl_device: int | None = option(
        None, "EGL device index (default: the one matching the CUDA device, else the first)",
        _number("egl_device", 0, 1024, integer=True, example="0"), flags=("--egl-device", "--device"),
    )  # fmt: skip
    context: ContextMode = option(
        "own", "GL context: own (glrec's headless EGL context, current only during glrec's calls) or current "
        "(the one current on the calling thread: MuJoCo's, pyrender's, yours; see Recorder.capture)",
        _choice("context", ContextMode),
    )  # fmt: skip
    ring: int = option(
        3, "frames in flight on the GL side (readback ring depth)", _number("ring", 2, 64, integer=True, example="3")
    )
    queue_size: int = option(
        8, "frames queued for the encode thread", _number("queue_size", 1, 1024, integer=True, example="8")
    )
    process: Any = option(
        None, "run FILE.py:FUNCTION (or an OpenCL FILE.cl:KERNEL) on every frame before it is encoded; in Python "
        "also a function, glrec.process.Process or OpenCLKernel (see README, Processing stages)",
        _process, flags=flag("process"), metavar="FILE.py:FN",
    )  # fmt: skip
    gpu_lock: bool = option(
        False, "several recordings on one GPU: take whole GL/CUDA turns with the other glrec processes that set it, "
        "instead of time-slicing (encoders in a CUDA context, not live; holds the GPU while a turn's frames render)",
        _boolean("gpu_lock"), flags=flag("gpu-lock"), boolean=True,
    )  # fmt: skip
    array_convert: ArrayConvert = option(
        "auto", "how frames given to Recorder.write become YUV: auto (swscale on the encode thread where GL is "
        "software and the CPU encoder reads host frames, else the GL convert), gl, or cpu",
        _choice("array_convert", ArrayConvert),
    )  # fmt: skip
