"""Stages alone, so pipeline efficiency (end-to-end frames/s / slowest stage) can be stated.

``stage:render``        the scene into the render target, a GL fence per frame
                        (waited two frames later, as the pipeline does).
``stage:handoff:B``     the whole GL thread of backend B: render, GL convert
                        (or pack), handoff (PBO readback for cpu, CUDA for the
                        GPU backends); the frames are only waited for.
``stage:encode-cpu``    the worker thread of the CPU backend: libx264 through
                        PyAV plus the MP4 sink, on frames rendered and converted
                        beforehand (not timed).

These use the same classes the Recorder builds (``glrec.interop``,
``glrec.encoders.cpu``, ``glrec.sinks``), so they time the same code.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from contextlib import ExitStack
from typing import Any

from ..convert import Converter
from ..encoders.cpu.encoder import CpuEncoder
from ..frame import HostFrame
from ..gl.fences import Fence
from ..interop import HostReadback
from ..options import PipelineOptions, VideoOptions
from ..sinks import open_sink
from .common import SceneRig, describe_output, encode_all, figures, scene_rig, setup_scene
from .meter import LoopMeter, StageClock
from .spec import RowResult, RowSpec, row

#: Frames the encode-alone row keeps in memory at most; beyond that it cycles through them.
ENCODE_FRAME_BUDGET = 1 << 30


def _options(spec: RowSpec) -> VideoOptions:
    return VideoOptions.create(spec.size, spec.fps, encoder="cpu", preset=spec.preset, crf=spec.crf)


@row("stage:render")
def render_alone(spec: RowSpec) -> RowResult:
    meter = LoopMeter()
    with scene_rig(spec) as rig:
        fences: deque[Fence] = deque()
        meter.start()
        for i in range(spec.frames):
            rig.render(i, spec.fps)
            fences.append(Fence())
            if len(fences) == 3:
                fences.popleft().wait()
        while fences:
            fences.popleft().wait()
        meter.stop()
    out = figures(spec, meter, None)
    out["stages_ms"] = {"render": 1e3 * meter.seconds / spec.frames}
    return out


class _HostHandoff:
    """Render -> convert -> readback, as the Recorder's GL thread does it."""

    def __init__(self, rig: SceneRig, options: VideoOptions, depth: int = 3) -> None:
        self.rig = rig
        self.convert = Converter(rig.ctx, options.size, options.encoded_size, options.pixel_format, options.colour)
        self.readback = HostReadback(rig.ctx, self.convert, depth)

    def frame(self, index: int, fps: float) -> list[HostFrame]:
        self.rig.render(index, fps)
        self.convert.run(self.rig.target.colour)
        return self.readback.submit(index)

    def release(self) -> None:
        self.readback.release()
        self.convert.release()


def consume(frames: Sequence[Any]) -> int:
    """What a consumer that only waits for each frame does: CUDA frames are synchronised and given back."""
    for f in frames:
        if hasattr(f, "synchronize"):
            f.synchronize()
            f.release()
    return len(frames)


@row("stage:handoff")
def handoff_alone(spec: RowSpec) -> RowResult:
    """The recorder's GL thread alone, for the backend in ``spec.options``: render, convert, hand off.

    Built by :func:`glrec.pipeline.build_pipeline`, as the Recorder builds it (host
    PBO readback for ``cpu``, a CUDA handoff for the GPU backends); no encoder
    runs, the frames are only waited for.
    """
    from ..options import split_options
    from ..pipeline import build_pipeline
    from ..sinks.registry import output_kind

    video_kw, pipeline_kw = split_options(spec.options)
    options = VideoOptions.create(spec.size, spec.fps, **video_kw)
    meter = LoopMeter()
    with ExitStack() as built:
        b = build_pipeline(built, options, PipelineOptions.parse(pipeline_kw), output_kind(spec.output, options.codec))
        teardown = built.pop_all()
    with ExitStack() as stack:
        # glrec's context is current only around glrec's work: the loop and the teardown run inside it.
        stack.enter_context(b.gl.active())
        stack.push(teardown)
        scene = setup_scene(b.gl.mgl, spec)
        stack.callback(scene.close)
        target = b.target
        received = 0
        meter.start()
        for i in range(spec.frames):
            target.use()
            scene.render(i / spec.fps)
            b.convert.run(target.colour)
            received += consume(b.handoff.submit(i))
        received += consume(b.handoff.drain())
        meter.stop()
        out = figures(spec, meter, None)
        out["handoff"] = b.plan.handoff
    out["frames_written"] = received  # frames that reached host or device memory
    out["stages_ms"] = {"handoff": 1e3 * meter.seconds / spec.frames}
    return out


@row("stage:encode-cpu")
def encode_alone(spec: RowSpec) -> RowResult:
    options = _options(spec)
    frames: list[HostFrame] = []
    with scene_rig(spec) as rig:
        handoff = _HostHandoff(rig, options)
        try:
            nbytes = handoff.convert.layout.nbytes
            distinct = max(1, min(spec.frames, ENCODE_FRAME_BUDGET // nbytes))
            for i in range(distinct):
                frames.extend(handoff.frame(i, spec.fps))
            frames.extend(handoff.readback.drain())
        finally:
            handoff.release()
    clock, meter = StageClock(), LoopMeter()
    path = spec.output
    asked = options.request("cpu")
    encoder = CpuEncoder(asked.facts, asked.options)
    sink = open_sink(path, options.facts, overwrite=True)
    # Frame i is the (i mod distinct)-th pre-rendered frame, renumbered so timestamps keep rising.
    cycle = (frames[i % len(frames)] for i in range(spec.frames))
    renumbered = (HostFrame(i, f.pix_fmt, f.width, f.height, f.data) for i, f in enumerate(cycle))
    meter.start()
    encode_all(encoder, sink, renumbered, clock)
    meter.stop()
    out = figures(spec, meter, clock)
    out["distinct_frames"] = len(frames)
    out.update(describe_output(path))
    return out
