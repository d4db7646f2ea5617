"""Every option, declared once, and the front door's keywords composed from them.

Each option is one dataclass field made by :func:`~glrec._declare.option`: its
type and default are the field's, and its metadata holds the help text, the CLI
flag and the parser that validates it (:mod:`glrec._declare` is how a
declaration works). A table is declared beside what it configures: the
stream's own options here (:class:`VideoOptions`), each encoder's table in its
room under :mod:`glrec.encoders` (listed by the encoder registry's rows), the
pipeline's in :mod:`glrec.pipeline.options`, the recorder's own about its
output in :mod:`glrec.sinks.output_options`, how long a recording is
(:class:`LengthOptions`) and how a video input is read (:class:`InputOptions`)
here. :class:`VideoOptions` is composed at import from the stream's options and
every row's table, so an encoder added to the registry brings its options
with it; ``Recorder``'s keywords, every subcommand's flags and the option
reference (``python -m glrec.options``, ``docs/options.md``) are derived from
the tables, so the Python API and the CLI accept the same values and share
their defaults.

This module validates types and ranges, and states the stream's facts
(:attr:`VideoOptions.facts`). What a particular encoder or container accepts
(presets, sizes, pixel formats) is checked by that stage, through the
pipeline's plan, still before any GL object exists.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from typing import Any, Literal, TypeVar

from ._declare import OptionTable, declared, named, option, spelled, unknown_option
from ._declare import flag as _flag
from ._declare import reference as _reference
from ._options_typed import EncoderName
from ._values import (
    _boolean,
    _choice,
    _number,
    check_choice,
    check_number,
    parse_bitrate,
    parse_encoder_options,
    parse_fps,
    parse_size,
)
from .colour import ColourSpec, Matrix, Range
from .encoders.options import MAX_GOP, EncoderOptions, RateOptions
from .encoders.png.options import png_stream_problem
from .encoders.registry import AUTO_ORDER, ENCODERS, encoder_row, option_tables, request
from .encoders.row import EncodeRequest
from .errors import ConfigError
from .pipeline.options import PipelineOptions
from .sinks.output_options import OutputOptions
from .sinks.registry import sole_codec
from .video_facts import SUBSAMPLED, VideoFacts

__all__ = [
    "DEFAULT_SECONDS",
    "MAX_GOP",
    "EncoderName",
    "InputOptions",
    "LengthOptions",
    "Matrix",
    "OutputOptions",
    "PipelineOptions",
    "Range",
    "VideoOptions",
    "check_choice",
    "check_number",
    "declared",
    "frame_count",
    "option",
    "parse_bitrate",
    "parse_fps",
    "parse_size",
    "reference",
    "split_options",
    "with_output_codec",
]  # fmt: skip

Codec = Literal["h264", "hevc", "av1", "vp9", "mjpeg", "gif", "png"]
# rgba: NVENC's ABGR input, or PNG with alpha; rgb24: PNG's
PixelFormat = Literal["yuv420p", "nv12", "yuv444p", "rgba", "rgb24"]
OddSize = Literal["error", "pad"]

MAX_SECONDS = 366 * 24 * 3600.0  # a year of video: anything longer is a typo, not a plan
DEFAULT_SECONDS = 5.0  # the length of a recording given neither seconds nor frames
_MAX_SIDE = 16384  # the widest any encoder here takes (x264/x265); an even-size suggestion stays within it

#: Codecs whose pixel format, when none is given, is not yuv420p: GIF's colours 4:2:0 would smear; PNG is RGB.
_DEFAULT_PIX_FMT: dict[str, PixelFormat] = {"gif": "yuv444p", "png": "rgb24"}

#: Codecs live mode refuses, and why.
_NOT_LIVE = {"av1": "There are no low-latency AV1 settings yet", "vp9": "There are no low-latency VP9 settings yet",
             "gif": "A GIF is a file, not a stream", "png": "A PNG sequence is files, not a stream"}  # fmt: skip

T = TypeVar("T")
_ENCODER_CHOICES = ("auto", *ENCODERS)


def _encoder(value: object) -> str:
    return check_choice("encoder", value, _ENCODER_CHOICES)  # the rows' names: the registry's, not a list here


def _leaves(tables: tuple[type, ...]) -> tuple[type, ...]:
    """``tables`` without those another of them builds on (the CPU's table holds JPEG's)."""
    return tuple(t for t in tables if not any(o is not t and issubclass(o, t) for o in tables))


def _composed(cls: type[T]) -> type[T]:
    """``cls`` with every encoder row's option table added: the front door's one set of video keywords.

    The stream's own options come first, then the tables' in row order; the class keeps ``cls``'s name.
    """
    bases = (*_leaves(option_tables()), cls)
    namespace = {"__doc__": cls.__doc__, "__module__": cls.__module__, "__qualname__": cls.__qualname__}
    return dataclass(frozen=True)(type(cls.__name__, bases, namespace))


@_composed
@dataclass(frozen=True)
class VideoOptions(OptionTable):
    """How frames become a stream, with every encoder's own options. Build with :meth:`create`."""

    # The stream's own options; every encoder row's table (glrec/encoders/*/options.py) is composed in by
    # _composed, and the plan refuses an option of a table the chosen encoder's does not include.

    size: tuple[int, int] = option(
        (1280, 720),
        "picture size WIDTHxHEIGHT",
        parse_size,
        flags=_flag("size"),
        metavar="WxH",
        accepts="tuple[int, int] | str",
    )
    fps: float = option(
        30.0, "frames per second (time of frame i is i / fps)", parse_fps, flags=_flag("fps"), accepts="float | str"
    )
    codec: Codec = option(
        "h264", "h264, hevc, av1 (.ivf), vp9 (.webm/.mkv), mjpeg (.mkv/.mov/.avi, frames_%%06d.jpg), gif (.gif) or "
        "png (frames_%%06d.png, lossless); vp9 and gif through the CPU encoder",
        _choice("codec", Codec),
        flags=_flag("codec"),
    )  # fmt: skip
    encoder: EncoderName = option(
        "auto", f"auto (the first that fits of {', '.join(AUTO_ORDER)}; see glrec info), or one of "
        f"{', '.join(ENCODERS)}", _encoder, flags=_flag("encoder"),
    )  # fmt: skip
    pix_fmt: PixelFormat | None = option(
        None, "yuv420p (default; yuv444p for gif, whose colours 4:2:0 would smear; rgb24 for png), nv12, yuv444p, "
        "rgba (NVENC's ABGR input; png with alpha) or rgb24 (png)", _choice("pixel format", PixelFormat),
        flags=_flag("pix-fmt"),
    )  # fmt: skip
    matrix: Matrix | None = option(
        None, "RGB->YUV matrix bt709 or bt601 (default bt709; bt601 for mjpeg and rgba)",
        _choice("colour matrix", Matrix),
        flags=_flag("matrix"),
    )  # fmt: skip
    colour_range: Range | None = option(
        None, "limited or full (default limited; full for mjpeg)", _choice("colour range", Range),
        flags=("--range", "--colour-range"),
    )  # fmt: skip
    pad: bool = option(
        False,
        "pad odd sizes to even for 4:2:0 by repeating the edge",
        _boolean("pad"),
        flags=_flag("pad"),
        boolean=True,
    )
    live: bool = option(False, "tune the encoder for latency (glrec stream / serve set it)", _boolean("live"))

    @classmethod
    def create(cls, size: object = None, fps: object = None, **values: object) -> VideoOptions:
        """Validate every option and return the options, or raise ConfigError.

        >>> VideoOptions.create("640x360", 30, bitrate="2M").bitrate
        2000000
        """
        opts = cls.parse({"size": size, "fps": fps, **values})
        return opts._checked()

    def table(self, table: type[T]) -> T:
        """The values of one composed table (``RateOptions``, an encoder's own), as that table."""
        return table(**{f.name: getattr(self, f.name) for f in fields(table)})  # type: ignore[arg-type]

    def _checked(self) -> VideoOptions:
        """Checks across options; stage-specific limits are the stages' (see the module docstring)."""
        codec, matrix, colour_range = self.codec, self.matrix, self.colour_range
        pix_fmt = self.pixel_format
        if codec == "mjpeg":  # JFIF fixes the BT.601 matrix and full range; decoders assume both
            if matrix not in (None, "bt601"):
                raise ConfigError("JPEG decoders always use the BT.601 matrix; use matrix 'bt601' for mjpeg.")
            if colour_range not in (None, "full"):
                raise ConfigError("JPEG is always full range; use range 'full' (the default for mjpeg).")
        png = png_stream_problem(codec, pix_fmt, matrix, colour_range)
        if png is not None:
            raise ConfigError(png)
        # NVENC converts rgba input itself and is tagged BT.601 (glrec.encoders.nvenc.encoder.RGB_INPUT_COLOUR)
        matrix = matrix or ("bt601" if codec == "mjpeg" or pix_fmt == "rgba" else "bt709")
        colour_range = colour_range or ("full" if codec == "mjpeg" else "limited")
        for table in _leaves(option_tables()):  # each table's own rules (RateOptions: one rate control)
            self.table(table).check()
        takers = [r.name for r in ENCODERS.values() if pix_fmt in r.pix_fmts and codec in r.codecs]
        if pix_fmt == "rgba" and (not takers or self.encoder not in ("auto", *takers)):
            raise ConfigError("pix_fmt rgba is NVENC's ABGR input; use yuv420p, nv12 or yuv444p here.")
        if codec == "av1" and pix_fmt == "yuv444p":
            raise ConfigError("AV1 here is 4:2:0: SVT-AV1 takes yuv420p only, NVENC yuv420p, nv12 or rgba.")
        if codec == "mjpeg" and pix_fmt == "nv12":
            raise ConfigError("mjpeg cannot carry nv12; use pix_fmt yuv420p or yuv444p.")
        bframes = self.table(RateOptions).bframes
        if self.live and bframes:
            raise ConfigError(f"bframes {bframes} would delay every frame in live mode; use bframes 0.")
        if self.live and codec in _NOT_LIVE:
            raise ConfigError(f"{_NOT_LIVE[codec]}: live mode takes codec h264 (or hevc).")
        w, h = self.size
        # JPEG holds any size (its 4:2:0 chroma covers the odd edge, as libjpeg pads it): only video codecs refuse.
        if (w % 2 or h % 2) and pix_fmt in SUBSAMPLED and not self.pad and codec != "mjpeg":

            def even(v: int) -> int:  # the next even size, or the one before it past the limit
                return v if v % 2 == 0 else v + 1 if v + 1 <= _MAX_SIDE else v - 1

            pad, yuv444 = spelled("pad=True (--pad)", "--pad"), named("pix_fmt", "yuv444p")
            raise ConfigError(
                f"Size {w}x{h} has an odd dimension, which {pix_fmt} (4:2:0) cannot hold in {codec}. "
                f"Use an even size such as {even(w)}x{even(h)}, pass {pad} to add "
                f"a replicated edge row/column, or use {yuv444} (JPEG, codec mjpeg, stores odd sizes as they are)."
            )
        if codec == "png":  # no YUV: matrix and range stay unset, so a second check (with_size) passes as the first
            return replace(self, pix_fmt=pix_fmt)
        return replace(self, matrix=matrix, colour_range=colour_range, pix_fmt=pix_fmt)

    def with_size(self, size: tuple[int, int]) -> VideoOptions:
        """The same options for pictures of ``size``, checked again (a processing stage's output size)."""
        return replace(self, size=size)._checked()

    @property
    def colour(self) -> ColourSpec:
        return ColourSpec(self.matrix or "bt709", self.colour_range or "limited")

    @property
    def pixel_format(self) -> PixelFormat:
        """``pix_fmt``, or the codec's default when none was given (yuv420p; yuv444p for gif; rgb24 for png)."""
        return self.pix_fmt or _DEFAULT_PIX_FMT.get(self.codec, "yuv420p")

    @property
    def odd_size(self) -> OddSize:
        w, h = self.size
        return "pad" if self.pad and (w % 2 or h % 2) and self.pixel_format in SUBSAMPLED else "error"

    @property
    def encoded_size(self) -> tuple[int, int]:
        """The size of the encoded picture: the render size, padded to even for 4:2:0 (JPEG: only with pad)."""
        w, h = self.size
        if self.pixel_format in SUBSAMPLED and (self.codec != "mjpeg" or self.pad):
            return w + w % 2, h + h % 2
        return self.size

    @property
    def bframes(self) -> int | None:
        """The B-frames asked for (an encoder option the stream's facts carry, for the sinks)."""
        return self.table(RateOptions).bframes

    @property
    def facts(self) -> VideoFacts:
        """The stream these options describe, as every stage reads it."""
        return VideoFacts(self.codec, self.size, self.encoded_size, self.fps, self.pixel_format, self.colour, self.live,
                          self.bframes)  # fmt: skip

    def given(self) -> dict[str, object]:
        """The encoder options set to other than their defaults, by name: what the plan shows each row."""
        out: dict[str, object] = {}
        for table in option_tables():
            for f, _ in declared(table):
                value = getattr(self, f.name)
                if value != f.default:
                    out[f.name] = value
        return out

    def request(
        self, encoder: str | None = None, *, raw_output: bool = False, device: Any = None
    ) -> EncodeRequest[Any]:
        """What encoder ``encoder`` (default: the one named, if not auto) is opened with for these options."""
        name = encoder or self.encoder
        return request(encoder_row(name), self.facts, self.given(), raw_output=raw_output, device=device)


