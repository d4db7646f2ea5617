"""The output registry: which sink writes a path or URL, which codecs it carries, how it is muxed.

One table, used by the options check, the pipeline's plan (raw outputs), the
sinks and the CLI's help. Adding an output kind is one :class:`OutputKind`
entry here and, if no existing sink fits, a sink module beside this one.
"""

from __future__ import annotations

import importlib
import inspect
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from ..errors import ConfigError
from .paths import has_frame_pattern

if TYPE_CHECKING:
    from .sink import Sink
    from .stream_info import DescribesStream


@dataclass(frozen=True)
class OutputKind:
    """One kind of output."""

    name: str
    codecs: tuple[str, ...]
    sink: str  # "module:Class" under glrec.sinks, imported when opened (PyAV-free until then)
    muxer: str | None = None  # FFmpeg muxer for container outputs
    raw: bool = False  # an elementary stream with no container: colour lives in the bitstream (VUI)
    image_sequence: bool = False  # one file per frame; the name holds a printf pattern
    fragmented: bool = False  # written fragmented while recording, rewritten normal on a clean close
    video_only: bool = False  # a format with no audio (GIF), though FFmpeg muxes it
    note: str = ""

    def open(self, target: str | Path, options: DescribesStream, **kwargs: Any) -> Sink:
        """Open this kind's sink on ``target`` for the stream ``options`` describes (the sink class is imported now)."""
        return self._sink_class()(target, options, **kwargs)

    def keywords(self) -> tuple[str, ...]:
        """What its sink takes as ``sink_options`` (its keyword-only arguments but overwrite, which glrec passes)."""
        params = inspect.signature(self._sink_class().__init__).parameters.values()
        return tuple(p.name for p in params if p.kind is p.KEYWORD_ONLY and p.name != "overwrite")

    def _sink_class(self) -> Any:
        module, _, cls = self.sink.partition(":")
        return getattr(importlib.import_module(f"glrec.sinks.{module}"), cls)


_MP4 = OutputKind("mp4", ("h264", "hevc"), "container:ContainerSink", muxer="mp4", fragmented=True,
                  note="fragmented while recording, a normal MP4 (index first) on a clean finish")  # fmt: skip
_MOV = OutputKind("mov", ("h264", "hevc", "mjpeg"), "container:ContainerSink", muxer="mov", fragmented=True,
                  note="as .mp4")  # fmt: skip
_MKV = OutputKind("mkv", ("h264", "hevc", "vp9", "mjpeg"), "container:ContainerSink", muxer="matroska",
                  note="Matroska, playable up to the last cluster if killed")  # fmt: skip
_WEBM = OutputKind("webm", ("vp9",), "container:ContainerSink", muxer="webm",
                   note="WebM (Matroska for the web), playable up to the last cluster if killed")  # fmt: skip
_TS = OutputKind("ts", ("h264", "hevc"), "container:ContainerSink", muxer="mpegts",
                 note="MPEG-TS, playable up to the last whole frame if killed")  # fmt: skip
_AVI = OutputKind("avi", ("mjpeg",), "container:ContainerSink", muxer="avi", note="AVI has no colour fields")
_H264 = OutputKind("h264", ("h264",), "raw:AnnexBSink", raw=True, note="raw Annex-B")
_HEVC = OutputKind("hevc", ("hevc",), "raw:AnnexBSink", raw=True, note="raw Annex-B")
# AV1 goes to .ivf only: PyAV (18) cannot make an AV1 output stream from parsed
# packets, because its template lookup wants an encoder named like the decoder.
_IVF = OutputKind("ivf", ("av1",), "raw:IvfSink", raw=True, note="AV1 in IVF")
_GIF = OutputKind("gif", ("gif",), "container:ContainerSink", muxer="gif", video_only=True,
                  note="animated GIF, looping, 256 colours a frame; plays up to the last frame if killed")  # fmt: skip
_JPG = OutputKind("jpg", ("mjpeg",), "images:ImageSequenceSink", image_sequence=True,
                  note="one JPEG per frame, name_%06d.jpg")  # fmt: skip
_PNG = OutputKind("png", ("png",), "images:ImageSequenceSink", image_sequence=True,
                  note="one lossless PNG per frame, name_%06d.png")  # fmt: skip

#: Output kinds by file extension.
OUTPUTS: dict[str, OutputKind] = {
    ".mp4": _MP4, ".mov": _MOV, ".mkv": _MKV, ".webm": _WEBM, ".ts": _TS, ".avi": _AVI,
    ".h264": _H264, ".264": _H264, ".hevc": _HEVC, ".h265": _HEVC, ".265": _HEVC,
    ".ivf": _IVF, ".gif": _GIF, ".jpg": _JPG, ".jpeg": _JPG, ".png": _PNG,
}  # fmt: skip

