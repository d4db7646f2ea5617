"""What a video input names, and opening it with FFmpeg (PyAV) with bounded waits and clear errors.

An input is a file (any container FFmpeg reads), an image, an image sequence
(``frames_%04d.png`` or a glob such as ``frames/*.png``), a network URL
(``rtsp://``, ``udp://``, ``http(s)://`` including HLS/DASH, ``rtmp://``,
``srt://``, ``tcp://``) or a camera (``/dev/videoN``, through FFmpeg's
video4linux2 input). Network inputs and cameras are *live*: FFmpeg is told not
to buffer (``fflags=nobuffer``, ``flags=low_delay``, a small probe), the
decoder drops to the newest picture when the consumer falls behind, and a
broken connection is reopened a bounded number of times.

Every wait on the network is bounded: opening gives up after ``timeout``
seconds and a read that gets nothing for ``timeout`` seconds counts as a
broken connection (PyAV's interrupt callback, so it works for every protocol).
"""

from __future__ import annotations

import errno
import functools
import glob
import logging
import os
import re
import select
import shutil
import stat
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import av

from ...errors import InputError, InputNotFoundError, InputTimeoutError, UnsupportedInputError
from . import sequence
from .confine import Confined

log = logging.getLogger("glrec")

Kind = Literal["file", "image", "sequence", "url", "camera"]

URL_SCHEMES = ("rtsp", "rtsps", "rtmp", "rtmps", "udp", "rtp", "srt", "tcp", "http", "https", "hls")
IMAGE_SUFFIXES = frozenset({".png", ".jpg", ".jpeg", ".bmp", ".tif", ".tiff", ".webp", ".gif", ".exr", ".tga",
                            ".ppm", ".pgm", ".dpx", ".jxl", ".qoi"})  # fmt: skip
#: Suffixes that name a video container; a scene argument with one of these is an input, not a scene.
VIDEO_SUFFIXES = frozenset({".mp4", ".m4v", ".mov", ".mkv", ".webm", ".avi", ".ts", ".m2ts", ".mts", ".mpg",
                            ".mpeg", ".flv", ".ogv", ".nut", ".ivf", ".y4m", ".h264", ".264", ".hevc", ".h265",
                            ".265", ".mjpeg", ".mxf", ".wmv", ".3gp", ".m3u8", ".mpd"})  # fmt: skip
#: Audio-only files: taken as inputs so that the error says they hold no video (not "unknown scene").
AUDIO_SUFFIXES = frozenset({".mka", ".m4a", ".wav", ".mp3", ".flac", ".ogg", ".opus", ".aac", ".ac3", ".wma"})
_CAMERA = re.compile(r"^/dev/video\d+$")
_PATTERN = re.compile(r"%0?\d*d")
# Real-time protocols and cameras: hand each packet on as soon as it is read, and probe only as much as it
# takes. Not for HTTP(S)/HLS: those are usually files (a VOD playlist, an MP4 on a server), and nobuffer
# drops the packets read while FFmpeg probes the stream (the first second of an HTTP MP4).
_REALTIME_SCHEMES = ("rtsp", "rtsps", "rtmp", "rtmps", "udp", "rtp", "srt", "tcp")
_LIVE_OPTIONS = {"fflags": "nobuffer", "flags": "low_delay", "probesize": "500000", "analyzeduration": "1000000"}
_COMMON_DECODERS = ("h264", "hevc", "vp8", "vp9", "av1", "mpeg2video", "mpeg4", "mjpeg", "prores", "dnxhd",
                    "ffv1", "png", "theora", "rawvideo")  # fmt: skip


@dataclass(frozen=True)
class InputSpec:
    """A classified input and how FFmpeg opens it.

    ``options`` are FFmpeg demuxer/protocol options (strings), merged over
    glrec's defaults for the kind; ``format`` forces a demuxer (e.g.
    ``video4linux2`` for a camera, ``mpegts``).
    """

    source: str
    kind: Kind
    format: str | None = None
    options: dict[str, str] = field(default_factory=dict)
    timeout: float = 10.0
    #: Named by a downloaded file (a Shadertoy export): opened as that one file only (:mod:`.confine`).
    untrusted: bool = False
    #: A numbered image sequence with gaps: ``(first number, images)`` of each run (:mod:`.sequence`).
    runs: tuple[tuple[int, int], ...] = ()

    @property
    def live(self) -> bool:
        """Whether the input is live (a network URL or a camera).

        Live inputs are read with low-latency options and reopened when they break.
        """
        return self.kind in ("url", "camera")

    @property
    def label(self) -> str:
        """How logs and summaries name the input."""
        return self.source