@dataclass(frozen=True)
class LengthOptions(OptionTable):
    """How long a recording is: ``seconds`` or ``frames`` (neither: :data:`DEFAULT_SECONDS`)."""

    seconds: float | None = option(
        None, f"length in seconds (default {DEFAULT_SECONDS:g})",
        _number("seconds", 0, MAX_SECONDS, example="3"), flags=_flag("seconds"),
    )  # fmt: skip
    frames: int | None = option(
        None, "length in frames", _number("frames", 1, 1e12, integer=True, example="90"), flags=_flag("frames")
    )

    def count(self, fps: float, *, default: float | None = DEFAULT_SECONDS) -> int | None:
        """Frames to record at ``fps`` (None: no length given and no default, i.e. run until stopped)."""
        if self.seconds is not None and self.frames is not None:
            raise ConfigError("Give at most one of seconds and frames, e.g. seconds=3 or frames=90.")
        if self.frames is not None:
            return self.frames
        seconds = self.seconds if self.seconds is not None else default
        if seconds is None:
            return None
        if not seconds > 0:
            raise ConfigError(f"seconds {seconds!r} must be positive, e.g. 3.")
        return max(1, round(seconds * fps))


DecoderName = Literal["auto", "cpu", "nvdec"]


@dataclass(frozen=True)
class InputOptions(OptionTable):
    """How a video input (file, image, stream, camera) is read and drawn over, and Shadertoy channels."""

    overlay: str | None = option(
        None, "scene or Shadertoy shader drawn over each frame of a video input (its iChannel0 is the frame)", str,
        flags=_flag("overlay"), metavar="SCENE",
    )  # fmt: skip
    channel0: str | None = option(None, "what a Shadertoy shader's iChannel0 samples: image, video, camera, URL, "
                                  "buffer_a..buffer_d or a built-in texture (noise, noise_small, grey_noise, black); "
                                  "an empty channel reads black", str, flags=_flag("channel0"),
                                  metavar="SRC")  # fmt: skip
    channel1: str | None = option(None, "iChannel1 (as --channel0)", str, flags=_flag("channel1"), metavar="SRC")
    channel2: str | None = option(None, "iChannel2 (as --channel0)", str, flags=_flag("channel2"), metavar="SRC")
    channel3: str | None = option(None, "iChannel3 (as --channel0)", str, flags=_flag("channel3"), metavar="SRC")
    trust_export: bool = option(
        False, "let a Shadertoy export (.json) name media outside its own folder (only for an export you trust)",
        _boolean("trust_export"), flags=("--trust-export",), boolean=True,
    )  # fmt: skip
    drop_audio: bool = option(
        False, "leave a video input's audio out (it is copied unchanged by default where the container holds it)",
        _boolean("drop_audio"), flags=("--no-audio",), boolean=True,
    )  # fmt: skip
    decoder: DecoderName = option(
        "auto", "video input decoder: auto (FFmpeg), cpu (FFmpeg) or nvdec (NVIDIA, frames stay on the GPU)",
        _choice("decoder", DecoderName), flags=_flag("decoder"),
    )  # fmt: skip
    input_options: tuple[tuple[str, str], ...] = option(
        (), "FFmpeg options for the input, e.g. input_format=mjpeg video_size=1280x720 (camera), rtsp_transport=udp, "
        "framerate=12 (the rate of an image sequence's images; --fps sets it too, FFmpeg's default is 25)",
        parse_encoder_options, flags=("--input-option",), metavar="KEY=VALUE", repeat=True,
        accepts="Mapping[str, str] | Sequence[str | tuple[str, str]]",
    )  # fmt: skip
    input_format: str | None = option(
        None, "FFmpeg demuxer to force for the input (v4l2, mpegts, image2, ...)", str, flags=_flag("input-format")
    )
    input_timeout: float = option(
        10.0, "seconds to wait for a network input, camera or named pipe, also as a Shadertoy channel (to open, and "
        "between packets)",
        _number("input_timeout", 0.1, 3600, example="10"), flags=_flag("input-timeout"),
    )  # fmt: skip
    input_retries: int = option(
        3, "times a broken network input or camera is reopened before it counts as ended",
        _number("input_retries", 0, 1000, integer=True, example="3"), flags=_flag("input-retries"),
    )  # fmt: skip
    loop: bool = option(False, "play a file input again from the start when it ends", _boolean("loop"),
                        flags=_flag("loop"), boolean=True)  # fmt: skip

    def channels(self) -> dict[int, str]:
        """The ``--channelN`` given, as ShadertoyScene's ``channels``."""
        values = (self.channel0, self.channel1, self.channel2, self.channel3)
        return {i: v for i, v in enumerate(values) if v is not None}


