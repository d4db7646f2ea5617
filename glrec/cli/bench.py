"""``glrec bench``: the command line of the benchmark (registered through cli.SUBCOMMAND_MODULES)."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..bench.backends import BACKENDS
from ..bench.config import BASELINES, BenchConfig, parse_list, parse_sizes

DESCRIPTION = """\
Measure glrec against the loop people write today, side by side in one run.

For each scene and size it runs, each in a fresh process:
  naive-imageio   glReadPixels -> numpy -> imageio-ffmpeg (ffmpeg libx264 through a pipe): baseline (a)
  naive-pyav      the same loop with PyAV in process (PyAV's swscale to yuv420p): baseline (b)
  glrec:BACKEND   glrec.Recorder end to end (cpu: GL convert -> PBO readback -> PyAV libx264)
  glrec-profiled  the same recorder with each stage timed (render, convert, readback, encode, mux)
  stage:*         one stage alone (render; render+convert+readback; encode on pre-rendered frames)
and reports frames/s, every glrec figure as a ratio to naive-imageio, CPU use, peak RSS, ms per
stage, pipeline efficiency (end-to-end fps / slowest stage fps), and a memory check (N and 10N frames).
All encoders use libx264 with the same --preset and --crf (glrec's defaults: veryfast, 20).

Results: a table on stdout, JSON and a PNG plot in --out (default: the per-user data folder,
~/.local/share/glrec/bench) named DATE_CPU-CORES_RENDERER.
"""

EPILOG = """\
examples:
  glrec bench --quick                          a few seconds: 320x180, 10 frames, plasma
  glrec bench                                  the full matrix (minutes): the README's figures
  glrec bench --backends all                   also GPU backends where the machine has them
  glrec bench --sizes 1920x1080 --scenes cube --repeat 5
  glrec bench --replot benchmarks/results/X.json   table and plot again from a saved result
"""


def register(subparsers: Any, common: argparse.ArgumentParser) -> None:
    p = subparsers.add_parser(
        "bench", parents=[common], help="benchmark glrec against the naive loop (fps, CPU, memory, per stage)",
        description=DESCRIPTION, epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter,
    )  # fmt: skip
    d = BenchConfig()
    p.add_argument("--quick", action="store_true", help="small and fast (320x180, 10 frames, plasma, 1 run)")
    m = p.add_argument_group("what to measure")
    m.add_argument("--scenes", type=parse_list, help="comma-separated built-in scenes (default plasma,cube)")
    m.add_argument("--sizes", type=parse_sizes, help="comma-separated WxH (default 1280x720,1920x1080,3840x2160)")
    m.add_argument("--frames", type=int, help=f"frames per row up to 1920x1080 (default {d.frames})")
    m.add_argument("--frames-large", type=int, help=f"frames per row above 1920x1080 (default {d.frames_large})")
    m.add_argument(
        "--backends", type=parse_list,
        help=f"glrec backends: {', '.join(BACKENDS)} or all (default cpu); unavailable ones are reported as skipped",
    )  # fmt: skip
    m.add_argument("--baselines", help=f"comma-separated, or none (default {','.join(BASELINES)})")
    m.add_argument(
        "--repeat", type=int, help=f"interleaved runs of each compared row, median kept (default {d.repeat})"
    )
    m.add_argument("--no-stages", action="store_true", help="skip the stage-alone rows")
    m.add_argument(
        "--processes", type=_counts, metavar="N[,N...]",
        help="also glrec-xN:BACKEND rows: N recordings at once (own processes), their total frames/s",
    )  # fmt: skip
    m.add_argument(
        "--dataset-workers", metavar="LIST",
        help="dataset:wN rows: examples/dataset.toml's spec with N local workers; counts or auto, or none "
        f"(default {','.join(d.dataset_workers)}; none with --quick)",
    )  # fmt: skip
    m.add_argument("--dataset-samples", type=int, help=f"samples of each dataset row (default {d.dataset_samples})")
    m.add_argument(
        "--dataset-shard-size", type=int, help=f"samples per shard of the dataset rows (default {d.dataset_shard_size})"
    )
    m.add_argument("--no-profile", action="store_true", help="skip the profiled pass (per-stage times of glrec)")
    m.add_argument(
        "--memory-frames", type=int, help=f"memory check with N and 10N frames, 0 = off (default {d.memory_frames})"
    )
    m.add_argument("--memory-size", type=lambda t: parse_sizes(t)[0], help="memory check size (default 1280x720)")
    e = p.add_argument_group("encoding (applies to every libx264 row alike)")
    e.add_argument("--preset", help=f"x264 preset (default {d.preset}, glrec's default)")
    e.add_argument("--crf", type=float, help=f"x264 crf (default {d.crf:g}, glrec's default)")
    e.add_argument("--fps", type=float, help=f"frame rate of the videos (default {d.fps:g}); timing is not paced")
    o = p.add_argument_group("output")
    o.add_argument(
        "--out",
        type=Path,
        help="folder for JSON and PNG (default: $XDG_DATA_HOME/glrec/bench, else ~/.local/share/glrec/bench; "
        "the path is printed)",
    )
    o.add_argument("--json", type=Path, help="write the JSON here instead of OUT/NAME.json")
    o.add_argument("--no-plot", action="store_true", help="no PNG (the plot needs matplotlib: glrec[bench] extra)")
    o.add_argument("--keep-outputs", type=Path, help="keep the recorded videos in this folder")
    o.add_argument("--replot", type=Path, metavar="JSON", help="print the table and plot a saved result; runs nothing")
    x = p.add_argument_group("advanced")
    x.add_argument(
        "--gl-clock", choices=("auto", "query", "finish"),
        help="GL stage timing: timer queries, or glFinish + wall clock (default auto: queries on hardware GL)",
    )  # fmt: skip
    x.add_argument("--timeout", type=float, help=f"seconds one row may take (default {d.timeout:g})")
    p.set_defaults(func=_cmd_bench)


def _counts(text: str) -> tuple[int, ...]:
    try:
        return tuple(int(t) for t in parse_list(text))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a list of counts such as 2 or 2,4,8") from None


def config_from_args(args: argparse.Namespace) -> BenchConfig:
    fields = {
        "scenes": args.scenes, "sizes": args.sizes, "frames": args.frames, "frames_large": args.frames_large,
        "backends": args.backends, "repeat": args.repeat, "memory_frames": args.memory_frames,
        "memory_size": args.memory_size, "preset": args.preset, "crf": args.crf, "fps": args.fps,
        "gl_clock": args.gl_clock, "timeout": args.timeout, "keep_outputs": args.keep_outputs,
        "processes": args.processes, "dataset_samples": args.dataset_samples,
        "dataset_shard_size": args.dataset_shard_size,
    }  # fmt: skip
    changes: dict[str, Any] = {k: v for k, v in fields.items() if v is not None}
    if args.baselines is not None:
        changes["baselines"] = () if args.baselines.strip() == "none" else parse_list(args.baselines)
    if args.dataset_workers is not None:
        none = args.dataset_workers.strip() == "none"
        changes["dataset_workers"] = () if none else parse_list(args.dataset_workers)
    if args.no_stages:
        changes["stages"] = False
    if args.no_profile:
        changes["profile"] = False
    if args.quick:
        return BenchConfig.quick(**changes)
    return BenchConfig(**changes).checked()


def default_out(environ: Mapping[str, str] | None = None) -> tuple[Path, str]:
    """Where results go without ``--out``, and why: the user's data folder, never the source tree or ``.``.

    ``$XDG_DATA_HOME/glrec/bench`` where that variable holds an absolute path (the
    XDG base directory rule), else ``~/.local/share/glrec/bench``; made if missing.
    """
    env = os.environ if environ is None else environ
    xdg = env.get("XDG_DATA_HOME", "")
    if xdg and Path(xdg).is_absolute():
        out, why = Path(xdg) / "glrec" / "bench", "$XDG_DATA_HOME/glrec/bench; name another with --out"
    else:
        home = Path(env["HOME"]) if env.get("HOME") else Path.home()
        out, why = home / ".local" / "share" / "glrec" / "bench", "the per-user data folder; name another with --out"
    out.mkdir(parents=True, exist_ok=True)
    return out, why


def _unique(path: Path) -> Path:
    n, candidate = 2, path
    while candidate.exists():
        candidate = path.with_name(f"{path.stem}-{n}{path.suffix}")
        n += 1
    return candidate


def _cmd_bench(args: argparse.Namespace) -> int:
    from ..bench.analysis import analyse
    from ..bench.report import load_json, plot, save_json, table

    if args.replot is not None:
        doc = load_json(args.replot)
        doc.update(analyse(doc))  # derived figures again from the raw rows (this glrec's analysis)
        print(table(doc))
        if not args.no_plot:
            print(f"plot: {plot(doc, args.replot.with_suffix('.png'))}")
        return 0
    config = config_from_args(args)
    from ..bench.runner import run_bench

    json_path: Path | None = args.json
    out_dir = Path(".")
    if json_path is None:
        out_dir, why = (args.out, "--out") if args.out is not None else default_out()
        if not args.quiet:
            print(f"results folder: {out_dir} ({why})", file=sys.stderr)

    def progress(i: int, n: int, r: dict[str, Any]) -> None:
        if args.quiet:
            return
        if r["row"] == "probe" and r["status"] == "ok":
            print(f"[{i:>3}/{n}] GL: {r['gl']['renderer']}, stage clock {r['gl']['stage_clock']}", file=sys.stderr)
            return
        reason = (r.get("reason") or "?").splitlines()[0][:100]
        what = f"{r['fps']:.1f} fps" if r["status"] == "ok" else f"{r['status']}: {reason}"
        print(f"[{i:>3}/{n}] {r['scene']} {r['size']} {r['row']} ({r['frames']} frames): {what}", file=sys.stderr)

    doc = run_bench(config, progress)
    name = doc["name"] + ("_quick" if config.quick_mode else "")
    json_path = save_json(doc, json_path or _unique(out_dir / f"{name}.json"))
    if not args.quiet:
        print(table(doc))
        print(f"\nresults: {json_path}")
    if not args.no_plot:
        png = plot(doc, json_path.with_suffix(".png"))
        if not args.quiet:
            print(f"plot: {png}")
    failed = [r for r in doc["rows"] if r["status"] == "failed"]
    for r in failed:
        print(f"glrec bench: row {r['row']} {r['scene']} {r['size']} failed: {r['reason']}", file=sys.stderr)
    return 1 if failed else 0
