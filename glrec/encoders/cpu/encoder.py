"""The CPU encoder: libx264, libx265, SVT-AV1, libvpx-vp9, mjpeg or gif through PyAV, in process.

Frames mostly arrive converted to the encoder's pixel format (:func:`input_format`)
by the GL convert stage (host frames from the PBO readback; CUDA device frames,
the GPU path without NVENC, are copied to the host once, on the encode thread).
Arrays written where GL is software skip GL (:mod:`glrec.sources.frames.direct`): they
come as a PyAV frame swscale already made, or as packed ``gray``, ``rgb24`` or
``rgba`` that swscale converts here, in the same way
(:mod:`glrec.convert.swscale`).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from typing import Any, cast

import av
import numpy as np

from ...convert.swscale import PACKED_FORMATS, SwsConverter
from ...errors import EncoderError, EncoderUnavailableError
from ...frame import Frame, Packet
from ...video_facts import VideoFacts
from ..encoder import encode_each, host_picture
from ..jpeg_options import ffmpeg_qscale
from ..latency import LIVE_PRESET, cpu_live_options, live_gop, one_frame_vbv
from .gif import GifPalette
from .limits import CPU_ENCODERS, input_format
from .options import CpuOptions

log = logging.getLogger("glrec")

# Frame threads, as the ffmpeg command line uses (so glrec and an ffmpeg pipe run
# x264 with identical settings): x264 keeps encoding on its own threads while the
# thread that feeds it waits (for the GIL, for the next frame), where slice threads
# only work inside each encode() call. Not with tune=zerolatency: frame threads
# hold frames back (the first packet comes two calls late on 2 cores).
_THREAD_TYPE = "FRAME"

# Defaults chosen for recordings people keep: visually transparent quality at
# a speed that keeps up with real-time 1080p on a few cores.
_DEFAULT_PRESET = {
    "libx264": "veryfast", "libx265": "veryfast", "libsvtav1": "10", "libvpx-vp9": "5", "mjpeg": None, "gif": None,
}  # fmt: skip
# Frames a decode timestamp may trail its presentation timestamp by (B-frame pyramids of 16).
_MAX_REORDER = 64
_DEFAULT_CRF = {"libx264": 20, "libx265": 24, "libsvtav1": 35, "libvpx-vp9": 32, "mjpeg": None, "gif": None}
# Host frames that arrive unconverted (see the module docstring).
_PACKED = frozenset(PACKED_FORMATS.values())


def _crop(frame: av.VideoFrame, width: int, height: int) -> av.VideoFrame:
    """The top-left ``width`` x ``height`` of ``frame``, each plane cut to its share.

    A JPEG of odd size is converted with one more row/column (4:2:0 planes are even; the edge repeated), so its
    chroma planes already have the odd picture's size (half, rounded up): only the luma loses the extra edge.
    """
    out = av.VideoFrame(width, height, frame.format.name)
    for src, dst in zip(frame.planes, out.planes, strict=True):
        rows = np.frombuffer(memoryview(src), np.uint8).reshape(src.height, src.line_size)
        into = np.frombuffer(memoryview(dst), np.uint8).reshape(dst.height, dst.line_size)
        into[:, : dst.width] = rows[: dst.height, : dst.width]
    return out


def _libvpx_options(opts: dict[str, str]) -> dict[str, str]:
    """glrec's options as libvpx-vp9 names them: the preset is its ``cpu-used`` (0 slowest .. 8) at the ``good``
    deadline; crf is constant quality only with no target bitrate (``b`` 0, where FFmpeg's default is 200 kb/s);
    row-based threads, which its defaults leave off."""
    out = {k: v for k, v in opts.items() if k != "preset"}
    out.update({"deadline": "good", "cpu-used": opts["preset"], "row-mt": "1"})
    if "crf" in out:
        out["crf"], out["b"] = str(int(float(out["crf"]))), "0"
    return out


class CpuEncoder:
    """Encode planar YUV host frames with a libavcodec software encoder.

    Opened with the stream's ``facts`` and the CPU encoder's own ``options``
    (``device`` and ``raw_output`` change nothing here: CUDA frames are copied to the host).
    """

    def __init__(self, facts: VideoFacts, options: CpuOptions, device: object = None, raw_output: bool = False) -> None:
        self.facts, self.options = facts, options
        self.codec = facts.codec
        name = CPU_ENCODERS[facts.codec]
        if name not in av.codecs_available:
            raise EncoderUnavailableError(
                f"This PyAV/FFmpeg build has no {name} encoder for {facts.codec}. "
                "Install PyAV from PyPI (pip install av), whose wheels include it, or pick another codec."
            )
        self.name = name
        cc = cast(av.VideoCodecContext, av.CodecContext.create(name, "w"))
        w, h = facts.encoded_size
        cc.width, cc.height = w, h
        rate = facts.rate
        cc.framerate = rate
        cc.time_base = 1 / rate
        pix_fmt = input_format(facts)
        # GIF: the planes become a frame of palette indices first (glrec.encoders.cpu.gif)
        self._palette = GifPalette(facts.encoded_size, pix_fmt, facts.colour, cc.time_base) if name == "gif" else None
        cc.pix_fmt = "pal8" if name == "gif" else pix_fmt
        primaries, transfer, matrix = facts.colour.h273
        cc.color_primaries, cc.color_trc, cc.colorspace = primaries, transfer, matrix
        cc.color_range = facts.colour.av_range
        cc.thread_count = options.threads or 0  # 0: let the encoder pick (x264: 1.5 x cores)
        opts: dict[str, str] = {}
        preset = options.preset or (LIVE_PRESET if facts.live and name != "mjpeg" else _DEFAULT_PRESET[name])
        if preset is not None:
            opts["preset"] = str(preset)
        if options.qp is not None:
            opts["qp"] = str(options.qp)
        elif options.bitrate is not None:
            cc.bit_rate = int(options.bitrate)
        elif options.crf is not None or _DEFAULT_CRF[name] is not None:
            opts["crf"] = str(options.crf if options.crf is not None else _DEFAULT_CRF[name])
        if name == "mjpeg":
            # quality on libjpeg's scale, as the other JPEG encoders take it: FFmpeg's nearest q-scale
            cc.qmin = cc.qmax = ffmpeg_qscale(options.jpeg_quality)
            opts["strict"] = "-1"
        if options.gop is not None:
            cc.gop_size = options.gop
        if options.bframes is not None:
            cc.max_b_frames = options.bframes
        if facts.live:
            opts.update(cpu_live_options(name))
            cc.gop_size, cc.max_b_frames = live_gop(facts, options), 0
            if options.bitrate is not None:  # cap every frame at its share of the channel
                cc.rc_max_rate, cc.rc_buffer_size = int(options.bitrate), one_frame_vbv(facts, options)  # type: ignore[attr-defined]
        if name == "libx265":
            opts["x265-params"] = "log-level=error"
        elif name == "libsvtav1":
            os.environ.setdefault("SVT_LOG", "1")  # SVT-AV1 prints its banner to stderr unless told
            opts["svtav1-params"] = "enable-stat-report=0"
        elif name == "libvpx-vp9":
            opts = _libvpx_options(opts)
        if name == "libx264" and "zerolatency" not in opts.get("tune", ""):
            cc.thread_type = _THREAD_TYPE
        # The escape hatch: the user's own codec options, after (and over) glrec's.
        opts.update(dict(options.encoder_options))
        cc.options = opts
        try:
            cc.open()
        except av.FFmpegError as exc:
            shown = {**opts, **({"bit_rate": str(cc.bit_rate)} if cc.bit_rate else {})}  # all it was opened with
            raise EncoderError(f"Opening {name} with {shown} failed: {exc}. Check preset and rate options.") from exc
        self._cc = cc
        self._time_base = cc.time_base  # read once: each read makes a new Fraction
        self._av_format = pix_fmt
        self._sws: SwsConverter | None = None  # for packed RGB/grey host frames, made at the first one
        self._keyframe_requested = False
        self._last_dts: int | None = None
        log.info("encoder: %s %dx%d %s @ %s fps, %s", name, w, h, pix_fmt, rate, opts)

    def encode(self, frame: Frame) -> list[Packet]:
        frame = host_picture(frame, "The CPU encoder")  # a CUDA device frame: one copy to the host, here
        if frame.av_frame is not None:
            vf = frame.av_frame
        elif frame.pix_fmt in _PACKED:
            if self._sws is None:
                self._sws = SwsConverter(self._av_format, self.facts.colour)
            vf = self._sws.convert(frame.data)
        else:
            vf = av.VideoFrame.from_ndarray(np.ascontiguousarray(frame.data), format=self._av_format)
            if (vf.width, vf.height) != (self._cc.width, self._cc.height):
                vf = _crop(vf, self._cc.width, self._cc.height)
        vf.pts = frame.index
        vf.time_base = self._time_base
        if self._palette is not None:
            vf = self._palette(vf)
        if self._keyframe_requested:
            self._keyframe_requested = False
            vf.pict_type = av.video.frame.PictureType.I
        try:
            return self._checked(self._convert(self._cc.encode(vf)))
        except av.FFmpegError as exc:
            raise EncoderError(f"{self.name} failed to encode frame {frame.index}: {exc}") from exc

    def encode_batch(self, frames: Sequence[Frame]) -> list[Packet]:
        """Each frame in turn (libavcodec takes one frame a call)."""
        return encode_each(self, frames)

    def request_keyframe(self) -> None:
        """Make the next encoded frame a keyframe (IDR with parameter sets); safe from any thread."""
        self._keyframe_requested = True  # a plain store: read once per frame by the encode thread

    def flush(self) -> list[Packet]:
        try:
            return self._checked(self._convert(self._cc.encode(None)))
        except av.FFmpegError as exc:
            raise EncoderError(f"{self.name} failed while flushing its last frames: {exc}") from exc

    def _checked(self, packets: list[Packet]) -> list[Packet]:
        """Replace decode timestamps that cannot be right.

        libx265 hands out uninitialised DTS values (e.g. -7089336938131513954) when a
        recording has only one or two frames; muxers then refuse the packet or write
        nonsense times. A DTS is only plausible at or before the PTS, within the
        encoder's reordering window, and after the previous one.
        """
        out = []
        for p in packets:
            dts = p.dts
            if not (p.pts - _MAX_REORDER <= dts <= p.pts) or (self._last_dts is not None and dts <= self._last_dts):
                dts = p.pts if self._last_dts is None else min(p.pts, self._last_dts + 1)
                p = Packet(p.data, p.pts, dts, p.keyframe)
            self._last_dts = dts
            out.append(p)
        return out

    @staticmethod
    def _convert(packets: list[Any]) -> list[Packet]:  # av.Packet
        return [Packet(bytes(p), int(p.pts or 0), int(p.dts or 0), bool(p.is_keyframe)) for p in packets]

    def close(self) -> None:
        self._cc = None  # type: ignore[assignment]
