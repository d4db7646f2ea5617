"""Building the chain on an ExitStack: context -> target (+ written-frame source) -> process -> convert -> handoff
-> encoder.

The stack tears the stages down in reverse, so a half-built chain cleans
itself up; the sink and the encode worker come after, in the session
(:mod:`glrec.pipeline.session`).

The GL stages are built with the context current (``gl.active()``) and the
caller's context current again afterwards; tearing them down needs the
context current too, which the owner of ``stack`` arranges (the recorder's
``close`` runs it inside ``gl.teardown()``).
"""

from __future__ import annotations

import logging
from contextlib import ExitStack
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..convert import Converter, ConvertStage, RgbPacker
from ..encoders import Encoder
from ..encoders.registry import EncodeRequest, request
from ..errors import ConfigError, DeviceError, EncoderUnavailableError
from ..gl.borrowed import borrow_current_context
from ..gl.context import GLContext, create_context, create_cuda_context
from ..gl.target import RenderTarget
from ..interop import Handoff
from ..interop.handoff import cuda_handoff_kind, open_handoff
from ..sinks.registry import OutputKind
from ..sources.frames.direct import DirectFrames, direct_route
from ..sources.frames.writer import FrameWriter
from ..video_facts import VideoFacts
from .options import PipelineOptions
from .plan import Plan, StreamRequest, make_plan, next_plan

if TYPE_CHECKING:
    from ..process.stage import ProcessStage

log = logging.getLogger("glrec")


@dataclass(frozen=True)
class Pipeline:
    """The built stages and the plan they follow."""

    gl: GLContext
    target: RenderTarget
    frames: FrameWriter  # the source of frames handed to Recorder.write (its sources are made on first use)
    convert: ConvertStage
    handoff: Handoff
    encoder: Encoder
    plan: Plan
    #: The facts of the encoded stream: the recorder's, at the processing stage's output size if it has one.
    facts: VideoFacts
    process: ProcessStage | None = None

    @property
    def name(self) -> str:
        """The encoder as the summary names it (with the handoff where a host-reading encoder reads CUDA frames)."""
        if self.plan.row.reads_host and self.plan.uses_cuda:
            return f"{self.encoder.name} (from CUDA {self.handoff.kind} handoff)"
        return self.encoder.name


def consumer_slots(pipeline: PipelineOptions) -> int:
    """Frames the encode side may hold at once: the queue, the one being encoded, one on its way.

    The worker hands the encoder one frame a call (every encoder returns each frame's buffer
    before it takes the next); a worker that encodes batches holds that many instead of one.
    """
    return pipeline.queue_size + 2


def build_pipeline(stack: ExitStack, video: StreamRequest, pipeline: PipelineOptions, output: OutputKind) -> Pipeline:
    """Plan, then build every stage on ``stack`` (see the module docstring).

    ``video.facts.size`` is the render size; a processing stage that declares another output
    size makes the stream (convert, encoder, sink: :attr:`Pipeline.facts`) that size.
    """
    from ..process.spec import output_size

    spec = pipeline.process
    size = video.facts.size
    processed = output_size(spec)
    stream = video if processed is None else video.with_size(processed)
    facts = stream.facts
    plan = make_plan(stream, pipeline, output)
    if plan.device is not None:
        stack.callback(plan.device.release)  # registered first: released after every GL/CUDA object
    gl, plan = _open_context(stack, plan, pipeline, stream, output)
    # -- glrec-context: build under gl.active(); a stage that fails is released right here,
    # with the context still current; on success the stages' teardown joins ``stack``.
    with gl.active(), ExitStack() as build:
        ctx = gl.mgl
        # The encoder first: if the one auto chose cannot open, the next row is planned before
        # any stage is built for the first.
        encoder, plan, asked = _open_encoder(plan, stream, pipeline, output)
        build.callback(encoder.close)
        target = RenderTarget(ctx, size)
        build.callback(target.release)
        process = None
        if spec is not None:
            from ..process.stage import open_process

            device = plan.device if plan.uses_cuda else None
            process = open_process(ctx, spec, size, device, live=facts.live)
            build.callback(process.release)
        kind = cuda_handoff_kind(plan.handoff, ctx) if plan.uses_cuda else "host"
        plan = plan.with_(handoff=kind)
        handoff: Handoff
        convert: ConvertStage
        gl_slots = plan.row.gl_slots
        if gl_slots is not None:  # it encodes in the GL context: its own convert, and its own readback of bytes
            convert, handoff = gl_slots(ctx, asked, pipeline.ring)
            build.callback(convert.release)
        else:
            convert = _open_convert(gl, plan, facts)
            build.callback(convert.release)
            handoff = open_handoff(kind, ctx, convert, plan.device, depth=pipeline.ring,
                                   consumer_slots=consumer_slots(pipeline), live=facts.live)  # fmt: skip
        build.callback(handoff.release)
        # CUDA frames come in the way the handoff goes out: through shared memory, or registered buffers.
        direct = _direct_frames(pipeline, plan, gl, facts)
        # An encoder in the GL context opened no CUDA device: CUDA frames open their own, to stay on the GPU.
        frames = FrameWriter(ctx, target.colour, size, device=plan.device if plan.uses_cuda else None,
                             cuda_input=kind, ring=pipeline.ring, direct=direct,
                             gl_on_cuda=plan.row.reads_gl and not gl.info.is_software)  # fmt: skip
        build.callback(frames.release)
        stack.push(build.pop_all())
    # -- end glrec-context
    log.info("plan: %s", plan.describe())
    return Pipeline(gl, target, frames, convert, handoff, encoder, plan, facts, process)


