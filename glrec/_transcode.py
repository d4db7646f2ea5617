"""Video inputs as what is recorded: re-encode a file, stream or camera, optionally drawing over each frame.

:func:`transcode` decodes the input (:class:`~glrec.sources.VideoSource`),
draws each frame into the recorder's target, renders an overlay scene over it
and encodes the result, with size and frame rate taken from the input unless
given. The input's own timestamps pick the frame of each output slot, so a
variable-frame-rate input comes out at a constant rate without drift. Audio is
copied unchanged where the output container holds it; subtitle and data
streams are left out, with a log line saying so.

Overlays: a Shadertoy shader gets the frame as ``iChannel0`` (its output
replaces the frame, as on Shadertoy; sample ``iChannel0`` to keep it); a
Python scene draws over the frame already in the framebuffer and, if it has
``on_video_frame(source)``, is handed the :class:`~glrec.sources.VideoSource`
before each frame (``source.texture`` is the frame, RGBA8 with rows
bottom-up, ``source.time`` its timestamp).
"""

from __future__ import annotations

import dataclasses
import logging
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import moderngl

from .errors import ConfigError
from .options import InputOptions, LengthOptions, OutputOptions, VideoOptions, split_options
from .recorder import Recorder
from .result import RecordResult
from .scenes import BUILTINS, Scene, load_scene
from .scenes.resolve import resolve_source
from .scenes.shadertoy import ShadertoyScene
from .sinks.registry import is_stream_url, output_kind, sole_codec
from .sources import VideoSource
from .sources.video.audio import muxer_takes
from .sources.video.media import is_sequence

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from ._options_typed import TranscodeOptions

log = logging.getLogger("glrec")


def is_input(spec: object) -> bool:
    """True when a command's first argument names a video input rather than a scene."""
    if isinstance(spec, VideoSource):
        return True
    if not isinstance(spec, (str, os.PathLike)):
        return False
    return resolve_source(spec, tuple(BUILTINS)).kind == "input"


def _is_shader(spec: object) -> bool:
    return isinstance(spec, (str, os.PathLike)) and resolve_source(spec).kind == "shader"


def scene_with_channels(spec: Scene | str, channels: dict[Any, Any] | None, *, trusted: bool = False,
                        input_timeout: float = 10.0) -> Scene:  # fmt: skip
    """``spec`` as a scene; a Shadertoy shader gets ``channels`` bound (others refuse them).

    ``trusted`` lets a Shadertoy export name media outside its folder (``--trust-export``);
    ``input_timeout`` bounds the waits for a channel that is a stream, camera or pipe.
    """
    if not _is_shader(spec):
        if channels:
            raise ConfigError(f"Channels (--channelN) are for Shadertoy shaders; {spec!r} is not one.")
        if trusted:
            raise ConfigError(f"--trust-export is for Shadertoy exports; {spec!r} is not a shader.")
        return load_scene(spec)
    assert isinstance(spec, (str, os.PathLike))
    return ShadertoyScene(spec, channels=channels or None, trusted=trusted, input_timeout=input_timeout)


class VideoScene:
    """Draw the picture ``source`` shows at ``t``, then ``overlay`` over it (see the module docstring).

    ``done(t)`` is True once a file input has ended before ``t`` (rendering then draws the last
    picture again). Viewer input (``glrec serve``) goes to the overlay.
    """

    def __init__(self, source: VideoSource, overlay: Scene | None = None, *, own_source: bool = True) -> None:
        self.source = source
        self.overlay = overlay
        self.own_source = own_source

    def setup(self, ctx: moderngl.Context, size: tuple[int, int]) -> None:
        self.source.setup(ctx, size)
        if self.overlay is not None:
            self.overlay.setup(ctx, size)

    def done(self, t: float) -> bool:
        return self.source.picture_at(t) is None

    def render(self, t: float) -> None:
        if not isinstance(self.overlay, ShadertoyScene):  # a Shadertoy overlay writes every pixel itself
            self.source.render(t)
        if self.overlay is not None:
            hook = getattr(self.overlay, "on_video_frame", None)
            if callable(hook):
                hook(self.source)
            self.overlay.render(t)

    def on_input(self, event: Any) -> None:
        handler = getattr(self.overlay, "on_input", None)
        if callable(handler):
            handler(event)

    def close(self) -> None:
        if self.overlay is not None:
            self.overlay.close()
        # GL objects go with the context they were made in (the recorder's, released after its scenes).
        self.source.release_gl()
        if self.own_source:
            self.source.close()


