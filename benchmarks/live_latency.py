"""Live latency on this machine: render -> packet on the socket, and render -> display in a browser.

Runs ``glrec serve``'s pieces in process (a :class:`~glrec.stream.StreamServer`
fed by a :class:`~glrec.stream.LiveSession`) on loopback and measures, per frame,
from the moment its render began (the frame's render time):

- **render -> socket**: the server finished writing the frame to a viewer's
  socket (``websockets`` ``send`` returned);
- **render -> received**: a WebSocket client in this process read the whole
  frame off its socket;
- **render -> display** (``--browser``): headless Chromium decoded the frame
  with WebCodecs and drew it to the canvas (the page's own figures).

Defaults are the issue's targets: cube, 1280x720, 30 fps, CPU encoder (x264
superfast, zerolatency). Targets: render -> socket median <= 1 frame interval;
render -> display median <= 3 frame intervals.

    python benchmarks/live_latency.py                 # 10 s, Python client
    python benchmarks/live_latency.py --browser       # also headless Chromium (apt-get install chromium)
    python benchmarks/live_latency.py --json out.json

(``glrec stream SCENE --to URL --measure`` prints the same render -> packet figure
for UDP/RTSP/RTMP outputs.)
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from pathlib import Path

from glrec.options import parse_size
from glrec.sinks.viewer.protocol import unpack_frame
from glrec.stream import Broadcaster, LatencyStats, LiveSession, StreamServer


def python_viewer(url: str, stop: threading.Event, stats: LatencyStats, counts: dict[str, int]) -> None:
    from websockets.sync.client import connect

    with connect(url, max_size=2**24) as ws:
        while not stop.is_set():
            try:
                msg = ws.recv(timeout=0.5)
            except TimeoutError:
                continue
            if isinstance(msg, bytes):
                now = time.time()
                _, _, render_ms, _ = unpack_frame(msg)
                stats.add(now - render_ms / 1000.0)
                counts["frames"] = counts.get("frames", 0) + 1


def browser_viewer(url: str, seconds: float, out: dict[str, object]) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    from cdp import Browser, chromium_path

    exe = chromium_path()
    if exe is None:
        out["error"] = "no chromium (apt-get install chromium)"
        return
    with Browser(exe) as browser:
        browser.goto(url)
        browser.wait_for("window.glrecViewer && glrecViewer.stats().frames > 0", timeout=30)
        time.sleep(seconds)
        out.update(browser.evaluate("glrecViewer.stats()"))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scene", default="cube")
    ap.add_argument("--size", default="1280x720")
    ap.add_argument("--fps", type=float, default=30.0)
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--preset", help="x264 preset (live default: superfast)")
    ap.add_argument("--browser", action="store_true", help="also measure render->display in headless Chromium")
    ap.add_argument("--json", type=Path, help="write the figures here as JSON")
    args = ap.parse_args(argv)

    size = parse_size(args.size)
    interval_ms = 1000.0 / args.fps
    server = StreamServer(size=size, fps=args.fps, port=0)
    received, counts, page = LatencyStats(), {}, {}
    stop = threading.Event()
    with server:
        session = LiveSession(
            args.scene, Broadcaster(server), size=size, fps=args.fps, inputs=server.inputs, times=server.times,
            latency=server.sent_latency, preset=args.preset,
        )  # fmt: skip
        server.on_keyframe_request = session.request_keyframe
        ws_url = f"ws://127.0.0.1:{server.port}/ws"
        viewers = [threading.Thread(target=python_viewer, args=(ws_url, stop, received, counts), daemon=True)]
        if args.browser:
            # the browser watches for most of the run, after a second to start up
            watch = max(1.0, args.seconds - 3)
            viewers.append(threading.Thread(target=browser_viewer, args=(server.url, watch, page), daemon=True))
        for v in viewers:
            v.start()
        result = session.run(seconds=args.seconds)
        stop.set()
        for v in viewers:
            v.join(timeout=30)
        server_stats = server.stats()

    figures = {
        "machine": "see README (2 cores, Mesa llvmpipe, PyAV libx264)",
        "scene": args.scene, "size": args.size, "fps": args.fps, "frame_interval_ms": round(interval_ms, 2),
        "frames": result.frames, "skipped": result.skipped,
        "render_to_socket": server_stats["render_to_socket"],
        "render_to_received": received.summary(),
        "render_to_display": page.get("latency", page.get("error", "not measured (use --browser)")),
    }  # fmt: skip
    print(f"{args.scene} {args.size} @ {args.fps:g} fps for {args.seconds:g} s: {result.frames} frames, "
          f"{result.skipped} slots skipped; one frame interval = {interval_ms:.1f} ms")  # fmt: skip
    for name in ("render_to_socket", "render_to_received", "render_to_display"):
        f = figures[name]
        if isinstance(f, dict) and f.get("count"):
            ratio = f["median_ms"] / interval_ms
            print(f"  {name:<20} median {f['median_ms']:7.1f} ms ({ratio:.2f} frame intervals)   "
                  f"p99 {f['p99_ms']:7.1f} ms   n={f['count']}")  # fmt: skip
        else:
            print(f"  {name:<20} {f}")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
