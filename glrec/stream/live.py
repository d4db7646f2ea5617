"""Live mode: render a scene on the wall clock and send each frame on as soon as it is encoded.

:class:`LiveSession` drives a :class:`~glrec.recorder.Recorder` built with
``live=True`` (encoder tuned for latency, each frame handed to the encoder as
soon as it is read back) from a :class:`~glrec.stream.clock.FrameClock`:
before every frame it delivers queued viewer input to the scene, stamps the
frame's render time, and renders the slot the clock gave it, whose index is the
frame's timestamp.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..events import InputQueue
from ..options import frame_count
from ..recorder import Recorder
from ..scenes import Scene, load_scene
from ..scenes.capabilities import Finite
from ..sinks import Sink
from ..sinks.frame_times import FrameTimes, LatencyStats
from .clock import SKIP_POLICY, FrameClock

log = logging.getLogger("glrec")

#: Frames queued between the render thread and the encoder: one being encoded, one
#: waiting. More would only add delay; when the encoder is slower, the clock skips.
LIVE_QUEUE = 2


@dataclass(frozen=True)
class LiveResult:
    """What a live session did."""

    target: str
    frames: int  # frames rendered and encoded
    skipped: int  # wall-clock slots skipped because rendering fell behind
    wall_seconds: float
    latency: dict[str, float]  # render -> packet sent (ms): count, median_ms, p99_ms, max_ms

    def summary(self) -> str:
        """The line ``glrec stream``/``serve`` print at the end.

        Target, frames, rate, slots skipped by the frame clock, latency.
        """
        fps = self.frames / self.wall_seconds if self.wall_seconds > 0 else 0.0
        text = (
            f"{self.target}: {self.frames} frames in {self.wall_seconds:.2f} s = {fps:.1f} fps, "
            f"{self.skipped} slots skipped (policy {SKIP_POLICY!r})"
        )
        if self.latency.get("count"):
            text += (
                f"; render->packet sent median {self.latency['median_ms']:.1f} ms, p99 {self.latency['p99_ms']:.1f} ms"
            )
        return text


class LiveSession:
    """Render ``scene`` live at ``fps`` into ``sink``.

    ``options`` are :class:`~glrec.recorder.Recorder` keywords (codec, bitrate,
    preset, gop, ...). ``inputs`` delivers viewer events to the scene;
    ``times`` receives each frame's render time; ``latency`` is reported in the
    result (the sink fills it).

    >>> from glrec.sinks.network import NetworkSink  # doctest: +SKIP
    >>> session = LiveSession("cube", sink, size=(1280, 720), fps=30)  # doctest: +SKIP
    >>> session.run(seconds=10).summary()  # doctest: +SKIP
    """

    def __init__(
        self,
        scene: Scene | str,
        sink: Sink,
        *,
        inputs: InputQueue | None = None,
        times: FrameTimes | None = None,
        latency: LatencyStats | None = None,
        target: str = "",
        **options: Any,
    ) -> None:
        self.scene = load_scene(scene)
        self.sink = sink
        self.inputs = inputs if inputs is not None else InputQueue()
        self.times = times if times is not None else FrameTimes()
        self.latency = latency if latency is not None else LatencyStats()
        self.target = target or str(getattr(sink, "path", "stream"))
        self.options = options
        self.clock: FrameClock | None = None
        self._recorder: Recorder | None = None

    def request_keyframe(self) -> None:
        """Make the next frame a keyframe (any thread; ignored before the session starts)."""
        rec = self._recorder
        if rec is not None:
            rec.request_keyframe()

    def run(
        self,
        *,
        frames: int | None = None,
        seconds: float | None = None,
        stop: threading.Event | None = None,
        on_start: Callable[[], None] | None = None,
    ) -> LiveResult:
        """Stream until ``frames`` slots (or ``seconds``) have passed, ``stop`` is set, or Ctrl-C.

        With neither ``frames`` nor ``seconds`` it runs until stopped. Slots skipped
        because rendering fell behind count towards ``frames``: the stream lasts
        ``frames / fps`` seconds of wall time either way. ``on_start`` is called once
        the recorder is built and the scene set up (every option checked), just before
        the first slot: where a command announces itself.
        """
        started = time.perf_counter()
        options = {"queue_size": LIVE_QUEUE, **self.options, "live": True}
        rec = Recorder(self.target, sink=self.sink, **options)
        if frames is None and seconds is not None:
            frames = frame_count(rec.fps, seconds)
        with rec:
            self._recorder = rec
            rec.prepare(self.scene)  # set up (compile shaders) before the clock starts, not in slot 0's time
            if on_start is not None:
                on_start()
            clock = self.clock = FrameClock(rec.fps)
            overshoot = 0
            try:
                while stop is None or not stop.is_set():
                    slot = clock.next_slot()
                    if frames is not None and slot >= frames:
                        overshoot = slot - frames  # slots skipped past the end are not skips
                        break
                    rec.skip_to(slot)
                    with rec.ctx:  # a scene's input handler (or a video input's end check) may touch GL objects
                        if isinstance(self.scene, Finite) and self.scene.done(rec.time):
                            break  # a video input that has ended before this slot (glrec._transcode.VideoScene)
                        self.inputs.dispatch(self.scene)
                    self.times.mark(slot)
                    rec.render(self.scene)
            finally:
                self._recorder = None
        result = rec.close()
        live = LiveResult(
            target=self.target,
            frames=result.frames,
            skipped=clock.skipped - overshoot,
            wall_seconds=time.perf_counter() - started,
            latency=self.latency.summary(),
        )
        log.info("%s", live.summary())
        return live