def frame_count(fps: float, seconds: object = None, frames: object = None) -> int:
    """Frames in a recording of ``seconds`` or ``frames`` at ``fps``; neither: :data:`DEFAULT_SECONDS`."""
    n = LengthOptions.parse({"seconds": seconds, "frames": frames}).count(parse_fps(fps))
    assert n is not None
    return n


def with_output_codec(video: Mapping[str, object], target: str | os.PathLike[str] | None) -> dict[str, object]:
    """``video`` with the codec the output implies when none is given and only one fits (``-o x.hevc``: hevc).

    >>> with_output_codec({}, "clip.ivf")["codec"]
    'av1'
    """
    if video.get("codec") is not None or target is None:
        return dict(video)
    codec = sole_codec(target)
    return dict(video) if codec is None else {**video, "codec": codec}


def split_options(values: Mapping[str, object]) -> tuple[dict[str, object], dict[str, object]]:
    """Split ``Recorder``-style keywords into video and pipeline options; unknown names raise."""
    video, pipeline = {}, {}
    v_names, p_names = set(VideoOptions.names()), set(PipelineOptions.names())
    for name, value in values.items():
        if name in v_names:
            video[name] = value
        elif name in p_names:
            pipeline[name] = value
        else:
            raise unknown_option(name, v_names | p_names)
    return video, pipeline


def reference() -> str:
    """The option reference in Markdown (``python -m glrec.options > docs/options.md``)."""
    encoder_tables = tuple(t for t in reversed(VideoOptions.__mro__[1:]) if issubclass(t, EncoderOptions))
    tables: tuple[type, ...] = (
        VideoOptions,
        *encoder_tables,
        PipelineOptions,
        LengthOptions,
        InputOptions,
        OutputOptions,
    )
    intro = ("Generated from the declarations (`python -m glrec.options`): `glrec/options.py`, each encoder's own "
             "table in its room (`glrec/encoders/*/options.py`) beside the tables they share "
             "(`glrec/encoders/options.py`, `glrec/encoders/jpeg_options.py`), the pipeline's "
             "(`glrec/pipeline/options.py`), and the outputs' (`glrec/sinks/output_options.py`).")  # fmt: skip
    return _reference(tables, intro)


if __name__ == "__main__":  # pragma: no cover
    print(reference())
