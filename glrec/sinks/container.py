"""Container files (.mp4, .mov, .mkv, .avi) muxed by PyAV, without re-encoding.

MP4/MOV are written *fragmented* while recording (a fragment at least every
second, the header with the first fragment), so a killed process leaves a file
that plays up to its last complete fragment. A clean :meth:`close` rewrites it
into a normal MP4 with the index at the front (``faststart``), then atomically
replaces the fragmented file. Matroska is crash-tolerant as written; its
clusters are closed at least every second for the same bound.

Each finished fragment or cluster goes to the OS at once (``flush_packets``):
without it FFmpeg keeps up to 256 KB in its write buffer, and a killed
64x64 recording lost every frame. A write that fails (full disk, file-size
limit) cuts the file back to its last complete fragment and raises
:class:`~glrec.errors.DiskFullError` naming the frames kept.

The output stream is described by parsing the encoder's first packet (which
carries the parameter sets in band) with FFmpeg's own parser, so packets from
any encoder (PyAV, NVENC) mux the same way.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
from pathlib import Path

import av

from ..encoders.cpu import frame_rate
from ..errors import OutputError
from ..frame import Packet
from ..options import VideoOptions
from .raw import write_error
from .trim import trim_to_complete_fragments

log = logging.getLogger("glrec")

# FFmpeg demuxer that parses one raw packet of each codec.
_PROBE_FORMAT = {"h264": "h264", "hevc": "hevc", "mjpeg": "mjpeg"}
_FRAGMENT_US = 1_000_000


# B-frames the CPU encoders use at glrec's default presets (x264 veryfast 3, x265 veryfast 4).
_DEFAULT_REORDER = {"h264": 3, "hevc": 4, "mjpeg": 0}


def container_options(ext: str, fps: float, reorder: int = 4) -> dict[str, str]:
    """Muxer options that bound what a killed process loses to one second of video."""
    # Hand every completed fragment/cluster to the OS right away instead of when
    # FFmpeg's 256 KB write buffer fills.
    options = {"flush_packets": "1"}
    if ext in (".mp4", ".mov"):
        # A fragment at each keyframe and before any packet 1 s past the fragment's first:
        # a fragment never holds more than one second of video, whatever the GOP.
        options["movflags"] = "frag_keyframe+empty_moov+default_base_moof+delay_moov"
        options["frag_duration"] = str(_FRAGMENT_US)
    elif ext == ".mkv":
        options["cluster_time_limit"] = str(cluster_time_limit_ms(fps, reorder))
    return options


def cluster_time_limit_ms(fps: float, reorder: int) -> int:
    """A Matroska cluster time limit that keeps every cluster within one second of frames.

    The muxer starts a cluster when a packet's *presentation* time is more than the
    limit past the cluster's first one. With B-frames, packets arrive up to
    ``reorder`` frames out of presentation order, so a cluster can hold up to
    ``limit + 2 * reorder + 1`` frames: the limit leaves that much room.
    """
    return max(0, int(1000 - (2 * reorder + 1) * 1000 / fps))


class ContainerSink:
    """Mux packets into a container file."""

    def __init__(self, path: Path, options: VideoOptions, *, finalize: bool = True) -> None:
        self.path = path
        self.options = options
        self.packets = 0
        self.bytes_written = 0
        self._rate = frame_rate(options.fps)
        self._time_base = 1 / self._rate
        ext = path.suffix.lower()
        self._fragmented = ext in (".mp4", ".mov")
        self._finalize = finalize and self._fragmented
        try:
            reorder = options.bframes if options.bframes is not None else _DEFAULT_REORDER.get(options.codec, 4)
            self._container = av.open(str(path), "w", options=container_options(ext, options.fps, reorder))
        except (OSError, av.FFmpegError) as exc:
            raise OutputError(f"Cannot open {str(path)!r} for writing: {exc}.") from exc
        self._stream: av.video.stream.VideoStream | None = None
        self._closed = False

    def _make_stream(self, first: Packet) -> av.video.stream.VideoStream:
        codec = self.options.codec
        probe = av.open(io.BytesIO(first.data), format=_PROBE_FORMAT[codec])
        try:
            template = probe.streams.video[0]
            stream = self._container.add_stream_from_template(template)
        finally:
            probe.close()
        stream.time_base = self._time_base
        # Tag the stream with the conversion glrec did; bitstreams without colour
        # fields (JPEG) would otherwise leave the container saying "unknown".
        cc = stream.codec_context
        primaries, transfer, matrix = self.options.colour.h273
        cc.color_primaries, cc.color_trc, cc.colorspace = primaries, transfer, matrix
        cc.color_range = self.options.colour.av_range
        return stream

    def write(self, packets: list[Packet]) -> None:
        if self._closed and packets:
            raise OutputError(f"{str(self.path)!r} is closed (after an earlier error); no more frames can be written.")
        for p in packets:
            if self._stream is None:
                self._stream = self._make_stream(p)
            pkt = av.Packet(p.data)
            pkt.pts, pkt.dts = p.pts, p.dts
            pkt.time_base = self._time_base
            pkt.is_keyframe = p.keyframe
            pkt.stream = self._stream
            try:
                self._container.mux(pkt)
            except (OSError, av.FFmpegError) as exc:
                raise self._fail(exc) from exc
            self.packets += 1
            self.bytes_written += len(p.data)

    def close(self) -> None:
        """Write the trailer (once) and, for MP4/MOV, rewrite into a normal seekable file.

        A recording of zero frames leaves no file: there would be nothing to play.
        """
        if self._closed:
            return
        self._closed = True
        try:
            self._container.close()
        except (OSError, av.FFmpegError) as exc:
            raise self._fail(exc) from exc
        if not self.packets and self._local:
            self.path.unlink(missing_ok=True)
        elif self._finalize:
            self._rewrite_unfragmented()

    @property
    def _local(self) -> bool:
        """True for a regular file (not a URL, nor a device such as /dev/full) that can be cut back or removed."""
        return isinstance(self.path, Path) and self.path.is_file()

    def _fail(self, exc: BaseException) -> OSError:
        """After a failed write: release the file, cut it back to the last complete fragment, count what is kept."""
        written = self.packets
        if not self._closed:
            self._closed = True
            with contextlib.suppress(OSError, av.FFmpegError):
                self._container.close()  # the trailer fails too, but this releases the file
        if not self._local:  # a stream or a device: what arrived cannot be read back
            return write_error(self.path, exc, written, None)
        trim_to_complete_fragments(self.path)
        self.packets = count_packets(self.path)
        if not self.packets:
            self.path.unlink(missing_ok=True)  # not one complete fragment: nothing a player could open
        return write_error(self.path, exc, written, self.packets)

    def _rewrite_unfragmented(self) -> None:
        tmp = self.path.with_name(f".{self.path.name}.glrec-tmp{self.path.suffix}")
        try:
            with av.open(str(self.path)) as src, av.open(str(tmp), "w", options={"movflags": "+faststart"}) as dst:
                s_in = src.streams.video[0]
                s_out = dst.add_stream_from_template(s_in)
                frame_ticks = max(1, round(self._time_base / s_in.time_base))
                for pkt in src.demux(s_in):
                    if pkt.dts is None:  # the demuxer's end-of-stream marker
                        continue
                    if not pkt.duration:
                        # The last packet of a fragment that holds one frame comes back without a
                        # duration; muxed like that, the edit list ends before it and players drop it.
                        pkt.duration = frame_ticks
                    pkt.stream = s_out
                    dst.mux(pkt)
            os.replace(tmp, self.path)
        except (OSError, av.FFmpegError) as exc:
            # The fragmented file is still complete and playable; keep it.
            log.warning("Could not rewrite %s as a normal MP4 (%s); kept the fragmented MP4.", self.path, exc)
            tmp.unlink(missing_ok=True)


def count_packets(path: Path) -> int:
    """The video packets an independent demuxer finds in ``path`` (0 if it cannot read it)."""
    try:
        with av.open(str(path)) as c:
            return sum(1 for p in c.demux(video=0) if p.size)
    except (OSError, av.FFmpegError, IndexError):
        return 0