def _open_context(
    stack: ExitStack, plan: Plan, pipeline: PipelineOptions, video: StreamRequest, output: OutputKind
) -> tuple[GLContext, Plan]:
    # -- glrec-context: the context is released last (made current for it), never left current.
    if pipeline.context == "current":
        return _borrow_context(stack, plan, pipeline, video, output)
    if not plan.uses_cuda or plan.device is None:
        gl = create_context(pipeline.egl_device)
        stack.callback(gl.release)
        return gl, plan
    info = plan.device.info
    try:
        gl = create_cuda_context(info.ordinal, info.pci_bus_id, pipeline.egl_device)
    except DeviceError as exc:
        if plan.explicit:
            raise
        # auto: a GL that cannot share memory with this CUDA device still records, on the host path.
        plan = next_plan(plan, video, pipeline, output, f"no EGL device for CUDA: {exc}", keep_cuda=False)
        gl = create_context(pipeline.egl_device)
    stack.callback(gl.release)
    return gl, plan


def _borrow_context(
    stack: ExitStack, plan: Plan, pipeline: PipelineOptions, video: StreamRequest, output: OutputKind
) -> tuple[GLContext, Plan]:
    """The caller's current context; for a CUDA plan it must run on the plan's CUDA device."""
    if pipeline.egl_device is not None:
        raise ConfigError("egl_device picks the EGL device of glrec's own context; drop it with context='current'.")
    gl = borrow_current_context()
    stack.callback(gl.release)
    if plan.uses_cuda and plan.device is not None:
        from ..gl.devices import verify_gl_device

        with gl.active():
            on_device = verify_gl_device(plan.device.ordinal)
        if on_device is False:
            message = (f"The current GL context ({gl.info.renderer}) does not run on CUDA device "
                       f"{plan.device.ordinal}; pass that device's cuda_device, or encoder='cpu'.")  # fmt: skip
            if plan.explicit:
                raise DeviceError(message)
            try:
                reason = "the current GL context is not on the CUDA device"
                plan = next_plan(plan, video, pipeline, output, reason, keep_cuda=False)
            except ConfigError:
                raise DeviceError(message) from None
    return gl, plan
    # -- end glrec-context


def _direct_frames(pipeline: PipelineOptions, plan: Plan, gl: GLContext, facts: VideoFacts) -> DirectFrames | None:
    """Host frames straight to a host-reading encoder where GL is software (see :mod:`glrec.sources.frames.direct`).

    Not with a processing stage: written frames then go through it like rendered ones.
    """
    if pipeline.process is not None:
        if pipeline.array_convert == "cpu":
            raise ConfigError("array_convert 'cpu' skips GL, and with it the processing stage; use 'auto' or 'gl'.")
        return None
    input_format = plan.row.input_format  # what a host reader takes from host memory (the CPU encoder: swscale's)
    if not direct_route(pipeline.array_convert, cpu_encoder=input_format is not None, host_frames=not plan.uses_cuda,
                        software_gl=gl.info.is_software):  # fmt: skip
        return None
    assert input_format is not None
    return DirectFrames(facts, input_format(facts))


def _open_convert(gl: GLContext, plan: Plan, facts: VideoFacts) -> ConvertStage:
    if plan.convert != "yuv":  # packed RGB for an encoder that converts RGB itself
        assert plan.convert is not None
        return RgbPacker(gl.mgl, facts.size, plan.convert, keep_alpha=plan.row.keeps_alpha)
    return Converter(gl.mgl, facts.size, facts.plane_size, facts.pix_fmt, facts.colour)


def _open_encoder(
    plan: Plan, video: StreamRequest, pipeline: PipelineOptions, output: OutputKind
) -> tuple[Encoder, Plan, EncodeRequest[Any]]:
    """The plan's encoder and what it was opened with; under auto, one that fails to open (a session limit)
    gives way to the next row.

    Also where the handoff or CUDA device was chosen: the next row runs on that same handoff and device.
    """
    while True:
        asked = request(plan.row, video.facts, video.given(), raw_output=output.raw,
                        device=plan.device if plan.uses_cuda else None)  # fmt: skip
        try:
            return plan.row.open(asked), plan, asked
        except EncoderUnavailableError as exc:
            if plan.explicit and not plan.auto_encoder:
                raise
            plan = next_plan(plan, video, pipeline, output, f"{plan.row.label} could not open ({exc})",
                             keep_cuda=True)  # fmt: skip
