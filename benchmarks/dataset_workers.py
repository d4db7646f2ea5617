"""Dataset samples/s by local worker count, side by side in one run, and whether the shards stay the same.

    python benchmarks/dataset_workers.py --workers 1,2 --samples 200 --rounds 4 \\
        --machine "2-core dev machine, Mesa llvmpipe" --json benchmarks/results/DATE_NAME.json
    python benchmarks/dataset_workers.py --workers 1,2,4,8,16 --samples 800 --shard-size 25 --jpeg
    python benchmarks/dataset_workers.py --workers 1,8,16 --samples 800 --shard-size 25 --png-before \
        --gl-jpeg --nvjpeg --env __GL_YIELD=NOTHING

Every variant renders the same spec (``examples/dataset.toml`` by default: 640x480,
all five passes) with ``generate(spec, out, workers=N)`` in a fresh process of its
own (``1`` renders in that process, as glrec did before local workers; ``auto`` is
the default count), timed from the call to its return: the workers' start-up,
contexts and shader compilation included, the interpreter start and imports of the
calling process not. Rounds run interleaved, every other one in reverse order
(ABBA), so a neighbour's load spreads over all variants; reported per variant: the
median samples/s, the median within-round ratio to the first variant, CPU seconds
per sample of the process and its workers, and whether its shards are
byte-identical to the first variant's of the same colour format (and to its own in every round). Each
variant's shards are hashed and removed once it has run, so a long run does not fill the disk; ``--dir`` puts
them on another filesystem (``/dev/shm``: memory, so the disk's share shows).

``--disk-bound`` then writes, per colour format, as many bytes as a run wrote, in files of a shard's size on as
many threads as the largest worker count, each synced and renamed as a shard is (``disk_bound.py``): the
filesystem's rate, and the samples/s it allows at the shards' bytes a sample.

``--png-before`` adds every count with the PNG files written as glrec wrote them
before its own PNG writer (FFmpeg's encoder through PyAV, level 3, FFmpeg's thread
default), patched into the run and its workers by a ``sitecustomize`` module, so
before and after are one run. ``--gl-jpeg`` adds JPEG colour through the GL JPEG
encoder (batched in the GL context), ``--nvjpeg`` through nvJPEG. ``--env NAME=VALUE``
(repeatable) adds every variant again with those variables set (e.g. the NVIDIA
GL driver's ``__GL_YIELD=NOTHING``: workers spin while they wait for the GPU, where glrec sets ``USLEEP``;
``GLREC_BENCH_WHAT_IF=no-digests,stored-png,no-files,no-row-filter``: the run without those costs, to weigh them
(``no-row-filter``: each PNG's rows as the first of its shape had them, as if filtered elsewhere; other bytes);
``GLREC_BENCH_FENCE_POLL=0.0005``: a chunk's fence
asked every 0.5 ms with sleeps between, ``layer_pack.FENCE_POLL_S``; ``GLREC_BENCH_SCANLINES=host``: the PNG
passes' rows filtered on the host, as before 2026-12-05, ``scanlines.ON_GPU``; ``GLREC_BENCH_IN_FLIGHT=3``: three
shards in flight per worker, ``runner.IN_FLIGHT``). ``--readback get,copy,direct`` runs every
variant with each way of reading packed passes back (``layer_pack.READBACK``).
``--startup`` also runs, per worker count N, N samples in N shards of one (PNG): the
CPU of starting N workers (interpreter, imports, GL context, scene, shaders) and one
sample each; its CPU per worker is subtracted from each variant's CPU per sample
(``cpu_ms_per_sample_less_startup``), which tells a fixed cost per worker spread
over the run from a cost per sample that grows with the worker count.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from disk_bound import filesystem, write_bound
from results_file import write_results

ROOT = Path(__file__).resolve().parent.parent

#: Put on PYTHONPATH with GLREC_BENCH_PNG_BEFORE=1: every process (the run, its workers) writes PNG as before.
BEFORE = r"""
import os
if os.environ.get("GLREC_BENCH_READBACK"):
    from glrec.dataset.rendering import layer_pack
    layer_pack.READBACK = os.environ["GLREC_BENCH_READBACK"]
