"""Sinks: where packets end up (container files, raw bitstreams, image sequences, network, browser viewer).

Every sink has ``write(packets)`` and ``close()``; ``close()`` writes the
trailer exactly once, also while an exception propagates, so whatever was
written stays playable, and raises if the trailer could not be written.
Which sink serves a path or URL is decided by :mod:`glrec.sinks.registry`.
"""

from .registry import OUTPUTS, STREAMS, OutputKind, open_sink, output_kind
from .sink import Sink

__all__ = ["OUTPUTS", "STREAMS", "OutputKind", "Sink", "open_sink", "output_kind"]
