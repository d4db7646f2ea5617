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

from ..errors import ConfigError
from ..options import InputOptions, LengthOptions, VideoOptions
from .flags import add_flags, add_recording_flags, recording_options, values_from_args

_EXAMPLE_STREAM = "glrec stream cube --to udp://127.0.0.1:5000   (play: ffplay udp://127.0.0.1:5000)"


#: What each live command's destination carries: network streams h264 or hevc (rtmp:// h264), the browser h264.
_STREAM_CODECS = ("h264", "hevc")
_VIEWER_CODECS = ("h264",)
#: Options a live command cannot use: no JPEG over the network or to the browser (so no --quality), no audio
#: (live commands send video only). The browser also fixes codec and pixel format (h264, yuv420p): those flags
#: stay, saying so, and anything else is refused with that reason.
_LIVE_EXCLUDE = ("quality",)
_NO_AUDIO = ("drop_audio",)


def _takers(codecs: tuple[str, ...]) -> list[str]:
    """The encoders that make one of ``codecs``, in the registry's order."""
    from ..encoders.registry import ENCODERS

    return [name for name, row in ENCODERS.items() if set(row.codecs) & set(codecs)]


def _encoder_help(codecs: tuple[str, ...]) -> str:
    from ..encoders.registry import AUTO_ORDER

    takers = _takers(codecs)
    auto = [n for n in AUTO_ORDER if n in takers]
    return f"auto (the first that fits of {', '.join(auto)}), or one of {', '.join(takers)} (default auto)"


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    st = sub.add_parser(
        "stream", parents=[common], help="stream a scene live to udp:// (MPEG-TS), rtsp:// or rtmp://",
        description="Render a scene live and push it to a network URL. " + _EXAMPLE_STREAM,
    )  # fmt: skip
    _add_live_options(st, _LIVE_EXCLUDE, {
        "codec": "h264 or hevc (rtmp:// carries h264 only) (default h264)", "encoder": _encoder_help(_STREAM_CODECS),
    })  # fmt: skip
    st.add_argument(
        "--to", required=True, metavar="URL", help="udp://HOST:PORT, rtsp://HOST:PORT/PATH or rtmp://HOST/APP/KEY"
    )
    st.set_defaults(func=_cmd_stream)

    sv = sub.add_parser(
        "serve", parents=[common], help="serve a scene live to browsers (WebCodecs), with mouse/keyboard input",
        description="Serve a web page that shows the scene live; viewers' mouse and keyboard go to the scene.",
    )  # fmt: skip
    _add_live_options(sv, _LIVE_EXCLUDE, {
        "codec": "h264, the codec the browser viewer plays (default h264)", "encoder": _encoder_help(_VIEWER_CODECS),
        "pix_fmt": "yuv420p, what the browser viewer decodes (default yuv420p)",
    })  # fmt: skip
    sv.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1; others need a token)")
    sv.add_argument("--port", type=int, default=8080, help="port (default 8080; 0 = any free port)")
    sv.add_argument("--token", help="access token for viewers (generated when binding beyond loopback)")
    sv.add_argument("--max-viewers", type=int, default=8, help="most viewers at once (default 8)")
    sv.set_defaults(func=_cmd_serve)


_LIVE_LENGTH = {
    "seconds": "stop after this long (default: run until Ctrl-C)",
    "frames": "stop after this many frame slots (default: run until Ctrl-C)",
}


def _add_live_options(p: argparse.ArgumentParser, exclude: tuple[str, ...], encoding_help: dict[str, str]) -> None:
    """The options a live command takes: those of ``glrec record`` less what its destination cannot carry."""
    p.add_argument("scene", help="built-in name (see 'glrec scenes'), file.py[:Class], a Shadertoy shader, or a "
                   "video input (file, URL, /dev/videoN) to show with --overlay drawn over it")  # fmt: skip
    p.add_argument("--measure", action="store_true", help="print render->packet latency (median, p99) as JSON")
    add_recording_flags(p, length_help=_LIVE_LENGTH, encoding_help=encoding_help, exclude=exclude)
    add_flags(p, InputOptions, title="video input and Shadertoy channels (video only: live commands send no audio)",
              exclude=_NO_AUDIO)  # fmt: skip