def make_overlay(spec: Scene | str | None, source: VideoSource, channels: dict[Any, Any] | None = None, *,
                 trusted: bool = False, input_timeout: float = 10.0) -> Scene | None:  # fmt: skip
    """The overlay for ``source``: a shader gets it as ``iChannel0`` (unless ``channels`` binds 0)."""
    if spec is None:
        if trusted:
            raise ConfigError("--trust-export is for Shadertoy exports; no overlay shader was given.")
        return None
    if _is_shader(spec):
        assert isinstance(spec, (str, os.PathLike))
        return ShadertoyScene(spec, channels={0: source, **(channels or {})}, trusted=trusted,
                              input_timeout=input_timeout)  # fmt: skip
    if trusted:
        raise ConfigError(f"--trust-export is for Shadertoy exports; the overlay {spec!r} is not a shader.")
    if channels:
        raise ConfigError(f"Channels (--channelN) are for Shadertoy shaders; the overlay {spec!r} is not one.")
    return load_scene(spec)


def open_input(spec: str | os.PathLike[str] | VideoSource, inputs: InputOptions, *, live: bool | None = None,
               audio: bool = False, fps: float | None = None) -> VideoSource:  # fmt: skip
    """A VideoSource for ``spec`` with the input options (a VideoSource passes through).

    ``fps`` (the recording's rate) is also the rate of an image sequence's images, as ``--fps`` says,
    unless ``input_options`` set FFmpeg's ``framerate`` themselves (FFmpeg's own default is 25).
    """
    if isinstance(spec, VideoSource):
        return spec
    sequence_fps = (
        fps if fps and is_sequence(os.fspath(spec)) and "framerate" not in dict(inputs.input_options) else None
    )
    return VideoSource(
        spec, live=live, loop=inputs.loop, timeout=inputs.input_timeout, retries=inputs.input_retries,
        options=dict(inputs.input_options),
        format=inputs.input_format, decoder=inputs.decoder, audio=audio,
        fps=float(sequence_fps) if sequence_fps else None,
    )  # fmt: skip


def input_defaults(src: VideoSource) -> dict[str, Any]:
    """The ``size`` and ``fps`` a recording of ``src`` takes where none is given: the input's own.

    An input that does not say its rate is recorded at the recorder's default rate
    (the ``fps`` option's declared default, 30).
    """
    return {"size": src.size, "fps": float(src.rate) if src.rate else VideoOptions().fps}


def _keep_audio(source: VideoSource, output: str | os.PathLike[str], codec: str) -> bool:
    """Narrow ``source.audio`` to the streams the output container can hold; True if any remain."""
    if source.audio is None:
        return False
    kind = output_kind(output, codec)
    if kind.muxer is None or kind.video_only or is_stream_url(output):
        log.warning("%s: audio is not copied: a %s output holds video only.", source.spec.label, kind.name)
        source.audio = None
        return False
    kept = []
    for s in source.audio.streams:
        if muxer_takes(kind.muxer, s):
            kept.append(s)
        else:
            name = s.codec_context.name if s.codec_context else "?"
            log.warning("%s: audio stream #%d (%s) is not copied: %s files cannot hold it; use .mkv.",
                        source.spec.label, s.index, name, kind.name)  # fmt: skip
    source.audio.streams = kept
    if not kept:
        source.audio = None
    return bool(kept)


