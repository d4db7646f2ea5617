"""The sink stage's protocol: packets in, a file or stream out, its trailer written once."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol, runtime_checkable

from ..frame import Packet


@runtime_checkable  # Recorder(sink=...) checks what it is given (glrec.sinks.output_options)
class Sink(Protocol):
    """The sink stage.

    ``packets`` counts the packets (one per frame for every glrec encoder) the
    output holds: after a failed write, those it kept.
    """

    @property
    def path(self) -> Path | str:
        """Where the output goes: a file path, a pattern or a URL."""

    @property
    def packets(self) -> int:
        """Packets the output holds (after a failed write: those it kept)."""

    @property
    def bytes_written(self) -> int:
        """Bytes written to the output so far."""

    def write(self, packets: list[Packet]) -> None:
        """Write ``packets`` in order (their pts are frame indices)."""

    def close(self) -> None:
        """Finish the output (its trailer, exactly once, also while an exception propagates); a failed finish raises."""