def read_bound(spec: InputSpec) -> float:
    """Seconds that opening ``spec`` or one read from it may wait for data.

    The input timeout for streams, cameras and named pipes (another program's output, which may stall);
    at least 30 s for files, so that a file on a stalled network mount neither hangs for ever nor fails
    at a short ``timeout`` meant for streams.
    """
    return spec.timeout if spec.live or _is_pipe(spec.source) else max(spec.timeout, 30.0)


def is_url(text: str) -> bool:
    scheme, sep, _ = text.partition("://")
    return bool(sep) and scheme.lower() in URL_SCHEMES


def is_sequence(text: str) -> bool:
    """True for an image sequence: a ``%05d`` pattern or a glob (``frames/*.png``)."""
    return bool(_PATTERN.search(Path(text).name)) or any(ch in text for ch in "*?[")


def looks_like_input(text: str) -> bool:
    """True when ``text`` names a video input rather than a scene (for commands that take either)."""
    if is_url(text) or _CAMERA.match(text):
        return True
    suffix = Path(text.partition("?")[0]).suffix.lower()
    return suffix in (VIDEO_SUFFIXES | IMAGE_SUFFIXES | AUDIO_SUFFIXES) or _is_pipe(text)


def _is_pipe(text: str) -> bool:
    """A named pipe (``mkfifo``): another program's output, whatever its name says."""
    try:
        return stat.S_ISFIFO(os.stat(text).st_mode)
    except (OSError, ValueError):
        return False


def classify(
    source: str | os.PathLike[str],
    *,
    options: dict[str, Any] | None = None,
    format: str | None = None,
    fps: float | None = None,
    timeout: float = 10.0,
    untrusted: bool = False,
) -> InputSpec:
    """Classify ``source`` and build FFmpeg's options for it (nothing is opened yet).

    ``fps`` sets the rate of an image sequence (FFmpeg's default is 25) or asks
    a camera for a rate. Unknown option names reach FFmpeg, which ignores them
    with a warning in its log; values are passed as strings. ``untrusted``: the
    name comes from a downloaded file, so it must be a local file, read alone.
    """
    text = os.fspath(source)
    if not text:
        raise InputNotFoundError("An empty input was given; name a file, URL or /dev/videoN.")
    if not timeout > 0:
        raise UnsupportedInputError(f"timeout {timeout!r} must be positive (seconds), e.g. 10.")
    user = {str(k): str(v) for k, v in (options or {}).items()}
    base: dict[str, str] = {}
    runs: tuple[tuple[int, int], ...] = ()
    if untrusted:
        # Taken literally: no URL, camera, pattern or glob (the confined open reads this one file only).
        path = Path(text)
        _check_file(path)
        kind_: Kind = "image" if path.suffix.lower() in IMAGE_SUFFIXES else "file"
        return InputSpec(text, kind_, format, user, float(timeout), untrusted=True)
    if is_url(text):
        kind: Kind = "url"
        if text.partition("://")[0].lower() in _REALTIME_SCHEMES:
            base.update(_LIVE_OPTIONS)
        if text.lower().startswith(("rtsp://", "rtsps://")):
            base["rtsp_transport"] = "tcp"  # UDP transport loses packets on busy hosts; TCP is the safe default
            if "listen" in user.get("rtsp_flags", ""):
                # Listening for a sender to push: wait ``timeout`` for it. (FFmpeg 8 fails at once with
                # "Numerical result out of range" when listen_timeout is left at its default.)
                base["listen_timeout"] = str(max(1, round(timeout)))
        if text.lower().startswith(("http://", "https://", "hls://")):
            base.update({"reconnect": "1", "reconnect_streamed": "1"})
    elif _CAMERA.match(text) or format in ("video4linux2", "v4l2"):
        kind = "camera"
        format = "video4linux2"
        base.update({"fflags": "nobuffer", "flags": "low_delay"})
        if fps is not None:
            base["framerate"] = f"{fps:g}"
    elif is_sequence(text):
        kind = "sequence"
        format = format or "image2"
        if not _PATTERN.search(Path(text).name):
            base["pattern_type"] = "glob"
            if not glob.glob(text):
                raise InputNotFoundError(f"No file matches the image pattern {text!r}; check the path.")
        elif format == "image2" and user.get("pattern_type", "sequence") == "sequence":
            runs = sequence.runs(text, user)  # image2 stops at a gap in the numbering: glrec reads on
        if fps is not None:
            base["framerate"] = f"{fps:g}"
    else:
        path = Path(text)
        kind = "image" if path.suffix.lower() in IMAGE_SUFFIXES else "file"
        _check_file(path)
    return InputSpec(text, kind, format, {**base, **user}, float(timeout), runs=runs)


