"""Raw bitstreams: Annex-B (.h264, .hevc) and IVF (.ivf, for AV1).

Annex-B packets are written back to back.

The CPU and NVENC encoders repeat the parameter sets before every keyframe, so
the file can be played (and cut) from any keyframe. Writes are unbuffered: a
killed process leaves every packet it handed over on disk.
"""

from __future__ import annotations

import errno
import struct
from pathlib import Path

from ..errors import DiskFullError, OutputError
from ..frame import Packet
from ..options import VideoOptions


class AnnexBSink:
    """Write Annex-B packets straight to a file."""

    def __init__(self, path: Path, options: VideoOptions) -> None:
        self.path = path
        self.packets = 0
        self.bytes_written = 0
        try:
            self._file = open(path, "wb", buffering=0)  # noqa: SIM115 - closed in close()
        except OSError as exc:
            raise OutputError(f"Cannot open {str(path)!r} for writing: {exc.strerror}.") from exc

    def write(self, packets: list[Packet]) -> None:
        for p in packets:
            try:
                self._file.write(p.data)
            except OSError as exc:
                raise write_error(self.path, exc, self.packets) from exc
            self.packets += 1
            self.bytes_written += len(p.data)

    def close(self) -> None:
        f, self._file = self._file, None  # type: ignore[assignment]
        if f is not None:
            f.close()


class IvfSink(AnnexBSink):
    """AV1 in IVF: a 32-byte file header, then a 12-byte header before each frame.

    The header's frame count is written as 0 and patched on close; decoders
    read to the end of the file either way, so a killed recording still plays.
    """

    def __init__(self, path: Path, options: VideoOptions) -> None:
        super().__init__(path, options)
        from ..encoders.cpu import frame_rate

        rate = frame_rate(options.fps)
        w, h = options.encoded_size
        header = struct.pack("<4sHH4sHHIIII", b"DKIF", 0, 32, b"AV01", w, h, rate.numerator, rate.denominator, 0, 0)
        self._file.write(header)

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


def write_error(path: Path, exc: BaseException, packets: int) -> OutputError:
    """Turn a failed write into a typed error that names the path and what was kept."""
    code = getattr(exc, "errno", None)
    if code in (errno.ENOSPC, errno.EFBIG, errno.EDQUOT):
        return DiskFullError(
            code,
            f"Writing {str(path)!r} failed ({exc}): the disk is full or a file-size limit was reached. "
            f"{packets} packets were written and the file is playable up to the last complete one; "
            "free space or lift the limit and record again.",
        )
    return OutputError(code, f"Writing {str(path)!r} failed after {packets} packets: {exc}.")