#: The file each codec is recorded into where glrec picks one, appended to a name (PNG's is a sequence):
#: ``glrec doctor``'s round trips, ``glrec bench``'s rows, ``glrec info``'s auto choices.
CODEC_SUFFIX: dict[str, str] = {
    "h264": ".mp4", "hevc": ".mp4", "av1": ".ivf", "vp9": ".webm", "mjpeg": ".mkv", "gif": ".gif",
    "png": "_%06d.png",
}  # fmt: skip

#: Network outputs by URL scheme (muxed by FFmpeg's protocols; see :mod:`glrec.sinks.network`).
STREAMS: dict[str, OutputKind] = {
    "udp": OutputKind("udp", ("h264", "hevc"), "network:NetworkSink", muxer="mpegts", note="MPEG-TS over UDP"),
    "rtsp": OutputKind("rtsp", ("h264", "hevc"), "network:NetworkSink", muxer="rtsp", note="RTSP push (TCP)"),
    "rtmp": OutputKind("rtmp", ("h264",), "network:NetworkSink", muxer="flv", note="RTMP push (FLV)"),
}


def is_stream_url(target: str | os.PathLike[str]) -> bool:
    """True for an output that is a network stream (``udp://``, ``rtsp://``, ...), not a file.

    (Inputs are told apart by :func:`glrec.sources.video.media.is_url`, which knows the input protocols.)
    """
    return isinstance(target, str) and "://" in target


def output_kind(target: str | os.PathLike[str], codec: str) -> OutputKind:
    """The output kind for a path or URL, after checking it can carry ``codec``."""
    if is_stream_url(target):
        assert isinstance(target, str)
        scheme = urlsplit(target).scheme
        kind = STREAMS.get(scheme)
        if kind is None:
            raise ConfigError(
                f"Unknown stream URL {target!r}. Use one of: udp://HOST:PORT, rtsp://HOST:PORT/PATH, "
                "rtmp://HOST:PORT/APP/STREAM."
            )
        if codec not in kind.codecs:
            raise ConfigError(
                f"{scheme}:// streams carry {' or '.join(kind.codecs)} here, not {codec}; use --codec h264."
            )
        return kind
    ext = Path(target).suffix.lower()
    kind = OUTPUTS.get(ext)
    if kind is None:
        raise ConfigError(
            f"Unknown output type {ext or '(no extension)'!r} for {os.fspath(target)!r}. "
            f"Valid: {', '.join(sorted(OUTPUTS))}, or a udp://, rtsp:// or rtmp:// URL."
        )
    if kind.image_sequence and not has_frame_pattern(target):
        raise ConfigError(
            f"An image sequence needs a frame-number pattern in its name, e.g. {Path(target).with_suffix('')!s}"
            f"_%06d{ext}; got {os.fspath(target)!r}."
        )
    if codec not in kind.codecs:
        raise ConfigError(
            f"A {ext} file cannot carry {codec}. For {ext} use codec {' or '.join(kind.codecs)}, "
            f"or pick an extension that takes {codec}: "
            f"{', '.join(e for e, k in OUTPUTS.items() if codec in k.codecs)}."
        )
    return kind


def sole_codec(target: str | os.PathLike[str]) -> str | None:
    """The one codec ``target`` can carry (``.hevc``: hevc, ``.ivf``: av1, ``.webm``: vp9, ``.avi``/``.jpg``: mjpeg,
    ``.gif``: gif, ``.png``: png), else None."""
    url = is_stream_url(target)
    kind = STREAMS.get(urlsplit(str(target)).scheme) if url else OUTPUTS.get(Path(target).suffix.lower())
    return kind.codecs[0] if kind is not None and len(kind.codecs) == 1 else None


def custom_output(codec: str) -> OutputKind:
    """The output kind of a sink the caller made (a network stream, a viewer): a container, not raw."""
    return OutputKind("custom", (codec,), "")


def describe() -> str:
    """One line per output kind, for ``--help``."""
    by_kind: dict[str, list[str]] = {}
    for ext, kind in OUTPUTS.items():
        by_kind.setdefault(kind.name, []).append(ext)
    return ", ".join("/".join(exts) for exts in by_kind.values())


def open_sink(target: str | os.PathLike[str], options: DescribesStream, **kwargs: Any) -> Sink:
    """Open the sink for a path's extension or a URL's scheme (see the module docstring).

    The sink is given the stream's description (:class:`~glrec.sinks.stream_info.StreamInfo`), not ``options``.
    """
    from .stream_info import StreamInfo

    stream = StreamInfo.of(options)
    kind = output_kind(target, stream.codec)
    return kind.open(str(target) if is_stream_url(target) else Path(target), stream, **kwargs)
