"""Live streaming: render on the wall clock, encode for latency, send to players and browsers.

- :class:`LiveSession` renders a scene live into any sink (:mod:`.live`);
- :class:`~glrec.sinks.network.NetworkSink` pushes MPEG-TS over UDP, RTSP or RTMP;
- :class:`~glrec.sinks.viewer.StreamServer` serves a browser viewer over a
  WebSocket, with viewer input coming back to scenes that have
  ``on_input(event)`` (:mod:`glrec.events`).

The WebSocket server needs the ``stream`` extra (``pip install glrec[stream]``);
network outputs need only PyAV.

>>> from glrec.stream import LiveSession, NetworkSink  # doctest: +SKIP
"""

from ..events import InputEvent, InputQueue, Interactive
from ..sinks.frame_times import FrameTimes, LatencyStats
from ..sinks.network import NetworkSink
from ..sinks.viewer import Broadcaster, StreamServer
from .clock import FrameClock
from .live import LiveResult, LiveSession

__all__ = [
    "Broadcaster",
    "FrameClock",
    "FrameTimes",
    "InputEvent",
    "InputQueue",
    "Interactive",
    "LatencyStats",
    "LiveResult",
    "LiveSession",
    "NetworkSink",
    "StreamServer",
]
