"""Decoding on a worker thread: FFmpeg (PyAV) pictures with exact timestamps, queued for the GL thread.

The worker demuxes and decodes ahead of the GL thread so decoding overlaps
upload, rendering and encoding. For a file it waits when ``depth`` pictures
are queued (nothing is lost). For a live input it never waits: when the GL
thread falls behind, the oldest queued picture is dropped (counted), so what
is shown is always the newest.

Damaged and network input loses no more than FFmpeg's own CLI would:

- a packet the decoder rejects is skipped and counted (:attr:`DecodeWorker.bad_packets`);
  only a container that cannot be read ends the input;
- the decoder is drained at every end, clean or not, so a file cut short keeps
  every picture it can still give;
- timestamps that go backwards (``cat a.ts b.ts``, a stream that restarts its
  clock), or jump ahead by more than 10 s in a format that allows jumps (MPEG-TS),
  start a new segment that continues the timeline (:attr:`DecodeWorker.discontinuities`);
- a network input or camera that breaks is reopened up to ``retries`` times in a
  row, within a total of :data:`MAX_RECONNECTS` reopenings and ``stall_limit``
  seconds away; a recording resumes after the last picture it received (it seeks
  there and skips, for the whole reconnected segment, every picture that presents
  at or before that one: no picture twice, none out of order), a live view continues
  with the time away added. Past the bounds the input ends with what was received,
  said in the log and in :attr:`DecodeWorker.gave_up`;
- a read that gets nothing for the input's bound (:func:`~glrec.sources.video.media.read_bound`)
  ends it the same way, in words saying that glrec stopped waiting;
- a numbered image sequence with gaps is read one run of numbers after another
  (:mod:`glrec.sources.video.sequence`), on one timeline.

Timestamps are the stream's own: a picture's ``time`` is its pts in seconds
minus the first picture's, so variable frame rates come through unchanged.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from dataclasses import dataclass
from typing import Any

import av

from ...errors import InputError
from .formats import FORMATS, cpu_fallback
from .media import InputSpec, close_container, open_container, open_error, video_stream
from .resume import ResumeFilter, seek_near, why
from .stamps import Stamps

log = logging.getLogger("glrec")

_BACKOFF_S = (0.25, 0.5, 1.0, 2.0, 4.0)
#: Reopenings of one input in all, however well it ran in between (a server that stalls again and again).
MAX_RECONNECTS = 10
#: Pictures an input must deliver after a break before its retries start afresh.
_HEALTHY = 25
_TS_DISCONT = 0x0200  # AVFMT_TS_DISCONT


@dataclass
class Picture:
    """One decoded picture: an ``av.VideoFrame`` in a format of :data:`~glrec.sources.video.formats.FORMATS`."""

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
        self.bad_packets = 0  # packets the decoder rejected, skipped as FFmpeg's CLI skips them
        self.gave_up: str | None = None  # why a network input was finished early, with what it had
        self.stall_limit = max(30.0, 3.0 * spec.timeout)  # seconds away across all reconnects
        self._stalled = 0.0  # seconds between a break and the next picture, summed over breaks
        self._broke_at: float | None = None
        self._last_wall: float | None = None  # when the last picture was received
        self._resume = ResumeFilter()  # a resumed recording: what came before the break is skipped
        self._last_pts: float | None = None
        self._time_base: Any = None  # the stream's: PyAV leaves the time base of a drained frame unset
        self._run_index = 0  # an image sequence with gaps: the run of numbers being read
        self._run_offset = 0.0  # seconds: where that run starts on the sequence's clock
        self._stamps = Stamps(spec.label)  # each picture's time on one timeline
        self._converted_from: str | None = None
        self._thread = threading.Thread(target=self._run, name="glrec-decode", daemon=True)

    @property
    def discontinuities(self) -> int:
        """Timestamp resets and jumps bridged by continuing the timeline."""
        return self._stamps.discontinuities

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
        return self._stamps.origin

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
            close_container(container)
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
                        self._container = open_container(self.spec, self._run_index)
                    self._decode_all()
                    if self._next_run():
                        continue
                    break  # the input ended normally
                except (av.FFmpegError, OSError) as exc:
                    if self._stop:
                        break
                    if self.decoded - decoded_at_failure >= _HEALTHY:
                        attempts = 0  # it ran well again since the last break: a fresh set of retries
                    decoded_at_failure = self.decoded
                    if self.spec.kind in ("url", "camera") and attempts < self.retries and self._may_reconnect(exc):
                        attempts += 1
                        self._reconnect(exc, attempts)
                        continue
                    if self.decoded:
                        # A file cut short or a stream that broke for good: what was decoded stands.
                        reason = why(exc, self.spec)
                        log.warning("%s stopped after %d pictures: %s", self.spec.label, self.decoded, reason)
                        if self.reconnects and self.gave_up is None:
                            self.gave_up = (f"broke again after {self.reconnects} reconnects ({reason}); kept the "
                                            f"{self.decoded} pictures received")  # fmt: skip
                        elif isinstance(exc, av.ExitError) and self.gave_up is None:
                            self.gave_up = f"ended early: {reason}; kept the {self.decoded} pictures received"
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

    def _may_reconnect(self, exc: BaseException) -> bool:
        """Whether the bounds allow one more reopening; past them, say that the input ends here."""
        stalled = self._stalled + (time.monotonic() - self._broke_at if self._broke_at is not None else 0.0)
        if self.reconnects < MAX_RECONNECTS and stalled < self.stall_limit:
            return True
        self.gave_up = (
            f"gave up after {self.reconnects} reconnects and {stalled:.0f} s without pictures "
            f"({why(exc, self.spec)}); kept the {self.decoded} pictures received"
        )
        log.warning("%s: %s", self.spec.label, self.gave_up)
        return False

    def _decode_all(self) -> None:
        container = self._container
        assert container is not None
        stream = video_stream(container, self.spec)
        self._time_base = stream.time_base
        self._stamps.jumps = bool(container.format.flags & _TS_DISCONT)
        # Slice threads only: frame threads add a picture of delay per thread, and PyAV loses the pictures
        # in flight in frame threads when a file ends on a read error (2 of a cut MP4), which FFmpeg keeps.
        stream.codec_context.thread_type = "SLICE"
        if self._resume.mark is not None:
            seek_near(container, stream, self._resume.mark, self.spec.label)
        # A run of a numbered sequence ends after its images: image2 would read on into the gap (its search
        # for the last number can leap over one) and fail there.
        images = self.spec.runs[self._run_index][1] if self.spec.runs else None
        try:
            for packet in container.demux(stream):
                if self._stop:
                    return
                if images is not None and packet.size:
                    images -= 1
                try:
                    frames = stream.decode(packet)
                except av.error.InvalidDataError as exc:
                    self._bad_packet(packet, exc)
                    frames = []
                for frame in frames:
                    self._emit(frame)
                if images == 0:
                    self._drain(stream)
                    return
            # The demuxer's last packet per stream is empty: decoding it above flushed the decoder.
        except (av.FFmpegError, OSError):
            self._drain(stream)  # the container broke: the decoder still holds pictures of packets it read
            raise

    def _next_run(self) -> bool:
        """An image sequence with gaps: open the run of numbers after the next gap (False: none left)."""
        runs = self.spec.runs
        if self._stop or self._run_index + 1 >= len(runs):
            return False
        # image2 stamps each run's images 0, 1, ... in 1/framerate: the next run starts where this one ends.
        step = float(self._time_base) if self._time_base else 1.0 / 25
        self._run_offset += runs[self._run_index][1] * step
        self._run_index += 1
        container, self._container = self._container, None
        if container is not None:
            close_container(container)
        self._container = open_container(self.spec, self._run_index)
        return True

    def _bad_packet(self, packet: Any, exc: BaseException) -> None:
        self.bad_packets += 1
        # One line for the first; the rest are counted (a badly damaged file would flood the log).
        log_at = log.warning if self.bad_packets == 1 else log.debug
        log_at("%s: skipped a packet the decoder rejected (pts %s): %s", self.spec.label, packet.pts, exc)

    def _drain(self, stream: Any) -> None:
        try:
            for frame in stream.decode(None):
                self._emit(frame)
        except (av.FFmpegError, OSError) as exc:
            log.debug("%s: draining the decoder after a read error: %s", self.spec.label, exc)

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
        tb = frame.time_base or self._time_base  # a frame drained from the decoder comes without one
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
        if seconds is not None:
            seconds += self._run_offset
        if self._resume.replayed(seconds, self._rate()):
            self._discard_payload(payload)  # recorded before the break: never twice, never out of order
            return
        if not self._wait_for_room():
            return
        if seconds is not None:
            self._last_pts = seconds
        self._last_wall = now = time.monotonic()
        if self._broke_at is not None:
            self._stalled += now - self._broke_at
            self._broke_at = None
        pic = Picture(payload, self._stamps.time_of(seconds, duration, not self.decoded, self._rate()), self.decoded,
                      duration)  # fmt: skip
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

    def _rate(self) -> float | None:
        container = self._container
        if container is None or not container.streams.video:
            return None
        s = container.streams.video[0]
        rate = s.average_rate or s.guessed_rate
        return float(rate) if rate else None

    def _discard_payload(self, payload: Any) -> None:
        """A decoded picture that is not queued (a resumed recording's repeat): subclasses free it."""

    def _reconnect(self, exc: BaseException, attempt: int) -> None:
        self.reconnects += 1
        wait = _BACKOFF_S[min(attempt - 1, len(_BACKOFF_S) - 1)]
        log.warning("%s broke (%s); reconnecting in %.2g s (attempt %d of %d)", self.spec.label,
                    why(exc, self.spec), wait, attempt, self.retries)  # fmt: skip
        if self._container is not None:
            close_container(self._container)
            self._container = None
        gone = time.monotonic()
        if self._broke_at is None:  # the break began when the last picture came (a stalled read waited too)
            self._broke_at = self._last_wall if self._last_wall is not None else gone
        while time.monotonic() - gone < wait and not self._stop:
            time.sleep(0.05)
        away = time.monotonic() - gone
        if not self.live and self._last_pts is not None:
            # A recording: the same stream again, resumed after its last picture, on the same clock.
            self._resume.arm(self._last_pts)
            return
        self._stamps.resume_live(away)
