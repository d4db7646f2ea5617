"""Dataset throughput: one process vs Ray with 1..N workers, and whether they make the same dataset.

    python benchmarks/dataset_scaling.py                         # CPU (Mesa): single, Ray 1 and 2 CPUs
    python benchmarks/dataset_scaling.py --workers 1,2 --json out.json   # on a 2-GPU node: one GPU per task

Each configuration renders the same spec into its own folder; throughput is
samples / wall time of ``generate`` (Ray start-up excluded, worker start-up
included: that is what a user waits for). With GPUs, Ray gets ``num_gpus=k``
and each task one GPU; the manifest's ``device``/``gpu`` fields show where each
shard rendered. Shards of every run are compared byte for byte with the
single-process run (on one backend they must be identical).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from glrec.dataset import DatasetSpec, generate  # noqa: E402


def shards(root: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(root.glob("shard-*.tar"))}


def placement(root: Path) -> dict[str, int]:
    """How many samples rendered where, from the manifest's renderer/device/gpu fields."""
    lines = [json.loads(line) for line in (root / "manifest.jsonl").read_text().splitlines()]
    return dict(Counter(f"{m['renderer']} | EGL device {m['device']} | GPU {m['gpu']}" for m in lines))


def timed(spec: DatasetSpec, out: Path, **kwargs: object) -> float:
    started = time.perf_counter()
    generate(spec, out, overwrite=True, **kwargs)  # type: ignore[arg-type]
    return time.perf_counter() - started


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--spec", default=str(ROOT / "examples" / "dataset.toml"))
    ap.add_argument("--samples", type=int, default=120, help="samples per run (default 120)")
    ap.add_argument("--shard-size", type=int, default=15, help="samples per shard (default 15)")
    ap.add_argument("--size", help="override the spec's size, e.g. 640x480")
    ap.add_argument("--workers", default="1,2", help="Ray worker counts to run (default 1,2)")
    ap.add_argument("--gpus", choices=("auto", "yes", "no"), default="auto", help="Ray tasks on GPUs (default auto)")
    ap.add_argument("--out", help="folder for the datasets (default: a temporary one, removed)")
    ap.add_argument("--json", help="write the results here")
    args = ap.parse_args()

    spec = DatasetSpec.load(args.spec).with_(samples=args.samples, shard_size=args.shard_size)
    if args.size:
        from glrec.options import parse_size

        spec = spec.with_(size=parse_size(args.size))
    base = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="glrec-scaling-"))
    results: dict[str, object] = {"samples": spec.samples, "shards": spec.shards, "size": list(spec.size)}
    try:
        single = timed(spec, base / "single")
        results["single_samples_per_s"] = spec.samples / single
        print(f"single process: {spec.samples} samples in {single:.2f} s = {spec.samples / single:.1f} samples/s")
        reference = shards(base / "single")

        import ray

        import glrec.dataset.files.ray_backend  # noqa: F401 (fail here, not inside the timing, if it cannot import)

        for k in (int(w) for w in args.workers.split(",")):
            gpus = {"auto": None, "yes": True, "no": False}[args.gpus]
            if gpus is None:
                ray.init(include_dashboard=False, log_to_driver=False)
                gpus = ray.cluster_resources().get("GPU", 0) > 0
                ray.shutdown()
            resources = {"num_gpus": k, "num_cpus": k} if gpus else {"num_cpus": k, "num_gpus": 0}
            ray.init(include_dashboard=False, log_to_driver=False, **resources)
            try:
                out = base / f"ray-{k}"
                seconds = timed(spec, out, ray="", ray_options={"gpus": gpus})
            finally:
                ray.shutdown()
            same = shards(out) == reference
            results[f"ray_{k}_samples_per_s"] = spec.samples / seconds
            results[f"ray_{k}_identical_to_single"] = same
            results[f"ray_{k}_placement"] = placement(out)
            print(
                f"ray, {k} {'GPU' if gpus else 'CPU'} worker(s): {seconds:.2f} s = {spec.samples / seconds:.1f} "
                f"samples/s; shards identical to single process: {same}"
            )
            for where, n in placement(out).items():
                print(f"    {n:5d} samples on {where}")
        counts = [int(w) for w in args.workers.split(",")]
        if len(counts) > 1:
            lo, hi = min(counts), max(counts)
            ratio = results[f"ray_{hi}_samples_per_s"] / results[f"ray_{lo}_samples_per_s"]  # type: ignore[operator]
            results[f"ray_{hi}_over_ray_{lo}"] = ratio
            print(f"ray {hi} workers / ray {lo} worker(s): {ratio:.2f}x")
        for k in counts:
            ratio = results[f"ray_{k}_samples_per_s"] / results["single_samples_per_s"]  # type: ignore[operator]
            results[f"ray_{k}_over_single"] = ratio
            print(f"ray {k} worker(s) / single process: {ratio:.2f}x")
    finally:
        if not args.out:
            shutil.rmtree(base, ignore_errors=True)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
