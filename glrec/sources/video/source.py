"""VideoSource: a video file, image, image sequence, network stream or camera as a GL texture per frame.

Decoding runs on a worker thread (:mod:`glrec.sources.video.decode`), pictures
reach the GPU through a PBO ring (:mod:`glrec.sources.video.upload`) and become RGB
there (:mod:`glrec.sources.video.rgb`); with ``decoder="nvdec"`` NVIDIA's decoder
writes them into CUDA memory that GL reads directly
(:mod:`glrec.sources.video.nvdec`). The texture is RGBA8 with rows bottom-up, like
glrec's render targets, so a scene samples it with ``uv`` as it samples
anything it drew.

Which picture is shown at time ``t`` is :mod:`glrec.sources.video.timeline`'s: for
files, the last one whose timestamp is at or before ``t``; for live inputs,
the newest one that has arrived.
"""

from __future__ import annotations

import logging
import os
from fractions import Fraction
from typing import Any, Literal

import moderngl

from ...errors import ConfigError, UnsupportedInputError
from ...gl import glsl
from .audio import AudioPassthrough
from .decode import DecodeWorker, Picture
from .formats import FORMATS, ColourChoice
from .media import InputSpec, classify, close_container, open_container, video_stream
from .timeline import Timeline, stamp_tolerance

log = logging.getLogger("glrec")

Decoder = Literal["auto", "cpu", "nvdec"]


