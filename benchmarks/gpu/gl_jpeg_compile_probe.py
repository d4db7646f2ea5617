"""How long a dataset worker's GL JPEG encoder takes to start: its compute shaders compiled, cold and warm.

    python benchmarks/gpu/gl_jpeg_compile_probe.py --procs 1,16 --json $OUT/gl_jpeg_compile.json

Each process makes a headless EGL context and a :class:`glrec.encoders.gl_jpeg.GlJpegStage` of the dataset's
shape (640x480, quality 90, batch 8, as ``GlJpegColour`` makes it) and reports the seconds and CPU seconds of the
stage alone. ``cold``: the driver's shader disk cache pointed at an empty folder (NVIDIA:
``__GL_SHADER_DISK_CACHE_PATH``; Mesa: ``MESA_SHADER_CACHE_DIR``), so every shader is compiled; ``warm``: the
same folder again, filled by the cold round. N processes start at once, as N dataset workers do.
Not a test: the start-up cost the thirteenth H200 session's profile put at 13 % of a worker's CPU.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CHILD = r"""
import json, time
import moderngl
t0 = time.perf_counter()
ctx = moderngl.create_standalone_context(backend="egl", require=430)
from glrec.encoders.gl_jpeg.stage import GlJpegStage
t1, c1 = time.perf_counter(), time.process_time()
stage = GlJpegStage(ctx, (640, 480), quality=90, depth=2, batch=8)
ctx.finish()
t2, c2 = time.perf_counter(), time.process_time()
got = {"context_s": t1 - t0, "stage_s": t2 - t1, "stage_cpu_s": c2 - c1, "renderer": ctx.info["GL_RENDERER"]}
print(json.dumps(got))
"""


def round_of(procs: int, cache: Path) -> list[dict[str, float]]:
    env = {**os.environ, "__GL_SHADER_DISK_CACHE": "1", "__GL_SHADER_DISK_CACHE_PATH": str(cache),
           "__GL_SHADER_DISK_CACHE_SKIP_CLEANUP": "1", "MESA_SHADER_CACHE_DIR": str(cache)}  # fmt: skip
    kids = [subprocess.Popen([sys.executable, "-c", CHILD], env=env, stdout=subprocess.PIPE, text=True)
            for _ in range(procs)]  # fmt: skip
    return [json.loads(k.communicate(timeout=300)[0].strip().splitlines()[-1]) for k in kids]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--procs", default="1,16", help="processes started at once, a round per count (default 1,16)")
    ap.add_argument("--json", type=Path, help="write the rounds here")
    args = ap.parse_args()
    doc: dict[str, object] = {"created": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "rounds": {}}
    for n in [int(x) for x in args.procs.split(",") if x.strip()]:
        with tempfile.TemporaryDirectory(prefix="glrec-shader-cache-") as cache:
            for label in ("cold", "warm"):
                got = round_of(n, Path(cache))
                doc["rounds"][f"{n} {label}"] = got  # type: ignore[index]
                print(f"{n:3d} process(es), {label}: stage {statistics.median(g['stage_s'] for g in got):.3f} s "
                      f"(CPU {statistics.median(g['stage_cpu_s'] for g in got):.3f} s), context "
                      f"{statistics.median(g['context_s'] for g in got):.3f} s, median of {n}; "
                      f"{got[0]['renderer']}")  # fmt: skip
    if args.json:
        args.json.write_text(json.dumps(doc, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
