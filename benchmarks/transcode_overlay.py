"""Transcode with an overlay: glrec against the naive loop, side by side in one run.

    PYTHONPATH=. python benchmarks/transcode_overlay.py                      # 1920x1080, 90 frames, 3 rounds
    PYTHONPATH=. python benchmarks/transcode_overlay.py --size 640x360 --frames 30 --repeat 1   # quick
    PYTHONPATH=. python benchmarks/transcode_overlay.py --decoder nvdec --encoder nvjpeg --frames 600   # NVIDIA

The input is 1920x1080 H.264 made by the ffmpeg command line (lavfi testsrc2). Rows, each in a
fresh process, interleaved round by round:

  naive:grade   PyAV decode -> frame.to_ndarray(rgb24) -> a warm grade and vignette in numpy
                -> VideoFrame.from_ndarray -> PyAV libx264 -> MP4
  glrec:grade   glrec.transcode(input, out, overlay=benchmarks/overlay_grade.glsl): the same picture
                maths in a Shadertoy shader over iChannel0
  naive:box     the same loop drawing a progress bar and a marker with Pillow (little per-pixel work)
  glrec:box     glrec.transcode(..., overlay=examples/overlay_scene.py), the same drawing in GL
  decode-upload glrec's source alone: PyAV decode -> PBO upload -> YUV->RGB shader, nothing encoded

glrec rows and decode-upload also report ``steady_fps``, the rate after a warm-up (the first fifth
of the frames, at most 60): opening the input and making the decoder, GL context and encoder are
paid once, and on a short input they are much of the whole.

Every libx264 row uses preset veryfast, crf 20, yuv420p, frame threads (glrec's defaults); the
script reads the option string x264 writes into each output and reports any row whose settings
differ from naive:grade's. Each row's time runs from opening the input to the closed output file.
The figure that matters is the ratio glrec/naive within a round (both measured under the same load);
the median over rounds is reported. Results: JSON in benchmarks/results/.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
X264 = {"preset": "veryfast", "crf": "20"}


def _x264_options(path: Path) -> str:
    """The settings string libx264 writes into its first SEI (what it actually ran with)."""
    import av

    with av.open(str(path)) as c:
        data = bytes(next(p for p in c.demux(video=0) if p.size))
    start = data.find(b"options: ")
    return data[start + 9 : data.find(b"\x00", start)].decode(errors="replace") if start >= 0 else ""


def _grade_numpy(rgb, vignette):  # type: ignore[no-untyped-def]
    import numpy as np

    c = rgb.astype(np.float32) * (1.0 / 255.0)
    lum = c @ np.array([0.2126, 0.7152, 0.0722], np.float32)
    warm = np.stack([lum * 1.10 + 0.04, lum * 0.97 + 0.02, lum * 0.80], axis=-1)
    out = (c * 0.35 + warm * 0.65) * vignette[..., None]
    return (np.clip(out, 0.0, 1.0) * 255.0 + 0.5).astype(np.uint8)


def naive(src: Path, out: Path, overlay: str) -> dict:
    import av
    import numpy as np

    started = time.perf_counter()
    n = 0
    with av.open(str(src)) as inp, av.open(str(out), "w") as dst:
        s_in = inp.streams.video[0]
        s_in.codec_context.thread_type = "AUTO"
        total = s_in.frames or 1
        stream = dst.add_stream("libx264", rate=s_in.average_rate, options=dict(X264))
        stream.width, stream.height, stream.pix_fmt = s_in.width, s_in.height, "yuv420p"
        stream.codec_context.thread_type = "FRAME"
        h, w = s_in.height, s_in.width
        yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
        vignette = 1.0 - 0.9 * (((xx + 0.5) / w - 0.5) ** 2 + ((yy + 0.5) / h - 0.5) ** 2)
        for frame in inp.decode(s_in):
            rgb = frame.to_ndarray(format="rgb24")
            if overlay == "grade":
                rgb = _grade_numpy(rgb, vignette)
            else:
                from PIL import Image, ImageDraw  # only this row needs Pillow

                img = Image.fromarray(rgb)
                draw = ImageDraw.Draw(img)
                bar = max(2, h // 40)
                draw.rectangle((0, h - bar, w, h), fill=(26, 26, 26))
                draw.rectangle((0, h - bar, max(1, int(w * n / total)), h), fill=(255, 89, 51))
                draw.rectangle((w - 3 * bar, bar, w - bar, 3 * bar), fill=(230, 26, 26))
                rgb = np.asarray(img)
            for p in stream.encode(av.VideoFrame.from_ndarray(rgb, format="rgb24")):
                dst.mux(p)
            n += 1
        for p in stream.encode(None):
            dst.mux(p)
    return {"frames": n, "seconds": time.perf_counter() - started}


def glrec_row(src: Path, out: Path, overlay: str, decoder: str, encoder: str) -> dict:
    import glrec._transcode as tc

    shader = {"grade": ROOT / "benchmarks" / "overlay_grade.glsl", "box": ROOT / "examples" / "overlay_scene.py"}
    # nvJPEG (the H200 has no NVENC) writes MJPEG: x264's settings do not apply to it.
    codec = {"codec": "mjpeg"} if encoder == "nvjpeg" else {"preset": X264["preset"], "crf": float(X264["crf"])}
    if encoder == "nvjpeg":
        out = out.with_suffix(".mkv")
    stamps: list[float] = []
    started = time.perf_counter()
    result = tc.transcode(src, out, overlay=str(shader[overlay]), overwrite=True, encoder=encoder, decoder=decoder,
                          progress=lambda _: stamps.append(time.perf_counter()), **codec)  # fmt: skip
    seconds = time.perf_counter() - started
    return {"frames": result.frames, "seconds": seconds, "encoder": result.encoder, **_steady(stamps, started)}


def _steady(stamps: list[float], started: float) -> dict:
    """The rate after a warm-up (the first fifth of the frames, at most 60) and the time to the first frame.

    Opening the input, making the decoder, the GL context and the encoder are paid once; on a short
    input they are much of the whole, so the steady rate is what a long input runs at.
    """
    if len(stamps) < 10:
        return {}
    w = min(60, len(stamps) // 5)
    return {"first_frame_s": stamps[0] - started, "steady_fps": (len(stamps) - 1 - w) / (stamps[-1] - stamps[w])}


def decode_upload(src: Path, decoder: str) -> dict:
    from glrec.gl.context import create_context
    from glrec.sources import VideoSource

    started = time.perf_counter()
    n = 0
    stamps: list[float] = []
    with create_context() as gl, VideoSource(src, decoder=decoder) as source:
        source.setup(gl.mgl)
        t = 0.0
        while source.update(t) is not None:
            n += 1
            t = n / float(source.rate or 30)
            stamps.append(time.perf_counter())
        gl.mgl.finish()
    return {"frames": n, "seconds": time.perf_counter() - started, **_steady(stamps, started)}


ROWS = ["naive:grade", "glrec:grade", "naive:box", "glrec:box", "decode-upload"]


def make_input(path: Path, size: str, frames: int) -> None:
    """The H.264 input: lavfi testsrc2 through the ffmpeg command line, or PyAV where there is none (GPU box)."""
    import shutil

    if shutil.which("ffmpeg"):
        subprocess.run(["ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", f"testsrc2=size={size}:rate=30",
                        "-frames:v", str(frames), "-c:v", "libx264", "-preset", "veryfast", "-pix_fmt", "yuv420p",
                        str(path)], check=True)  # fmt: skip
        return
    pyav_input(path, size, frames)


def pyav_input(path: Path, size: str, frames: int) -> None:
    """An H.264 input made with PyAV's libx264 alone (no ffmpeg command line needed): a moving XOR pattern."""
    import av
    import numpy as np

    w, h = (int(v) for v in size.split("x"))
    yy, xx = np.mgrid[0:h, 0:w]
    with av.open(str(path), "w") as out:
        s = out.add_stream("libx264", rate=30, options={"preset": "veryfast"})
        s.width, s.height, s.pix_fmt = w, h, "yuv420p"
        s.codec_context.thread_type = "FRAME"
        for i in range(frames):
            img = np.stack([(xx + 8 * i) % 256, (yy + 4 * i) % 256, (xx ^ yy) % 256], axis=-1).astype(np.uint8)
            for p in s.encode(av.VideoFrame.from_ndarray(img, format="rgb24")):
                out.mux(p)
        for p in s.encode(None):
            out.mux(p)


