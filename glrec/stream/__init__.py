"""Live streaming: render on the wall clock, encode for latency, send to players and browsers.

- :class:`LiveSession` renders a scene live into any sink (:mod:`.live`);
- :class:`NetworkSink` pushes MPEG-TS over UDP, RTSP or RTMP (:mod:`.network`);
- :class:`StreamServer` serves a browser viewer over a WebSocket, with viewer
  input coming back to scenes that have ``on_input(event)`` (:mod:`.server`,
  :mod:`.inputs`).

The WebSocket server needs the ``stream`` extra (``pip install glrec[stream]``);
network outputs need only PyAV.

>>> from glrec.stream import LiveSession, NetworkSink  # doctest: +SKIP
"""

from .clock import FrameClock
from .inputs import InputEvent, InputQueue, Interactive
from .live import LiveResult, LiveSession
from .network import NetworkSink
from .server import Broadcaster, StreamServer
from .timing import FrameTimes, LatencyStats

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
