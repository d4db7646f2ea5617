"""Where an encode process of the CPU encoders spends its time: cProfile inside every child, and their CPU.

    python benchmarks/gpu/child_profile.py [--envs 64] [--size 256] [--steps 600] [--host]

Records ``--envs`` x SIZE x SIZE H.264 files with glrec.BatchRecorder (torch CUDA batches, or numpy
with ``--host``) as ``cpu_route_probe.py``'s default row does. A ``sitecustomize`` on the children's
path (they inherit the recorder's ``sys.path``) runs each ``glrec.batch.mux_child`` under cProfile and
writes its stats and its CPU seconds at exit; the script then prints the children's CPU per frame,
their wall time, and the functions with the most own time, summed over the children.
"""

from __future__ import annotations

import argparse
import glob
import os
import pstats
import sys
import tempfile
import time
from pathlib import Path

HOOK = """
import atexit, cProfile, os, sys, time
if "glrec.batch.mux_child" in " ".join(getattr(sys, "orig_argv", sys.argv)):
    _p = cProfile.Profile()
    _t0, _c0 = time.perf_counter(), time.process_time()
    _p.enable()

    def _dump():
        _p.disable()
        out = os.environ["CHILD_PROFILE_DIR"]
        _p.dump_stats(f"{out}/child-{os.getpid()}.prof")
        with open(f"{out}/child-{os.getpid()}.txt", "w") as f:
            f.write(f"{time.perf_counter() - _t0} {time.process_time() - _c0}")

    atexit.register(_dump)
"""


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--envs", type=int, default=64)
    ap.add_argument("--size", type=int, default=256)
    ap.add_argument("--steps", type=int, default=600)
    ap.add_argument("--host", action="store_true", help="numpy batches instead of torch CUDA ones")
    ap.add_argument("--top", type=int, default=25)
    args = ap.parse_args()
    hook = Path(tempfile.mkdtemp(prefix="glrec-child-hook-"))
    (hook / "sitecustomize.py").write_text(HOOK)
    out = Path(tempfile.mkdtemp(prefix="glrec-child-prof-"))
    os.environ["CHILD_PROFILE_DIR"] = str(out)
    sys.path.insert(0, str(hook))
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    import glrec
    from glrec.batch import mux_procs

    if os.environ.get("CHILD_PROFILE_CORES"):  # e.g. 1: processes on a small machine too
        mux_procs.CPU_PROCESS_CORES = int(os.environ["CHILD_PROFILE_CORES"])

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from cpu_route_probe import pictures

    n, size = args.envs, args.size
    batches = pictures(n, size, 64)
    if args.host:
        batches = [b.cpu().numpy() for b in batches]
    with tempfile.TemporaryDirectory() as folder:
        rec = glrec.BatchRecorder(folder + "/env{env:02d}.mp4", fps=60, encoder="cpu", codec="h264")
        t0 = time.perf_counter()
        for s in range(args.steps):
            rec.write(batches[s % len(batches)])
        result = rec.close()
        wall = time.perf_counter() - t0
    pool = type(rec._pool).__name__
    frames = n * args.steps
    print(f"{result.summary()}; pool {pool} (processes from {mux_procs.CPU_PROCESS_CORES} cores); wall {wall:.2f} s")
    times = [tuple(map(float, Path(f).read_text().split())) for f in glob.glob(f"{out}/child-*.txt")]
    if not times:
        print("no child profiles (threads?)")
        return
    cpu = sum(c for _, c in times)
    print(f"{len(times)} children: CPU {cpu:.1f} s in all = {1000 * cpu / frames:.3f} ms a frame; each child's "
          f"wall {min(w for w, _ in times):.1f}-{max(w for w, _ in times):.1f} s, CPU {min(c for _, c in times):.1f}-"
          f"{max(c for _, c in times):.1f} s")  # fmt: skip
    stats = pstats.Stats(*glob.glob(f"{out}/child-*.prof"))
    stats.sort_stats("tottime").print_stats(args.top)


if __name__ == "__main__":
    main()
