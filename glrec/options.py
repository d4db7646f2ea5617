"""Option tables and validation.

Every public option is checked here, before any GL or CUDA object exists, and a
bad value gets a :class:`~glrec.errors.ConfigError` that lists the valid ones.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal, get_args

from .colour import ColourSpec, Matrix, Range
from .errors import ConfigError, OutputError, OutputExistsError

Codec = Literal["h264", "hevc", "av1", "mjpeg"]
EncoderName = Literal["auto", "cpu", "nvenc", "nvjpeg"]
PixelFormat = Literal["yuv420p", "nv12", "yuv444p", "rgba"]  # rgba: NVENC's ABGR input
OddSize = Literal["error", "pad"]

# The libavcodec encoder behind each codec on the CPU path.
CPU_ENCODERS: dict[str, str] = {"h264": "libx264", "hevc": "libx265", "av1": "libsvtav1", "mjpeg": "mjpeg"}
# Which codecs each output kind can carry, keyed by file extension.
CONTAINERS: dict[str, tuple[str, ...]] = {
    # AV1 goes to .ivf only: PyAV (18) cannot make an AV1 output stream from parsed
    # packets, because its template lookup wants an encoder named like the decoder.
    ".mp4": ("h264", "hevc"),
    ".mov": ("h264", "hevc", "mjpeg"),
    ".mkv": ("h264", "hevc", "mjpeg"),
    ".avi": ("mjpeg",),
    ".h264": ("h264",),
    ".264": ("h264",),
    ".hevc": ("hevc",),
    ".h265": ("hevc",),
    ".265": ("hevc",),
    ".ivf": ("av1",),
    # Image sequences: the path holds a printf pattern such as frames/%06d.jpg.
    ".jpg": ("mjpeg",),
    ".jpeg": ("mjpeg",),
}
IMAGE_SEQUENCES: frozenset[str] = frozenset({".jpg", ".jpeg"})
SUBSAMPLED: frozenset[str] = frozenset({"yuv420p", "nv12"})
MAX_FPS = 1000.0
# Presets each CPU encoder takes (SVT-AV1 counts from slowest, 0, to fastest, 13).
_X26X_PRESETS = ("ultrafast", "superfast", "veryfast", "faster", "fast", "medium", "slow", "slower", "veryslow")
CPU_PRESETS: dict[str, tuple[str, ...]] = {
    "libx264": (*_X26X_PRESETS, "placebo"),
    "libx265": (*_X26X_PRESETS, "placebo"),
    "libsvtav1": tuple(str(i) for i in range(14)),
    "mjpeg": (),
}
NVENC_PRESETS: tuple[str, ...] = tuple(f"p{i}" for i in range(1, 8))


def cpu_size_problem(codec: str, width: int, height: int) -> str | None:
    """Why the CPU encoder for ``codec`` cannot take an encoded picture of this size (None if it can).

    Measured with PyAV 18's libx264, libx265 3.x and SVT-AV1 by encoding every size
    on a grid in a child process: x264 refuses over 16384 a side; x265 opens from
    16x16, but pictures of 32 rows or fewer and 33-48 wide (40x16, 36x28, 40x32 in
    4:4:4, ...) corrupt its heap and abort the process when it closes, and every
    size above 32 a side worked; SVT-AV1 refuses under 4 or over
    16384 a side, and never finishes (its flush waits forever) when one side is
    over 64 and the other under 26.
    """
    short, long = min(width, height), max(width, height)
    if codec == "h264" and long > 16384:
        return "libx264 takes at most 16384 pixels a side"
    if codec == "hevc" and short <= 32:
        return "libx265 needs more than 32 pixels a side (smaller pictures can crash it)"
    if codec == "av1":
        if short < 4 or long > 16384:
            return "SVT-AV1 takes 4 to 16384 pixels a side"
        if long > 64 and short < 32:
            return "SVT-AV1 hangs when one side is over 64 pixels and the other under 26; use at least 32"
    return None


def check_number(
    what: str, value: object, lo: float, hi: float | None, *, integer: bool = False, example: str = ""
) -> float:
    """Return ``value`` as a float if it is a number in ``lo..hi`` (whole if ``integer``), else raise ConfigError."""
    hint = f" (e.g. {example})" if example else ""
    try:
        if isinstance(value, bool):  # True is an int to Python, never a count to a user
            raise TypeError
        number = float(value)  # type: ignore[arg-type]
        if number != number or (integer and number != int(number)):  # NaN, or a fraction
            raise ValueError
    except (TypeError, ValueError, OverflowError):
        raise ConfigError(f"{what} {value!r} is not {'a whole number' if integer else 'a number'}{hint}.") from None
    if hi is None and number < lo:
        raise ConfigError(f"{what} {value!r} must be at least {lo:g}{hint}.")
    if hi is not None and not lo <= number <= hi:
        raise ConfigError(f"{what} {value!r} is outside {lo:g}..{hi:g}{hint}.")
    return number


def check_choice(what: str, value: object, valid: tuple[str, ...] | list[str]) -> str:
    """Return ``value`` if it is one of ``valid``, else raise a ConfigError listing them."""
    if value not in valid:
        raise ConfigError(f"Unknown {what} {value!r}. Valid: {', '.join(sorted(valid))}.")
    return str(value)


def parse_size(text: str | tuple[int, int]) -> tuple[int, int]:
    """Parse ``"1920x1080"`` (or pass a tuple through) into ``(width, height)``."""
    if isinstance(text, str):
        parts = text.lower().replace("×", "x").split("x")
        try:
            w, h = (int(p) for p in parts)
        except ValueError:
            raise ConfigError(f"Size {text!r} is not WIDTHxHEIGHT, e.g. 1920x1080.") from None
        return w, h
    try:
        w, h = text
        if isinstance(w, bool) or isinstance(h, bool) or int(w) != w or int(h) != h:
            raise ValueError
        return int(w), int(h)
    except (TypeError, ValueError, OverflowError):
        raise ConfigError(f"Size {text!r} is not a (width, height) pair of whole numbers, e.g. (1920, 1080).") from None


@dataclass(frozen=True)
class VideoOptions:
    """Everything that decides how frames become a file. Build with :meth:`create`."""

    size: tuple[int, int] = (1280, 720)
    fps: float = 30.0
    codec: Codec = "h264"
    encoder: EncoderName = "auto"
    pix_fmt: PixelFormat = "yuv420p"
    colour: ColourSpec = field(default_factory=ColourSpec)
    crf: float | None = None
    qp: int | None = None
    bitrate: int | None = None
    preset: str | None = None
    gop: int | None = None
    bframes: int | None = None
    odd_size: OddSize = "error"
    quality: int = 90  # JPEG quality for mjpeg / nvjpeg
    tuning: str | None = None  # NVENC tuning: hq, ll, ull, lossless
    rc: str | None = None  # NVENC rate control: cbr, vbr, constqp
    live: bool = False  # encoder tuned for latency (see glrec.encoders.latency)

    @classmethod
    def create(
        cls,
        size: str | tuple[int, int] = (1280, 720),
        fps: float = 30.0,
        *,
        codec: str = "h264",
        encoder: str = "auto",
        pix_fmt: str = "yuv420p",
        matrix: str | None = None,
        range: str | None = None,
        crf: float | None = None,
        qp: int | None = None,
        bitrate: int | None = None,
        preset: str | None = None,
        gop: int | None = None,
        bframes: int | None = None,
        pad: bool = False,
        quality: int = 90,
        tuning: str | None = None,
        rc: str | None = None,
        live: bool = False,
    ) -> VideoOptions:
        """Validate every option and return the options, or raise ConfigError."""
        w, h = parse_size(size)
        check_choice("codec", codec, get_args(Codec))
        check_choice("encoder", encoder, get_args(EncoderName))
        check_choice("pixel format", pix_fmt, get_args(PixelFormat))
        if matrix is None:
            matrix = "bt601" if codec == "mjpeg" else "bt709"  # JFIF fixes the BT.601 matrix
        check_choice("colour matrix", matrix, get_args(Matrix))
        if codec == "mjpeg" and matrix != "bt601":
            raise ConfigError("JPEG decoders always use the BT.601 matrix; use matrix 'bt601' for mjpeg.")
        if range is None:
            range = "full" if codec == "mjpeg" else "limited"  # JPEG decoders assume full range
        check_choice("colour range", range, get_args(Range))
        if codec == "mjpeg" and range != "full":
            raise ConfigError("JPEG is always full range; use range 'full' (the default for mjpeg).")
        if w <= 0 or h <= 0:
            raise ConfigError(f"Size {w}x{h} must be positive in both dimensions, e.g. 1280x720.")
        try:
            if isinstance(fps, bool):
                raise TypeError
            fps = float(fps)
        except (TypeError, ValueError, OverflowError):
            raise ConfigError(f"fps {fps!r} is not a number; use e.g. 30 or 59.94.") from None
        if not (0 < fps <= MAX_FPS):
            raise ConfigError(f"fps {fps} must be above 0 and at most {MAX_FPS:g}; use e.g. 30.")
        if sum(x is not None for x in (crf, qp, bitrate)) > 1:
            raise ConfigError("Give at most one of crf, qp and bitrate: they are alternative rate controls.")
        if crf is not None:
            crf = check_number("crf", crf, 0, 63, example="20; 0 is lossless for h264, 18-28 is typical")
        if qp is not None:
            qp = int(check_number("qp", qp, 0, 255, integer=True, example="0 for lossless h264, 20-30 typical"))
        if bitrate is not None:
            bitrate = int(check_number("bitrate", bitrate, 1, None, integer=True, example="8000000 bits per second"))
        if gop is not None:
            gop = int(check_number("gop", gop, 1, None, integer=True, example="60 frames between keyframes"))
        if bframes is not None:
            bframes = int(check_number("bframes", bframes, 0, 16, integer=True, example="0 or 2"))
        quality = int(check_number("JPEG quality", quality, 1, 100, integer=True, example="90"))
        for flag, value in (("pad", pad), ("live", live)):
            if not isinstance(value, bool):
                raise ConfigError(f"{flag} {value!r} must be True or False.")
        if preset is not None:
            preset = str(preset)
            valid = (*CPU_PRESETS[CPU_ENCODERS[codec]], *NVENC_PRESETS)
            if encoder == "auto" and preset not in valid and preset.lower() not in NVENC_PRESETS:
                # either encoder may run: a preset neither knows is an error now, not after the GL setup
                check_choice(f"preset for {codec} (CPU or NVENC)", preset, valid)
        if pix_fmt == "rgba" and (codec == "mjpeg" or encoder in ("cpu", "nvjpeg")):
            raise ConfigError("pix_fmt rgba is NVENC's ABGR input; use yuv420p, nv12 or yuv444p here.")
        if codec == "mjpeg" and pix_fmt == "nv12":
            raise ConfigError("mjpeg cannot carry nv12; use pix_fmt yuv420p or yuv444p.")
        if codec == "av1" and pix_fmt != "yuv420p":
            raise ConfigError(f"The AV1 CPU encoder (SVT-AV1) takes yuv420p only, not {pix_fmt}.")
        if codec == "hevc" and pix_fmt == "nv12":
            raise ConfigError("The HEVC CPU encoder (x265) takes yuv420p or yuv444p, not nv12.")
        if live and bframes:
            raise ConfigError(f"bframes {bframes} would delay every frame in live mode; use bframes 0 (the default).")
        if live and codec == "av1":
            raise ConfigError("Live mode has no low-latency AV1 settings yet; use codec h264 (or hevc).")
        odd = w % 2 or h % 2
        if odd and pix_fmt in SUBSAMPLED and not pad:
            raise ConfigError(
                f"Size {w}x{h} has an odd dimension, which {pix_fmt} (4:2:0) cannot hold. "
                f"Use an even size such as {w + w % 2}x{h + h % 2}, pass pad=True (--pad) to add "
                "a replicated edge row/column, or use pix_fmt yuv444p."
            )
        options = cls(
            size=(w, h),
            fps=fps,
            codec=codec,  # type: ignore[arg-type]
            encoder=encoder,  # type: ignore[arg-type]
            pix_fmt=pix_fmt,  # type: ignore[arg-type]
            colour=ColourSpec(matrix, range),  # type: ignore[arg-type]
            crf=crf,
            qp=qp,
            bitrate=bitrate,
            preset=preset,
            gop=gop,
            bframes=bframes,
            odd_size="pad" if (odd and pad) else "error",
            quality=quality,
            tuning=tuning,
            rc=rc,
            live=bool(live),
        )
        if encoder == "cpu":
            check_cpu_encoder(options)
        return options

    @property
    def encoded_size(self) -> tuple[int, int]:
        """The size of the encoded picture: the render size, padded to even for 4:2:0."""
        w, h = self.size
        if self.pix_fmt in SUBSAMPLED:
            return w + w % 2, h + h % 2
        return self.size

    def with_(self, **changes: object) -> VideoOptions:
        return replace(self, **changes)  # type: ignore[arg-type]


def check_cpu_encoder(options: VideoOptions) -> None:
    """Check what the CPU encoder (libavcodec) would reject when it opens: preset, frame rate, picture size.

    Called for ``encoder="cpu"`` by :meth:`VideoOptions.create`, and for ``auto``
    once the backend has chosen the CPU, in both cases before any GL object exists.
    """
    name = CPU_ENCODERS[options.codec]
    if options.preset is not None:
        valid = CPU_PRESETS[name]
        if not valid:
            raise ConfigError(f"{name} ({options.codec}) has no presets; leave preset unset (quality sets JPEG size).")
        check_choice(f"preset for {name}", str(options.preset), valid)
    if options.codec == "av1" and options.fps > 240:
        raise ConfigError(f"fps {options.fps:g} is above what SVT-AV1 (av1) takes, 240; use a lower fps or codec h264.")
    w, h = options.encoded_size
    problem = cpu_size_problem(options.codec, w, h)
    if problem is not None:
        raise ConfigError(f"Size {w}x{h} cannot be encoded as {options.codec}: {problem}. Use e.g. 64x64.")


def output_kind(path: str | os.PathLike[str], codec: str) -> str:
    """Return the output's extension after checking it can carry ``codec``."""
    ext = Path(path).suffix.lower()
    if ext not in CONTAINERS:
        raise ConfigError(
            f"Unknown output type {ext or '(no extension)'!r} for {os.fspath(path)!r}. "
            f"Valid: {', '.join(sorted(CONTAINERS))}."
        )
    if ext in IMAGE_SEQUENCES and not has_frame_pattern(path):
        raise ConfigError(
            f"An image sequence needs a frame-number pattern in its name, e.g. {Path(path).with_suffix('')!s}"
            f"_%06d{ext}; got {os.fspath(path)!r}."
        )
    if codec not in CONTAINERS[ext]:
        raise ConfigError(
            f"A {ext} file cannot carry {codec}. For {ext} use codec {' or '.join(CONTAINERS[ext])}, "
            f"or pick an extension that takes {codec}: "
            f"{', '.join(e for e, cs in CONTAINERS.items() if codec in cs)}."
        )
    return ext


