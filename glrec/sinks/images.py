"""Image sequences: one file per packet (JPEG), named by a printf pattern such as ``frames/%06d.jpg``.

Each JPEG is complete on its own, so a killed recording keeps every frame
written before it. Files are written under a temporary name and renamed, so a
file with a frame's name is never half written.

Replacing an existing sequence (overwrite) keeps it whole until the new one
is: new frames are written as ``.NAME.glrec-new``, renamed into place when the
recording finishes, and then frames of the old sequence beyond the new one's
are removed (only names the pattern makes). A recording that fails or makes
no frame leaves the old sequence as it was.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from ..errors import OutputExistsError
from ..frame import Packet
from .paths import check_output_path, frame_path, sequence_frames
from .raw import write_error
from .stream_info import DescribesStream

log = logging.getLogger("glrec")


class ImageSequenceSink:
    """Write each packet to ``pattern % pts``."""

    def __init__(self, path: Path, options: DescribesStream, *, overwrite: bool = False) -> None:
        check_output_path(path, overwrite)  # links, and an existing sequence without overwrite
        self.path = path
        self.packets = 0
        self.bytes_written = 0
        self._replacing = any(True for _ in sequence_frames(path))
        self._staged: list[Path] = []  # new frames waiting to replace the old sequence's
        self._failed = False
        if self._replacing:
            for _, old in sequence_frames(_staged_pattern(path)):
                old.unlink(missing_ok=True)  # left by an earlier, interrupted replacement

    def write(self, packets: list[Packet]) -> None:
        for p in packets:
            name = Path(frame_path(self.path, p.pts))
            final = _staged_name(name) if self._replacing else name
            tmp = name.with_name(f".{name.name}.glrec-tmp")
            try:
                if not self._replacing and os.path.lexists(name):
                    raise OutputExistsError(f"Frame {str(name)!r} appeared while recording; glrec does not replace it.")
                tmp.write_bytes(p.data)
                os.replace(tmp, final)
            except OSError as exc:
                tmp.unlink(missing_ok=True)
                self._failed = True
                kept = self.packets
                where = ""
                if self._replacing:
                    self._discard()
                    kept, where = 0, f"; the sequence that was there ({self.path}) was left as it was"
                raise write_error(name, exc, self.packets, kept, where) from exc
            if self._replacing:
                self._staged.append(final)
            self.packets += 1
            self.bytes_written += len(p.data)

    def _discard(self) -> None:
        for staged in self._staged:
            staged.unlink(missing_ok=True)
        self._staged.clear()

    def close(self) -> None:
        """Nothing is buffered; a replacement takes the place of the old sequence now."""
        if not self._replacing or self._failed:
            return
        if not self.packets:
            return  # no new frame: the old sequence stays
        written = set()
        for staged in self._staged:
            final = staged.with_name(staged.name[1 : -len(".glrec-new")])
            os.replace(staged, final)
            written.add(final.name)
        self._staged.clear()
        removed = 0
        for _, old in sequence_frames(self.path):
            if old.name not in written:
                old.unlink(missing_ok=True)
                removed += 1
        if removed:
            log.info("removed %d frames of the previous %s beyond the new recording's", removed, self.path)


def _staged_name(name: Path) -> Path:
    return name.with_name(f".{name.name}.glrec-new")


def _staged_pattern(pattern: Path) -> Path:
    return pattern.with_name(f".{pattern.name}.glrec-new")
