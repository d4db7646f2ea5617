"""Container files (.mp4, .mov, .mkv, .ts, .avi) muxed by PyAV, without re-encoding.

MP4/MOV are written *fragmented* while recording (a fragment at least every
second, the header with the first fragment), so a killed process leaves a file
that plays up to its last complete fragment. A clean :meth:`ContainerSink.close` rewrites it
into a normal MP4 with the index at the front (``faststart``), then atomically
replaces the fragmented file. Matroska is crash-tolerant as written; its
clusters are closed at least every second for the same bound. MPEG-TS needs
neither (:mod:`glrec.sinks.mpegts`).

Each finished fragment or cluster goes to the OS at once (``flush_packets``):
without it FFmpeg keeps up to 256 KB in its write buffer, and a killed
64x64 recording lost every frame. A write that fails (full disk, file-size
limit) cuts the file back to its last complete fragment and raises
:class:`~glrec.errors.DiskFullError` naming the frames kept.

FFmpeg does not report every failed write (the last buffer, flushed as the
file closes, can fail silently), so the muxer writes through
:class:`CheckedWriter`, which sees every error itself.

All-intra video in Matroska (MJPEG: every packet a keyframe) makes FFmpeg
close a cluster, and write to the OS, at nearly every packet. There the sink
holds the muxer's bytes and writes them every half second of video
(:data:`HOLD_SECONDS`), inside the one-second bound: many MJPEG files at once
(``glrec.BatchRecorder``) spent about a third of their muxing time in those
writes. The file is made with
the first packet and replaces an existing one only once complete
(:mod:`glrec.sinks.paths`).

Packets are muxed by :class:`~glrec.sinks.mux.Muxer`, as the network sink's are.
"""

from __future__ import annotations

import contextlib
import errno
import io
import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO

import av

from ..errors import DiskFullError, GlrecError, OutputError
from ..frame import Packet
from ..timebase import frame_rate
from . import mpegts
from .mux import Muxer
from .paths import OutputFile
from .raw import DISK_FULL, os_words, write_error
from .registry import OUTPUTS, OutputKind
from .stream_info import DescribesStream, StreamInfo
from .trim import trim_to_complete_fragments

log = logging.getLogger("glrec")

_FRAGMENT_US = 1_000_000
#: Video held in memory between writes where the muxer writes every packet (all-intra Matroska).
HOLD_SECONDS = 0.5


# B-frames the CPU encoders use at glrec's default presets (x264 veryfast 3, x265 veryfast 4).
_DEFAULT_REORDER = {"h264": 3, "hevc": 4, "vp9": 0, "mjpeg": 0, "gif": 0}


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
    elif kind.muxer in ("matroska", "webm"):
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


class CheckedWriter(io.RawIOBase):
    """The file object a muxer writes through: every byte written in full, the first error kept.

    FFmpeg does not check every write: the last buffer, flushed as the file is
    closed, can fail on a full disk without any error reaching the caller (a
    finished MP4 then silently lacked its last frames). Writing through this
    object, the sink sees every failure itself. ``opener`` makes the file on
    the first write, so a recording that never writes leaves no file.
    """

    def __init__(self, opener: Callable[[], BinaryIO], seekable: bool = True) -> None:
        super().__init__()
        self._opener = opener
        self._seekable = seekable
        self._file: BinaryIO | None = None
        self.error: OSError | None = None
        self.written = 0  # bytes taken (the file's size where the muxer never seeks back)
        self.holding = False  # keep what is written until release_held() (see the module docstring)
        self._held: list[bytes] = []
        self._held_bytes = 0

    def writable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return self._seekable

    def _target(self) -> BinaryIO:
        if self._file is None:
            self._file = self._opener()
        return self._file

    def write(self, data: Any) -> int:
        if self.error is not None:
            raise self.error
        view = memoryview(data).cast("B")
        total = len(view)
        if self.holding:  # PyAV hands each write over as a new bytes object: kept as it is
            self._held.append(data if type(data) is bytes else view.tobytes())
            self._held_bytes += total
            self.written += total
            return total
        self._write(view)
        self.written += total
        return total

    def release_held(self) -> None:
        """Write what is held to the file (raises the OS's error, kept for later calls)."""
        if self._held:
            held, self._held, self._held_bytes = self._held, [], 0
            self._write(memoryview(b"".join(held)))

    def _write(self, view: memoryview) -> None:
        try:
            f = self._target()
            while view:  # an unbuffered write may stop short at the last free block; the next call says why
                n = f.write(view)
                view = view[n or 0 :]
        except OSError as exc:
            self.error = exc
            raise

    def seek(self, offset: int, whence: int = 0) -> int:
        self.release_held()
        return self._target().seek(offset, whence)

    def tell(self) -> int:
        return (self._file.tell() if self._file is not None else 0) + self._held_bytes

    def close(self) -> None:
        try:
            if self.error is None:
                self.release_held()
        except OSError:
            pass  # kept in self.error for the sink to report
        f, self._file = self._file, None
        try:
            if f is not None:
                f.close()
        except OSError as exc:
            self.error = self.error or exc
        finally:
            super().close()


