"""The encode worker: a thread that feeds frames to the encoder and packets to the sink.

Rendering (on the GL thread) and encoding overlap; a bounded queue keeps memory
flat when the encoder is the slower side (the GL thread then waits). An error
on the worker stops it and is kept; the GL thread raises it, once and as the
very exception the encoder or sink raised, at its next ``put`` or at ``finish``.

Where the GL thread encodes itself (a CUDA encoder taking turns with GL, see
:mod:`glrec.pipeline.session`), it queues :class:`Encoded` packets instead of
frames and the worker only writes them: the sink's work still overlaps the GPU's.
"""

from __future__ import annotations

import logging
import queue
import threading
from dataclasses import dataclass

from ..encoders import Encoder
from ..frame import EncodedFrame, Frame, HostFrame, Packet
from ..sinks import Sink
from .timing import StageTimers, timed

log = logging.getLogger("glrec")

_STOP = object()


@dataclass(frozen=True)
class Encoded:
    """The packets of ``frames`` frames the GL thread encoded itself: the worker writes them to the sink."""

    packets: list[Packet]
    frames: int


class EncodeWorker:
    """Run ``encoder`` and ``sink`` on a thread fed through a queue of ``maxsize`` frames."""

    def __init__(self, encoder: Encoder, sink: Sink, maxsize: int = 8) -> None:
        self.encoder = encoder
        self.sink = sink
        self.frames_encoded = 0
        self.error: BaseException | None = None
        self._error_raised = False
        self._queue: queue.Queue[object] = queue.Queue(maxsize=max(1, maxsize))
        self._thread = threading.Thread(target=self._run, name="glrec-encode", daemon=True)
        self._finished = False
        self._thread.start()

    @property
    def frames_written(self) -> int:
        """Frames the sink holds (after a failed write: those the file kept); one packet per frame."""
        return self.sink.packets

    def time_stages(self, timers: StageTimers) -> None:
        """Time the encoder and the sink (see :mod:`glrec.pipeline.timing`); before the first frame."""
        self.encoder = timed("encode", self.encoder, timers)
        self.sink = timed("mux", self.sink, timers)

    def backlogged(self) -> bool:
        """Whether the queue is full, so the next :meth:`put` would wait: the encoder is the slower side."""
        return self._queue.full()

    @property
    def failed(self) -> bool:
        return self.error is not None

    def put(self, frame: Frame | Encoded) -> None:
        """Queue a frame, or packets encoded already (blocks while the queue is full); raise if the worker failed."""
        self._raise_error()
        while not self._offer(frame):
            self._raise_error()

    def _offer(self, item: object) -> bool:
        try:
            self._queue.put(item, timeout=0.1)
            return True
        except queue.Full:
            return False

    def _raise_error(self) -> None:
        """Raise the worker's error on the calling thread, the first time only.

        It is raised as is (not wrapped), so the caller sees the encoder's or the
        sink's own exception with its cause; raising it again would only stack
        more frames onto the same traceback.
        """
        if self.error is not None and not self._error_raised:
            self._error_raised = True
            raise self.error

    def _run(self) -> None:
        stopping = False
        try:
            while True:
                item = self._queue.get()
                if item is _STOP:
                    stopping = True
                    self.sink.write(self.encoder.flush())
                    return
                if isinstance(item, Encoded):
                    self.sink.write(item.packets)
                    self.frames_encoded += item.frames
                    continue
                self.sink.write(self.encoder.encode(item))  # type: ignore[arg-type]
                self.frames_encoded += 1
        except BaseException as exc:
            self.error = exc
            # Keep consuming so a blocked producer wakes up and sees the error; device
            # frames go back to their pool so a producer waiting for a buffer wakes too.
            while not stopping:
                item = self._queue.get()
                if item is _STOP:
                    break
                if not isinstance(item, (HostFrame, EncodedFrame, Encoded)):
                    item.release()  # type: ignore[attr-defined]  # a DeviceFrame

    def finish(self) -> None:
        """Flush the encoder, close the sink (trailer written once), join; raise the worker's error.

        The sink is closed even after an error, so the file keeps what was
        written. If closing fails as well, the first error wins and the second
        is logged.
        """
        if self._finished:
            return
        self._finished = True
        while not self._offer(_STOP):  # the worker always drains its queue, so this ends
            pass
        self._thread.join()
        try:
            self.sink.close()
        except BaseException as exc:
            if self.error is None:
                self.error = exc
            else:
                log.warning("Closing %s after an error failed too: %r", self.sink.path, exc)
        finally:
            self.encoder.close()
        self._raise_error()

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()