def _check_file(path: Path) -> None:
    if not path.exists():
        raise InputNotFoundError(f"Input {str(path)!r} does not exist; check the path.")
    if path.is_dir():
        raise UnsupportedInputError(f"Input {str(path)!r} is a folder; name a video or image file in it.")
    if not os.access(path, os.R_OK):
        raise InputError(f"Input {str(path)!r} cannot be read (permission denied); check its permissions.")


def open_container(spec: InputSpec, run: int = 0) -> av.container.InputContainer:
    """Open ``spec`` with PyAV, turning FFmpeg's failures into glrec errors that say what to do.

    ``run``: for a numbered image sequence with gaps (``spec.runs``), which run of consecutive
    numbers to open.
    """
    bound = read_bound(spec)
    options = dict(spec.options)
    if spec.runs:
        options.update(start_number=str(spec.runs[run][0]), start_number_range="1")
    confined = Confined(spec.source) if spec.untrusted else None
    extra: dict[str, Any] = {}
    if confined is not None:
        options.update(confined.options())
        extra["io_open"] = confined.io_open
    pipe = _wait_for_writer(spec) if spec.kind in ("file", "image") and confined is None else None
    try:
        # A named pipe is read through the descriptor that waited for its writer: opening the path again
        # would block once the writer has finished (a pipe without a writer cannot be opened).
        source = spec.source if pipe is None else f"pipe:{pipe}"
        container = av.open(source, "r", format=spec.format, options=options, timeout=(bound, bound), **extra)
        if pipe is not None:
            _OPENED[id(container)] = functools.partial(os.close, pipe)  # FFmpeg's pipe: leaves it open
            pipe = None
        if confined is not None:
            _OPENED[id(container)] = confined.close
            confined = None
        return container
    except av.ExitError as exc:  # the interrupt callback fired: nothing came within the bound
        raise timeout_error(spec, bound, opening=True) from exc
    except (av.FFmpegError, OSError) as exc:
        refused = confined.error(spec.label) if confined is not None else None
        if refused is not None:
            raise refused from None
        raise open_error(spec, exc) from exc
    finally:
        if pipe is not None:  # opening failed
            os.close(pipe)
        if confined is not None:
            confined.close()


def timeout_error(spec: InputSpec, bound: float, *, opening: bool) -> InputTimeoutError:
    """glrec's own bound fired (PyAV's interrupt callback; FFmpeg calls it "Immediate exit requested")."""
    if _is_pipe(spec.source):
        hint = "check the program that writes the pipe, or allow longer with --input-timeout (timeout=)"
    elif spec.live:
        hint = "check that the sender or camera is running, or allow longer with --input-timeout (timeout=)"
    else:
        hint = "check the file's storage (a stalled network mount?)"
    what = "No answer from" if opening else "Nothing more arrived from"
    return InputTimeoutError(f"{what} {spec.label!r} within {bound:g} s, so glrec stopped waiting; {hint}.")


#: What to close after a container, by its id: a named pipe's descriptor, a confined input's files.
_OPENED: dict[int, Callable[[], None]] = {}


def close_container(container: av.container.InputContainer) -> None:
    """Close an input opened by :func:`open_container`, and the pipe descriptor or files it reads, if any."""
    try:
        container.close()
    finally:
        close = _OPENED.pop(id(container), None)
        if close is not None:
            close()


