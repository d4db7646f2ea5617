"""Raw bitstreams: Annex-B (.h264, .hevc) and IVF (.ivf, for AV1).

Annex-B packets are written back to back.

The CPU and NVENC encoders repeat the parameter sets before every keyframe, so
the file can be played (and cut) from any keyframe. Writes are unbuffered: a
killed process leaves every packet it handed over on disk. A write that fails
part-way (full disk, file-size limit) is cut back to the last whole packet, so
the file never ends in half a frame. The file is created with the first
packet (see :mod:`glrec.sinks.paths`), so a recording stopped before it
leaves nothing behind.
"""

from __future__ import annotations

import errno
import logging
import struct
from pathlib import Path
from typing import BinaryIO

from ..errors import DiskFullError, OutputError
from ..frame import Packet
from .paths import OutputFile
from .stream_info import DescribesStream

log = logging.getLogger("glrec")

#: errno values that mean "no room": a full disk, a file-size limit, a quota.
DISK_FULL = (errno.ENOSPC, errno.EFBIG, errno.EDQUOT)


class AnnexBSink:
    """Write Annex-B packets straight to a file."""

    def __init__(self, path: Path, options: DescribesStream, *, overwrite: bool = False) -> None:
        self.path = path
        self.packets = 0
        self.bytes_written = 0
        self._end = 0  # file offset after the last whole packet
        self._out = OutputFile(path, overwrite)
        self._file: BinaryIO | None = None
        self._closed = False

    def _header(self) -> bytes:
        return b""

    def _write_all(self, data: bytes) -> None:
        # An unbuffered write may take only part of the data (it stops at a file-size
        # limit or the last free block); the next call then reports the error.
        if self._file is None:
            self._file = self._out.open()
            header = self._header()
            self._write_all(header)
            self._end = len(header)
        view = memoryview(data)
        while view:
            n = self._file.write(view)
            view = view[n or 0 :]

    def write(self, packets: list[Packet]) -> None:
        if self._closed and packets:
            raise OutputError(f"{str(self.path)!r} is closed (after an earlier error); no more frames can be written.")
        for p in packets:
            try:
                self._write_all(self._frame(p))
            except OSError as exc:
                if isinstance(exc, OutputError) and not self._out.created:
                    raise  # the file could not be made at all
                raise self._fail(exc) from exc
            self.packets += 1
            self.bytes_written += len(p.data)
            self._end = self._file.tell() if self._out.regular else self._end + len(p.data)  # type: ignore[union-attr]

    def _frame(self, p: Packet) -> bytes:
        return p.data

    def _fail(self, exc: OSError) -> OutputError:
        """Cut the file back to its last whole packet (shrinking works on a full disk too) and close it."""
        f, self._file = self._file, None
        self._closed = True
        regular = self._out.regular  # not a device such as /dev/full, whose contents cannot be read back
        if f is not None:
            if regular:
                try:
                    f.truncate(self._end)
                except OSError as err:
                    log.warning("Could not cut %s back to its last whole packet: %s", self.path, err)
            f.close()
        if not self.packets:
            self._out.discard()
        kept = self.packets if regular else None
        return write_error(self.path, exc, self.packets, kept, self._out.describe_kept(kept))

    def close(self) -> None:
        """Close the file; a recording of zero frames leaves no file (there is nothing to play)."""
        if self._closed:
            return
        self._closed = True
        f, self._file = self._file, None
        if f is None:
            return
        try:
            self._finish(f)
            f.close()
        except OSError as exc:
            raise self._fail(exc) from exc
        if self.packets:
            self._out.commit()
        else:
            self._out.discard()

    def _finish(self, f: BinaryIO) -> None:
        pass


class IvfSink(AnnexBSink):
    """AV1 in IVF: a 32-byte file header, then a 12-byte header before each frame.

    The header's frame count is written as 0 and patched on close; decoders
    read to the end of the file either way, so a killed recording still plays.
    """

    def __init__(self, path: Path, options: DescribesStream, *, overwrite: bool = False) -> None:
        super().__init__(path, options, overwrite=overwrite)
        from ..timebase import frame_rate

        rate = frame_rate(options.fps)
        w, h = options.encoded_size
        self._ivf_header = struct.pack(
            "<4sHH4sHHIIII", b"DKIF", 0, 32, b"AV01", w, h, rate.numerator, rate.denominator, 0, 0
        )

    def _header(self) -> bytes:
        return self._ivf_header

    def _frame(self, p: Packet) -> bytes:
        return struct.pack("<IQ", len(p.data), p.pts) + p.data

    def _finish(self, f: BinaryIO) -> None:
        if self._out.regular:
            try:
                f.seek(24)
                f.write(struct.pack("<I", self.packets))
            except OSError:
                pass  # the count is advisory; the frames are already on disk


def os_words(exc: BaseException) -> str:
    """What the system said, in its words ("No space left on device"), without OSError's "[Errno 28]" number."""
    words = getattr(exc, "strerror", None)
    return words if isinstance(words, str) and words else str(exc)


def write_error(path: Path, exc: BaseException, written: int, kept: int | None, where: str = "") -> OutputError:
    """Turn a failed write into a typed error that names the path, the frames written and those kept.

    ``written`` frames had reached the sink; ``kept`` of them are in the file, which
    ends after the last complete fragment (container) or packet (raw bitstream);
    None where that cannot be known (a stream, a device). ``where`` says where
    they are when that is not ``path`` (a failed replacement of an existing
    file). The error carries both counts as ``frames_written`` and ``frames_kept``.
    """
    code = getattr(exc, "errno", None)
    if kept is None:
        kept_text = "what reached it cannot be read back"
    elif kept:
        kept_text = f"the file keeps the first {kept} frames and plays up to there{where}"
    else:
        kept_text = f"no complete fragment had been written, so no file was left{where}"
    err: OutputError
    said = os_words(exc)
    if code in DISK_FULL:
        err = DiskFullError(
            code,
            f"Writing {str(path)!r} failed after {written} frames ({said}): the disk is full or a file-size "
            f"limit was reached; {kept_text}. Free space or lift the limit and record again.",
        )
    else:
        err = OutputError(code, f"Writing {str(path)!r} failed after {written} frames ({said}); {kept_text}.")
    err.frames_written, err.frames_kept = written, kept
    return err
