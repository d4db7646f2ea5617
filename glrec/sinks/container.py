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

Packets are muxed by :class:`~glrec.sinks.mux.Muxer`, as the network sink's are.
"""

from __future__ import annotations

import contextlib
import logging
import os
from pathlib import Path
from typing import Any

import av

from ..errors import OutputError
from ..frame import Packet
from ..options import VideoOptions
from .mux import Muxer
from .raw import write_error
from .registry import OUTPUTS, OutputKind
from .trim import trim_to_complete_fragments

log = logging.getLogger("glrec")

_FRAGMENT_US = 1_000_000


# B-frames the CPU encoders use at glrec's default presets (x264 veryfast 3, x265 veryfast 4).
_DEFAULT_REORDER = {"h264": 3, "hevc": 4, "mjpeg": 0}


def container_options(kind: OutputKind, fps: float, reorder: int = 4) -> dict[str, str]:
    """Muxer options that bound what a killed process loses to one second of video."""
    # Hand every completed fragment/cluster to the OS right away instead of when
    # FFmpeg's 256 KB write buffer fills.
    options = {"flush_packets": "1"}
    if kind.fragmented:
        # A fragment at each keyframe and before any packet 1 s past the fragment's first:
        # a fragment never holds more than one second of video, whatever the GOP.
        options["movflags"] = "frag_keyframe+empty_moov+default_base_moof+delay_moov"
        options["frag_duration"] = str(_FRAGMENT_US)
    elif kind.muxer == "matroska":
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
    """Mux packets into a container file.

    ``audio`` (an :class:`~glrec.sources.audio.AudioPassthrough`) copies a video
    input's audio into the file alongside the frames.
    """

    def __init__(self, path: Path, options: VideoOptions, *, finalize: bool = True, audio: Any = None) -> None:
        self.path = path
        self.options = options
        self._audio = audio
        kind = OUTPUTS[path.suffix.lower()]
        self._finalize = finalize and kind.fragmented
        try:
            reorder = options.bframes if options.bframes is not None else _DEFAULT_REORDER.get(options.codec, 4)
            container = av.open(
                str(path), "w", format=kind.muxer, options=container_options(kind, options.fps, reorder)
            )
        except (OSError, av.FFmpegError) as exc:
            raise OutputError(f"Cannot open {str(path)!r} for writing: {exc}.") from exc
        self._mux = Muxer(container, options)
        if audio is not None:
            self._mux.after_stream = lambda: audio.add_streams(container)
        self._container = container
        self._time_base = self._mux.time_base
        self._closed = False
        self.packets = 0

    @property
    def bytes_written(self) -> int:
        return self._mux.bytes_written

    def write(self, packets: list[Packet]) -> None:
        if self._closed and packets:
            raise OutputError(f"{str(self.path)!r} is closed (after an earlier error); no more frames can be written.")
        for p in packets:
            try:
                self._mux.mux(p)
                if self._audio is not None:  # keep the file interleaved: audio up to this frame's time
                    self._audio.mux_until(self._container, (p.dts + 1) / self.options.fps)
            except (OSError, av.FFmpegError) as exc:
                raise self._fail(exc) from exc
            self.packets += 1

    def close(self) -> None:
        """Write the trailer (once) and, for MP4/MOV, rewrite into a normal seekable file.

        A recording of zero frames leaves no file: there would be nothing to play.
        """
        if self._closed:
            return
        self._closed = True
        try:
            if self._audio is not None and self.packets:
                self._audio.finish(self._container, self.packets / self.options.fps)
            self._container.close()
        except (OSError, av.FFmpegError) as exc:
            raise self._fail(exc) from exc
        if not self.packets and self._local:
            self.path.unlink(missing_ok=True)
        elif self._finalize and self.packets:  # no packets: nothing to rewrite (there may be no file at all)
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
                outs = {s.index: dst.add_stream_from_template(s) for s in src.streams}  # video, and copied audio
                frame_ticks = max(1, round(self._time_base / s_in.time_base))
                for pkt in src.demux(list(src.streams)):
                    if pkt.dts is None:  # the demuxer's end-of-stream marker
                        continue
                    if not pkt.duration and pkt.stream.index == s_in.index:
                        # The last packet of a fragment that holds one frame comes back without a
                        # duration; muxed like that, the edit list ends before it and players drop it.
                        pkt.duration = frame_ticks
                    pkt.stream = outs[pkt.stream.index]
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