class VideoSource:
    """Decode ``source`` and show the picture for time ``t`` in :attr:`texture`.

    Defaults: ``loop`` False (a Shadertoy channel loops, as on the site);
    ``timeout`` 10 s for opening or hearing from a network input, camera or named pipe;
    ``retries`` 3 reconnects of a live input before it counts as ended;
    ``depth`` 4 pictures decoded ahead. ``options`` go to FFmpeg (e.g.
    ``{"input_format": "mjpeg", "video_size": "1280x720"}`` for a camera,
    ``{"rtsp_transport": "udp"}``); ``format`` forces a demuxer; ``fps`` is the
    rate of an image sequence. ``matrix``/``range`` override what the stream
    says (``bt709``, ``bt601``, ``bt2020nc``, ...; ``limited``, ``full``).
    ``decoder`` is ``cpu`` (FFmpeg), ``nvdec`` (NVIDIA, frames stay on the GPU)
    or ``auto`` (``cpu``; NVDEC is chosen explicitly). ``mipmaps`` keeps a
    mipmap chain for minified sampling. ``chroma_filter`` ``nearest`` (default)
    keeps subsampled chroma exactly as coded, so a transcode through glrec
    does not soften it; ``linear`` interpolates it. ``vflip=False`` stores the
    top row first and ``srgb=True`` samples as linear light (Shadertoy's
    sampler flags of the same names). ``untrusted=True`` is for a name that
    comes from a downloaded file (a Shadertoy export): it is read as that one
    local file, never as a playlist or list that opens other files
    (:mod:`glrec.sources.video.confine`).

    The input is opened and its first picture decoded here, so a bad input
    fails before anything else is made.

    >>> src = VideoSource("in.mp4")  # doctest: +SKIP
    >>> src.setup(ctx, src.size)     # doctest: +SKIP
    >>> src.update(0.5)              # doctest: +SKIP
    >>> src.texture.use(0)           # doctest: +SKIP
    """

    def __init__(
        self,
        source: str | os.PathLike[str],
        *,
        loop: bool = False,
        live: bool | None = None,
        timeout: float = 10.0,
        retries: int = 3,
        depth: int = 4,
        options: dict[str, Any] | None = None,
        format: str | None = None,
        fps: float | None = None,
        matrix: str | None = None,
        range: str | None = None,
        decoder: Decoder = "auto",
        cuda_device: int = 0,
        mipmaps: bool = False,
        chroma_filter: Literal["nearest", "linear"] = "nearest",
        vflip: bool = True,
        srgb: bool = False,
        audio: bool = False,
        untrusted: bool = False,
    ) -> None:
        self.spec: InputSpec = classify(source, options=options, format=format, fps=fps, timeout=timeout,
                                        untrusted=untrusted)  # fmt: skip
        # live: show the newest picture (streams and cameras by default); otherwise every picture in order.
        self.live = self.spec.live if live is None else bool(live)
        self.loop = loop and not self.live
        self.mipmaps = mipmaps
        if chroma_filter not in ("nearest", "linear"):
            raise ConfigError(f"Unknown chroma_filter {chroma_filter!r}. Valid: linear, nearest.")
        self.chroma_filter = chroma_filter
        self.vflip, self.srgb = vflip, srgb
        self._colour = ColourChoice.parse(matrix, range)
        if decoder not in ("auto", "cpu", "nvdec"):
            raise ConfigError(f"Unknown decoder {decoder!r}. Valid: auto, cpu, nvdec.")
        self.decoder = "cpu" if decoder == "auto" else decoder
        self.cuda_device = cuda_device
        self._depth, self._retries = depth, retries
        self._worker: Any = None
        self.audio: AudioPassthrough | None = None
        self._uploaded: Picture | None = None
        self._fresh = False  # whether the RGB texture holds the uploaded picture
        self._uploader: Any = None
        self._rgb: Any = None
        self._blit: moderngl.Program | None = None
        self._blit_vao: moderngl.VertexArray | None = None
        self.ctx: moderngl.Context | None = None
        self.dropped_before = 0
        self._counts = {"bad_packets": 0, "discontinuities": 0}  # of workers that have ended (loops, rewinds)
        self._gave_up: str | None = None
        container = open_container(self.spec)
        try:
            stream = video_stream(container, self.spec)
            self.codec = stream.codec_context.codec.canonical_name  # "av1", whichever decoder FFmpeg picked
            rate = stream.average_rate or stream.guessed_rate
            self.rate: Fraction | None = Fraction(rate) if rate and 0 < float(rate) <= 1000 else None
            tolerance = stamp_tolerance(stream.time_base, self.rate)
            self.duration = _duration(container, stream)
            if self.spec.runs and stream.time_base:  # the first run's container knows its own images only
                self.duration = sum(n for _, n in self.spec.runs) * float(stream.time_base)
            self.audio_streams = list(container.streams.audio)
            #: Copies the input's audio (``audio=True``): hand it to the output's sink.
            self.audio = AudioPassthrough(self.spec, self.audio_streams) if audio and self.audio_streams else None
            if self.audio is not None and self.spec.live:
                log.warning("%s: the audio of a network input or camera is not copied (it cannot be read twice).",
                            self.spec.label)  # fmt: skip
                self.audio = None
            others = [s for s in container.streams if s.type not in ("video", "audio")]
            self.other_streams = [f"{s.type} #{s.index}" for s in others]
        except BaseException:
            close_container(container)
            raise
        worker = self._start(container)
        timeline = Timeline(lambda: self._worker, self._reopen, label=self.spec.label, live=self.live,
                            loop=self.loop, rate=self.rate, tolerance=tolerance)  # fmt: skip
        self._timeline = timeline
        first = timeline.take(timeout=self.spec.timeout if self.live else max(self.spec.timeout, 30.0))
        if first is None:
            self.close()
            raise UnsupportedInputError(f"{self.spec.label!r} has a video stream but no picture could be decoded.")
        timeline.current = first
        tap = self.audio
        if tap is not None:
            tap.origin = worker.origin
        frame = first.frame
        if int(getattr(frame, "color_trc", 0) or 0) in (16, 18):  # SMPTE 2084 (PQ), ARIB STD-B67 (HLG)
            log.warning("%s is HDR (%s); it is shown without tone mapping, so it looks washed out.",
                        self.spec.label, "PQ" if frame.color_trc == 16 else "HLG")  # fmt: skip
        self.picture_size = (frame.width, frame.height)
        self.rotation = int(getattr(frame, "rotation", 0) or 0) % 360 if self.decoder == "cpu" else 0
        self.size: tuple[int, int] = self.picture_size[::-1] if self.rotation % 180 else self.picture_size
        # An image is a still (shown for ever) unless it turns out to be animated (GIF, WebP, APNG).
        timeline.still = self.spec.kind == "image" and timeline.peek() is None
        log.info("input %s: %s %dx%d, %s fps, %s", self.spec.label, self.codec, *self.size,
                 f"{float(self.rate):.3f}" if self.rate else "unknown", "live" if self.live else "file")  # fmt: skip

    # -- decoding -------------------------------------------------------------------------------

    def _start(self, container: Any) -> DecodeWorker:
        """Start a worker on ``container``, replacing (and stopping) the one before, if any."""
        self._stop_worker()
        kw: dict[str, Any] = {"depth": self._depth, "retries": self._retries, "live": self.live}
        if self.decoder == "nvdec":
            from .nvdec import NvdecWorker

            self._worker = NvdecWorker(self.spec, container, cuda_device=self.cuda_device,
                                       chroma_filter=self.chroma_filter, **kw)  # fmt: skip
        else:
            self._worker = DecodeWorker(self.spec, container, **kw)
        self._worker.start()
        if self.ctx is not None and self.decoder == "nvdec":
            with self.ctx:  # glrec's contexts are current only while in use
                self._uploader = self._worker.uploader(self.ctx)
        return self._worker

    def _stop_worker(self) -> None:
        # NVDEC: GL lets go of the worker's CUDA memory before the worker frees it.
        if self.decoder == "nvdec" and self._uploader is not None:
            assert self.ctx is not None
            with self.ctx:
                self._uploader.release()
            self._uploader = None
        worker, self._worker = self._worker, None
        if worker is not None:
            worker.stop()
            for key in self._counts:
                self._counts[key] += getattr(worker, key)
            self._gave_up = worker.gave_up or self._gave_up

    def _reopen(self) -> DecodeWorker:
        """Decode from the input's start again (a loop, or a time before the picture shown)."""
        self._stop_worker()
        return self._start(open_container(self.spec))

    # -- the picture at time t ------------------------------------------------------------------

    def picture_at(self, t: float) -> Picture | None:
        """Advance to the picture shown at ``t`` (the newest one for live inputs) without drawing it.

        Returns None once a file has ended before ``t`` (never for a still image or a looped input).
        """
        return self._timeline.picture_at(t)

    def update(self, t: float) -> Picture | None:
        """Show the picture for ``t`` in :attr:`texture` (uploading it if it changed); None after the end."""
        pic = self._prepare(t)
        self._refresh()
        return pic

    def _prepare(self, t: float) -> Picture | None:
        """The picture for ``t``, its planes uploaded (the RGB texture is made when something needs it)."""
        pic = self.picture_at(t)
        if pic is not None and pic is not self._uploaded:
            self._upload(pic)
        return pic

    def _refresh(self) -> None:
        if self._uploaded is not None and not self._fresh:
            self._rgb.run(self._uploader.planes)
            self._fresh = True

    def _upload(self, pic: Picture) -> None:
        if self._uploader is None:
            raise ConfigError("Call setup(ctx) before update(t): the source needs the GL context.")
        fmt = self._uploader.upload(pic.frame)
        colorspace, full = self._colour.of(pic.frame, fmt)
        size = (pic.frame.width, pic.frame.height)
        self._rgb.configure(fmt, colorspace, full, size, self.rotation, self._uploader.sizes)
        self._uploaded, self._fresh = pic, False

    @property
    def texture(self) -> moderngl.Texture:
        """The picture of the last :meth:`update` or :meth:`render`: RGBA8, rows bottom-up, :attr:`size` pixels."""
        if self._rgb is None or self._rgb.texture is None:
            raise ConfigError("The source has no texture yet: call setup(ctx) and update(t) first.")
        self._refresh()  # render() may have drawn straight into the framebuffer without filling it
        return self._rgb.texture

    @property
    def still(self) -> bool:
        """Whether the input is a still image, shown for ever (an animated GIF, WebP or APNG is not)."""
        return self._timeline.still

    @property
    def time(self) -> float:
        """The timestamp of the picture shown (seconds from the input's first picture; live: as received)."""
        current = self._timeline.current
        return current.time if current is not None else 0.0

    @property
    def position(self) -> float:
        """How far into the input the shown picture is (restarts at 0 on every loop)."""
        current = self._timeline.current
        return current.position if current is not None else 0.0

    @property
    def dropped(self) -> int:
        """Live inputs: pictures dropped because the consumer was behind."""
        return self._worker.dropped if self._worker is not None else 0

    def input_notes(self) -> list[str]:
        """What reading the input cost, for the summary: damaged packets skipped, timestamp jumps, a give-up."""
        counts = dict(self._counts)
        gave_up = self._gave_up
        if self._worker is not None:
            for key in counts:
                counts[key] += getattr(self._worker, key)
            gave_up = self._worker.gave_up or gave_up
        notes = []
        if counts["bad_packets"]:
            n = counts["bad_packets"]
            notes.append(f"skipped {n} damaged packet{'s' * (n != 1)} of the input")
        if counts["discontinuities"]:
            n = counts["discontinuities"]
            notes.append(f"continued across {n} timestamp jump{'s' * (n != 1)} of the input")
        if gave_up:
            notes.append(f"the input {gave_up}")
        if len(self.spec.runs) > 1:
            n = len(self.spec.runs) - 1
            notes.append(f"read the image sequence past {n} gap{'s' * (n != 1)} in its numbering")
        return notes

    @property
    def colour(self) -> str:
        """The YUV -> RGB conversion in use, e.g. ``'bt709 limited'``."""
        return self._rgb.colour_name if self._rgb is not None else ""

    def enable_mipmaps(self) -> None:
        """Keep a mipmap chain from now on (a sampler filters with mipmaps, or a shader uses ``textureLod``)."""
        self.mipmaps = True
        if self._rgb is not None:
            self._rgb.mipmaps = True
            self._fresh = False  # build the chain for the current picture too

    # -- Scene protocol: draw the picture over the whole viewport -----------------------------------

    def setup(self, ctx: moderngl.Context, size: tuple[int, int] | None = None) -> None:
        """Make the GL objects (any thread may have decoded; GL calls happen on this one). Idempotent."""
        if self.ctx is ctx and self._rgb is not None:
            return
        self.ctx = ctx
        from .rgb import RgbPass

        if self.decoder == "nvdec":
            self._uploader = self._worker.uploader(ctx)
        else:
            from .upload import PboUploader

            self._uploader = PboUploader(ctx, chroma_filter=self.chroma_filter)
        self._rgb = RgbPass(ctx, mipmaps=self.mipmaps, top_down=not self.vflip, srgb=self.srgb)

    def render(self, t: float) -> None:
        """Draw the picture shown at ``t`` over the current viewport (the last one again after the end).

        At the picture's own size the planes are converted straight into the framebuffer (one pass);
        at another size the RGB texture is drawn scaled, with bilinear filtering.
        """
        self._prepare(t)
        if self._uploaded is None:
            return
        assert self.ctx is not None and self._rgb is not None
        viewport = self.ctx.fbo.viewport if self.ctx.fbo is not None else None
        if viewport is not None and tuple(viewport[2:]) == tuple(self.size) and self.vflip:
            self._rgb.draw(self._uploader.planes)
            return
        if self._blit is None:
            assert self.ctx is not None
            self._blit = glsl.program(self.ctx, glsl.source("fullscreen.vert"), glsl.source("blit.frag"),
                                      origin="blit.frag")  # fmt: skip
            self._blit_vao = self.ctx.vertex_array(self._blit, [])
        self.texture.use(0)
        self._blit["image"].value = 0  # type: ignore[union-attr]
        assert self._blit_vao is not None
        self._blit_vao.render(moderngl.TRIANGLES, vertices=3)

    def release_gl(self) -> None:
        """Release the GL objects (decoding goes on; :meth:`setup` makes them again). Safe twice.

        Call it while the GL context still exists (a recorder releases its context when it closes).
        """
        ctx, self.ctx = self.ctx, None
        if ctx is None:
            return
        with ctx:  # glrec's contexts are current only while in use
            for name in ("_blit_vao", "_blit", "_rgb", "_uploader"):
                obj = getattr(self, name, None)
                if obj is not None:
                    obj.release()
                    setattr(self, name, None)
        self._uploaded, self._fresh = None, False

    def close(self) -> None:
        """Release the GL objects, stop decoding and close the input. Safe twice."""
        self.release_gl()
        self._stop_worker()

    def __enter__(self) -> VideoSource:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<VideoSource {self.spec.label!r} {self.codec} {self.size[0]}x{self.size[1]} {self.spec.kind}>"


def _duration(container: Any, stream: Any) -> float | None:
    if stream.duration is not None and stream.time_base is not None:
        return float(stream.duration * stream.time_base)
    if container.duration is not None:
        return container.duration / 1_000_000
    return None


__all__ = ["FORMATS", "VideoSource"]
