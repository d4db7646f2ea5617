"""The browser viewer's server: one HTTP+WebSocket port that serves the page and fans frames out.

Runs an asyncio event loop (``websockets``) on its own thread; the encode
thread hands it packets through :meth:`StreamServer.publish` (thread-safe). The
same port serves ``/`` (the viewer page), its scripts, ``/stats`` (JSON) and
the WebSocket ``/ws``.

Safe by default:

- binds 127.0.0.1; binding any other address needs an access token (one is
  generated if none is given) that the WebSocket and ``/stats`` requests must
  carry as ``?token=`` (the page passes its own on);
- on loopback, requests must name a loopback host (a DNS-rebinding page cannot
  reach the server), and a browser's WebSocket must come from the server's own
  page (``Origin`` checked), so another site open in the same browser cannot
  watch or drive the scene (these checks: :mod:`glrec.sinks.viewer.gate`);
- at most ``max_viewers`` viewers; messages from a viewer are at most
  :data:`~glrec.events.MAX_MESSAGE_BYTES` (larger ones close that
  viewer's connection), and are validated, counted and never executed;
- a slow viewer's queue is bounded (:class:`~glrec.sinks.viewer.viewers.ViewerQueue`).
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import itertools
import json
import logging
import secrets
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from ...errors import ConfigError, GlrecError, OutputError
from ...events import MAX_MESSAGE_BYTES, InputEvent, InputQueue, InputRejected, KeyframeRequest, Ping, parse_message
from ...frame import Packet
from ..frame_times import FrameTimes, LatencyStats
from .gate import RequestGate, is_loopback
from .protocol import pack_frame
from .viewers import ViewerQueue

log = logging.getLogger("glrec")

_KEYFRAME_REQUEST_GAP_S = 0.2  # at most this often, however many viewers ask
# And at most this often for any one viewer: a viewer asks when it joins or loses its place,
# not 5 times a second (which made every viewer's stream mostly keyframes).
_VIEWER_KEYFRAME_GAP_S = 2.0


class StreamExtraMissingError(GlrecError, ImportError):
    """The browser viewer needs the ``stream`` extra (the websockets package)."""


@dataclass
class _Viewer:
    id: int
    ws: Any
    queue: ViewerQueue
    sent: int = 0
    task: asyncio.Task[None] | None = field(default=None, repr=False)
    last_key_request: float = -_VIEWER_KEYFRAME_GAP_S  # monotonic time of its last request that was passed on


class StreamServer:
    """Serve the viewer page and stream frames to every connected viewer.

    Defaults: ``host`` 127.0.0.1, ``port`` 8080 (0 picks a free port),
    ``max_viewers`` 8, per-viewer queue of ``max_queue_frames`` (default half a
    second of frames) and ``max_queue_bytes`` 8 MiB. ``token`` is required for
    non-loopback hosts (generated when None).

    >>> server = StreamServer(size=(1280, 720), fps=30, port=0)  # doctest: +SKIP
    >>> server.start(); print(server.url)                         # doctest: +SKIP
    http://127.0.0.1:40123/
    """

    def __init__(
        self,
        *,
        size: tuple[int, int],
        fps: float,
        host: str = "127.0.0.1",
        port: int = 8080,
        token: str | None = None,
        max_viewers: int = 8,
        max_queue_frames: int | None = None,
        max_queue_bytes: int = 8 * 2**20,
        inputs: InputQueue | None = None,
        times: FrameTimes | None = None,
        on_keyframe_request: Any = None,
        codec: str = "h264",
    ) -> None:
        if importlib.util.find_spec("websockets") is None:
            raise StreamExtraMissingError(
                "The browser viewer needs the websockets package: pip install 'glrec[stream]'."
            )
        if codec != "h264":
            raise ConfigError(f"The browser viewer plays h264 (WebCodecs/MSE), not {codec}; use --codec h264.")
        if not 0 <= port <= 65535:
            raise ConfigError(f"port {port} is outside 0..65535; use e.g. 8080 (0 picks a free port).")
        if max_viewers < 1:
            raise ConfigError(f"max_viewers {max_viewers} must be at least 1.")
        if token is not None and len(token) < 16:
            raise ConfigError("An access token must be at least 16 characters; omit it to have one generated.")
        if token is None and not is_loopback(host):
            token = secrets.token_urlsafe(18)  # off loopback, nobody gets in without it
        self.size, self.fps, self.host, self.port, self.token = size, fps, host, port, token
        self.max_viewers = max_viewers
        self.max_queue_frames = max_queue_frames or max(4, round(fps / 2))
        self.max_queue_bytes = max_queue_bytes
        self.inputs = inputs if inputs is not None else InputQueue()
        self.times = times if times is not None else FrameTimes()
        self.on_keyframe_request = on_keyframe_request
        self.sent_latency = LatencyStats()  # render -> frame written to a viewer's socket
        self._gate = RequestGate(host, token)
        self.refused = self._gate.refused  # HTTP/handshake refusals by reason
        self.frames_published = 0
        self.viewers_total = 0
        self._viewers: dict[int, _Viewer] = {}
        self._ids = itertools.count(1)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._last_key_request = 0.0
        self.keyframe_requests_dropped = 0  # asked for more often than _VIEWER_KEYFRAME_GAP_S allows
        self.viewer_stats: dict[int, dict[str, int]] = {}

    # -- lifecycle ----------------------------------------------------------------------------

    def start(self) -> None:
        """Bind and start serving on a background thread; raises OutputError if the port is taken."""
        self._thread = threading.Thread(target=self._run, name="glrec-serve", daemon=True)
        self._thread.start()
        self._ready.wait(30)
        if self._error is not None:
            raise self._error

    def _run(self) -> None:
        try:
            asyncio.run(self._main())
        except BaseException as exc:
            self._error = exc
            self._ready.set()

    async def _main(self) -> None:
        from websockets.asyncio.server import serve

        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        try:
            server = await serve(
                self._handle, self.host, self.port, process_request=self._process_request,
                max_size=MAX_MESSAGE_BYTES, max_queue=16, compression=None, ping_interval=20,
            )  # fmt: skip
        except OSError as exc:
            raise OutputError(
                exc.errno,
                f"Cannot listen on {self.host}:{self.port}: {exc.strerror}. Pick another --port (0 = any free one).",
            ) from exc
        async with server:
            self.port = server.sockets[0].getsockname()[1] if server.sockets else self.port
            self._ready.set()
            log.info("viewer at %s", self.url)
            await self._stop.wait()

    def close(self) -> None:
        """Disconnect every viewer and stop serving. Safe to call twice."""
        thread, self._thread = self._thread, None
        if thread is None:
            return
        if self._loop is not None and self._stop is not None:
            with contextlib.suppress(RuntimeError):  # the loop already ended
                self._loop.call_soon_threadsafe(self._stop.set)
        thread.join(timeout=10)

    def __enter__(self) -> StreamServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def url(self) -> str:
        """The viewer page's address (with the token, when there is one)."""
        host = self.host if self.host not in ("0.0.0.0", "::", "") else "127.0.0.1"
        host = f"[{host}]" if ":" in host else host
        return f"http://{host}:{self.port}/" + (f"?token={self.token}" if self.token else "")

    # -- frames in (encode thread) ------------------------------------------------------------

    def publish(self, packet: Packet) -> None:
        """Send one encoded access unit to every viewer (callable from any thread)."""
        message = pack_frame(packet.data, packet.pts, packet.keyframe, self.times.get(packet.pts))
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        with contextlib.suppress(RuntimeError):  # shutting down
            loop.call_soon_threadsafe(self._fan_out, message, packet.keyframe, packet.pts)

    def _fan_out(self, message: bytes, key: bool, index: int) -> None:
        self.frames_published += 1
        for viewer in list(self._viewers.values()):
            if not viewer.queue.offer(message, key=key, index=index) and viewer.queue.waiting_for_key:
                self.request_keyframe(viewer)

    def request_keyframe(self, viewer: _Viewer | None = None) -> None:
        """Ask the encoder for a keyframe: at most every 0.2 s, and every 2 s on behalf of one ``viewer``.

        A viewer asking more often is not passed on (it gets the next periodic keyframe).
        """
        now = time.monotonic()
        if viewer is not None:
            if now - viewer.last_key_request < _VIEWER_KEYFRAME_GAP_S:
                self.keyframe_requests_dropped += 1
                return
            viewer.last_key_request = now
        if self.on_keyframe_request is not None and now - self._last_key_request >= _KEYFRAME_REQUEST_GAP_S:
            self._last_key_request = now
            self.on_keyframe_request()

    # -- HTTP ---------------------------------------------------------------------------------

    def _process_request(self, connection: Any, request: Any) -> Any:
        full = f"{self.max_viewers} viewers are connected already." if len(self._viewers) >= self.max_viewers else None
        return self._gate.answer(connection, request, url=self.url, full=full, stats=self._stats)

    # -- WebSocket ----------------------------------------------------------------------------

    async def _handle(self, ws: Any) -> None:
        from websockets.exceptions import ConnectionClosed

        if len(self._viewers) >= self.max_viewers:  # two handshakes raced for the last place
            self.refused["full"] += 1
            await ws.close(1013, "too many viewers")
            return
        viewer = _Viewer(next(self._ids), ws, ViewerQueue(self.max_queue_frames, self.max_queue_bytes))
        self._viewers[viewer.id] = viewer
        self.viewers_total += 1
        log.info("viewer %d connected (%d now)", viewer.id, len(self._viewers))
        try:
            hello = {"type": "hello", "viewer": viewer.id, "width": self.size[0], "height": self.size[1],
                     "fps": self.fps, "codec": "h264"}  # fmt: skip
            await ws.send(json.dumps(hello))
            self.request_keyframe(viewer)  # so the new viewer starts now, not at the next periodic keyframe
            viewer.task = asyncio.create_task(self._send_loop(viewer))
            async for message in ws:
                await self._on_message(viewer, message)
        except ConnectionClosed as exc:
            if exc.sent is not None and exc.sent.code == 1009:  # websockets refused a message over max_size
                self.inputs.reject("too large")
        finally:
            del self._viewers[viewer.id]
            if viewer.task is not None:
                viewer.task.cancel()
            self.viewer_stats[viewer.id] = self._viewer_summary(viewer)
            log.info("viewer %d left (%d now)", viewer.id, len(self._viewers))

    async def _send_loop(self, viewer: _Viewer) -> None:
        from websockets.exceptions import ConnectionClosed

        try:
            while True:
                message, index = await viewer.queue.get()
                await viewer.ws.send(message)  # returns once written to the socket (waits while its buffer is full)
                viewer.sent += 1
                self.sent_latency.since(self.times.get(index))
        except ConnectionClosed:
            pass

    async def _on_message(self, viewer: _Viewer, message: str | bytes) -> None:
        try:
            msg = parse_message(message)
        except InputRejected as exc:
            self.inputs.reject(exc.reason)
            return
        if isinstance(msg, InputEvent):
            self.inputs.put(msg, viewer.id)
        elif isinstance(msg, Ping):
            await viewer.ws.send(json.dumps({"type": "pong", "t": msg.t, "server": time.time() * 1000.0}))
        elif isinstance(msg, KeyframeRequest):
            viewer.queue.waiting_for_key = True  # the viewer lost its place: restart it at the next keyframe
            self.request_keyframe(viewer)

    # -- numbers ------------------------------------------------------------------------------

    @staticmethod
    def _viewer_summary(viewer: _Viewer) -> dict[str, int]:
        q = viewer.queue
        transport = getattr(viewer.ws, "transport", None)
        # Bytes the socket layer holds for this viewer: websockets waits (send blocks) above its
        # write limit, so this stays near one message plus 32 KiB.
        buffered = transport.get_write_buffer_size() if transport is not None and not transport.is_closing() else 0
        return {"sent": viewer.sent, "dropped": q.dropped, "overflows": q.overflows, "queued_bytes": q.queued_bytes,
                "peak_bytes": q.peak_bytes, "socket_buffer": buffered}  # fmt: skip

    def stats(self) -> dict[str, Any]:
        """Counters and the render→socket latency distribution (also served at /stats); any thread."""
        loop = self._loop
        on_loop = False
        with contextlib.suppress(RuntimeError):
            on_loop = asyncio.get_running_loop() is loop
        if loop is None or on_loop or not loop.is_running():
            return self._stats()
        # Read the viewers on their own thread, so no count is read half-updated.
        return asyncio.run_coroutine_threadsafe(self._stats_async(), loop).result(timeout=10)

    async def _stats_async(self) -> dict[str, Any]:
        return self._stats()

    def _stats(self) -> dict[str, Any]:
        current = {v.id: self._viewer_summary(v) for v in list(self._viewers.values())}
        return {
            "viewers": len(current),
            "viewers_total": self.viewers_total,
            "frames_published": self.frames_published,
            "render_to_socket": self.sent_latency.summary(),
            "per_viewer": {str(k): v for k, v in {**self.viewer_stats, **current}.items()},
            "inputs_delivered": self.inputs.delivered,
            "inputs_dropped": self.inputs.dropped,
            "inputs_rejected": dict(self.inputs.rejected),
            "refused": dict(self.refused),
            "keyframe_requests_dropped": self.keyframe_requests_dropped,
        }
