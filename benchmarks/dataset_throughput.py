"""Dataset throughput before/after, side by side in one run: samples/s, ratio per round, CPU per sample.

    git archive 7de7833 | (mkdir -p /tmp/glrec-before && tar -x -C /tmp/glrec-before)
    PYTHONPATH=. python benchmarks/dataset_throughput.py --before /tmp/glrec-before --samples 100

Each variant renders the same spec (``examples/dataset.toml`` by default, all five
passes, PNG colour) into its own folder, in a fresh process whose ``PYTHONPATH``
is that variant's source tree; rounds are interleaved so a neighbour's load spreads
over all variants. Reported per variant: median samples/s of ``generate`` (the
process start and imports excluded, GL context and shader compilation included),
the median over rounds of its speed over the first variant's in the same round,
CPU seconds per sample of that process (all its threads, llvmpipe's included), and
whether its shards are byte-identical to the first variant's.

Variants: ``before`` (the tree given with --before, if any), ``after`` (this tree),
``after-1-thread`` (this tree, files encoded on the GL thread), and with --jpeg
the same with ``rgb = "jpg"`` (``rgb_encoder = "nvjpeg"`` with --nvjpeg, GPU only).
JSON goes to --json, or ``$OUT/dataset_throughput.json`` when ``OUT`` is set.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from results_file import write_results

ROOT = Path(__file__).resolve().parent.parent

CHILD = r"""
import dataclasses, json, resource, sys, time
from glrec.dataset import DatasetSpec, generate
spec_path, out, samples, shard_size, rgb, rgb_encoder, threads = sys.argv[1:8]
spec = DatasetSpec.load(spec_path).with_(samples=int(samples), shard_size=int(shard_size))
if rgb:
    spec = spec.with_(output=dataclasses.replace(spec.output, rgb=rgb, rgb_encoder=rgb_encoder or "cpu"))
kwargs = {}
if threads:
    import glrec.dataset.files.runner as runner
    runner.encode_threads = lambda: int(threads)