if os.environ.get("GLREC_BENCH_MIN_THREADS"):
    from glrec.dataset.files import local
    local.MIN_WORKER_THREADS = int(os.environ["GLREC_BENCH_MIN_THREADS"])
if os.environ.get("GLREC_BENCH_SCANLINES"):
    from glrec.dataset.rendering import scanlines
    scanlines.ON_GPU = os.environ["GLREC_BENCH_SCANLINES"]
if os.environ.get("GLREC_BENCH_IN_FLIGHT"):
    from glrec.dataset.files import runner
    runner.IN_FLIGHT = int(os.environ["GLREC_BENCH_IN_FLIGHT"])
if os.environ.get("GLREC_BENCH_FENCE_POLL"):
    from glrec.dataset.rendering import layer_pack
    layer_pack.FENCE_POLL_S = float(os.environ["GLREC_BENCH_FENCE_POLL"])
what_if = set(filter(None, os.environ.get("GLREC_BENCH_WHAT_IF", "").split(",")))  # costs left out, to weigh them
if "no-digests" in what_if:  # no SHA-256 of the members or of the tar (the manifest's digests are empty)
    from glrec.dataset.files import runner, writers

    runner.file_digests = lambda files, name: {n: {"bytes": len(d)} for n, d in files.items()}
    writers.hasher = lambda name: None
if "stored-png" in what_if:  # the PNGs' rows stored, not deflated (zlib-ng's level 0)
    from zlib_ng import zlib_ng
    from glrec.encoders.png import writer as png
    png.compress = lambda data, level: zlib_ng.compress(data, 0)
if "no-row-filter" in what_if:  # PNG rows as if filtered elsewhere (the GPU): each shape's first rows, reused
    from glrec.encoders.png import writer as png
    _rows, _first = {}, png.png_rows
    png.png_rows = lambda a, filter_type=2: _rows.setdefault((a.shape, a.dtype.str), _first(a, filter_type))
if "no-files" in what_if:  # the lossless passes not encoded at all: meta.json (and the colour) only
    from glrec.dataset.files import runner, samples
    runner.sample_files = lambda spec, sample, video=None, colour_later=False: {
        "meta.json": (samples.meta_json(sample.meta, sample.key) + "\n").encode()}
if os.environ.get("GLREC_BENCH_PNG_BEFORE") == "1":
    import av, numpy as np
    from glrec.dataset.files import encode

    def encode_png(array, level=3):
        fmt = "gray16be" if array.dtype == np.uint16 else "gray" if array.ndim == 2 else "rgb24"
        cc = av.CodecContext.create("png", "w")
        cc.width, cc.height, cc.pix_fmt = array.shape[1], array.shape[0], fmt
        cc.options = {"compression_level": "3"}
        frame = av.VideoFrame.from_ndarray(np.ascontiguousarray(array), format=fmt)
        return b"".join(bytes(p) for p in cc.encode(frame)) + b"".join(bytes(p) for p in cc.encode(None))

    encode.encode_png = encode_png
"""

CHILD = r"""
import dataclasses, json, resource, sys, time
from glrec.dataset import DatasetSpec, generate
spec_path, out, samples, shard_size, rgb, rgb_encoder, workers = sys.argv[1:8]
spec = DatasetSpec.load(spec_path).with_(samples=int(samples), shard_size=int(shard_size))
if rgb != "png":
    spec = spec.with_(output=dataclasses.replace(spec.output, rgb=rgb, rgb_encoder=rgb_encoder))
