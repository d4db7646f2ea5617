"""Output files whose bytes go to the disk while they are written, so that the fsync at the end is short.

A finished recording is fsynced before it is renamed into place
(:meth:`glrec.sinks.paths.OutputFile.commit`): without help, every byte of the
file is still in the page cache then, and the close waits for all of it to
reach the disk (on the H200 machine, about 45 ms for 600 frames of 1080p
MJPEG, 20-30 % of a short recording's time). :class:`WriteBehindFile` asks the
kernel to start writing the file out every :data:`WRITE_BEHIND` bytes
(``sync_file_range(SYNC_FILE_RANGE_WRITE)``, which starts the writes and does
not wait for them), so the fsync finds little left to do. Where the call does
not exist (not Linux) or the file system refuses it, the file is an ordinary
unbuffered file: the fsync at the end still makes it durable.
"""

from __future__ import annotations

import ctypes
import io
import logging
from typing import Any

log = logging.getLogger("glrec")

__all__ = ["WRITE_BEHIND", "WriteBehindFile"]

#: Bytes written between two requests to start writing the file out.
WRITE_BEHIND = 8 << 20
_SYNC_FILE_RANGE_WRITE = 2


def _sync_file_range() -> Any:
    try:  # the symbols already loaded into the process (libc's among them): no library search at import
        call = ctypes.CDLL(None, use_errno=True).sync_file_range
    except (OSError, AttributeError):
        return None
    call.argtypes = [ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_uint]
    call.restype = ctypes.c_int
    return call


_CALL = _sync_file_range()


class WriteBehindFile(io.FileIO):
    """An unbuffered output file (a :class:`io.FileIO` over ``fd``) written out by the kernel as it grows."""

    def __init__(self, fd: int) -> None:
        super().__init__(fd, "wb", closefd=True)
        self._since = 0
        self._on = _CALL is not None

    def write(self, data: Any, /) -> int:
        n = super().write(data)
        if n and self._on:
            self._since += n
            if self._since >= WRITE_BEHIND:
                self._since = 0
                self._start_writeback()
        return n

    def _start_writeback(self) -> None:
        # offset 0, length 0: the whole file; pages already on their way are skipped by the kernel.
        if _CALL(self.fileno(), 0, 0, _SYNC_FILE_RANGE_WRITE) != 0:
            self._on = False  # e.g. a file system that does not take it: the fsync at the end does it all
            log.debug("glrec: sync_file_range refused (errno %d); %s is written out at its end", ctypes.get_errno(),
                      self.name)  # fmt: skip
