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
    def path(self) -> Path | str: ...

    @property
    def packets(self) -> int: ...

    @property
    def bytes_written(self) -> int: ...

    def write(self, packets: list[Packet]) -> None: ...

    def close(self) -> None: ...