def cpu():
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime
done, marks = [0], {}
def progress(n):  # when the first sample and a fifth of them were written: start-up against the steady rate
    done[0] += n  # workers report samples together (at most every 0.1 s): the count when a mark is passed is kept
    for mark in (1, max(2, int(samples) // 5)):
        if done[0] >= mark and mark not in marks:
            marks[mark] = (time.perf_counter(), done[0])
def faults():  # minor page faults of the run and its reaped workers (memory first touched, or given back and again)
    return sum(resource.getrusage(w).ru_minflt for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
f0, c0, t0 = faults(), cpu(), time.perf_counter()
result = generate(spec, out, overwrite=True, workers=None if workers == "auto" else int(workers), progress=progress)
t1 = time.perf_counter()
seconds = t1 - t0
from glrec.dataset.files.local import wait_for_workers  # this tree's glrec (checked below)
wait_for_workers()  # generate returns once the workers let go of the folder; their CPU counts once they are reaped
reaped_s = time.perf_counter() - t1
fifth = max(2, int(samples) // 5)
steady = (int(samples) - marks[fifth][1]) / (t1 - marks[fifth][0]) if fifth in marks and t1 > marks[fifth][0] else None
import glrec
print("RESULT " + json.dumps({"seconds": seconds, "cpu": cpu() - c0, "workers": result.workers, "faults": faults() - f0,
                              "first_sample_s": marks[1][0] - t0 if 1 in marks else None,
                              "steady_samples_per_s": steady, "reaped_s": reaped_s, "glrec": glrec.__file__}))
"""


def run_variant(
    spec: str, out: Path, args: argparse.Namespace, rgb: str, encoder: str, workers: str, extra: dict[str, str]
) -> dict:
    paths = [str(ROOT), *([extra.pop("_site")] if "_site" in extra else []), os.environ.get("PYTHONPATH", "")]
    env = {**os.environ, **extra, "PYTHONPATH": os.pathsep.join(p for p in paths if p)}
    cmd = [sys.executable, "-c", CHILD, spec, str(out), str(args.samples), str(args.shard_size), rgb, encoder, workers]
    proc = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True, timeout=args.timeout)
    line = next((x for x in proc.stdout.splitlines() if x.startswith("RESULT ")), None)
    if proc.returncode != 0 or line is None:
        raise SystemExit(f"workers={workers} {rgb} failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(line[len("RESULT ") :])
    if ROOT.resolve() not in Path(result["glrec"]).resolve().parents:
        raise SystemExit(f"the benchmark meant to run glrec from {ROOT} imported {result['glrec']}")
    return result


def shards(root: Path) -> dict[str, tuple[int, str]]:
    """Each shard's size and SHA-256 (what says two runs' shards are byte-identical); for a spec of per-sample
    folders, each sample file's (``KEY/NAME``)."""
    files = sorted(root.glob("shard-*.tar")) or sorted(
        p for p in root.glob("*/*") if p.is_file() and p.parent.name != ".glrec"
    )
    out = {}
    for p in files:
        h = hashlib.sha256()
        with open(p, "rb") as f:
            for block in iter(lambda f=f: f.read(1 << 22), b""):
                h.update(block)
        out[p.relative_to(root).as_posix()] = (p.stat().st_size, h.hexdigest())
    return out


def commit() -> str | None:
    """The tree's commit, with ``-dirty`` where its files differ from it (a copy sent to the GPU machine carries
    an older ``.git`` than its files: its bare commit named the wrong tree)."""
    if (ROOT / "COMMIT").is_file():  # an archive of a commit (the GPU machine's copy of the tree before a change)
        return (ROOT / "COMMIT").read_text().strip()
    proc = subprocess.run(["git", "describe", "--always", "--dirty", "--abbrev=7"], cwd=ROOT, capture_output=True,
                          text=True)  # fmt: skip
    return proc.stdout.strip() or None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--spec", default=str(ROOT / "examples" / "dataset.toml"))
    ap.add_argument("--workers", default="1,auto", help="comma-separated counts, 'auto' = the default (1,auto)")
    ap.add_argument("--samples", type=int, default=200, help="samples per run (default 200)")
    ap.add_argument("--shard-size", type=int, default=50, help="samples per shard (default 50, as the example)")
    ap.add_argument("--rounds", type=int, default=3, help="interleaved rounds, median kept (default 3)")
    ap.add_argument("--jpeg", action="store_true", help="also every count with JPEG colour on the CPU")
    ap.add_argument("--nvjpeg", action="store_true", help="JPEG colour through nvJPEG (GPU machine)")
    ap.add_argument("--gl-jpeg", action="store_true", help="JPEG colour through the GL JPEG encoder, batched")
    ap.add_argument("--png-before", action="store_true", help="also every count with PNG written as before")
    ap.add_argument("--no-png", action="store_true", help="leave out PNG colour (run only the JPEG variants asked)")
    ap.add_argument(
        "--readback",
        default="get",
        help="how packed passes reach the host: get,copy,direct "
        "(glrec.dataset.rendering.layer_pack.READBACK; several: a variant each)",
    )
    ap.add_argument("--startup", action="store_true", help="measure the CPU of starting each worker count")
    ap.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                    help="also every variant with these environment variables (repeatable)")  # fmt: skip
    ap.add_argument("--machine", default="", help="what the machine is, for the record")
    ap.add_argument("--timeout", type=float, default=1800.0, help="seconds one run may take")
    ap.add_argument("--dir", type=Path, help="where the variants write their shards (default: the temp dir)")
    ap.add_argument("--disk-bound", action="store_true", help="also measure how fast that filesystem takes shards")
    ap.add_argument("--json", type=Path, help="write the results here (default $OUT/dataset_workers.json)")
    args = ap.parse_args()
    spec = str(Path(args.spec).resolve())
    counts = [w.strip() for w in args.workers.split(",") if w.strip()]
    formats = ([] if args.no_png else [("png", "cpu")]) + ([("png", "before")] if args.png_before else [])
    formats += [("jpg", "cpu")] if args.jpeg else []
    formats += ([("jpg", "nvjpeg")] if args.nvjpeg else []) + ([("jpg", "gl")] if args.gl_jpeg else [])
    site = tempfile.mkdtemp(prefix="glrec-bench-site-")
    (Path(site) / "sitecustomize.py").write_text(BEFORE)
    setting = dict(kv.split("=", 1) for kv in args.env)
    envs = [("", {})] + ([(" " + " ".join(args.env), {**setting, "_site": site})] if setting else [])
    modes = [m.strip() for m in args.readback.split(",") if m.strip()]
    rb = lambda m: {"GLREC_BENCH_READBACK": m, "_site": site} if modes != ["get"] else {}  # noqa: E731
    variants = [(f"{rgb}/{enc}{label}{' rb=' + m if len(modes) > 1 else ''} workers={w}", rgb, enc, w,
                 {**extra, **rb(m)}) for label, extra in envs for rgb, enc in formats for m in modes
                for w in counts]  # fmt: skip
    runs: dict[str, list[dict[str, Any]]] = {v[0]: [] for v in variants}
    identical: dict[str, bool] = {}
    made: dict[str, dict[str, tuple[int, str]]] = {}  # each variant's shards in its first round
    same_each_round: dict[str, bool] = {}
    with tempfile.TemporaryDirectory(prefix="glrec-dataset-workers-", dir=args.dir) as tmp:
        for r in range(max(1, args.rounds)):
            for name, rgb, enc, w, extra in variants if r % 2 == 0 else variants[::-1]:
                out = Path(tmp) / name.replace("/", "-").replace(" ", "_").replace("=", "")
                if enc == "before":
                    extra = {**extra, "_site": site, "GLREC_BENCH_PNG_BEFORE": "1"}
                res = run_variant(spec, out, args, rgb, "cpu" if enc == "before" else enc, w, dict(extra))
                runs[name].append(res)
                got = shards(out)
                same_each_round[name] = same_each_round.get(name, True) and made.setdefault(name, got) == got
                shutil.rmtree(out)  # hashed: its shards need not fill the disk
                print(f"round {r + 1} {name:28} {args.samples / res['seconds']:7.1f} samples/s "
                      f"({res['workers']} worker(s))", file=sys.stderr)  # fmt: skip
        for name, rgb, enc, _, _ in variants:
            first = next(v[0] for v in variants if v[1:3] == (rgb, enc))
            identical[name] = made[name] == made[first] and same_each_round[name]
        bounds: dict[str, dict[str, Any]] = {}
        for rgb, enc in formats if args.disk_bound else []:
            files = made[next(v[0] for v in variants if v[1:3] == (rgb, enc))]
            if not all(name.endswith(".tar") for name in files):  # per-sample folders: nothing synced per file
                bounds[f"{rgb}/{enc}"] = {"skipped": "per-sample folders (the probe writes synced tar shards)"}
                print(f"disk bound {rgb}/{enc}: not measured: the spec writes per-sample folders, and the probe "
                      "writes synced shard files as the tar writer does", file=sys.stderr)  # fmt: skip
                continue
            sizes = [size for size, _ in files.values()]
            per_sample = sum(sizes) / args.samples
            most = max(8 if w == "auto" else int(w) for w in counts)
            res = write_bound(Path(tmp), most, int(statistics.median(sizes)), sum(sizes))
            res["samples_per_s_bound"] = res["mb_per_s"] * 1e6 / per_sample
            bounds[f"{rgb}/{enc}"] = res
            print(f"disk bound {rgb}/{enc}: {res['filesystem']} took {res['mb_per_s']:.0f} MB/s on {most} threads "
                  f"({per_sample / 1e6:.2f} MB a sample): at most {res['samples_per_s_bound']:.0f} samples/s",
                  file=sys.stderr)  # fmt: skip
        startup: dict[str, float] = {}
        for w in counts if args.startup else []:
            tiny = argparse.Namespace(**{**vars(args), "samples": 0, "shard_size": 1})
            n = min(8, os.cpu_count() or 1) if w == "auto" else int(w)
            tiny.samples = n
            res = run_variant(spec, Path(tmp) / f"startup{w}", tiny, "png", "cpu", w, {})
            startup[w] = res["cpu"] / res["workers"]
            print(f"startup workers={w}: {res['workers']} worker(s), {startup[w]:.2f} s CPU each "
                  f"(with one sample each)", file=sys.stderr)  # fmt: skip
    cores = len(os.sched_getaffinity(0))
    where = Path(args.dir or tempfile.gettempdir())
    print(f"\n{args.samples} samples of {spec} in shards of {args.shard_size}, {cores} cores, on {filesystem(where)}, "
          f"{args.rounds} interleaved round(s), median:")  # fmt: skip
    summary: dict[str, Any] = {}
    for name, rgb, enc, w_count, _ in variants:
        first = next(v[0] for v in variants if v[1:3] == (rgb, enc))
        sps = statistics.median(args.samples / x["seconds"] for x in runs[name])
        cpu = statistics.median(1e3 * x["cpu"] / args.samples for x in runs[name])
        first_s = statistics.median(x.get("first_sample_s") or float("nan") for x in runs[name])
        steady = statistics.median(x.get("steady_samples_per_s") or float("nan") for x in runs[name])
        reaped = statistics.median(x.get("reaped_s", float("nan")) for x in runs[name])  # exits after the return
        faults = statistics.median(x.get("faults", float("nan")) / args.samples for x in runs[name])
        pairs = zip(runs[name], runs[first], strict=True)
        ratio = statistics.median(b["seconds"] / a["seconds"] for a, b in pairs)
        summary[name] = {"workers": runs[name][0]["workers"], "samples_per_s": sps, "x_first": ratio, "first": first,
                         "cpu_ms_per_sample": cpu, "shards_identical_to_first": identical[name],
                         "first_sample_s": first_s, "steady_samples_per_s": steady, "workers_exited_s_after": reaped,
                         "minor_faults_per_sample": faults,
                         "bytes_per_sample": sum(size for size, _ in made[name].values()) / args.samples}  # fmt: skip
        if w_count in startup:
            less = cpu - 1e3 * startup[w_count] * runs[name][0]["workers"] / args.samples
            summary[name]["cpu_ms_per_sample_less_startup"] = less
        less_text = (
            f" ({summary[name]['cpu_ms_per_sample_less_startup']:.1f} less start-up)" if w_count in startup else ""
        )
        print(f"  {name:28} {runs[name][0]['workers']:3d} worker(s) {sps:7.1f} samples/s  x{ratio:5.2f}  "
              f"CPU {cpu:6.1f} ms/sample{less_text}  {faults:5.0f} faults/sample  "
              f"first sample {first_s:5.2f} s, then {steady:7.1f}/s  "
              f"exits {reaped:4.2f} s after  shards identical: {identical[name]}")  # fmt: skip
    doc = {
        "benchmark": "dataset_workers", "created": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "machine": args.machine, "cores": cores, "load_average_at_end": os.getloadavg(), "glrec_commit": commit(),
        "spec": spec, "samples": args.samples, "shard_size": args.shard_size, "rounds": args.rounds,
        "dir": str(where), "filesystem": filesystem(where),
        "summary": summary, "runs": runs, "startup_cpu_s_per_worker": startup, "disk_bound": bounds,
    }  # fmt: skip
    write_results(doc, args.json, "dataset_workers.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
