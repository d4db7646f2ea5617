"""A recording's life: options checked at once, the chain built then or at the first frame, finished once.

:class:`Recording` is the half of :class:`~glrec.recorder.Recorder` that does
not depend on how frames come in: it checks the options and the output path,
builds the chain (a :class:`~glrec.pipeline.session.Session`) at once or, for
a recorder made without a size, at its first frame, and finishes the file
exactly once -- at :meth:`~Recording.close`, at the end of a ``with`` block,
after a stage failed, or at interpreter exit. The recorder adds the ways
frames get in (render, capture, write, frame).
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from ._lifecycle import deferred_signals, frame_gate, track, untrack
from .errors import ContextThreadError, GlrecError, RecorderClosedError
from .gl.context import GLContext
from .options import OutputOptions, PipelineOptions, VideoOptions, split_options, with_output_codec
from .pipeline import StageTimers
from .pipeline.session import Session
from .result import RecordResult
from .sinks import Sink, open_sink
from .sinks.paths import check_output_path
from .sinks.registry import OutputKind, custom_output, output_kind
from .sources.frames.written import CudaFrameIn, FrameIn

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from ._options_typed import RecorderOptions

log = logging.getLogger("glrec")

R = TypeVar("R", bound="Recording")


class Recording:
    """The life of one recording to ``path`` (see the module docstring); made as a :class:`~glrec.Recorder`."""

    _result: RecordResult  # set by close()
    _gl: GLContext  # set when the chain is built

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        overwrite: bool = True,
        sink: Sink | None = None,
        sink_options: dict[str, Any] | None = None,
        **options: Unpack[RecorderOptions],
    ) -> None:
        out = OutputOptions.parse({"overwrite": overwrite, "sink": sink, "sink_options": sink_options})
        sink, overwrite = out.sink, out.overwrite
        video, pipeline = split_options(options)
        video = with_output_codec(video, path if sink is None else None)  # -o x.hevc: hevc, the only one it takes
        self.options = VideoOptions.create(**video)
        self.pipeline_options = PipelineOptions.parse(pipeline)
        # A given sink (a network stream, say) replaces the file; path then only names it.
        output = output_kind(path, self.options.codec) if sink is None else custom_output(self.options.codec)
        out.check_for(output if sink is None else None)
        self.path = check_output_path(path, overwrite) if sink is None else Path(path)
        self._sink = sink
        self._sink_options = out.sink_options or {}
        self._overwrite = overwrite
        self.frames_submitted = 0
        self._closed = False
        self._started = time.perf_counter()
        self._stack = ExitStack()
        self._thread = threading.get_ident()
        self._session: Session | None = None  # the built chain
        # Without a size, the first frame gives it: the chain is built then (_ensure_built), a processing
        # stage too (its input is that size; a size it declares is its output's). Not in the caller's
        # context: it is the one current now.
        self._deferred: tuple[OutputKind, dict[str, object], bool] | None = None
        own = self.pipeline_options.context == "own"
        if video.get("size") is None and own:
            self._deferred = (output, video, pipeline.get("cuda_device") is not None)
        else:
            self._build_now(output)
        track(self)  # finished at interpreter exit if nobody closes it
        frame_gate.acquire()

    def _build_now(self, output: OutputKind) -> None:
        try:
            self._build(output)
        except BaseException:
            gl = getattr(self, "_gl", None)
            with gl.teardown() if gl is not None else contextlib.nullcontext():  # glrec-context
                self._stack.close()
            raise

    def _ensure_built(self, first: FrameIn | None = None) -> None:
        """Build a recorder made without a size, for its first frame (``first``, or a rendered one)."""
        if self._deferred is None:
            return
        self._check_thread()
        output, video, device_given = self._deferred
        if first is not None:
            # The frame's size, checked like a given one (odd sizes for 4:2:0 raise here, nothing built).
            self.options = VideoOptions.create(**{**video, "size": first.size})
            if isinstance(first, CudaFrameIn) and not device_given:
                self.pipeline_options = self.pipeline_options.with_(cuda_device=first.device)
        self._deferred = None
        try:
            self._build_now(output)
        except BaseException:  # unusable from here on, as a recorder whose construction failed
            self._closed = True
            untrack(self)
            frame_gate.release()
            self._result = self._make_result()
            raise

    def _build(self, output: OutputKind) -> None:
        opts = self.options
        session = Session(self._stack, opts, self.pipeline_options, output)
        self._gl, self.plan, self.encoder_name = session.gl, session.plan, session.encoder_name
        sink = self._sink  # a given sink replaces the file
        if sink is None:
            sink = open_sink(self.path, session.facts, overwrite=self._overwrite, **self._sink_options)
        session.start(sink)
        self._session = session  # built: from here on close() finishes the file
        log.info("recording %s: %dx%d @ %g fps, %s via %s", self.path, *opts.size, opts.fps, opts.codec,
                 self.encoder_name)  # fmt: skip

    def time_stages(self, timers: StageTimers) -> None:
        """Run the stages' methods inside ``timers`` (see :mod:`glrec.pipeline.timing`); before the first frame.

        The seam ``glrec bench`` profiles through; stages without a timer run as before.
        """
        if self.frames_submitted:
            raise GlrecError("time_stages() must be called before the first frame.")
        self._ensure_built()
        assert self._session is not None
        self._session.time_stages(timers)

    # -- public API -------------------------------------------------------------------------

    @property
    def size(self) -> tuple[int, int]:
        """The picture size (given, or the first frame's; the default 1280x720 until a sizeless recorder starts)."""
        return self.options.size

    @property
    def fps(self) -> float:
        """Frames per second of the recording (frame ``i`` is at ``i / fps`` seconds)."""
        return self.options.fps

    @property
    def time(self) -> float:
        """The timestamp of the next frame: ``frames_submitted / fps``."""
        return self.frames_submitted / self.options.fps

    @property
    def frames_encoded(self) -> int:
        """Frames the encoder has taken so far (the rest are on the GPU or queued)."""
        return self._session.worker.frames_encoded if self._session is not None else 0

    @property
    def frames_written(self) -> int:
        """Frames handed to the output so far (a container holds up to one second of them in memory)."""
        return self._session.worker.frames_written if self._session is not None else 0

    @property
    def encoder_backlogged(self) -> bool:
        """Whether the encode queue is full, so the next frame would wait: the encoder is the slower side."""
        return self._session is not None and self._session.worker.backlogged()

    def _stop_after(self, error: BaseException) -> None:
        """A stage failed: finish the file and release everything; the caller raises ``error``.

        What closing raises is the same failure seen again (the worker's error) or a
        consequence of it, so it is logged rather than chained onto ``error``.
        """
        try:
            self.close()
        except BaseException as err:
            if err is not error:
                log.warning("While finishing %s after %r, closing failed too: %r", self.path, error, err)

    def _check_open(self) -> Session:
        """The built chain of an open recorder, on its own thread (a sizeless one is built here)."""
        if self._closed:
            raise RecorderClosedError(
                f"The recorder for {str(self.path)!r} is closed; make a new Recorder to record again."
            )
        self._ensure_built()
        self._gl.check_thread()
        assert self._session is not None
        return self._session

    def _check_thread(self) -> None:
        if threading.get_ident() != self._thread:
            raise ContextThreadError(
                "This recorder belongs to another thread. Use it from the thread that created it, "
                "or create one recorder per thread."
            )

    def close(self) -> RecordResult:
        """Finish the file: read back frames in flight, flush the encoder, write the trailer.

        Safe to call twice; the second call returns the same result. Ctrl-C and
        SIGTERM arriving meanwhile are held until the file is finished. A
        recording of zero frames leaves no file.
        """
        if self._closed:
            return self._result
        if self._deferred is not None:  # never started: nothing was built, no file
            self._check_thread()
            self._deferred, self._closed = None, True
            untrack(self)
            frame_gate.release()
            self._result = self._make_result()
            return self._result
        self._gl.check_thread()
        session = self._session
        assert session is not None
        # Signals are held from before the recorder counts as closed until its result exists: a SIGTERM
        # right after a Ctrl-C used to land in between, and the next close() found no result.
        try:
            with deferred_signals(f"finishing {self.path}"):
                self._closed = True
                untrack(self)
                # glrec-context: a context gone (its owner closed first) loses only the frames still on the GPU.
                with self._gl.teardown() as usable:
                    try:
                        if usable and not session.worker.failed:  # a failed worker would only drop them
                            session.drain()
                    finally:
                        try:
                            self._stack.close()
                        finally:
                            self._result = self._make_result()
        finally:
            frame_gate.release()  # after the held signals went to the gate's handler, which passes them on
        log.info("%s", self._result.summary(), extra={"glrec_summary": True})
        return self._result

    def _make_result(self) -> RecordResult:
        if self._session is None:  # closed before its first frame, or its build failed
            return RecordResult(self.path, 0, 0.0, time.perf_counter() - self._started, 0, "none", self.options.codec)
        return self._session.result(self.path, self.options.fps, self._started, own_file=self._sink is None)

    def _finish_at_exit(self) -> None:
        """The interpreter is exiting with this recorder open: finish what can be finished."""
        if self._closed:
            return
        log.warning("Recorder for %s was never closed; finishing it at exit (use 'with' or call close()).", self.path)
        if self._deferred is not None or self._session is None:  # nothing built: nothing to finish
            self._deferred, self._closed = None, True
            self._result = self._make_result()
        elif self._gl.owned_by_current_thread():
            self.close()
        else:
            # Its GL thread is gone: frames still on the GPU are lost, the rest is saved.
            self._closed = True
            try:
                self._session.worker.finish()
            finally:
                self._result = self._make_result()

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        return f"<Recorder {str(self.path)!r} {self.size[0]}x{self.size[1]} @ {self.fps:g} fps, {state}>"

    def __enter__(self: R) -> R:
        return self

    def __exit__(self, *exc: Any) -> None:
        if exc[0] is None:
            self.close()
            return
        # An exception is on its way out: finish the file with the frames made so far,
        # and let the original exception win over anything closing raises.
        try:
            self.close()
        except Exception as err:
            if err is not exc[1]:
                log.warning("While finishing %s after an error, closing failed too: %r", self.path, err)
