"""Before/after of glrec's CPU path, against the naive loop, in one run.

    PYTHONPATH=. python benchmarks/cpu_path_variants.py --sizes 1280x720,1920x1080 --scenes cube,plasma --repeat 5

Variants (each a glrec:cpu end-to-end row in a fresh process, as ``glrec bench`` runs it):
  before   the convert shader storing one byte per imageStore into r8/rg8 plane textures
           (``benchmarks/before/convert_yuv_bytes.comp``, the shader before this change)
  after    glrec as it is: plane textures holding 4 (or 2) bytes of a row per texel, one
           imageStore per texel
Rows run interleaved with naive-imageio; each variant's figure is the median over rounds of
(variant fps / naive-imageio fps of the same round). The x264 option strings of every row are
printed, so equal settings can be seen, not assumed.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

import moderngl

from glrec.bench import pipeline, runner
from glrec.bench.config import parse_list, parse_sizes
from glrec.bench.spec import RowSpec, row
from glrec.colour import ColourSpec
from glrec.convert.compute import ComputeStage
from glrec.layout import PlaneLayout

BEFORE_SHADER = Path(__file__).resolve().parent / "before" / "convert_yuv_bytes.comp"
VARIANTS = ("before", "after")


class ByteConverter(ComputeStage):
    """The convert stage as it was: one texture component per plane byte, one store per byte."""

    GROUP = 8

    def __init__(self, ctx: moderngl.Context, src_size: tuple[int, int], dst_size: tuple[int, int], pix_fmt: str,
                 colour: ColourSpec) -> None:  # fmt: skip
        layout = PlaneLayout.for_format(pix_fmt, *dst_size)
        sub = 1 if pix_fmt == "yuv444p" else 2
        first, _, rest = BEFORE_SHADER.read_text().partition("\n")
        defines = f"#define SUB_X {sub}\n#define SUB_Y {sub}\n#define INTERLEAVED {int(pix_fmt == 'nv12')}\n"
        shader = ctx.compute_shader(f"{first}\n{defines}{rest}")
        (kr, kg, kb), y_range, c_range = colour.rgb_to_yuv_matrix()
        values = {
            "src_size": src_size, "dst_size": dst_size, "luma": (kr, kg, kb),
            "chroma_div": (2.0 * (1.0 - kb), 2.0 * (1.0 - kr)), "y_range": y_range, "c_range": c_range,
        }  # fmt: skip
        for name, value in values.items():
            shader[name].value = value
        # One byte a texel: the planes' own sizes, not the packed textures'.
        super().__init__(ctx, layout, shader, self.GROUP, layout.planes[1][:2], textures=layout.planes)


def _register(name: str) -> None:
    @row(f"variant:{name}")
    def run(spec: RowSpec) -> dict:
        if name == "before":
            # Each row runs in its own process, so patching here changes only this row.
            import glrec.pipeline.build as build

            build.Converter = ByteConverter  # type: ignore[misc, assignment]
        return pipeline.glrec_clean(spec)


for _name in VARIANTS:
    _register(_name)


def _x264(out: dict[str, Any]) -> str:
    x = out.get("x264") or {}
    opts = x.get("options", {})
    keys = ("preset", "crf", "threads", "lookahead_threads", "sliced_threads", "slices", "bframes", "rc_lookahead")
    return " ".join(f"{k}={opts[k]}" for k in keys if k in opts) or "?"


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
                x264: dict[str, str] = {}
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
                        x264[n] = _x264(out)
                for n in names:
                    ratio = statistics.median(a / b for a, b in zip(fps[n], fps["naive-imageio"], strict=True))
                    print(
                        f"{scene:7} {size[0]}x{size[1]:<5} {n:15} fps {statistics.median(fps[n]):7.1f}  "
                        f"x naive-imageio {ratio:5.2f}  CPU ms/frame {statistics.median(cpu_ms[n]):6.2f}  "
                        f"x264: {x264[n]}",
                        flush=True,
                    )
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