def run_row(name: str, src: Path, tmp: Path, decoder: str, encoder: str) -> dict:
    kind, _, overlay = name.partition(":")
    out = tmp / f"{name.replace(':', '-')}.mp4"
    if kind == "decode-upload":
        figures = decode_upload(src, decoder)
    elif kind == "naive":
        figures = naive(src, out, overlay)
    else:
        figures = glrec_row(src, out, overlay, decoder, encoder)
    figures["fps"] = figures["frames"] / figures["seconds"]
    if out.exists():
        figures["x264"] = _x264_options(out)
    return figures


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", default="1920x1080")
    ap.add_argument("--frames", type=int, default=90)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--rows", default=",".join(ROWS))
    ap.add_argument("--decoder", default="cpu", help="glrec rows' decoder: cpu (FFmpeg) or nvdec")
    ap.add_argument("--encoder", default="cpu", help="glrec rows' encoder: cpu (libx264, as naive) or nvjpeg")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    ap.add_argument("--row", help=argparse.SUPPRESS)  # child process: run one row, print JSON
    ap.add_argument("--input", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.row:
        with tempfile.TemporaryDirectory() as tmp:
            print(json.dumps(run_row(args.row, args.input, Path(tmp), args.decoder, args.encoder)))
        return
    rows = args.rows.split(",")
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "input.mp4"
        make_input(src, args.size, args.frames)
        rounds: list[dict[str, dict]] = []
        for r in range(args.repeat):
            this: dict[str, dict] = {}
            for name in rows:
                path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
                env = {**os.environ, "PYTHONPATH": path}  # the checkout first, the packages the parent has after
                cmd = [sys.executable, __file__, "--row", name, "--input", str(src), "--decoder", args.decoder,
                       "--encoder", args.encoder]  # fmt: skip
                proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
                if proc.returncode:
                    raise SystemExit(f"row {name} failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
                this[name] = json.loads(proc.stdout.strip().splitlines()[-1])
                steady = f", steady {this[name]['steady_fps']:7.2f}" if "steady_fps" in this[name] else ""
                print(f"round {r + 1} {name:<14} {this[name]['fps']:7.2f} fps{steady}", file=sys.stderr)
            rounds.append(this)
    summary: dict[str, object] = {}
    for name in rows:
        summary[name] = {"fps_median": statistics.median(rd[name]["fps"] for rd in rounds)}
        if all("steady_fps" in rd[name] for rd in rounds):
            summary[name]["steady_fps_median"] = statistics.median(rd[name]["steady_fps"] for rd in rounds)
    for overlay in ("grade", "box"):
        g, n = f"glrec:{overlay}", f"naive:{overlay}"
        if g in rows and n in rows:
            summary[f"ratio:{overlay}"] = statistics.median(rd[g]["fps"] / rd[n]["fps"] for rd in rounds)
    reference = rounds[0].get("naive:grade", {}).get("x264")
    differs = sorted({n for rd in rounds for n, v in rd.items() if "x264" in v and v["x264"] != reference})
    result = {
        "what": "transcode with overlay, glrec vs naive PyAV+numpy/Pillow loop",
        "size": args.size, "frames": args.frames, "repeat": args.repeat, "x264": X264,
        "decoder": args.decoder, "encoder": args.encoder,
        "machine": {"cpus": os.cpu_count(), "cpu": platform.processor() or platform.machine(),
                    "loadavg_at_end": os.getloadavg()},
        "x264_differs_from_naive": differs, "x264_options": reference,
        "summary": summary, "rounds": rounds,
    }  # fmt: skip
    args.out.mkdir(parents=True, exist_ok=True)
    tag = "" if (args.decoder, args.encoder) == ("cpu", "cpu") else f"_{args.decoder}-{args.encoder}"
    path = args.out / f"{time.strftime('%Y-%m-%d')}_{os.cpu_count()}c_transcode-overlay_{args.size}{tag}.json"
    path.write_text(json.dumps(result, indent=1) + "\n")
    for key, value in summary.items():
        print(f"{key:<16} {value}")
    print(f"x264 settings differ from naive:grade in: {differs or 'no row'}; saved {path}")


if __name__ == "__main__":
    main()
