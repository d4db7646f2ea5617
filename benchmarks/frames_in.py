"""numpy frames in: glrec's Recorder.write against imageio's get_writer().append_data(), side by side in one run.

    PYTHONPATH=. python benchmarks/frames_in.py --sizes 1280x720,1920x1080 --frames 120 --repeat 3

Rows (each in a fresh process, interleaved, the median of --repeat runs kept):
  imageio      imageio.get_writer(..., format="FFMPEG").append_data(frame): raw RGB through a pipe to an
               ffmpeg process (imageio-ffmpeg's binary) running libx264
  glrec        glrec.Recorder.write(frame) as it runs by default (on software GL: one copy, then swscale and
               libx264 on the encode thread; on a GPU: PBO-ring upload, GL convert, readback or CUDA handoff)
  glrec-gl     the same with array_convert="gl": PBO-ring upload, GL convert, PBO readback, libx264
  glrec-float  glrec with float32 frames in [0, 1] (the conversion to 8 bits is glrec's, on the host)
Both encode libx264 at the same --preset and --crf (glrec's defaults, veryfast and 20), yuv420p, the
exact size (imageio's macro_block_size=1), and the x264 option strings in the two files are compared.
The frames (a moving gradient with shapes, 24 distinct ones cycled) are made before the timed loop;
the loop ends when the file is complete. A memory check runs glrec with N and 4N frames.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from glrec.bench import runner
from glrec.bench.common import describe_output, figures
from glrec.bench.config import parse_sizes
from glrec.bench.meter import LoopMeter
from glrec.bench.spec import RowSpec, row
from glrec.bench.system import machine, result_name

DISTINCT = 24


def pictures(size: tuple[int, int], dtype: str = "uint8") -> list[np.ndarray]:
    """``DISTINCT`` frames of a gradient moving right with a disc moving down (content x264 must work on)."""
    w, h = size
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    out = []
    for i in range(DISTINCT):
        phase = i / DISTINCT
        r = (xx / w + phase) % 1.0
        g = yy / h
        b = ((xx - w * phase) ** 2 + (yy - h * phase) ** 2 < (h / 6) ** 2).astype(np.float32) * 0.8
        rgb = np.stack([r, g, b], -1)
        out.append(rgb if dtype == "float32" else (rgb * 255 + 0.5).astype(np.uint8))
    return out


@row("frames-in:imageio")
def imageio_row(spec: RowSpec) -> dict[str, Any]:
    import imageio.v2 as imageio

    from glrec.bench.ffmpeg import use_ffmpeg

    found = use_ffmpeg()  # imageio-ffmpeg's own search, then the checkout's .gpu/ffmpeg (benchmarks/gpu/)

    frames = pictures(spec.size)
    writer = imageio.get_writer(
        str(spec.output), format="FFMPEG", mode="I", fps=spec.fps, codec="libx264", pixelformat="yuv420p",
        quality=None, macro_block_size=1, ffmpeg_params=["-preset", spec.preset, "-crf", f"{spec.crf:g}"],
    )  # fmt: skip
    meter = LoopMeter()
    meter.start()
    for i in range(spec.frames):
        writer.append_data(frames[i % DISTINCT])
    writer.close()
    meter.stop()
    return {**figures(spec, meter, None), **describe_output(spec.output), "ffmpeg": found.describe()}


def _glrec(spec: RowSpec, dtype: str, **options: Any) -> dict[str, Any]:
    import glrec

    frames = pictures(spec.size, dtype)
    rec = glrec.Recorder(spec.output, fps=spec.fps, preset=spec.preset, crf=spec.crf, **options)
    rec.write(frames[0])  # builds the recorder (the size comes from the frame): set-up, as opening ffmpeg
    meter = LoopMeter()
    meter.start()
    for i in range(1, spec.frames):
        rec.write(frames[i % DISTINCT])
    rec.close()
    meter.stop()
    out = {**figures(spec, meter, None), **describe_output(spec.output)}
    out["fps"] = (spec.frames - 1) / meter.seconds
    return out


@row("frames-in:glrec")
def glrec_row(spec: RowSpec) -> dict[str, Any]:
    return _glrec(spec, "uint8")


@row("frames-in:glrec-gl")
def glrec_gl_row(spec: RowSpec) -> dict[str, Any]:
    return _glrec(spec, "uint8", array_convert="gl")


@row("frames-in:glrec-float")
def glrec_float_row(spec: RowSpec) -> dict[str, Any]:
    return _glrec(spec, "float32")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", type=parse_sizes, default=parse_sizes("1280x720,1920x1080"))
    p.add_argument("--frames", type=int, default=120)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--rows", default="imageio,glrec,glrec-gl,glrec-float")
    p.add_argument("--memory-frames", type=int, default=100, help="glrec with N and 4N frames, largest size; 0: off")
    p.add_argument("--json", type=Path, help="write the result here (default benchmarks/results/DATE_frames-in_...)")
    args = p.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    runner.ROW_MODULES.append("frames_in")  # so the row processes register these rows
    names = [f"frames-in:{n}" for n in args.rows.split(",")]
    result: dict[str, Any] = {"machine": machine(), "load_before": os.getloadavg(), "rows": [], "summary": []}
    with tempfile.TemporaryDirectory() as tmp:
        for size in args.sizes:
            fps: dict[str, list[float]] = {n: [] for n in names}
            cpu: dict[str, list[float]] = {n: [] for n in names}
            x264: dict[str, Any] = {}
            cores: dict[str, Any] = {}
            for r in range(args.repeat):
                for n in names:
                    spec = RowSpec(n, scene="gradient", size=size, frames=args.frames, workdir=tmp, tag=f"_{r}")
                    out = runner.run_isolated(spec)
                    if out["status"] != "ok" or out.get("frames_written") != args.frames:
                        print(f"{n} {size}: {out['status']} {out.get('reason', '')} "
                              f"frames {out.get('frames_written')}", file=sys.stderr)  # fmt: skip
                        return 1
                    result["rows"].append(out)
                    fps[n].append(out["fps"])
                    cpu[n].append(1e3 * out["cpu_seconds"] / args.frames)
                    x264[n] = (out.get("x264") or {}).get("options", {})
                    cores[n] = (out.get("x264") or {}).get("core")
            base = names[0]
            for n in names:
                ratios = [a / b for a, b in zip(fps[n], fps[base], strict=True)]
                differs = {k: (v, x264[base].get(k)) for k, v in x264[n].items() if x264[base].get(k) != v}
                line = {"row": n, "size": f"{size[0]}x{size[1]}", "fps": statistics.median(fps[n]),
                        "x_imageio": statistics.median(ratios), "cpu_ms_per_frame": statistics.median(cpu[n]),
                        "x264_differs": differs, "x264_core": cores[n]}  # fmt: skip
                result["summary"].append(line)
                core = "" if cores[n] == cores[base] else f"  x264 core {cores[n]} (imageio's {cores[base]})"
                print(f"{line['size']:>9} {n:22} fps {line['fps']:6.1f}  x imageio {line['x_imageio']:5.2f}  "
                      f"CPU ms/frame {line['cpu_ms_per_frame']:6.1f}  x264 differs: {differs or 'no'}"
                      f"{core}")  # fmt: skip
        if args.memory_frames:
            peaks = []
            mw, mh = args.sizes[-1]  # the largest frames asked for
            for n in (args.memory_frames, 4 * args.memory_frames):
                spec = RowSpec("frames-in:glrec", scene="gradient", size=(mw, mh), frames=n, workdir=tmp,
                               tag="_mem")  # fmt: skip
                peaks.append(runner.run_isolated(spec)["peak_rss_mb"])
            result["memory"] = {"size": f"{mw}x{mh}", "frames": [args.memory_frames, 4 * args.memory_frames],
                                "peak_rss_mb": peaks}  # fmt: skip
            print(f"memory: glrec peak RSS {peaks[0]:.0f} MB at {args.memory_frames} frames, "
                  f"{peaks[1]:.0f} MB at {4 * args.memory_frames} ({mw}x{mh}; the frames made up front are "
                  f"{DISTINCT * mw * mh * 3 / 2**20:.0f} MB of it)")  # fmt: skip
    result["load_after"] = os.getloadavg()
    print(f"load average before {result['load_before'][0]:.1f}, after {result['load_after'][0]:.1f} "
          f"on {os.cpu_count()} cores (other work on the machine shares them)")  # fmt: skip
    from glrec.gl.context import create_context

    with create_context() as gl:
        result["renderer"] = gl.info.renderer
    name = result_name(machine(), {"renderer": result["renderer"]}, dt.datetime.now())
    path = args.json or Path("benchmarks/results") / f"{name}_frames-in.json"
    path.write_text(json.dumps(result, indent=1, default=str) + "\n")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
