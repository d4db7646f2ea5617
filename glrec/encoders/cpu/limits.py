"""What the CPU encoders (libavcodec through PyAV) accept: presets, frame rates, picture sizes and formats.

Checked by the pipeline's plan before any GL object exists, so a recording that
libavcodec would refuse (or crash on) fails with a message instead.
"""

from __future__ import annotations

from ..._values import check_choice
from ...errors import ConfigError
from ...video_facts import VideoFacts
from .options import CpuOptions

#: The libavcodec encoder behind each codec on the CPU path.
CPU_ENCODERS: dict[str, str] = {
    "h264": "libx264", "hevc": "libx265", "av1": "libsvtav1", "vp9": "libvpx-vp9", "mjpeg": "mjpeg", "gif": "gif",
}  # fmt: skip
#: Codecs whose CPU encoder has no rate control, presets or GOP, and what sets the size of their pictures.
_PICTURE_CODECS = {"mjpeg": "quality sets the size of each JPEG, every frame a keyframe",
                   "gif": "each frame is reduced to a palette of its own 256 colours"}  # fmt: skip
# Presets each CPU encoder takes (SVT-AV1 counts from slowest, 0, to fastest, 13; libvpx's cpu-used from 0 to 8).
_X26X_PRESETS = ("ultrafast", "superfast", "veryfast", "faster", "fast", "medium", "slow", "slower", "veryslow")
CPU_PRESETS: dict[str, tuple[str, ...]] = {
    "libx264": (*_X26X_PRESETS, "placebo"),
    "libx265": (*_X26X_PRESETS, "placebo"),
    "libsvtav1": tuple(str(i) for i in range(14)),
    "libvpx-vp9": tuple(str(i) for i in range(9)),
    "mjpeg": (),
    "gif": (),
}
#: Pixel formats each CPU encoder takes from glrec's convert stage.
CPU_PIX_FMTS: dict[str, tuple[str, ...]] = {
    "libx264": ("yuv420p", "nv12", "yuv444p"),
    "libx265": ("yuv420p", "yuv444p"),
    "libsvtav1": ("yuv420p",),
    "libvpx-vp9": ("yuv420p", "yuv444p"),
    "mjpeg": ("yuv420p", "yuv444p"),
    "gif": ("yuv420p", "yuv444p"),
}
MAX_SVTAV1_FPS = 240.0
#: The longest side each codec takes, and who says so (GIF's sides are 16-bit numbers, VP9's are 16-bit minus one).
_MAX_SIDE = {"h264": ("libx264", 16384), "gif": ("GIF", 65535), "vp9": ("VP9", 65536)}
#: GIF delays are whole hundredths of a second; browsers (Chromium, Firefox, Safari) play 0 or 1 as 10.
MAX_GIF_FPS = 50.0


#: libx265 (3.x, as in PyAV 18's wheels) writes past heap blocks in its lookahead's cuTree
#: pass (AVX2 code, 16 bytes at a time over per-row arrays of 8x8 blocks of the half-size
#: picture) when the picture is 48 pixels wide or less, whatever its height, pixel format,
#: preset or threading; glibc notices only later (free(): invalid next size), often
#: hundreds of recordings on. Measured with valgrind: benchmarks/encoder_size_limits.py.
X265_MIN_WIDTH = 49
#: libx265 itself refuses pictures under 16 pixels on a side (placebo: under 32).
X265_MIN_SIDE = 16
#: SVT-AV1 reads a pointer from a zero-size allocation on pictures under 26 pixels wide
#: (memcheck: invalid reads and writes, and a crash under valgrind); 26 and up are clean
#: apart from over-reads SVT-AV1's SIMD code makes at many widths (reads, not writes).
SVTAV1_MIN_WIDTH = 26


def cpu_size_problem(codec: str, width: int, height: int) -> str | None:
    """Why the CPU encoder for ``codec`` cannot take an encoded picture of this size (None if it can).

    Measured with PyAV 18's libx264, libx265 3.x, SVT-AV1 and mjpeg on grids of
    sizes near each encoder's minimum, every case in a child process under
    valgrind's memcheck (``benchmarks/encoder_size_limits.py``; results in
    ``benchmarks/results/``): x264 and mjpeg are clean from 1x1 (x264 refuses
    over 16384 a side); x265 and SVT-AV1 damage memory on narrow pictures (see
    :data:`X265_MIN_WIDTH`, :data:`SVTAV1_MIN_WIDTH`); SVT-AV1 refuses under 4 or
    over 16384 a side, and never finishes (its flush waits forever) when one side
    is over 64 and the other under 26.
    """
    short, long = min(width, height), max(width, height)
    who, most = _MAX_SIDE.get(codec, ("", long))
    if long > most:
        return f"{who} takes at most {most} pixels a side"
    if codec == "hevc":
        if width < X265_MIN_WIDTH:
            return "libx265 needs a picture more than 48 pixels wide (narrower ones corrupt its heap)"
        if height < X265_MIN_SIDE:
            return "libx265 needs a picture at least 16 pixels high"
    if codec == "av1":
        if short < 4 or long > 16384:
            return "SVT-AV1 takes 4 to 16384 pixels a side"
        if width < SVTAV1_MIN_WIDTH:
            return "SVT-AV1 needs a picture at least 26 pixels wide (narrower ones make it access memory out of bounds)"
        if long > 64 and short < 32:
            return "SVT-AV1 hangs when one side is over 64 pixels and the other under 26; use at least 32"
    return None