def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime
c0, t0 = cpu(), time.perf_counter()
generate(spec, out, overwrite=True)
import glrec
print("RESULT " + json.dumps({"seconds": time.perf_counter() - t0, "cpu": cpu() - c0, "glrec": glrec.__file__}))
"""


def run_variant(tree: Path, spec: str, out: Path, args: argparse.Namespace, rgb: str, encoder: str,
                threads: str) -> dict[str, Any]:  # fmt: skip
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tree), os.environ.get("PYTHONPATH", "")])}
    cmd = [sys.executable, "-c", CHILD, spec, str(out), str(args.samples), str(args.shard_size), rgb, encoder, threads]
    # cwd=tree: "python -c" puts the current directory first on sys.path, ahead of PYTHONPATH.
    proc = subprocess.run(cmd, env=env, cwd=tree, capture_output=True, text=True, timeout=args.timeout)
    line = next((x for x in proc.stdout.splitlines() if x.startswith("RESULT ")), None)
    if proc.returncode != 0 or line is None:
        raise SystemExit(f"variant in {tree} failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
    result = json.loads(line[len("RESULT ") :])
    if Path(tree).resolve() not in Path(result["glrec"]).resolve().parents:
        raise SystemExit(f"the variant meant to run glrec from {tree} imported {result['glrec']}")
    return result


def shards(root: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(root.glob("shard-*.tar"))}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--spec", default=str(ROOT / "examples" / "dataset.toml"))
    ap.add_argument("--before", type=Path, help="source tree of the glrec to compare with (e.g. a git archive)")
    ap.add_argument("--samples", type=int, default=100, help="samples per run (default 100)")
    ap.add_argument("--shard-size", type=int, default=25, help="samples per shard (default 25)")
    ap.add_argument("--rounds", type=int, default=4, help="interleaved rounds, median kept (default 4, at least 2)")
    ap.add_argument("--jpeg", action="store_true", help="also every variant with JPEG colour")
    ap.add_argument("--nvjpeg", action="store_true", help="JPEG colour through nvJPEG in this tree (GPU machine)")
    ap.add_argument("--no-single-thread", action="store_true", help="skip the after-1-thread variant")
    ap.add_argument("--timeout", type=float, default=1200.0, help="seconds one run may take")
    ap.add_argument("--json", type=Path, help="write the results here (default $OUT/dataset_throughput.json)")
    args = ap.parse_args()
    args.rounds = max(2, args.rounds)
    args.spec = str(Path(args.spec).resolve())

    variants: list[tuple[str, Path, str, str, str]] = []  # name, tree, rgb, rgb_encoder, threads
    formats = [("", "")] + ([("jpg", "nvjpeg" if args.nvjpeg else "cpu")] if args.jpeg else [])
    for rgb, encoder in formats:
        tag = "" if not rgb else f" {rgb}/{encoder}"
        if args.before is not None:  # the tree before has no nvJPEG colour: its JPEG is the CPU encoder's
            variants.append((f"before{' jpg/cpu' if rgb else ''}", args.before, rgb, "cpu" if rgb else "", ""))
        variants.append((f"after{tag}", ROOT, rgb, encoder, ""))
        if not args.no_single_thread:
            variants.append((f"after-1-thread{tag}", ROOT, rgb, encoder, "1"))
    results: dict[str, list[dict[str, Any]]] = {v[0]: [] for v in variants}
    identical: dict[str, bool] = {}
    with tempfile.TemporaryDirectory(prefix="glrec-dataset-bench-") as tmp:
        for r in range(args.rounds):
            # Every other round in reverse order (ABBA...): a load that drifts during a round biases neither side.
            for name, tree, rgb, encoder, threads in variants if r % 2 == 0 else variants[::-1]:
                out = Path(tmp) / name.replace(" ", "_").replace("/", "-")
                res = run_variant(tree, args.spec, out, args, rgb, encoder, threads)
                results[name].append(res)
                print(f"round {r + 1} {name:28} {args.samples / res['seconds']:7.1f} samples/s", file=sys.stderr)
                if r == 1:  # every variant has written its folder once by the end of round 0
                    first = next(v for v in variants if v[2] == rgb)
                    ref = Path(tmp) / first[0].replace(" ", "_").replace("/", "-")
                    # JPEGs of two different encoders differ by design; everything else must not.
                    identical[name] = shards(out) == shards(ref) if first[3] == encoder else None
    print(f"\n{args.samples} samples of {args.spec}, {args.rounds} interleaved round(s), median:")
    summary = {}
    base: dict[str, str] = {}
    for name, *_ in variants:
        sps = statistics.median(args.samples / x["seconds"] for x in results[name])
        cpu = statistics.median(1e3 * x["cpu"] / args.samples for x in results[name])
        rgb = next(v[2] for v in variants if v[0] == name)
        first = base.setdefault(rgb, name)  # compared with the first variant of the same colour format
        # The ratio within each round, then the median: a neighbour's load hits both sides of a round alike.
        pairs = zip(results[name], results[first], strict=True)
        ratio = statistics.median(b["seconds"] / a["seconds"] for a, b in pairs)
        summary[name] = {"samples_per_s": sps, "cpu_ms_per_sample": cpu, "x_first": ratio, "first": first,
                         "shards_identical_to_first": identical.get(name)}  # fmt: skip
        print(f"  {name:28} {sps:7.1f} samples/s  x{ratio:5.2f} {first:8}  CPU {cpu:6.1f} ms/sample  "
              f"shards identical: {identical.get(name)}")  # fmt: skip
    doc = {"spec": args.spec, "samples": args.samples, "shard_size": args.shard_size, "rounds": args.rounds,
           "cores": len(os.sched_getaffinity(0)), "summary": summary, "runs": results}  # fmt: skip
    write_results(doc, args.json, "dataset_throughput.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
