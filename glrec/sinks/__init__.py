"""Sinks: where packets end up (container files, raw bitstreams).

Every sink has ``write(packets)`` and ``close()``; ``close()`` writes the
trailer exactly once, also while an exception propagates, so whatever was
written stays playable.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from ..frame import Packet
from ..options import VideoOptions


class Sink(Protocol):
    """The sink stage."""

    path: Path
    packets: int
    bytes_written: int

    def write(self, packets: list[Packet]) -> None: ...

    def close(self) -> None: ...


def open_sink(path: str | Path, options: VideoOptions, *, finalize: bool = True) -> Sink:
    """Open the sink for ``path``'s extension (checked by :func:`glrec.options.output_kind`)."""
    from .container import ContainerSink
    from .raw import AnnexBSink, IvfSink

    ext = Path(path).suffix.lower()
    if ext in (".jpg", ".jpeg"):
        from .images import ImageSequenceSink

        return ImageSequenceSink(Path(path), options)
    if ext == ".ivf":
        return IvfSink(Path(path), options)
    if ext in (".h264", ".264", ".hevc", ".h265", ".265"):
        return AnnexBSink(Path(path), options)
    return ContainerSink(Path(path), options, finalize=finalize)


__all__ = ["Sink", "open_sink"]
