"""Build the recorder's middle: GL context, convert/pack stage, handoff and encoder, per the chosen backend.

Kept apart from :mod:`glrec.recorder` so the recorder stays about recording;
see :mod:`glrec.encoders.select` for how the backend is chosen.
"""

from __future__ import annotations

import logging
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .context import GLContext, create_context, create_cuda_context
from .encoders.nvjpeg import BATCH as NVJPEG_BATCH
from .encoders.select import DeviceFedEncoder, Plan, plan_backend
from .errors import DeviceError
from .interop import Converter, HostReadback, TargetRing
from .interop.handoff import check_handoff, cuda_handoff_kind, open_cuda_handoff
from .options import VideoOptions, check_cpu_encoder

log = logging.getLogger("glrec")

RAW_OUTPUTS = (".h264", ".264", ".hevc", ".h265", ".265", ".ivf")


@dataclass
class Backend:
    gl: GLContext
    targets: TargetRing
    source: Any  # Converter or RgbPacker: what the render target is converted with
    handoff: Any  # HostReadback, RegisterHandoff or SharedHandoff
    encoder: Any
    plan: Plan

    @property
    def name(self) -> str:
        if self.plan.encoder == "cpu" and self.plan.uses_cuda:
            return f"{self.encoder.name} (from CUDA {self.handoff.kind} handoff)"
        return str(self.encoder.name)


def open_backend(
    stack: ExitStack,
    options: VideoOptions,
    path: Path,
    *,
    device: int | None,
    handoff: str,
    cuda_device: int,
    ring: int,
    queue_size: int,
) -> Backend:
    """Choose the backend and build context -> target -> convert -> handoff -> encoder on ``stack``.

    The stack tears them down in reverse; the sink and worker come after, in the recorder.
    """
    check_handoff(handoff)
    plan = plan_backend(options, handoff=handoff, cuda_device=cuda_device,
                        raw_output=path.suffix.lower() in RAW_OUTPUTS)  # fmt: skip
    if plan.device is not None:
        stack.callback(plan.device.release)  # registered first: released after every GL/CUDA object
    if plan.encoder == "cpu":
        check_cpu_encoder(options)  # what libavcodec would refuse, refused before any GL object exists
    gl = _open_context(stack, plan, device, options)
    ctx = gl.mgl
    targets = TargetRing(ctx, options.size, 1)
    stack.callback(targets.release)
    source = _open_source(ctx, plan, options)
    stack.callback(source.release)
    if plan.uses_cuda:
        kind = cuda_handoff_kind(plan.handoff, ctx)
        # Frames the consumer may hold: the queue, the one being encoded, and nvJPEG's batch.
        held = queue_size + 2 + (NVJPEG_BATCH if plan.encoder == "nvjpeg" else 0)
        stage = open_cuda_handoff(kind, ctx, source, plan.device, depth=ring, consumer_slots=held)
        plan.handoff = kind
    else:
        stage = HostReadback(ctx, source, ring)
        stage.kind = "host"  # type: ignore[attr-defined]
    stack.callback(stage.release)
    encoder = _open_encoder(plan, options, path)
    log.info("backend: %s", plan.describe())
    return Backend(gl, targets, source, stage, encoder, plan)


def _open_context(stack: ExitStack, plan: Plan, device: int | None, options: VideoOptions) -> GLContext:
    if not plan.uses_cuda:
        return stack.enter_context(create_context(device))
    info = plan.device.info
    try:
        return stack.enter_context(create_cuda_context(info.ordinal, info.pci_bus_id, device))
    except DeviceError as exc:
        if options.encoder != "auto" or options.pix_fmt == "rgba":
            raise
        # auto: a GL that cannot share memory with this CUDA device still records, on the host path.
        plan.encoder, plan.handoff, plan.reason = "cpu", "host", f"no EGL device for CUDA: {exc}"
        return stack.enter_context(create_context(device))


def _open_source(ctx: Any, plan: Plan, options: VideoOptions) -> Any:
    if plan.encoder == "nvjpeg" or (plan.encoder == "nvenc" and options.pix_fmt == "rgba"):
        from .interop.pack import RgbPacker

        return RgbPacker(ctx, options.size, "rgb24" if plan.encoder == "nvjpeg" else "rgba")
    return Converter(ctx, options.size, options.encoded_size, options.pix_fmt, options.colour)


def _open_encoder(plan: Plan, options: VideoOptions, path: Path) -> Any:
    if plan.encoder == "nvjpeg":
        from .encoders.nvjpeg import NvJpegEncoder

        return NvJpegEncoder(options, plan.device.ordinal)
    if plan.encoder == "nvenc":
        from .encoders.nvenc import NvencEncoder

        return NvencEncoder(options, plan.device, raw_output=path.suffix.lower() in RAW_OUTPUTS)
    from .encoders.cpu import CpuEncoder

    encoder = CpuEncoder(options)
    return DeviceFedEncoder(encoder) if plan.uses_cuda else encoder
