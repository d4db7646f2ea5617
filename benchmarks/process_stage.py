"""The processing stage's cost, end to end at 1920x1080 (a benchmark, not a test).

Run on the NVIDIA machine (cuda-python, a CUDA build of PyTorch; for the OpenCL rows
the NVIDIA OpenCL ICD, e.g. ``OCL_ICD_VENDORS=/tmp/icd`` with ``/tmp/icd/nvidia.icd``
naming ``libnvidia-opencl.so.1``):

    python benchmarks/process_stage.py [--frames 300] [--codec mjpeg] [--json out.json]

Rows, each a whole recording (render ``plasma`` -> [stage] -> convert -> CUDA
handoff -> encoder -> file), side by side in one run and repeated ``--repeat``
times interleaved (the best of each row is reported):

- ``none``: no processing stage;
- ``torch-cuda``: invert (``255 - x`` on RGB, in place) with torch on the frame's CUDA memory;
- ``torch-host``: the same op done the slow way: the frame copied to host memory, inverted
  with torch on the CPU, copied back (``Process(fn, memory='host', array='torch')``);
- ``opencl-external``: the same op as an OpenCL kernel on the frame's CUDA memory imported
  into OpenCL (``cl_khr_external_memory_opaque_fd``);
- ``opencl-host``: that kernel with the frame copied through host memory.

Goals (issue 15): ``torch-cuda`` within 10 % of ``none``; ``torch-cuda`` at least 10x
``torch-host``. MJPEG through nvJPEG is the default output because it is the fastest
encoder on a machine without NVENC, so the stage's cost is the largest share there.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

SIZE = (1920, 1080)
INVERT_CL = """__kernel void invert(__global const uchar4 *src, __global uchar4 *dst, int width, int height) {
    int i = get_global_id(1) * width + get_global_id(0);
    uchar4 p = src[i];
    dst[i] = (uchar4)(255 - p.x, 255 - p.y, 255 - p.z, p.w);
}"""


def invert(frame: Any) -> None:
    frame[..., :3] = 255 - frame[..., :3]


def rows() -> dict[str, Callable[[], Any]]:
    from glrec.process import OpenCLKernel, Process

    kernel = OpenCLKernel(INVERT_CL, "invert")
    return {
        "none": lambda: None,
        "torch-cuda": lambda: Process(invert, array="torch"),
        "torch-host": lambda: Process(invert, array="torch", memory="host"),
        "opencl-external": lambda: Process(kernel),
        "opencl-host": lambda: Process(kernel, memory="host"),
    }


def run(process: Any, frames: int, codec: str, out: Path, size: tuple[int, int] = SIZE) -> dict[str, Any]:
    """One recording; frames/s over the frames after the first 10 (setup and warm-up excluded), file finished."""
    import logging

    import glrec

    said: list[str] = []  # where the stage ran, as glrec logs it (a row named torch-cuda on a CPU machine is not)
    handler = logging.Handler(logging.INFO)
    handler.emit = lambda record: said.append(record.getMessage())  # type: ignore[method-assign]
    handler.addFilter(lambda r: "processing stage" in r.getMessage() or "OpenCL kernel" in r.getMessage())
    log = logging.getLogger("glrec")
    log.addHandler(handler)
    level, log.level = log.level, logging.INFO
    options: dict[str, Any] = {"size": size, "fps": 60, "codec": codec, "overwrite": True}
    if process is not None:
        options["process"] = process
    with glrec.Recorder(out, **options) as rec:
        for _ in range(10):
            rec.render("plasma")
        start = time.perf_counter()
        for _ in range(frames):
            rec.render("plasma")
        result = rec.close()
        seconds = time.perf_counter() - start
    log.removeHandler(handler)
    log.setLevel(level)
    return {"fps": frames / seconds, "encoder": result.encoder, "frames_in_file": result.frames, "stage": said}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=300)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--codec", default="mjpeg", help="mjpeg (nvJPEG on NVIDIA) or h264/hevc (NVENC or x264)")
    parser.add_argument("--rows", default=",".join(rows()), help="comma-separated subset of the rows")
    parser.add_argument("--size", default="1920x1080", help="WxH (1920x1080 is the issue's figure)")
    parser.add_argument("--json", type=Path, help="write the results here")
    args = parser.parse_args()
    from glrec._values import parse_size

    size = parse_size(args.size)
    suffix = ".mkv"
    wanted = args.rows.split(",")
    table: dict[str, list[dict[str, Any]]] = {name: [] for name in wanted}
    errors: dict[str, str] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(args.repeat):
            for name in wanted:
                if name in errors:
                    continue
                try:
                    table[name].append(
                        run(rows()[name](), args.frames, args.codec, Path(tmp) / f"{name}{suffix}", size)
                    )
                except Exception as exc:  # a row that cannot run here (no OpenCL, say) is reported, not fatal
                    errors[name] = f"{type(exc).__name__}: {exc}"
    best = {name: max(runs, key=lambda r: r["fps"]) for name, runs in table.items() if runs}
    base = best.get("none", {}).get("fps")
    print(f"{'row':<16} {'frames/s':>9} {'vs none':>8}  encoder")
    for name, r in best.items():
        ratio = f"{r['fps'] / base:7.2f}x" if base else "       -"
        print(f"{name:<16} {r['fps']:9.1f} {ratio}  {r['encoder']}  {' / '.join(r['stage'])}")
    for name, why in errors.items():
        print(f"{name:<16} did not run: {why}")
    goals = {}
    if "torch-cuda" in best and base:
        goals["torch-cuda within 10% of none"] = best["torch-cuda"]["fps"] >= 0.9 * base
    if "torch-cuda" in best and "torch-host" in best:
        goals["torch-cuda >= 10x torch-host"] = best["torch-cuda"]["fps"] >= 10 * best["torch-host"]["fps"]
    for goal, ok in goals.items():
        print(f"{'PASS' if ok else 'FAIL'}: {goal}")
    if args.json:
        args.json.write_text(json.dumps({
            "size": size, "frames": args.frames, "repeat": args.repeat, "codec": args.codec,
            "machine": platform.node(), "best": best, "runs": table, "errors": errors, "goals": goals,
        }, indent=2))  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
