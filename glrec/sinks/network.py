"""Network outputs through FFmpeg's muxers and protocols (PyAV): MPEG-TS over UDP, RTSP push, RTMP push.

The encoded packets are muxed without re-encoding by the same
:class:`~glrec.sinks.mux.Muxer` the file sink uses; only the opening differs.
Every packet is flushed to the network as it is muxed (``flush_packets``) and
the muxers are told not to hold packets back (``max_delay=0``). The schemes and
their muxers are in :data:`glrec.sinks.registry.STREAMS`: ``udp://`` sends
``pkt_size=1316`` (7 TS packets per datagram) unless given; ``rtsp://`` pushes
(ANNOUNCE/RECORD) over TCP to a server that accepts it; ``rtmp://`` pushes FLV.
"""

from __future__ import annotations

import logging
from urllib.parse import urlsplit

import av

from ..errors import ConfigError, OutputError
from ..frame import Packet
from .frame_times import FrameTimes, LatencyStats
from .mux import Muxer
from .registry import STREAMS, output_kind
from .stream_info import DescribesStream, StreamInfo

log = logging.getLogger("glrec")


def check_url(url: str, codec: str = "h264") -> str:
    """Return the FFmpeg muxer for ``url`` after checking its scheme, host, port and codec."""
    kind = output_kind(url, codec)
    parts = urlsplit(url)
    try:
        port = parts.port
    except ValueError:
        raise ConfigError(f"Stream URL {url!r} has a bad port; use e.g. udp://127.0.0.1:5000.") from None
    if not parts.hostname or (parts.scheme == "udp" and port is None):
        raise ConfigError(f"Stream URL {url!r} needs a host and port, e.g. {parts.scheme}://127.0.0.1:5000.")
    assert kind.muxer is not None
    return kind.muxer


class NetworkSink:
    """Mux packets to a network URL; optionally measure render→packet-sent latency.

    ``times`` and ``latency`` (both optional) make every muxed packet add
    ``now - render time of its frame`` to ``latency``.

    >>> sink = NetworkSink("udp://127.0.0.1:5000", VideoOptions.create((640, 360), 30))  # doctest: +SKIP
    """

    def __init__(
        self,
        url: str,
        options: DescribesStream,
        *,
        times: FrameTimes | None = None,
        latency: LatencyStats | None = None,
    ) -> None:
        options = StreamInfo.of(options)
        muxer = check_url(url, options.codec)
        scheme = urlsplit(url).scheme
        if scheme == "udp" and "pkt_size" not in url:
            url += ("&" if "?" in url else "?") + "pkt_size=1316"
        self.url = url
        self.path = url  # a URL, named like a file sink's path in messages
        self._times, self._latency = times, latency
        container_options = {"flush_packets": "1", "max_delay": "0"}
        if scheme == "rtsp":
            container_options["rtsp_transport"] = "tcp"  # no RTP loss on a busy link; ordered delivery
        try:
            container = av.open(url, "w", format=muxer, options=container_options, timeout=10)
        except (OSError, av.FFmpegError) as exc:
            raise OutputError(f"Cannot open stream {url!r}: {exc}. Is the receiver running?") from exc
        self._mux = Muxer(container, options)
        self._closed = False
        log.info("streaming to %s (%s)", url, muxer)

    @property
    def packets(self) -> int:
        """Packets sent so far (one per frame)."""
        return self._mux.packets

    @property
    def bytes_written(self) -> int:
        """Bytes handed to FFmpeg's muxer so far."""
        return self._mux.bytes_written

    def write(self, packets: list[Packet]) -> None:
        """Send ``packets`` (connecting at the first); a closed or broken stream raises OutputError."""
        if self._closed and packets:
            raise OutputError(f"The stream to {self.url} is closed; no more frames can be sent.")
        if self._mux.packets == 0 and packets:
            log.debug("connecting to %s", self.url)
        for p in packets:
            try:
                self._mux.mux(p)
            except (OSError, av.FFmpegError) as exc:
                raise OutputError(
                    f"Sending to {self.url} failed: {exc}. Check that the receiver is running and accepts this stream."
                ) from exc
            if self._latency is not None and self._times is not None:
                self._latency.since(self._times.get(p.pts))

    def close(self) -> None:
        """Write the trailer once (MPEG-TS/FLV have little to write; RTSP says TEARDOWN)."""
        if self._closed:
            return
        self._closed = True
        try:
            self._mux.container.close()
        except (OSError, av.FFmpegError) as exc:
            raise OutputError(f"Closing the stream to {self.url} failed: {exc}.") from exc


__all__ = ["STREAMS", "NetworkSink", "check_url"]
