"""The Recorder: frames in (rendered, captured, written or drawn), each handed to its chain.

The chain is context -> source -> target -> process -> convert -> handoff -> encoder -> sink
(:mod:`glrec.pipeline`); building it and finishing the file once are :mod:`glrec._recording`'s.
"""

from __future__ import annotations

import contextlib
import functools
import logging
from collections.abc import Iterator
from typing import Any

import moderngl

from ._lifecycle import frame_gate
from ._recording import Recording
from .errors import ConfigError, GlrecError, SceneError
from .scenes import Scene, load_scene
from .scenes.base import close_scene
from .sources.capture import Capture
from .sources.frames.written import inspect_frame

log = logging.getLogger("glrec")


class Recorder(Recording):
    """Record frames rendered on a headless GPU (or Mesa) to a video file.

    Frames are rendered into the recorder's target, converted to YUV on the
    GPU, read back asynchronously and encoded on a worker thread. Frame ``i``
    has timestamp ``i / fps`` whatever the wall clock does.

    Defaults: 1280x720, 30 fps, H.264 (libx264, preset veryfast, crf 20),
    yuv420p, BT.709 limited range. ``pad=True`` pads odd sizes to even for
    4:2:0 by repeating the last row/column. An existing file at ``path`` is
    replaced (``overwrite=True``, as imageio and PyAV do; the CLI asks for ``-y``),
    only once the new one is complete and never through a link;
    ``overwrite=False`` refuses instead. The extension picks the container and, where it
    holds one codec, the codec: ``.webm`` is VP9 (libvpx-vp9), ``.gif`` an animated GIF
    that loops, ``.ivf`` AV1, ``frames_%06d.png`` one lossless PNG per frame (``pix_fmt``
    ``rgb24``, or ``rgba`` to keep alpha). The keywords but ``overwrite``,
    ``sink`` and ``sink_options`` are the options of :mod:`glrec.options`
    (every one with its default and meaning: ``docs/options.md``).

    ``encoder`` is ``auto`` (NVENC where a session opens; for MJPEG the GL JPEG
    encoder on hardware GL, then nvJPEG; else the CPU: ``glrec info`` says which
    and why), ``cpu``, ``nvenc``, ``nvjpeg``, ``gl`` (JPEG in GL compute, codec
    mjpeg, on any GL 4.3 driver) or ``png`` (codec png); ``handoff`` is ``auto``, ``host``
    (PBO readback), ``register`` or ``shared`` (CUDA);
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
    video input's audio, see :func:`glrec.transcode`).

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

    _capture: Capture | None = None  # made at the first capture()

    @functools.cached_property
    def _scenes(self) -> dict[int, Scene]:
        """The scenes :meth:`render` set up, by ``id`` of what named them; closed with the recording."""
        return {}

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
            session = self._check_open()
            ready = session.frames.encoder_frame(item, self.frames_submitted)  # software GL: no GL stage at all
            if ready is None:
                with self.frame():  # glrec-context: current for the upload too
                    session.frames.put(item, self.frames_submitted)
            else:
                try:
                    with frame_gate:
                        session.submit_ready(ready)
                        self.frames_submitted += 1
                except BaseException as exc:
                    self._stop_after(exc)
                    raise
        finally:
            item.release()  # a DLPack tensor goes back to its producer whatever happened (safe twice)
        return self.frames_submitted - 1

    @contextlib.contextmanager
    def frame(self) -> Iterator[moderngl.Framebuffer]:
        """Bind the recorder's target for your own drawing; the frame is recorded on exit.

        The framebuffer has an RGBA8 colour and a depth attachment of :attr:`size`.
        If the block raises, nothing is recorded for it. If recording the frame
        fails (encoder, disk), the recorder finishes the file with the frames
        before it and closes, and the error is raised.
        """
        session = self._check_open()
        with self._gl.active():  # glrec-context: current for the block, the caller's context back after
            session.before_frame()
            target = session.target
            target.use()
            yield target.fbo
            try:
                # Handing the frame on moves earlier frames from the GPU to the queue; a Ctrl-C
                # in the middle would drop them, so signals wait the few microseconds it takes.
                with frame_gate:
                    session.submit(target.colour, self.frames_submitted)
                    self.frames_submitted += 1
            except BaseException as exc:
                self._stop_after(exc)
                raise

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
        if self._session is not None:  # before a sizeless recorder starts, its first frame is one anyway
            self._session.encoder.request_keyframe()

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
            self._stack.callback(close_scene, obj)
            self._scenes[key] = obj
        return self._scenes[key]
