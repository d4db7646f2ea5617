"""GL and a CUDA encoder taking turns on the GL thread: one context switch each way per batch, not per frame.

A GPU runs one context at a time, so GL and an encoder's CUDA context
take turns: on an H200, nvJPEG encodes 4,700 frames/s alone but 573 while GL
renders on another thread, and one thread doing 32 frames of GL then 32 of
nvJPEG reaches the serial bound of the two (benchmarks/gpu_ceiling.py,
``nvjpeg:gl-turns32``). So where the encoder runs in a CUDA context and the
recording is not live, the GL thread encodes each batch the handoff completes
(after its one fence) itself, in chunks of the row's ``turn_batch``, and queues the
packets: the contexts switch twice per batch instead of twice per frame, and the
worker only writes to the sink. Live recordings hand every frame to the worker
at once (latency over throughput); CPU encoders keep the worker, where their
work overlaps GL's; a GL-context encoder never switches at all.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ..encoders import Encoder
from ..encoders.row import EncoderRow
from ..frame import EncodedFrame, Frame, HostFrame
from .worker import Encoded

#: Turns on or off for every recording (None: where the row's encode runs in a CUDA context and the recording
#: is not live); and frames per encode call (None: the row's ``turn_batch``). Fixed only by measurements
#: (benchmarks/gpu_ceiling.py).
TURNS: bool | None = None
CHUNK: int | None = None


class Turns:
    """Encode each batch of completed frames on the calling (GL) thread, ``chunk`` frames per call."""

    def __init__(self, encoder: Encoder, chunk: int) -> None:
        self.encoder = encoder
        self.chunk = max(1, chunk)

    @classmethod
    def open(cls, row: EncoderRow, encoder: Encoder, *, live: bool) -> Turns | None:
        """Turns for ``row``'s encoder, or None where the worker thread should encode (see the module docstring)."""
        wanted = row.context == "cuda" and not live if TURNS is None else TURNS
        return cls(encoder, CHUNK or row.turn_batch or row.batch) if wanted else None

    def deliver(self, frames: Sequence[Frame], put: Callable[[Encoded], None]) -> None:
        """Encode ``frames`` in chunks and ``put`` each chunk's packets; after a failure, the frames not yet
        encoded go back to their pool and the error is raised."""
        done = 0
        try:
            while done < len(frames):
                chunk = frames[done : done + self.chunk]
                packets = self.encoder.encode_batch(chunk)
                done += len(chunk)
                put(Encoded(packets, len(chunk)))
        finally:
            for frame in frames[done:]:
                if not isinstance(frame, (HostFrame, EncodedFrame)):
                    frame.release()
