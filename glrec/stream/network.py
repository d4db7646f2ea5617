"""Network outputs through FFmpeg's muxers and protocols (PyAV): MPEG-TS over UDP, RTSP push, RTMP push.

The encoded packets are muxed without re-encoding, exactly as
:class:`~glrec.sinks.container.ContainerSink` muxes files (same stream setup
from the first packet's in-band parameter sets); only the opening differs. Every
packet is flushed to the network as it is muxed (``flush_packets``) and the
muxers are told not to hold packets back (``max_delay=0``).

=========  ========  ==========================================================
scheme     muxer     notes
=========  ========  ==========================================================
udp://     mpegts    ``pkt_size=1316`` (7 TS packets per datagram) unless given
rtsp://    rtsp      pushes (ANNOUNCE/RECORD) to a server that accepts it; TCP
rtmp://    flv       pushes to an RTMP server (``rtmp://host/app/stream``)
=========  ========  ==========================================================
"""

from __future__ import annotations

import logging
from urllib.parse import urlsplit

import av

from ..encoders.cpu import frame_rate
from ..errors import ConfigError, OutputError
from ..frame import Packet
from ..options import VideoOptions
from ..sinks.container import ContainerSink
from .timing import FrameTimes, LatencyStats

log = logging.getLogger("glrec")

#: URL scheme -> (FFmpeg muxer, codecs it carries here).
SCHEMES: dict[str, tuple[str, tuple[str, ...]]] = {
    "udp": ("mpegts", ("h264", "hevc")),
    "rtsp": ("rtsp", ("h264", "hevc")),
    "rtmp": ("flv", ("h264",)),
}


def check_url(url: str, codec: str = "h264") -> str:
    """Return the FFmpeg muxer for ``url`` after checking its scheme, host, port and codec."""
    parts = urlsplit(url)
    if parts.scheme not in SCHEMES:
        raise ConfigError(
            f"Unknown stream URL {url!r}. Use one of: udp://HOST:PORT, rtsp://HOST:PORT/PATH, "
            "rtmp://HOST:PORT/APP/STREAM."
        )
    try:
        port = parts.port
    except ValueError:
        raise ConfigError(f"Stream URL {url!r} has a bad port; use e.g. udp://127.0.0.1:5000.") from None
    if not parts.hostname or (parts.scheme == "udp" and port is None):
        raise ConfigError(f"Stream URL {url!r} needs a host and port, e.g. {parts.scheme}://127.0.0.1:5000.")
    muxer, codecs = SCHEMES[parts.scheme]
    if codec not in codecs:
        raise ConfigError(f"{parts.scheme}:// streams carry {' or '.join(codecs)} here, not {codec}; use --codec h264.")
    return muxer


class NetworkSink(ContainerSink):
    """Mux packets to a network URL; optionally measure render→packet-sent latency.

    ``times`` and ``latency`` (both optional) make every muxed packet add
    ``now - render time of its frame`` to ``latency``.

    >>> sink = NetworkSink("udp://127.0.0.1:5000", VideoOptions.create((640, 360), 30))  # doctest: +SKIP
    """

    def __init__(
        self,
        url: str,
        options: VideoOptions,
        *,
        times: FrameTimes | None = None,
        latency: LatencyStats | None = None,
    ) -> None:
        muxer = check_url(url, options.codec)
        scheme = urlsplit(url).scheme
        if scheme == "udp" and "pkt_size" not in url:
            url += ("&" if "?" in url else "?") + "pkt_size=1316"
        self.url = url
        self.path = url  # type: ignore[assignment]  # a URL, named like a file sink's path in messages
        self.options = options
        self.packets = 0
        self.bytes_written = 0
        self._rate = frame_rate(options.fps)
        self._time_base = 1 / self._rate
        self._fragmented = self._finalize = False
        self._times, self._latency = times, latency
        container_options = {"flush_packets": "1", "max_delay": "0"}
        if scheme == "rtsp":
            container_options["rtsp_transport"] = "tcp"  # no RTP loss on a busy link; ordered delivery
        try:
            self._container = av.open(url, "w", format=muxer, options=container_options, timeout=10)
        except (OSError, av.FFmpegError) as exc:
            raise OutputError(f"Cannot open stream {url!r}: {exc}. Is the receiver running?") from exc
        self._stream = None
        self._closed = False
        log.info("streaming to %s (%s)", url, muxer)

    def write(self, packets: list[Packet]) -> None:
        if self.packets == 0 and packets:
            log.debug("connecting to %s", self.url)
        try:
            super().write(packets)
        except OutputError as exc:
            raise OutputError(
                f"{exc} Check that the receiver at {self.url} is running and accepts this stream."
            ) from exc
        if self._latency is not None and self._times is not None:
            for p in packets:
                self._latency.since(self._times.get(p.pts))