def transcode(
    source: str | os.PathLike[str] | VideoSource,
    output: str | os.PathLike[str],
    *,
    overlay: Scene | str | None = None,
    channels: dict[Any, Any] | None = None,
    seconds: float | None = None,
    frames: int | None = None,
    overwrite: bool = True,
    progress: Callable[[int], None] | None = None,
    on_start: Callable[[Recorder], None] | None = None,
    **options: Unpack[TranscodeOptions],
) -> RecordResult:
    """Re-encode ``source`` into ``output``, drawing ``overlay`` over each frame.

    ``source`` is a file, image, image sequence, URL or camera (anything
    :class:`~glrec.sources.VideoSource` reads), or a VideoSource. ``size`` and
    ``fps`` default to the input's; the recording runs to the input's end unless
    ``seconds``/``frames`` say otherwise (a still image: 5 s). ``options`` are
    :class:`~glrec.Recorder`'s keywords plus the input options of
    :class:`~glrec.options.InputOptions` (``drop_audio``, ``decoder``,
    ``input_options``, ``loop``, ...). ``channels`` binds the overlay shader's
    other channels. ``progress`` is called with the frames recorded so far after each
    one, ``on_start`` with the Recorder once it exists. Returns the recording's
    :class:`~glrec.RecordResult`.

    >>> transcode("in.mp4", "out.mp4", overlay="examples/grade_overlay.glsl")  # doctest: +SKIP
    """
    input_names = set(InputOptions.names())
    inputs = InputOptions.parse({k: v for k, v in options.items() if k in input_names})
    rec_options: dict[str, Any] = {k: v for k, v in options.items() if k not in input_names}
    split_options(rec_options)  # an unknown keyword fails here, before the input is opened
    OutputOptions.parse({"overwrite": overwrite})  # so does overwrite="False"
    codec = str(rec_options.get("codec") or sole_codec(output) or "h264")  # the Recorder infers it the same way
    output_kind(output, codec)  # as should a bad output name
    channels = {**inputs.channels(), **(channels or {})}
    # Follow the input's own timestamps (every picture in order), also for a network stream or camera.
    src = open_input(source, inputs, live=False, audio=not inputs.drop_audio, fps=rec_options.get("fps"))
    own = not isinstance(source, VideoSource)
    try:
        for other in src.other_streams:
            log.warning("%s: %s is not copied (glrec copies video and audio).", src.spec.label, other)
        audio = _keep_audio(src, output, codec)
        defaults = input_defaults(src)
        fps = float(rec_options.pop("fps", None) or defaults["fps"])
        size = rec_options.pop("size", None) or defaults["size"]
        if src.rate is None and "fps" not in options:
            log.warning("%s does not say its frame rate; recording at %g fps (set fps= to choose).", src.spec.label,
                        fps)  # fmt: skip
        n = LengthOptions.parse({"seconds": seconds, "frames": frames}).count(
            fps, default=5.0 if (src.still or src.loop) else None
        )
        overlay_scene = make_overlay(overlay, src, channels, trusted=inputs.trust_export,
                                     input_timeout=inputs.input_timeout)  # fmt: skip
        scene = VideoScene(src, overlay_scene, own_source=False)
        sink_options = {"audio": src.audio} if audio else None
        with Recorder(output, size=size, fps=fps, overwrite=overwrite, sink_options=sink_options,
                      **rec_options) as rec:  # fmt: skip
            if on_start is not None:
                on_start(rec)
            rec.prepare(scene)
            while n is None or rec.frames_submitted < n:
                with rec.ctx:  # a looped or rewound NVDEC input swaps its GL buffer here
                    if scene.done(rec.time):
                        break  # the input has ended
                rec.render(scene)
                if progress is not None:
                    progress(rec.frames_submitted)
        result = rec.close()
        notes = src.input_notes()
        return dataclasses.replace(result, notes=(*result.notes, *notes)) if notes else result
    finally:
        if own:
            src.close()


def live_scene(spec: str, inputs: InputOptions, options: dict[str, Any]) -> tuple[Scene, dict[str, Any]]:
    """What ``glrec stream``/``serve`` render for ``spec``: a video input (newest picture for streams and
    cameras, the file's own timing otherwise) with its overlay, or a scene with its channels; ``options``
    (the recorder's keywords) gain the input's size and frame rate where none were given."""
    if not is_input(spec):
        if inputs.overlay is not None:
            raise ConfigError(f"--overlay draws over a video input; {spec!r} is a scene.")
        scene = scene_with_channels(spec, inputs.channels(), trusted=inputs.trust_export,
                                    input_timeout=inputs.input_timeout)  # fmt: skip
        return scene, options
    src = open_input(spec, inputs, fps=options.get("fps"))
    if src.audio is None and src.audio_streams:
        log.info("%s: audio is not streamed (glrec streams video only).", src.spec.label)
    out = {**input_defaults(src), **options}
    overlay = make_overlay(inputs.overlay, src, inputs.channels(), trusted=inputs.trust_export,
                           input_timeout=inputs.input_timeout)  # fmt: skip
    return VideoScene(src, overlay), out


__all__ = ["VideoScene", "input_defaults", "is_input", "live_scene", "make_overlay", "scene_with_channels",
           "transcode"]  # fmt: skip