def check_output_path(path: str | os.PathLike[str], overwrite: bool) -> Path:
    """Refuse a missing directory or an existing file (unless ``overwrite``)."""
    p = Path(path)
    if p.is_dir():
        raise OutputError(f"Output {str(p)!r} is a directory; give a file name such as {str(p / 'out.mp4')!r}.")
    parent = p.parent if str(p.parent) else Path(".")
    if not parent.is_dir():
        raise OutputError(f"Output directory {str(parent)!r} does not exist; create it first (mkdir -p {parent}).")
    if has_frame_pattern(p):
        p_first = Path(frame_path(p, 0))
        if p_first.exists() and not overwrite:
            raise OutputExistsError(
                f"Output {str(p_first)!r} (frame 0 of {str(p)!r}) exists; pass overwrite=True (--overwrite) "
                "to replace the sequence."
            )
        return p
    if p.exists() and not overwrite:
        raise OutputExistsError(f"Output {str(p)!r} exists; pass overwrite=True (--overwrite) to replace it.")
    return p


def has_frame_pattern(path: str | os.PathLike[str]) -> bool:
    """True for a name with one printf integer field, such as ``frame_%06d.jpg``."""
    try:
        frame_path(path, 0)
    except (TypeError, ValueError):
        return False
    return os.fspath(path).count("%") == 1


def frame_path(path: str | os.PathLike[str], index: int) -> str:
    """The file name of frame ``index`` in an image-sequence pattern."""
    return os.fspath(path) % index
