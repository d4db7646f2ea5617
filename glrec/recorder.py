"""The Recorder: owns the chain context -> source -> target -> process -> convert -> handoff -> encoder -> sink."""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import moderngl

from .capture import Capture
from .context import GLContext
from .errors import ConfigError, ContextThreadError, GlrecError, SceneError
from .frame import HostFrame
from .lifecycle import deferred_signals, frame_gate, track, untrack
from .options import PipelineOptions, VideoOptions, split_options
from .pipeline import StageTimers, build_pipeline, timed
from .result import RecordResult
from .scenes import Scene, load_scene
from .sinks import Sink, open_sink
from .sinks.paths import check_output_path
from .sinks.registry import OutputKind, custom_output, output_kind
from .sources.frames import CudaFrameIn, FrameIn, inspect_frame
from .worker import EncodeWorker

log = logging.getLogger("glrec")


class Recorder:
    """Record frames rendered on a headless GPU (or Mesa) to a video file.

    Frames are rendered into the recorder's target, converted to YUV on the
    GPU, read back asynchronously and encoded on a worker thread. Frame ``i``
    has timestamp ``i / fps`` whatever the wall clock does.

    Defaults: 1280x720, 30 fps, H.264 (libx264, preset veryfast, crf 20),
    yuv420p, BT.709 limited range. ``pad=True`` pads odd sizes to even for
    4:2:0 by repeating the last row/column.

    ``encoder`` is ``auto`` (NVENC, nvJPEG or the CPU, see
    :mod:`glrec.encoders.select`), ``cpu``, ``nvenc`` or ``nvjpeg``; ``handoff``
    is ``auto``, ``host`` (PBO readback), ``register`` or ``shared`` (CUDA);
    ``cuda_device`` is the CUDA ordinal the GPU path uses (the EGL device is
    matched to it). NVENC also takes ``tuning`` (hq, ll, ull, lossless) and
    ``rc`` (cbr, vbr, constqp).

    ``process=fn`` runs a processing stage on every frame before it is converted
    (torch/CuPy on the frame's CUDA memory on NVIDIA, numpy elsewhere, or an
    OpenCL kernel; it may return shapes for GL to draw): see :mod:`glrec.process`.

    ``live=True`` tunes the encoder for latency (:mod:`glrec.encoders.latency`)
    and hands each frame to it as soon as it is read back; ``sink`` writes to
    that sink (e.g. a network stream) instead of opening ``path``;
    ``sink_options`` go to the sink opened for ``path`` (``audio=`` copies a
    video input's audio, see :func:`glrec.transcode.transcode`).

    ``context`` is ``"own"`` (default: glrec's own headless EGL context, current
    only during glrec's calls, so MuJoCo, pyrender and other recorders keep theirs)
    or ``"current"``: record inside the GL context current on this thread (MuJoCo's,
    pyrender's, yours), with :meth:`capture` reading what that library drew; glrec
    saves and restores the GL state it touches there. Either way, GL work of your
    own with :attr:`ctx` goes inside :meth:`frame` or ``with rec.ctx:``.

    Frames made elsewhere go in with :meth:`write` (numpy, PIL, matplotlib, CUDA
    tensors). Without ``size`` the recording takes the size of its first frame
    (written, or the default 1280x720 for :meth:`render`) and is built then, so
    what building can raise (no GL, an encoder missing) comes from that first
    call, still before anything is written. (With ``context="current"`` or
    ``process``, a recorder without ``size`` is built at once at 1280x720.)

    >>> with Recorder("out.mp4", size=(640, 360), fps=30) as rec:  # doctest: +SKIP
    ...     for i in range(90):
    ...         rec.render("cube")          # scene at t = i / 30
    ...     # or draw yourself:
    ...     with rec.frame() as fbo:
    ...         rec.ctx.clear(1.0, 0.0, 0.0)
    >>> renderer = mujoco.Renderer(model, 480, 640)  # doctest: +SKIP
    >>> with Recorder("sim.mp4", size=(640, 480), context="current") as rec:  # doctest: +SKIP
    ...     renderer.update_scene(data); renderer.render()
    ...     rec.capture()                   # what MuJoCo just drew
    >>> with Recorder("sim.mp4", fps=50) as rec:  # doctest: +SKIP
    ...     rec.write(env.render())          # H x W x 3 uint8, top row first
    """

    _result: RecordResult  # set by close()

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        overwrite: bool = False,
        sink: Sink | None = None,
        sink_options: dict[str, Any] | None = None,
        **options: object,
    ) -> None:
        video, pipeline = split_options(options)
        self.options = VideoOptions.create(**video)
        self.pipeline_options = PipelineOptions.parse(pipeline)
        # A given sink (a network stream, say) replaces the file; path then only names it.
        output = output_kind(path, self.options.codec) if sink is None else custom_output(self.options.codec)
        self.path = check_output_path(path, overwrite) if sink is None else Path(path)
        self._sink = sink
        self._sink_options = dict(sink_options or {})
        self._overwrite = overwrite
        self.frames_submitted = 0
        self._closed = False
        self._started = time.perf_counter()
        self._scenes: dict[int, Scene] = {}
        self._stack = ExitStack()
        self._capture: Capture | None = None
        self._thread = threading.get_ident()
        self._gl_frames_pending = False  # frames of render()/frame() still in the handoff
        # Without a size, the first frame gives it: the chain is built then (_ensure_built). Not in the
        # caller's context (it is the one current now) nor with a processing stage (it may set the size).
        self._deferred: tuple[OutputKind, dict[str, object], bool] | None = None
        own = self.pipeline_options.context == "own" and self.pipeline_options.process is None
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
        opts, stack = self.options, self._stack
        pipeline = build_pipeline(stack, opts, self.pipeline_options, output)
        self._gl: GLContext = pipeline.gl
        self._target = pipeline.target
        self._frames = pipeline.frames
        self._process = pipeline.process  # None without process=
        self._convert = pipeline.convert
        self._handoff = pipeline.handoff
        # A handoff that paces GL against its consumer (glrec.interop.batching) is asked before each frame.
        self._before_frame = getattr(pipeline.handoff, "before_frame", None)
        self.plan = pipeline.plan
        self._encoder = pipeline.encoder
        self.encoder_name = pipeline.name
        # The stream's options: the processing stage may encode another size than is rendered.
        sink = (
            self._sink
            if self._sink is not None
            else open_sink(self.path, pipeline.video, overwrite=self._overwrite, **self._sink_options)
        )
        self._worker = EncodeWorker(pipeline.encoder, sink, self.pipeline_options.queue_size)
        stack.callback(self._worker.finish)
        log.info("recording %s: %dx%d @ %g fps, %s via %s", self.path, *opts.size, opts.fps, opts.codec,
                 self.encoder_name)  # fmt: skip

    def time_stages(self, timers: StageTimers) -> None:
        """Run the stages' methods inside ``timers`` (see :mod:`glrec.pipeline.timing`); before the first frame.

        The seam ``glrec bench`` profiles through; stages without a timer run as before.
        """
        if self.frames_submitted:
            raise GlrecError("time_stages() must be called before the first frame.")
        self._ensure_built()
        self._convert = timed("convert", self._convert, timers)
        self._handoff = timed("handoff", self._handoff, timers)
        self._worker.time_stages(timers)

    # -- public API -------------------------------------------------------------------------

    @property
    def ctx(self) -> moderngl.Context:
        """The moderngl context frames are rendered with (for your own GL objects).

        glrec's context is current only during glrec's calls: use this inside
        :meth:`frame`, or make it current for a block with ``with rec.ctx:`` (the
        caller's context is current again after either; end the block before
        :meth:`close`). Only the thread that made the recorder may use it
        (ContextThreadError otherwise).
        """
        self._ensure_built()
        self._gl.check_thread()
        return self._gl.mgl

    @property
    def size(self) -> tuple[int, int]:
        """The picture size (given, or the first frame's; the default 1280x720 until a sizeless recorder starts)."""
        return self.options.size

    @property
    def fps(self) -> float:
        return self.options.fps

    @property
    def time(self) -> float:
        """The timestamp of the next frame: ``frames_submitted / fps``."""
        return self.frames_submitted / self.options.fps

    @property
    def frames_encoded(self) -> int:
        """Frames the encoder has taken so far (the rest are on the GPU or queued)."""
        return self._worker.frames_encoded if hasattr(self, "_worker") else 0

    @property
    def frames_written(self) -> int:
        """Frames handed to the output so far (a container holds up to one second of them in memory)."""
        return self._worker.frames_written if hasattr(self, "_worker") else 0

    def render(self, scene: Scene | str, t: float | None = None) -> int:
        """Render ``scene`` at time ``t`` (default: the next frame's timestamp) and record it.

        ``scene`` is a Scene or anything :func:`glrec.scenes.load_scene` takes; it is set up
        on first use and closed with the recorder. Returns the frame index.
        """
        self._check_open()
        with self._gl.active():  # glrec-context: scene setup and the frame in one activation
            obj = self._scene(scene)
            with self.frame() as _:
                try:
                    obj.render(self.time if t is None else float(t))
                except Exception as exc:
                    error = SceneError(
                        f"Scene {type(obj).__name__} raised at frame {self.frames_submitted}: "
                        f"{type(exc).__name__}: {exc}"
                    )
                    self._stop_after(error)
                    raise error from exc
        return self.frames_submitted - 1

    def capture(self, fbo: Any = None, *, texture: Any = None) -> int:
        """Record, as the next frame, what was drawn in the recorder's GL context; returns the frame index.

        With no argument it reads the framebuffer bound for reading now (where
        MuJoCo's ``Renderer.render()`` and pyrender leave their frame); ``fbo`` names
        a framebuffer (GL name or moderngl Framebuffer, 0 for the default one) and
        ``texture`` a 2-D colour texture (GL name or moderngl Texture). glrec records
        its lower-left :attr:`size` pixels (what ``glReadPixels(0, 0, w, h)`` reads;
        MuJoCo draws there in its larger offscreen buffer); GL's rows are bottom-up,
        so the video is upright. Meant for ``context="current"``; with glrec's own
        context it reads objects made with :attr:`ctx`. A bad source raises
        ConfigError and records nothing.
        """
        self._check_open()
        with self._gl.active():  # glrec-context
            if self._capture is None:
                self._capture = Capture(self.size, self._gl.version_code, self._gl.binding)
                self._stack.callback(self._capture.release)
            source = self._capture.resolve(fbo, texture)
            with self.frame() as target:
                self._capture.copy(source, target.glo)
        return self.frames_submitted - 1

    def write(self, frame: object) -> int:
        """Record ``frame``, a picture made elsewhere, as the next frame; returns its index.

        ``frame`` is ``H×W×3`` (RGB) or ``H×W×4`` (RGBA, alpha dropped) or ``H×W``
        (grey), top row first: a numpy array, anything with ``__array__`` (PIL
        images, matplotlib's ``canvas.buffer_rgba()``, CPU tensors), a matplotlib
        figure, or a CUDA array (PyTorch, CuPy, JAX; ``__cuda_array_interface__``
        or DLPack), which stays on the GPU where the recorder uses a CUDA handoff.
        ``uint8`` values go in as they are; floats in [0, 1] become
        ``round(255 · v)``, halves to even; ``uint16`` becomes ``round(v / 257)``.
        Any strides are read (views, crops, ``[::-1]``). See :mod:`glrec.sources.frames`.

        A frame of the wrong shape, dtype or size, or a float frame with NaN or
        values outside [0, 1], raises ConfigError and records nothing; the
        recorder stays open, so the file keeps every good frame.

        >>> with Recorder("out.mp4", fps=30) as rec:  # size from the first frame  # doctest: +SKIP
        ...     for image in images:
        ...         rec.write(image)
        """
        item = inspect_frame(frame)  # what came, checked before anything is built or written
        try:
            if not self._closed:
                self._ensure_built(item)
            self._check_open()
            ready = self._frames.encoder_frame(item, self.frames_submitted)  # software GL: no GL stage at all
            if ready is None:
                with self.frame():  # glrec-context: current for the upload too
                    self._frames.put(item, self.frames_submitted)
            else:
                self._submit_ready(ready)
        finally:
            item.release()  # a DLPack tensor goes back to its producer whatever happened (safe twice)
        return self.frames_submitted - 1

    def _submit_ready(self, frame: HostFrame) -> None:
        """Queue a frame that needs no GL stage, after the frames still in the handoff (rendered before it)."""
        try:
            with frame_gate:
                if self._gl_frames_pending:  # scenes were rendered into this recording too
                    with self._gl.active():
                        self._drain()
                    self._gl_frames_pending = False
                self._worker.put(frame)
                self.frames_submitted += 1
        except BaseException as exc:
            self._stop_after(exc)
            raise

    @contextlib.contextmanager
    def frame(self) -> Iterator[moderngl.Framebuffer]:
        """Bind the recorder's target for your own drawing; the frame is recorded on exit.

        The framebuffer has an RGBA8 colour and a depth attachment of :attr:`size`.
        If the block raises, nothing is recorded for it. If recording the frame
        fails (encoder, disk), the recorder finishes the file with the frames
        before it and closes, and the error is raised.
        """
        self._check_open()
        with self._gl.active():  # glrec-context: current for the block, the caller's context back after
            if self._before_frame is not None:
                self._before_frame()
            target = self._target
            target.use()
            yield target.fbo
            try:
                # Handing the frame on moves earlier frames from the GPU to the queue; a Ctrl-C
                # in the middle would drop them, so signals wait the few microseconds it takes.
                with frame_gate:
                    self._submit(target.colour)
            except BaseException as exc:
                self._stop_after(exc)
                raise

    def _submit(self, colour: moderngl.Texture) -> None:
        if self._process is None:
            self._hand_on(self.frames_submitted, colour)
        else:  # the stage hands frames on as they come out of it, each with its own index
            self._process.submit(colour, self.frames_submitted, self._hand_on)
        if self.options.live:  # latency over throughput: hand this frame on now, not N frames later
            for frame in self._handoff.drain():
                self._worker.put(frame)
        self.frames_submitted += 1

    def _hand_on(self, index: int, texture: moderngl.Texture) -> None:
        """Convert frame ``index`` from ``texture`` and queue what the handoff completes for the encoder."""
        self._convert.run(texture)
        self._gl_frames_pending = True
        for frame in self._handoff.submit(index):
            self._worker.put(frame)

    def _drain(self) -> None:
        """Hand on every frame still in the stages; a processing stage's failure is raised after the rest."""
        error: BaseException | None = None
        if self._process is not None:
            try:
                self._process.drain(self._hand_on)
            except BaseException as exc:
                error = exc
        for done in self._handoff.drain():
            self._worker.put(done)
        if error is not None:
            raise error

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

    def skip_to(self, index: int) -> None:
        """Make ``index`` the next frame's index (and ``index / fps`` its time); slots between are never rendered.

        Live streaming uses it to drop frames it fell behind on while keeping timestamps on the wall clock.
        """
        if index < self.frames_submitted:
            raise ConfigError(
                f"frame index {index} is before the next frame {self.frames_submitted}; it only goes forward."
            )
        self.frames_submitted = int(index)

    def request_keyframe(self) -> None:
        """Ask the encoder to make the next frame a keyframe (a late viewer can start there); any thread."""
        if hasattr(self, "_encoder"):  # before a sizeless recorder starts, its first frame is one anyway
            self._encoder.request_keyframe()

    def prepare(self, scene: Scene | str) -> Scene:
        """Set ``scene`` up now (compile its shaders, make its GL objects) instead of at its first frame.

        Returns the scene object :meth:`render` will use for it. Live streaming calls this
        before its clock starts, so that slot 0 does not pay for the setup.
        """
        return self._scene(scene)

    def _scene(self, scene: Scene | str) -> Scene:
        key = id(scene)
        if key not in self._scenes:
            obj = load_scene(scene)
            self._check_open()
            try:
                with self._gl.active():  # glrec-context
                    obj.setup(self._gl.mgl, self.options.size)
            except Exception as exc:
                # Release what the scene made before it failed, then stop like any failure.
                with contextlib.suppress(Exception):
                    obj.close()
                error = (
                    exc
                    if isinstance(exc, GlrecError)
                    else SceneError(f"Setting up scene {type(obj).__name__} failed: {type(exc).__name__}: {exc}")
                )
                self._stop_after(error)
                if error is exc:
                    raise
                raise error from exc
            self._stack.callback(_close_scene, obj)
            self._scenes[key] = obj
        return self._scenes[key]

    def _check_open(self) -> None:
        if self._closed:
            raise SceneError("This recorder is closed; create a new Recorder to record again.")
        self._ensure_built()
        self._gl.check_thread()

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
        self._closed = True
        untrack(self)
        frame_gate.release()
        # glrec-context: a context gone (its owner closed first) loses only the frames still on the GPU.
        with deferred_signals(f"finishing {self.path}"), self._gl.teardown() as usable:
            try:
                if usable and not self._worker.failed:  # a failed worker would only drop them
                    self._drain()
            finally:
                try:
                    self._stack.close()
                finally:
                    self._result = self._make_result()
        log.info("%s", self._result.summary(), extra={"glrec_summary": True})
        return self._result

    def _make_result(self) -> RecordResult:
        if not hasattr(self, "_worker"):  # closed before its first frame, or its build failed
            return RecordResult(self.path, 0, 0.0, time.perf_counter() - self._started, 0, "none", self.options.codec)
        # A file glrec wrote counts what it holds (fewer than encoded after a failed write).
        frames = self._worker.frames_written if self._sink is None else self._worker.frames_encoded
        return RecordResult(
            path=self.path,
            frames=frames,
            seconds=frames / self.options.fps,
            wall_seconds=time.perf_counter() - self._started,
            bytes=self.path.stat().st_size
            if self._sink is None and self.path.exists()
            else self._worker.sink.bytes_written,
            encoder=self.encoder_name,
            codec=self.options.codec,
        )

    def _finish_at_exit(self) -> None:
        """The interpreter is exiting with this recorder open: finish what can be finished."""
        if self._closed:
            return
        log.warning("Recorder for %s was never closed; finishing it at exit (use 'with' or call close()).", self.path)
        if self._deferred is not None or not hasattr(self, "_worker"):  # nothing built: nothing to finish
            self._deferred, self._closed = None, True
            self._result = self._make_result()
        elif self._gl.owned_by_current_thread():
            self.close()
        else:
            # Its GL thread is gone: frames still on the GPU are lost, the rest is saved.
            self._closed = True
            try:
                self._worker.finish()
            finally:
                self._result = self._make_result()

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        return f"<Recorder {str(self.path)!r} {self.size[0]}x{self.size[1]} @ {self.fps:g} fps, {state}>"

    def __enter__(self) -> Recorder:
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


def _close_scene(scene: Scene) -> None:
    """Close a scene at the recorder's end; a failure there is the scene's, named as such (the file is finished)."""
    try:
        scene.close()
    except Exception as exc:
        raise SceneError(f"Closing scene {type(scene).__name__} failed: {type(exc).__name__}: {exc}") from exc
