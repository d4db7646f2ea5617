"""The encode worker: a thread that feeds frames to the encoder and packets to the sink.

Rendering (on the GL thread) and encoding overlap; a bounded queue keeps memory
flat when the encoder is the slower side (the GL thread then waits). An error
on the worker stops it, is kept, and is raised on the GL thread at its next
``put`` or at ``finish``.
"""

from __future__ import annotations

import logging
import queue
import threading

from .encoders import Encoder
from .frame import HostFrame
from .interop.pool import DeviceFrame
from .sinks import Sink

log = logging.getLogger("glrec")

_STOP = object()


class EncodeWorker:
    """Run ``encoder`` and ``sink`` on a thread fed through a queue of ``maxsize`` frames."""

    def __init__(self, encoder: Encoder, sink: Sink, maxsize: int = 8) -> None:
        self.encoder = encoder
        self.sink = sink
        self.frames_encoded = 0
        self.error: BaseException | None = None
        self._queue: queue.Queue[object] = queue.Queue(maxsize=max(1, maxsize))
        self._thread = threading.Thread(target=self._run, name="glrec-encode", daemon=True)
        self._finished = False
        self._thread.start()

    def put(self, frame: HostFrame | DeviceFrame) -> None:
        """Queue a frame (blocks while the queue is full); raise if the worker has failed."""
        self._raise_if_failed()
        while True:
            try:
                self._queue.put(frame, timeout=0.1)
                return
            except queue.Full:
                self._raise_if_failed()

    def _raise_if_failed(self) -> None:
        if self.error is not None:
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
                assert isinstance(item, (HostFrame, DeviceFrame))
                self.sink.write(self.encoder.encode(item))
                self.frames_encoded += 1
        except BaseException as exc:
            self.error = exc
            # Keep consuming so a blocked producer wakes up and sees the error; device
            # frames go back to their pool so a producer waiting for a buffer wakes too.
            while not stopping:
                item = self._queue.get()
                if item is _STOP:
                    break
                if isinstance(item, DeviceFrame):
                    item.release()

    def finish(self) -> None:
        """Flush the encoder, close the sink (trailer written once), join; raise the worker's error."""
        if self._finished:
            return
        self._finished = True
        self._queue.put(_STOP)
        self._thread.join()
        try:
            self.sink.close()
        finally:
            self.encoder.close()
        self._raise_if_failed()

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()
