"""Before/after of two changes to glrec's CPU path, against the naive loop, in one run.

    PYTHONPATH=. python benchmarks/cpu_path_variants.py --sizes 1280x720,1920x1080 --scenes cube,plasma --repeat 5

Variants (each a glrec:cpu end-to-end row, run in a fresh process):
  before      the convert shader dispatched by moderngl (holds the GIL) and x264 slice threads
  dispatch    only the change to the dispatch: through ctypes, which releases the GIL
  threads     only the change to x264: frame threads, as the ffmpeg command line uses
  after       both (glrec as it is)
Rows run interleaved with naive-imageio; each variant's figure is the median over runs of
(variant fps / naive-imageio fps of the same round).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

import moderngl

import glrec.encoders.cpu as cpu_encoder
from glrec.bench import pipeline, runner
from glrec.bench.config import parse_list, parse_sizes
from glrec.bench.spec import RowSpec, row
from glrec.convert import Converter

# name: (convert dispatched through ctypes, x264 thread type)
VARIANTS = {
    "before": (False, "SLICE"),
    "dispatch": (True, "SLICE"),
    "threads": (False, "FRAME"),
    "after": (True, "FRAME"),
}


def _moderngl_dispatch(self: Converter, source: moderngl.Texture) -> None:
    """Converter.run as it was: ComputeShader.run, which keeps the GIL for the whole dispatch."""
    source.use(0)
    for unit, tex in enumerate(self.planes):
        tex.bind_to_image(unit, read=False, write=True)
    self._shader.run(*self._groups)
    self.ctx.memory_barrier(moderngl.TEXTURE_UPDATE_BARRIER_BIT | moderngl.TEXTURE_FETCH_BARRIER_BIT)


def _register(name: str, ctypes_dispatch: bool, thread_type: str) -> None:
    @row(f"variant:{name}")
    def run(spec: RowSpec) -> dict:
        # Each row runs in its own process, so patching here changes only this row.
        cpu_encoder._THREAD_TYPE = thread_type
        if not ctypes_dispatch:
            Converter.run = _moderngl_dispatch  # type: ignore[method-assign]
        return pipeline.glrec_clean(spec)


for _name, (_dispatch, _threads) in VARIANTS.items():
    _register(_name, _dispatch, _threads)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", type=parse_sizes, default=parse_sizes("1280x720,1920x1080"))
    p.add_argument("--scenes", type=parse_list, default=("cube", "plasma"))
    p.add_argument("--frames", type=int, default=90)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--json", type=Path, help="write every row here")
    args = p.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    runner.ROW_MODULES.append("cpu_path_variants")  # so the row processes register the variants
    names = ["naive-imageio", *(f"variant:{v}" for v in VARIANTS)]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for scene in args.scenes:
            for size in args.sizes:
                fps: dict[str, list[float]] = {n: [] for n in names}
                cpu_ms: dict[str, list[float]] = {n: [] for n in names}
                for r in range(args.repeat):
                    for n in names:
                        spec = RowSpec(n, scene=scene, size=size, frames=args.frames, workdir=tmp, tag=f"_{r}")
                        out = runner.run_isolated(spec)
                        if out["status"] != "ok":
                            print(f"{n} {scene} {size}: {out['status']}: {out.get('reason')}", file=sys.stderr)
                            return 1
                        if out.get("frames_written") != args.frames:
                            print(f"{n}: wrote {out.get('frames_written')} of {args.frames} frames", file=sys.stderr)
                            return 1
                        rows.append(out)
                        fps[n].append(out["fps"])
                        cpu_ms[n].append(1e3 * out["cpu_seconds"] / out["frames"])
                for n in names:
                    ratio = statistics.median(a / b for a, b in zip(fps[n], fps["naive-imageio"], strict=True))
                    print(
                        f"{scene:7} {size[0]}x{size[1]:<5} {n:17} fps {statistics.median(fps[n]):7.1f}  "
                        f"x naive-imageio {ratio:5.2f}  CPU ms/frame {statistics.median(cpu_ms[n]):6.2f}"
                    )
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
