"""Decoding on a worker thread: FFmpeg (PyAV) pictures with exact timestamps, queued for the GL thread.

The worker demuxes and decodes ahead of the GL thread so decoding overlaps
upload, rendering and encoding. For a file it waits when ``depth`` pictures
are queued (nothing is lost). For a live input it never waits: when the GL
thread falls behind, the oldest queued picture is dropped (counted), so what
is shown is always the newest; a broken connection is reopened up to
``retries`` times before the input counts as ended.

Timestamps are the stream's own: a picture's ``time`` is its pts in seconds
minus the first picture's, so variable frame rates come through unchanged.
After a reconnect the new stream's clock is moved so time keeps running from
where it was.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from dataclasses import dataclass
from typing import Any

import av

from ..errors import InputError
from .formats import FORMATS, cpu_fallback
from .media import InputSpec, open_container, open_error, video_stream

log = logging.getLogger("glrec")

_BACKOFF_S = (0.25, 0.5, 1.0, 2.0, 4.0)


@dataclass
class Picture:
    """One decoded picture: an ``av.VideoFrame`` in a format of :data:`~glrec.sources.formats.FORMATS`."""

    frame: Any
    time: float  # seconds since the input's first picture
    index: int  # pictures decoded before this one
    duration: float | None  # seconds, when the stream says
    position: float = -1.0  # seconds into the input (time within the current loop); set by the source


class DecodeWorker:
    """Decode ``spec`` on a thread into a queue of :class:`Picture`.

    ``container`` is an already opened input (so opening errors happen on the
    caller's thread). ``live`` (default:
    the input is a stream or camera) drops to the newest picture instead of
    waiting; a stream or camera is reconnected after errors either way.
    """

    def __init__(
        self,
        spec: InputSpec,
        container: av.container.InputContainer,
        *,
        depth: int = 4,
        retries: int = 3,
        live: bool | None = None,
    ) -> None:
        self.spec = spec
        self.live = spec.live if live is None else live
        self.depth = max(1, depth)
        self.retries = retries
        self._container: av.container.InputContainer | None = container
        self._queue: deque[Picture] = deque()
        self._cond = threading.Condition()
        self._stop = False
        self._ended = False
        self._error: BaseException | None = None
        self.dropped = 0  # live: pictures dropped because the GL thread was behind
        self.decoded = 0
        self.reconnects = 0
        self._origin: float | None = None
        self._last_time = 0.0
        self._last_duration: float | None = None
        self._converted_from: str | None = None
        self._thread = threading.Thread(target=self._run, name="glrec-decode", daemon=True)

    def start(self) -> None:
        self._thread.start()

    # -- consumer side (GL thread) ----------------------------------------------------------------

    def get(self, timeout: float | None = None) -> Picture | None:
        """The next picture in order; None once the input has ended. Raises what stopped decoding."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while not self._queue and not self._ended:
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    raise InputError(f"{self.spec.label!r} delivered no picture within {timeout:g} s.")
                self._cond.wait(remaining)
            if self._queue:
                pic = self._queue.popleft()
                self._cond.notify_all()
                return pic
            self._raise_error()
            return None

    def newest(self) -> Picture | None:
        """Live: the newest queued picture, dropping older ones; None when nothing new has arrived."""
        with self._cond:
            if not self._queue:
                self._raise_error()
                return None
            self.dropped += len(self._queue) - 1
            pic = self._queue.pop()
            while self._queue:
                self._discard(self._queue.popleft())
            self._cond.notify_all()
            return pic

    @property
    def origin(self) -> float | None:
        """The input time (seconds) of the first picture: time 0 of everything decoded from it."""
        return self._origin

    @property
    def ended(self) -> bool:
        """True once the input has ended and every queued picture was taken."""
        with self._cond:
            return self._ended and not self._queue

    def _raise_error(self) -> None:
        error, self._error = self._error, None
        if error is not None:
            raise error

    def stop(self) -> None:
        """Stop decoding and close the input. Safe twice; waits for the thread."""
        with self._cond:
            self._stop = True
            while self._queue:
                self._discard(self._queue.popleft())
            self._cond.notify_all()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout=max(5.0, self.spec.timeout + 1.0))
        if self._thread.is_alive():
            # Still inside FFmpeg (a read that has not timed out yet): it owns the container and
            # whatever decoding holds until it returns; a daemon thread does not keep Python alive.
            log.warning("%s: the decode thread did not stop in time; leaving it to end on its own", self.spec.label)
            return
        container, self._container = self._container, None
        if container is not None:
            container.close()
        self._closed()

    def _discard(self, pic: Picture) -> None:
        """A queued picture will never be shown (dropped or stopped): subclasses free what it holds."""

    def _closed(self) -> None:
        """The thread has ended: subclasses release what decoding used."""

    # -- producer side (worker thread) ------------------------------------------------------------

    def _run(self) -> None:
        attempts, decoded_at_failure = 0, 0
        try:
            while not self._stop:
                try:
                    if self._container is None:  # reconnecting
                        self._container = open_container(self.spec)
                    self._decode_all()
                    break  # the input ended normally
                except (av.FFmpegError, OSError) as exc:
                    if self._stop:
                        break
                    if self.decoded > decoded_at_failure:
                        attempts = 0  # it ran again since the last break: a fresh set of retries
                    decoded_at_failure = self.decoded
                    if self.spec.live and attempts < self.retries:
                        attempts += 1
                        self._reconnect(exc, attempts)
                        continue
                    if self.decoded:
                        # A file cut short or a stream that broke for good: what was decoded stands.
                        log.warning("%s stopped after %d pictures: %s", self.spec.label, self.decoded, exc)
                        break
                    if isinstance(exc, InputError):
                        raise
                    raise open_error(self.spec, exc) from exc
        except BaseException as exc:
            self._error = exc
        finally:
            with self._cond:
                self._ended = True
                self._cond.notify_all()

    def _decode_all(self) -> None:
        container = self._container
        assert container is not None
        stream = video_stream(container, self.spec)
        # Frame threads add a picture of delay per thread; live inputs use slice threads only.
        stream.codec_context.thread_type = "SLICE" if self.live else "AUTO"
        for packet in container.demux(stream):
            if self._stop:
                return
            for frame in stream.decode(packet):
                self._emit(frame)
        # The demuxer's last packet per stream is empty: decoding it above flushed the decoder.

    def _emit(self, frame: Any) -> None:
        if self._stop:
            return
        if frame.format.name not in FORMATS:
            target = cpu_fallback(frame.format)
            if self._converted_from != frame.format.name:
                self._converted_from = frame.format.name
                log.info("%s: converting %s to %s on the CPU (no GPU layout for it)", self.spec.label,
                         frame.format.name, target)  # fmt: skip
            frame = frame.reformat(format=target)
        tb = frame.time_base
        seconds = float(frame.pts * tb) if frame.pts is not None and tb is not None else None
        self._put(frame, seconds, float(frame.duration * tb) if frame.duration and tb is not None else None)

    def _wait_for_room(self) -> bool:
        """Files: wait while ``depth`` pictures are queued. False when stopping."""
        with self._cond:
            while not self.live and len(self._queue) >= self.depth and not self._stop:
                self._cond.wait()
            return not self._stop

    def _put(self, payload: Any, seconds: float | None, duration: float | None) -> None:
        """Queue ``payload`` as the next picture, stamped ``seconds`` (its pts; None if it has none)."""
        if not self._wait_for_room():
            return
        pic = Picture(payload, self._time_of(seconds, duration), self.decoded, duration)
        self.decoded += 1
        with self._cond:
            if self._stop:
                self._discard(pic)
                return
            self._queue.append(pic)
            if self.live and len(self._queue) > self.depth:
                self._discard(self._queue.popleft())
                self.dropped += 1
            self._cond.notify_all()

    def _time_of(self, seconds: float | None, duration: float | None) -> float:
        if seconds is None:
            # No timestamp (some raw streams): one frame after the previous one.
            step = self._last_duration or 1.0 / float(self._rate() or 25)
            t = self._last_time + step if self.decoded else 0.0
        else:
            if self._origin is None:
                self._origin = seconds - (self._last_time if self.decoded else 0.0)
            t = seconds - self._origin
        self._last_time, self._last_duration = t, duration
        return t

    def _rate(self) -> float | None:
        container = self._container
        if container is None or not container.streams.video:
            return None
        s = container.streams.video[0]
        rate = s.average_rate or s.guessed_rate
        return float(rate) if rate else None

    def _reconnect(self, exc: BaseException, attempt: int) -> None:
        self.reconnects += 1
        wait = _BACKOFF_S[min(attempt - 1, len(_BACKOFF_S) - 1)]
        log.warning("%s broke (%s); reconnecting in %.2g s (attempt %d of %d)", self.spec.label, exc, wait,
                    attempt, self.retries)  # fmt: skip
        if self._container is not None:
            self._container.close()
            self._container = None
        gone = time.monotonic()
        while time.monotonic() - gone < wait and not self._stop:
            time.sleep(0.05)
        # The loop in _run opens it again. The new connection's timestamps start anywhere: continue from
        # the last picture, plus the time away.
        self._origin = None
        self._last_time += time.monotonic() - gone