def _wait_for_writer(spec: InputSpec) -> int | None:
    """A named pipe: wait (``spec.timeout`` at most) until its writer has written, holding it open meanwhile.

    FFmpeg's own open of a pipe blocks until a writer comes, for ever and beyond its timeout; opening
    it here without blocking and polling bounds that wait. The descriptor returned stays open until
    FFmpeg has the pipe too, so the writer never finds it without a reader. None for other files.
    """
    if not _is_pipe(spec.source):
        return None
    fd = os.open(spec.source, os.O_RDONLY | os.O_NONBLOCK)
    try:
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        if not poller.poll(spec.timeout * 1000):
            raise InputTimeoutError(
                f"Nothing was written to the pipe {spec.label!r} within {spec.timeout:g} s; start the program "
                "that writes it first, or allow longer with --input-timeout."
            )
        # The descriptor stays non-blocking: FFmpeg then polls it (its EAGAIN retries), asking PyAV's
        # interrupt callback each time, so a writer that stalls while holding the pipe open cannot hold
        # a read past the input timeout (a blocking read() would wait for as long as the writer does).
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_error(spec: InputSpec, exc: BaseException) -> InputError:
    """A clear error for FFmpeg's failure ``exc`` while opening or reading ``spec``."""
    if isinstance(exc, av.ExitError):
        return timeout_error(spec, read_bound(spec), opening=False)
    code = getattr(exc, "errno", None)
    reason = getattr(exc, "strerror", None) or str(exc)
    what = {"camera": "camera", "url": "stream"}.get(spec.kind, "input")
    if code == errno.ENOENT:
        if spec.kind == "camera":
            return InputNotFoundError(f"No camera at {spec.source} (no such device); list cameras with "
                                            "'v4l2-ctl --list-devices'.")  # fmt: skip
        return InputNotFoundError(f"Input {spec.label!r} does not exist; check the path.")
    if code == errno.EACCES:
        return InputError(f"The {what} {spec.label!r} cannot be opened: permission denied.")
    if code == errno.ECONNREFUSED:
        return InputError(f"Cannot connect to {spec.label!r}: connection refused; is the server running?")
    if code in (errno.ETIMEDOUT, errno.EAGAIN):
        return InputTimeoutError(f"No answer from {spec.label!r} within {spec.timeout:g} s ({reason}).")
    if code == errno.EBUSY and spec.kind in ("file", "image"):
        # What FFmpeg answers for a header value it refuses (a y4m of 16384x16384: "Picture size is invalid").
        return InputError(
            f"FFmpeg refuses the header of {spec.label!r} (a value over its limits, such as the picture size; it "
            f"reports 'Device or resource busy'); 'ffprobe -v error {spec.source}' names the value."
        )
    if spec.kind == "camera":
        return InputError(f"Cannot open {spec.source} as a V4L2 camera: {reason}. Check that it "
                                             "is a capture device and that input_format/video_size are ones it offers "
                                             "('v4l2-ctl --list-formats-ext').")  # fmt: skip
    return InputError(f"FFmpeg cannot read {spec.label!r} as a video, image or stream: {reason}.")


def video_stream(container: av.container.InputContainer, spec: InputSpec) -> av.video.stream.VideoStream:
    """The input's video stream (the default one if there are several), or an error naming what it holds."""
    streams = list(container.streams.video)
    if not streams:
        held = ", ".join(f"{s.type} {s.codec_context.name if s.codec_context else '?'}" for s in container.streams)
        raise UnsupportedInputError(
            f"{spec.label!r} has no video stream (it holds: {held or 'nothing'}); glrec needs a video, image, "
            "stream or camera input."
        )
    default = [s for s in streams if s.disposition & 1] or streams  # AV_DISPOSITION_DEFAULT
    stream = default[0]
    if stream.codec_context is None:
        raise UnsupportedInputError(
            f"{spec.label!r} holds video in {_codec_name(spec)}, which this FFmpeg build (PyAV {av.__version__}) "
            f"cannot decode. It decodes {decoders_summary()}. Convert it first, e.g. "
            f"ffmpeg -i {spec.source} -c:v libx264 out.mp4."
        )
    return stream


def _codec_name(spec: InputSpec) -> str:
    # PyAV cannot name a codec it has no decoder for; ffprobe (when installed) can.
    exe = shutil.which("ffprobe")
    if exe and not spec.live and not spec.untrusted:  # ffprobe would follow what an untrusted file names
        try:
            out = subprocess.run(
                [exe, "-v", "error", "-select_streams", "v:0", "-show_entries", "stream=codec_name", "-of",
                 "csv=p=0", spec.source], capture_output=True, text=True, timeout=10,
            ).stdout.strip()  # fmt: skip
            if out and out != "unknown":
                return f"the codec {out!r}"
        except (OSError, subprocess.SubprocessError):
            pass
    return "a codec it does not know"


def decoders_summary() -> str:
    """The video decoders this FFmpeg build has: the common ones by name, and how many in all."""
    names = set()
    for name in av.codecs_available:
        try:
            codec = av.Codec(name, "r")
        except (ValueError, av.FFmpegError):
            continue
        if codec.type == "video":
            names.add(codec.name)
    common = [n for n in _COMMON_DECODERS if n in names]
    return f"{len(names)} video codecs, among them {', '.join(common)} (all: av.codecs_available)"