def input_format(facts: VideoFacts) -> str:
    """The PyAV pixel format the CPU encoder takes for ``facts``: ``pix_fmt``, full-range ``yuvj`` for mjpeg."""
    if CPU_ENCODERS[facts.codec] == "mjpeg":
        return {"yuv420p": "yuvj420p", "yuv444p": "yuvj444p"}[facts.pix_fmt]
    return facts.pix_fmt


def cpu_encoder_problem(codec: str) -> str | None:
    """Why this PyAV build cannot encode ``codec`` on the CPU (None if it can)."""
    import av

    name = CPU_ENCODERS[codec]
    if name not in av.codecs_available:
        return (f"this PyAV/FFmpeg build has no {name} encoder for {codec}; install PyAV from PyPI "
                "(pip install av), whose wheels include it, or pick another codec")  # fmt: skip
    return None


def cpu_options_problem(facts: VideoFacts, options: CpuOptions) -> str | None:
    """What the CPU encoder would reject when it opens (format, preset, frame rate, picture size), or None.

    None for a codec it has no encoder for: the plan says so in its own words."""
    name = CPU_ENCODERS.get(facts.codec)
    if name is None:
        return None
    if facts.pix_fmt not in CPU_PIX_FMTS[name]:
        formats = " or ".join(CPU_PIX_FMTS[name])
        return f"The {facts.codec} CPU encoder ({name}) takes {formats}, not {facts.pix_fmt}."
    if options.preset is not None:
        valid = CPU_PRESETS[name]
        if not valid:
            return f"{name} ({facts.codec}) has no presets; leave preset unset ({_PICTURE_CODECS[facts.codec]})."
        try:
            check_choice(f"preset for {name}", str(options.preset), valid)
        except ConfigError as exc:
            return str(exc)
    if facts.codec in _PICTURE_CODECS:
        # FFmpeg's mjpeg and gif encoders would take these and do nothing with them.
        names = ("crf", "qp", "bitrate", "gop", "bframes") + (("threads",) if facts.codec == "gif" else ())
        given = [n for n in names if getattr(options, n) is not None]
        if given:
            lacks = "rate control, GOP or threads" if facts.codec == "gif" else "rate control or GOP"
            return (f"{name} ({facts.codec}) has no {lacks}: {_PICTURE_CODECS[facts.codec]}; "
                    f"drop {', '.join(given)} (or use codec h264).")  # fmt: skip
    if facts.codec == "gif" and facts.fps > MAX_GIF_FPS:
        return (f"fps {facts.fps:g} is above what a GIF plays, {MAX_GIF_FPS:g}: it stores each frame's delay in "
                "hundredths of a second, and browsers show a delay under 2/100 s for 1/10 s. Use fps 50 or less "
                "(e.g. 25, keeping every other frame of 50), or codec h264 (.mp4).")  # fmt: skip
    vp9 = _vp9_problem(options) if facts.codec == "vp9" else None
    if vp9 is not None:
        return vp9
    if facts.codec == "av1" and facts.fps > MAX_SVTAV1_FPS:
        return (f"fps {facts.fps:g} is above what SVT-AV1 (av1) takes, {MAX_SVTAV1_FPS:g}; "
                "use a lower fps or codec h264.")  # fmt: skip
    w, h = facts.encoded_size
    problem = cpu_size_problem(facts.codec, w, h)
    if problem is not None:
        # The fix depends on the side that is out of range: a size within 16384 a side, or a larger one.
        limit = _MAX_SIDE.get(facts.codec, ("", 16384))[1]
        fix = f"Use a smaller size, at most {limit} a side." if max(w, h) > limit else "Use a larger size, e.g. 64x64."
        return f"Size {w}x{h} cannot be encoded as {facts.codec}: {problem}. {fix}"
    return None


def _vp9_problem(options: CpuOptions) -> str | None:
    """What libvpx-vp9 would take and ignore, or misread: qp and B-frames it has none of, crf in whole steps."""
    if options.qp is not None:
        return ("libvpx-vp9 (vp9) has no constant quantiser: use crf 0-63 for its quality (lower is better; "
                "-x lossless=1 for lossless), or bitrate.")  # fmt: skip
    if options.bframes:
        return f"libvpx-vp9 (vp9) makes no B-frames; drop bframes {options.bframes}."
    if options.crf is not None and options.crf != int(options.crf):
        return f"libvpx-vp9 (vp9) takes crf in whole steps 0-63, not {options.crf:g}."
    return None


def check_cpu_options(facts: VideoFacts, options: CpuOptions) -> None:
    """Raise ConfigError for what the CPU encoder would reject (see :func:`cpu_options_problem`)."""
    problem = cpu_options_problem(facts, options)
    if problem is not None:
        raise ConfigError(problem)
