"""The browser viewer: a page, its scripts and a WebSocket on one port (``glrec serve``).

Needs the ``stream`` extra (``pip install glrec[stream]``) for the server.
"""

from .broadcast import Broadcaster
from .server import StreamServer

__all__ = ["Broadcaster", "StreamServer"]
