"""The browser viewer's sink: packets of a live recorder go to a :class:`~.server.StreamServer`."""

from __future__ import annotations

from ...frame import Packet
from .server import StreamServer


class Broadcaster:
    """The sink end of a live recorder: hands packets to a :class:`StreamServer`."""

    def __init__(self, server: StreamServer) -> None:
        self.server = server
        self.path = server.url
        self.packets = 0
        self.bytes_written = 0

    def write(self, packets: list[Packet]) -> None:
        """Publish each packet to every connected viewer (each has its own bounded queue)."""
        for p in packets:
            self.server.publish(p)
            self.packets += 1
            self.bytes_written += len(p.data)

    def close(self) -> None:
        """Nothing to finish: a live stream has no trailer (the server closes separately)."""
