"""A built pipeline at work: frames go in by index and come out of the sink, in order.

The recorder decides when to build (at once, or at a sizeless recorder's first
frame) and when to finish; a :class:`Session` is what it builds: the stages of
:func:`~glrec.pipeline.build.build_pipeline`, the sink and the encode worker,
and the moves of a frame between them -- through the processing stage if there
is one, the convert pass and the handoff, then onto the worker's queue.

Where the encoder runs in a CUDA context, the GL thread encodes in turns with GL
(:mod:`glrec.pipeline.turns`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from contextlib import ExitStack
from pathlib import Path

import moderngl

from ..cuda.gpu_lock import GpuLock, lock_path, mps_pipe
from ..errors import ConfigError
from ..frame import Frame, HostFrame
from ..result import RecordResult
from ..sinks import Sink
from ..sinks.registry import OutputKind
from .build import Pipeline, build_pipeline
from .options import PipelineOptions
from .plan import StreamRequest
from .timing import StageTimers, timed
from .turns import Turns
from .worker import EncodeWorker

log = logging.getLogger("glrec")


class Session:
    """Build the chain for ``video`` on ``stack``; :meth:`start` then starts its encode worker on a sink.

    Two steps, so that the owner holds the GL context (:attr:`gl`, needed to tear
    the stages down) before it opens the sink, which can fail.
    """

    worker: EncodeWorker  # set by start()

    def __init__(
        self, stack: ExitStack, video: StreamRequest, pipeline_options: PipelineOptions, output: OutputKind
    ) -> None:
        pipeline = build_pipeline(stack, video, pipeline_options, output)
        self._stack = stack
        self._queue_size = pipeline_options.queue_size
        self.gl = pipeline.gl
        self.target = pipeline.target
        self.frames = pipeline.frames
        self.encoder = pipeline.encoder
        self.plan = pipeline.plan
        self.encoder_name = pipeline.name
        #: The facts of the encoded stream, for the sink: a processing stage may encode another size than is rendered.
        self.facts = pipeline.facts
        self._process = pipeline.process  # None without process=
        self._convert = pipeline.convert
        self._handoff = pipeline.handoff
        self._live = pipeline.facts.live
        self.gl_frames_pending = False  # frames of render()/frame() still in the handoff
        #: The GL thread encodes each completed batch itself, in turns with GL (None: the worker encodes).
        self.turns = Turns.open(pipeline.plan.row, self.encoder, live=self._live)
        #: Device memory of the frames in flight between GL and the encoder (the handoff's pool).
        self.device_bytes = pipeline.handoff.device_bytes
        if self.turns is not None:
            log.info("GL and %s take turns per batch; %.0f MiB of GPU memory for frames in flight",
                     pipeline.plan.row.label, self.device_bytes / 2**20)  # fmt: skip
        self._gpu_lock = self._open_gpu_lock(pipeline) if pipeline_options.gpu_lock else None

    def _open_gpu_lock(self, pipeline: Pipeline) -> GpuLock:
        """The GPU's turn lock (``gpu_lock=True``), let go when the stack closes; refused where there are no turns."""
        device = getattr(pipeline.handoff, "device", None)
        if self.turns is None or device is None:
            raise ConfigError(
                f"gpu_lock=True shares the GPU in whole GL/CUDA turns, which only a recording whose encoder runs in "
                f"a CUDA context and that is not live takes (nvjpeg, nvenc); this one encodes with "
                f"{pipeline.plan.row.label}{' live' if self._live else ''}: leave gpu_lock off."
            )
        mps = mps_pipe()
        if mps is not None:  # honoured, but said: under MPS the processes' CUDA work runs side by side
            log.warning(
                "gpu_lock: CUDA MPS runs here (%s), where recordings' CUDA work runs side by side; the lock makes "
                "them take turns instead, which measured slower under MPS (docs: Performance)", mps,
            )  # fmt: skip
        lock = GpuLock(lock_path(device.info.uuid))
        self._stack.callback(lock.close)
        return lock

    def start(self, sink: Sink) -> None:
        """Start the encode worker on ``sink``; the stack finishes it (flush, trailer) before the stages go."""
        self.worker = EncodeWorker(self.encoder, sink, self._queue_size)
        self._stack.callback(self.worker.finish)
        if self.frames.direct is not None:  # written arrays are converted on the side with time for it
            self.frames.direct.pace_by(self.worker.backlogged)

    def time_stages(self, timers: StageTimers) -> None:
        """Run the stages' methods inside ``timers`` (see :mod:`glrec.pipeline.timing`); before the first frame."""
        self._convert = timed("convert", self._convert, timers)
        self._handoff = timed("handoff", self._handoff, timers)
        self.worker.time_stages(timers)
        if self.turns is not None:  # the GL thread's own encode calls
            self.turns.encoder = timed("encode", self.turns.encoder, timers)

    def before_frame(self) -> None:
        """Before a frame's GL work: a handoff that paces GL against its consumer (batches) waits here, and with
        ``gpu_lock`` a turn's first frame waits for the other processes' turns."""
        if self._gpu_lock is not None:
            self._gpu_lock.take()
        self._handoff.before_frame()

    def submit(self, colour: moderngl.Texture, index: int) -> None:
        """Hand on frame ``index``, rendered into ``colour`` (the GL context current)."""
        if self._process is None:
            self._hand_on(index, colour)
        else:  # the stage hands frames on as they come out of it, each with its own index
            self._process.submit(colour, index, self._hand_on)
        if self._live:  # latency over throughput: hand this frame on now, not N frames later
            self._deliver(self._handoff.drain())

    def _hand_on(self, index: int, texture: moderngl.Texture) -> None:
        """Convert frame ``index`` from ``texture`` and queue what the handoff completes for the encoder."""
        self._convert.run(texture)
        self.gl_frames_pending = True
        self._deliver(self._handoff.submit(index))

    def _deliver(self, frames: Sequence[Frame]) -> None:
        """Completed frames to the worker, or (turns) encoded here and their packets to the worker."""
        if self.turns is not None:
            self.turns.deliver(frames, self.worker.put)
            if frames and self._gpu_lock is not None:  # the turn's GPU work is done: the next process's turn
                self._gpu_lock.give()
            return
        for frame in frames:
            self.worker.put(frame)

    def submit_ready(self, frame: HostFrame) -> None:
        """Queue a frame that needs no GL stage, after the frames still in the handoff (rendered before it)."""
        if self.gl_frames_pending:  # scenes were rendered into this recording too
            with self.gl.active():
                self.drain()
            self.gl_frames_pending = False
        self.worker.put(frame)

    def drain(self) -> None:
        """Hand on every frame still in the stages; a processing stage's failure is raised after the rest."""
        error: BaseException | None = None
        if self._process is not None:
            try:
                self._process.drain(self._hand_on)
            except BaseException as exc:
                error = exc
        self._deliver(self._handoff.drain())
        if error is not None:
            raise error

    def result(self, path: Path, fps: float, started: float, *, own_file: bool) -> RecordResult:
        """What the recording holds; a file glrec wrote (``own_file``) counts what it holds, not what was encoded."""
        worker = self.worker
        frames = worker.frames_written if own_file else worker.frames_encoded
        size = path.stat().st_size if own_file and path.exists() else worker.sink.bytes_written
        wall = time.perf_counter() - started
        plan = self.plan
        return RecordResult(path, frames, frames / fps, wall, size, self.encoder_name, self.facts.codec,
                            fallback="; ".join(plan.briefly), fallback_reasons=plan.fallbacks)  # fmt: skip
