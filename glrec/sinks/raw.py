"""Raw bitstreams: Annex-B (.h264, .hevc) and IVF (.ivf, for AV1).

Annex-B packets are written back to back.

The CPU and NVENC encoders repeat the parameter sets before every keyframe, so
the file can be played (and cut) from any keyframe. Writes are unbuffered: a
killed process leaves every packet it handed over on disk. A write that fails
part-way (full disk, file-size limit) is cut back to the last whole packet, so
the file never ends in half a frame.
"""

from __future__ import annotations

import errno
import logging
import struct
from pathlib import Path

from ..errors import DiskFullError, OutputError
from ..frame import Packet
from ..options import VideoOptions

log = logging.getLogger("glrec")


class AnnexBSink:
    """Write Annex-B packets straight to a file."""

    def __init__(self, path: Path, options: VideoOptions) -> None:
        self.path = path
        self.packets = 0
        self.bytes_written = 0
        self._end = 0  # file offset after the last whole packet
        try:
            self._file = open(path, "wb", buffering=0)  # noqa: SIM115 - closed in close()
        except OSError as exc:
            raise OutputError(f"Cannot open {str(path)!r} for writing: {exc.strerror}.") from exc

    def _write_all(self, data: bytes) -> None:
        # An unbuffered write may take only part of the data (it stops at a file-size
        # limit or the last free block); the next call then reports the error.
        view = memoryview(data)
        while view:
            n = self._file.write(view)
            view = view[n or 0 :]

    def write(self, packets: list[Packet]) -> None:
        if self._file is None and packets:
            raise OutputError(f"{str(self.path)!r} is closed (after an earlier error); no more frames can be written.")
        for p in packets:
            try:
                self._write_all(p.data)
            except OSError as exc:
                raise self._fail(exc) from exc
            self.packets += 1
            self.bytes_written += len(p.data)
            self._end += len(p.data)

    def _fail(self, exc: OSError) -> OutputError:
        """Cut the file back to its last whole packet (shrinking works on a full disk too) and close it."""
        f, self._file = self._file, None  # type: ignore[assignment]
        regular = self.path.is_file()  # not a device such as /dev/full, whose contents cannot be read back
        if f is not None:
            if regular:
                try:
                    f.truncate(self._end)
                except OSError as err:
                    log.warning("Could not cut %s back to its last whole packet: %s", self.path, err)
            f.close()
        if not self.packets and regular:
            self.path.unlink(missing_ok=True)
        return write_error(self.path, exc, self.packets, self.packets if regular else None)

    def close(self) -> None:
        """Close the file; a recording of zero frames leaves no file (there is nothing to play)."""
        f, self._file = self._file, None  # type: ignore[assignment]
        if f is not None:
            f.close()
            if not self.packets and self.path.is_file():
                self.path.unlink(missing_ok=True)


class IvfSink(AnnexBSink):
    """AV1 in IVF: a 32-byte file header, then a 12-byte header before each frame.

    The header's frame count is written as 0 and patched on close; decoders
    read to the end of the file either way, so a killed recording still plays.
    """

    def __init__(self, path: Path, options: VideoOptions) -> None:
        super().__init__(path, options)
        from ..timebase import frame_rate

        rate = frame_rate(options.fps)
        w, h = options.encoded_size
        header = struct.pack("<4sHH4sHHIIII", b"DKIF", 0, 32, b"AV01", w, h, rate.numerator, rate.denominator, 0, 0)
        try:
            self._write_all(header)
        except OSError as exc:
            raise self._fail(exc) from exc
        self._end = len(header)

    def write(self, packets: list[Packet]) -> None:
        framed = [Packet(struct.pack("<IQ", len(p.data), p.pts) + p.data, p.pts, p.dts, p.keyframe) for p in packets]
        super().write(framed)

    def close(self) -> None:
        f = self._file
        if f is not None and not f.closed:
            try:
                f.seek(24)
                f.write(struct.pack("<I", self.packets))
            except OSError:
                pass  # the count is advisory; the frames are already on disk
        super().close()


def write_error(path: Path, exc: BaseException, written: int, kept: int | None) -> OutputError:
    """Turn a failed write into a typed error that names the path, the frames written and those kept.

    ``written`` frames had reached the sink; ``kept`` of them are in the file, which
    ends after the last complete fragment (container) or packet (raw bitstream);
    None where that cannot be known (a stream, a device). The error carries both
    as ``frames_written`` and ``frames_kept``.
    """
    code = getattr(exc, "errno", None)
    if kept is None:
        kept_text = "what reached it cannot be read back"
    elif kept:
        kept_text = f"the file keeps the first {kept} frames and plays up to there"
    else:
        kept_text = "no complete fragment had been written, so no file was left"
    err: OutputError
    if code in (errno.ENOSPC, errno.EFBIG, errno.EDQUOT):
        err = DiskFullError(
            code,
            f"Writing {str(path)!r} failed after {written} frames ({exc}): the disk is full or a file-size "
            f"limit was reached; {kept_text}. Free space or lift the limit and record again.",
        )
    else:
        err = OutputError(code, f"Writing {str(path)!r} failed after {written} frames ({exc}); {kept_text}.")
    err.frames_written, err.frames_kept = written, kept
    return err
