"""Image sequences: one file per packet (JPEG), named by a printf pattern such as ``frames/%06d.jpg``.

Each JPEG is complete on its own, so a killed recording keeps every frame
written before it. Files are written under a temporary name and renamed, so a
file with a frame's name is never half written.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..frame import Packet
from ..options import VideoOptions
from .paths import frame_path
from .raw import write_error


class ImageSequenceSink:
    """Write each packet to ``pattern % pts``."""

    def __init__(self, path: Path, options: VideoOptions) -> None:
        self.path = path
        self.packets = 0
        self.bytes_written = 0

    def write(self, packets: list[Packet]) -> None:
        for p in packets:
            name = Path(frame_path(self.path, p.pts))
            tmp = name.with_name(f".{name.name}.glrec-tmp")
            try:
                tmp.write_bytes(p.data)
                os.replace(tmp, name)
            except OSError as exc:
                tmp.unlink(missing_ok=True)
                raise write_error(name, exc, self.packets, self.packets) from exc
            self.packets += 1
            self.bytes_written += len(p.data)

    def close(self) -> None:
        pass  # nothing is buffered
