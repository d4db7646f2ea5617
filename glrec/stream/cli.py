"""``glrec stream`` (to a network URL) and ``glrec serve`` (browser viewer) subcommands.

Both render live on the wall clock until ``--seconds``/``--frames`` pass or
Ctrl-C (which stops cleanly and prints the summary). ``--measure`` prints the
render→packet-on-the-socket latency distribution as one JSON line.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ..cli import _add_encode_options
from ..errors import ConfigError

_EXAMPLE_STREAM = "glrec stream cube --to udp://127.0.0.1:5000   (play: ffplay udp://127.0.0.1:5000)"


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    st = sub.add_parser(
        "stream", parents=[common], help="stream a scene live to udp:// (MPEG-TS), rtsp:// or rtmp://",
        description="Render a scene live and push it to a network URL. " + _EXAMPLE_STREAM,
    )  # fmt: skip
    _add_live_options(st)
    st.add_argument(
        "--to", required=True, metavar="URL", help="udp://HOST:PORT, rtsp://HOST:PORT/PATH or rtmp://HOST/APP/KEY"
    )
    st.set_defaults(func=_cmd_stream)

    sv = sub.add_parser(
        "serve", parents=[common], help="serve a scene live to browsers (WebCodecs), with mouse/keyboard input",
        description="Serve a web page that shows the scene live; viewers' mouse and keyboard go to the scene.",
    )  # fmt: skip
    _add_live_options(sv)
    sv.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1; others need a token)")
    sv.add_argument("--port", type=int, default=8080, help="port (default 8080; 0 = any free port)")
    sv.add_argument("--token", help="access token for viewers (generated when binding beyond loopback)")
    sv.add_argument("--max-viewers", type=int, default=8, help="most viewers at once (default 8)")
    sv.set_defaults(func=_cmd_serve)


def _add_live_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("scene", help="built-in name (see 'glrec scenes'), file.py[:Class], or shader.glsl")
    p.add_argument("--size", default="1280x720", help="WIDTHxHEIGHT (default 1280x720)")
    p.add_argument("--fps", type=float, default=30.0, help="frames per second (default 30)")
    length = p.add_mutually_exclusive_group()
    length.add_argument("--seconds", type=float, help="stop after this long (default: run until Ctrl-C)")
    length.add_argument("--frames", type=int, help="stop after this many frame slots")
    p.add_argument("--device", type=int, help="EGL device index")
    p.add_argument("--measure", action="store_true", help="print render->packet latency (median, p99) as JSON")
    _add_encode_options(p)


def _options(args: argparse.Namespace) -> dict[str, Any]:
    return dict(
        codec=args.codec, encoder=args.encoder, pix_fmt=args.pix_fmt, matrix=args.matrix, range=args.colour_range,
        crf=args.crf, qp=args.qp, bitrate=args.bitrate, preset=args.preset, gop=args.gop, bframes=args.bframes,
        quality=args.quality, pad=args.pad, device=args.device,
    )  # fmt: skip


@contextmanager
def _stop_on_signals() -> Iterator[threading.Event]:
    """Ctrl-C and SIGTERM end a live run cleanly (the summary still prints)."""
    stop = threading.Event()
    handler = lambda *_: stop.set()  # noqa: E731
    previous = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield stop
    finally:
        for s, h in previous.items():
            signal.signal(s, h)


def _length(args: argparse.Namespace) -> dict[str, Any]:
    if args.frames is not None and args.frames < 1:
        raise ConfigError(f"--frames {args.frames} must be at least 1.")
    if args.seconds is not None and not args.seconds > 0:
        raise ConfigError(f"--seconds {args.seconds} must be positive.")
    return {"frames": args.frames, "seconds": args.seconds}


def _report(args: argparse.Namespace, result: Any, extra: dict[str, Any] | None = None) -> None:
    if not args.quiet:
        print(result.summary())
    if args.measure:
        out = {"target": result.target, "frames": result.frames, "skipped": result.skipped,
               "render_to_packet": result.latency, **(extra or {})}  # fmt: skip
        print(json.dumps(out))


def _cmd_stream(args: argparse.Namespace) -> int:
    from ..options import VideoOptions
    from .live import LiveSession
    from .network import NetworkSink, check_url
    from .timing import FrameTimes, LatencyStats

    length = _length(args)
    check_url(args.to, args.codec)
    opts = _options(args)
    video = VideoOptions.create(args.size, args.fps, live=True, **{k: v for k, v in opts.items() if k != "device"})
    times, latency = FrameTimes(), LatencyStats()
    sink = NetworkSink(args.to, video, times=times, latency=latency)
    session = LiveSession(
        args.scene, sink, size=args.size, fps=args.fps, times=times, latency=latency, target=args.to, **opts
    )
    if not args.quiet:
        print(f"glrec: streaming {args.scene} to {args.to} (Ctrl-C to stop)", file=sys.stderr, flush=True)
    with _stop_on_signals() as stop:
        result = session.run(stop=stop, **length)
    _report(args, result)
    return 0


def _cmd_serve(args: argparse.Namespace) -> int:
    from ..options import parse_size
    from .live import LiveSession
    from .server import Broadcaster, StreamServer

    length = _length(args)
    if args.pix_fmt != "yuv420p":
        raise ConfigError(f"The browser viewer needs pix_fmt yuv420p, not {args.pix_fmt}.")
    server = StreamServer(
        size=parse_size(args.size), fps=args.fps, host=args.host, port=args.port, token=args.token,
        max_viewers=args.max_viewers, codec=args.codec,
    )  # fmt: skip
    with server:
        session = LiveSession(
            args.scene, Broadcaster(server), size=args.size, fps=args.fps, inputs=server.inputs, times=server.times,
            latency=server.sent_latency, target=server.url, **_options(args),
        )  # fmt: skip
        server.on_keyframe_request = session.request_keyframe
        # stdout, flushed: scripts (and people) read the address from here.
        print(f"glrec: open {server.url} in a browser (Ctrl-C to stop)", flush=True)
        with _stop_on_signals() as stop:
            result = session.run(stop=stop, **length)
        stats = server.stats()
    _report(args, result, {"server": stats})
    if not args.quiet:
        print(f"viewers: {stats['viewers_total']}, inputs delivered {stats['inputs_delivered']}, "
              f"rejected {sum(stats['inputs_rejected'].values())}")  # fmt: skip
    return 0
