"""The sink stage's protocol, and opening the sink a path or URL names (:mod:`glrec.sinks.registry` decides)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from ..frame import Packet
from .registry import is_stream_url, output_kind

if TYPE_CHECKING:
    from .stream_info import DescribesStream


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


def open_sink(target: str | os.PathLike[str], options: DescribesStream, **kwargs: Any) -> Sink:
    """Open the sink for a path's extension or a URL's scheme (see :mod:`glrec.sinks.registry`).

    The sink is given the stream's description (:class:`~glrec.sinks.stream_info.StreamInfo`), not ``options``.
    """
    from .stream_info import StreamInfo

    stream = StreamInfo.of(options)
    kind = output_kind(target, stream.codec)
    return kind.open(str(target) if is_stream_url(target) else Path(target), stream, **kwargs)