def _check_encoder(args: argparse.Namespace, carries: tuple[str, ...], where: str) -> None:
    """An encoder that makes none of the codecs ``where`` carries, refused before anything starts or is announced."""
    from ..encoders.registry import ENCODERS

    row = ENCODERS.get(args.encoder or "auto")  # auto, or a name the options refuse later in their own words
    if row is not None and not set(row.codecs) & set(carries):
        takers = " or ".join(["auto", *_takers(carries)])
        raise ConfigError(f"{where} carries {' or '.join(carries)}, and encoder {row.name} makes "
                          f"{' and '.join(row.codecs)} only; use --encoder {takers}.")  # fmt: skip


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


def _length(args: argparse.Namespace, video: VideoOptions) -> dict[str, Any]:
    """The run's length as LiveSession takes it; neither given: until stopped."""
    length = LengthOptions.parse(values_from_args(args, LengthOptions))
    return {"frames": length.count(video.fps, default=None), "seconds": None}


def _video(options: dict[str, Any]) -> VideoOptions:
    """The video options of a live run, validated as the recorder will (live=True)."""
    from ..process.spec import output_size

    opts = {k: v for k, v in options.items() if k in VideoOptions.names()}
    video = VideoOptions.create(live=True, **opts)
    # A processing stage may encode another size than is rendered: the sink and viewer get the stream's.
    processed = output_size(options.get("process"))
    return video if processed is None else video.with_size(processed)


def _scene(args: argparse.Namespace) -> tuple[Any, dict[str, Any]]:
    """The scene (or video input with its overlay) and the recorder options, sized from the input if any."""
    from .._transcode import live_scene

    return live_scene(args.scene, InputOptions.parse(values_from_args(args, InputOptions)), recording_options(args))


def _report(args: argparse.Namespace, result: Any, extra: dict[str, Any] | None = None) -> None:
    if not args.quiet:
        print(result.summary())
    if args.measure:
        out = {"target": result.target, "frames": result.frames, "skipped": result.skipped,
               "render_to_packet": result.latency, **(extra or {})}  # fmt: skip
        print(json.dumps(out))


def _cmd_stream(args: argparse.Namespace) -> int:
    from ..sinks.frame_times import FrameTimes, LatencyStats
    from ..sinks.network import NetworkSink, check_url
    from ..sinks.registry import output_kind
    from ..stream.live import LiveSession

    _check_encoder(args, output_kind(args.to, "h264").codecs, f"{args.to.split(':', 1)[0]}://")
    scene, options = _scene(args)
    video = _video(options)
    length = _length(args, video)
    check_url(args.to, video.codec)
    times, latency = FrameTimes(), LatencyStats()
    sink = NetworkSink(args.to, video.facts, times=times, latency=latency)
    session = LiveSession(scene, sink, times=times, latency=latency, target=args.to, **options)

    def started() -> None:  # once the recorder is built: every option checked, the scene set up
        if not args.quiet:
            print(f"glrec: streaming {args.scene} to {args.to} (Ctrl-C to stop)", file=sys.stderr, flush=True)

    with _stop_on_signals() as stop:
        result = session.run(stop=stop, on_start=started, **length)
    _report(args, result)
    return 0


def _cmd_serve(args: argparse.Namespace) -> int:
    from ..sinks.viewer import Broadcaster, StreamServer
    from ..stream.live import LiveSession

    _check_encoder(args, _VIEWER_CODECS, "The browser viewer")
    scene, options = _scene(args)
    video = _video(options)
    length = _length(args, video)
    if video.pix_fmt != "yuv420p":
        raise ConfigError(f"The browser viewer needs pix_fmt yuv420p, not {video.pix_fmt}.")
    # The viewer is told the encoded size (odd sizes are padded to even), which is what its decoder gets.
    server = StreamServer(
        size=video.encoded_size, fps=video.fps, host=args.host, port=args.port, token=args.token,
        max_viewers=args.max_viewers, codec=video.codec,
    )  # fmt: skip
    with server:
        session = LiveSession(
            scene, Broadcaster(server), inputs=server.inputs, times=server.times,
            latency=server.sent_latency, target=server.url, **options,
        )  # fmt: skip
        server.on_keyframe_request = session.request_keyframe

        def started() -> None:  # once the recorder is built: every option checked, the scene set up
            # stdout, flushed: scripts (and people) read the address from here.
            print(f"glrec: open {server.url} in a browser (Ctrl-C to stop)", flush=True)

        with _stop_on_signals() as stop:
            result = session.run(stop=stop, on_start=started, **length)
        stats = server.stats()
    _report(args, result, {"server": stats})
    if not args.quiet:
        print(f"viewers: {stats['viewers_total']}, inputs delivered {stats['inputs_delivered']}, "
              f"rejected {sum(stats['inputs_rejected'].values())}")  # fmt: skip
    return 0