class ContainerSink:
    """Mux packets into a container file, made with its first packet (see :mod:`glrec.sinks.paths`).

    ``audio`` (an :class:`~glrec.sources.video.audio.AudioPassthrough`) copies a video
    input's audio into the file alongside the frames.
    """

    def __init__(
        self, path: Path, options: DescribesStream, *, finalize: bool = True, overwrite: bool = False, audio: Any = None
    ) -> None:
        self.path = path
        self.options = options = StreamInfo.of(options)  # what the file says of its stream; no encoder knobs
        self._audio = audio
        self._kind = kind = OUTPUTS[path.suffix.lower()]
        self._finalize = finalize and kind.fragmented
        reorder = options.bframes if options.bframes is not None else _DEFAULT_REORDER.get(options.codec, 4)
        self._container_options = container_options(kind, options.fps, reorder)
        # Packets held between writes (0: none): all-intra Matroska, see the module docstring.
        intra = options.codec == "mjpeg" and kind.muxer == "matroska"
        self._hold = max(1, int(options.fps * HOLD_SECONDS)) if intra else 0
        self._held_packets = 0
        self._out = OutputFile(path, overwrite)
        self._writer: CheckedWriter | None = None
        self._container: av.container.OutputContainer | None = None
        self._mux: Muxer | None = None
        self._closed = False
        self.packets = 0

    @property
    def bytes_written(self) -> int:
        return self._mux.bytes_written if self._mux is not None else 0

    def _open(self) -> Muxer:
        self._writer = CheckedWriter(self._out.open, seekable=self._out.regular)
        self._writer.holding = self._hold > 1
        try:
            self._container = av.open(self._writer, "w", format=self._kind.muxer, options=self._container_options)
        except (OSError, av.FFmpegError) as exc:
            raise OutputError(f"Cannot open {str(self.path)!r} for writing: {exc}.") from exc
        # Apple's players open HEVC in MP4/MOV only as 'hvc1'; FFmpeg's default is 'hev1'.
        tag = "hvc1" if self.options.codec == "hevc" and self._kind.fragmented else None
        mux = Muxer(self._container, self.options, codec_tag=tag)
        if self._audio is not None:
            container, audio = self._container, self._audio
            mux.after_stream = lambda: audio.add_streams(container)
        return mux

    def write(self, packets: list[Packet]) -> None:
        if self._closed and packets:
            raise OutputError(f"{str(self.path)!r} is closed (after an earlier error); no more frames can be written.")
        for p in packets:
            if self._mux is None:
                self._mux = self._open()
            try:
                self._mux.mux(p)
                if self._audio is not None:  # keep the file interleaved: audio up to this frame's time
                    self._audio.mux_until(self._container, (p.dts + 1) / self.options.fps)
                if self._hold > 1:
                    self._held_packets += 1
                    if self._held_packets >= self._hold:
                        self._held_packets = 0
                        assert self._writer is not None
                        self._writer.release_held()
            except (OSError, av.FFmpegError) as exc:
                raise self._fail(self._write_error() or exc) from exc
            self.packets += 1

    def _write_error(self) -> OSError | None:
        return self._writer.error if self._writer is not None else None

    def close(self) -> None:
        """Write the trailer (once) and, for MP4/MOV, rewrite into a normal seekable file.

        A recording of zero frames leaves no file: there would be nothing to play.
        A write that fails here (the last fragment, the trailer) raises like one
        while recording; the file is cut back to what is complete.
        """
        if self._closed:
            return
        self._closed = True
        if self._container is None:
            return  # not one packet: no file was made
        try:
            if self._audio is not None and self.packets:
                self._audio.finish(self._container, self.packets / self.options.fps)
            self._container.close()
            assert self._writer is not None
            if self._kind.muxer == "mpegts":  # a short transport stream is padded to be recognised
                self._writer.write(mpegts.padding(self._writer.written))
        except (OSError, av.FFmpegError) as exc:
            raise self._fail(self._write_error() or exc) from exc
        out, writer = self._out, self._writer
        writer.close()
        if writer.error is not None:  # FFmpeg let it pass (the final flush); the sink does not
            raise self._fail(writer.error) from writer.error
        if not self.packets:
            out.discard()
        elif self._finalize and out.regular:
            self._rewrite_unfragmented()
        else:
            out.commit()

    def _fail(self, exc: BaseException) -> BaseException:
        """After a failed write: release the file, cut it back to the last complete fragment, count what is kept."""
        written = self.packets
        if not self._closed:
            self._closed = True
            with contextlib.suppress(OSError, av.FFmpegError):
                if self._container is not None:
                    self._container.close()  # the trailer fails too, but this releases the file
        if self._writer is not None:
            with contextlib.suppress(OSError):
                self._writer.close()
        if isinstance(exc, GlrecError):  # refused before any byte was written (the output appeared meanwhile)
            return exc
        out = self._out
        if not out.regular:  # a device or a pipe: what arrived cannot be read back
            return write_error(self.path, exc, written, None)
        self.packets = 0
        if out.created:
            trim_to_complete_fragments(out.work, frames=written)
            self.packets = count_packets(out.work, self._kind.muxer)
        if not self.packets:
            out.discard()  # not one complete fragment: nothing a player could open
        return write_error(self.path, exc, written, self.packets, out.describe_kept(self.packets))

    def _rewrite_unfragmented(self) -> None:
        """Rewrite the complete fragmented file into a normal MP4 (index first) and make that the output.

        If the rewrite fails the fragmented file is complete and playable, so it
        becomes the output instead; a full disk is still reported (DiskFullError,
        with every frame kept), anything else is logged.
        """
        out = self._out
        tmp = self.path.with_name(f".{self.path.name}.glrec-tmp{self.path.suffix}")
        try:
            muxed = self._remux_faststart(out.work, tmp)
            # The faststart pass reopens the file by name, out of reach of CheckedWriter; count what it holds.
            found = count_packets(tmp)
            if muxed != self.packets or found != self.packets:
                raise OSError(
                    errno.ENOSPC if _no_space_left(tmp) else errno.EIO,
                    f"the rewritten file holds {found} of {self.packets} frames",
                )
            out.commit(tmp)  # the rewritten file is the output; the fragmented one it came from goes
        except (OSError, av.FFmpegError) as exc:
            tmp.unlink(missing_ok=True)
            out.commit()  # the fragmented file is complete: it is the recording
            if getattr(exc, "errno", None) in DISK_FULL:
                err = DiskFullError(
                    exc.errno,
                    f"Rewriting {str(self.path)!r} as a normal MP4 failed ({os_words(exc)}): the disk is full or "
                    "a file-size limit was reached. The file is the complete fragmented MP4 with all "
                    f"{self.packets} frames (it plays; some players seek it slowly). Free space and record again "
                    "for a normal MP4.",
                )
                err.frames_written = err.frames_kept = self.packets
                raise err from exc
            log.warning(
                "Could not rewrite %s as a normal MP4 (%s); it is the complete fragmented MP4 with all %d frames.",
                self.path,
                exc,
                self.packets,
            )

    def _remux_faststart(self, src_path: Path, dst_path: Path) -> int:
        """Copy every stream (the video, and audio copied from an input) into a faststart MP4; count video packets."""
        muxed = 0
        with av.open(str(src_path)) as src, av.open(str(dst_path), "w", options={"movflags": "+faststart"}) as dst:
            s_in = src.streams.video[0]
            outs = {s.index: dst.add_stream_from_template(s) for s in src.streams}
            outs[s_in.index].codec_tag = s_in.codec_tag  # the template drops it, and HEVC would fall back to 'hev1'
            frame_ticks = max(1, round(1 / frame_rate(self.options.fps) / s_in.time_base))
            for pkt in src.demux(list(src.streams)):
                if pkt.dts is None:  # the demuxer's end-of-stream marker
                    continue
                video = pkt.stream.index == s_in.index
                if video and not pkt.duration:
                    # The last packet of a fragment that holds one frame comes back without a
                    # duration; muxed like that, the edit list ends before it and players drop it.
                    pkt.duration = frame_ticks
                pkt.stream = outs[pkt.stream.index]
                dst.mux(pkt)
                muxed += video
        return muxed


def _no_space_left(path: Path) -> bool:
    """True when the file system holding ``path`` has (almost) no block left for it."""
    try:
        st = os.statvfs(path.parent)
    except OSError:
        return False
    return st.f_bavail * st.f_frsize < 64 * 1024


def count_packets(path: Path, format: str | None = None) -> int:
    """The video packets an independent demuxer (of ``format``; default: probed) finds in ``path`` (0 if none)."""
    try:
        with av.open(str(path), format=format) as c:
            return sum(1 for p in c.demux(video=0) if p.size)
    except (OSError, av.FFmpegError, IndexError):
        return 0
