"""How long a shard worker's nvJPEG takes to start when N processes start it at once (H200 probe, twelfth session).

Each of N spawned processes times: importing nvImageCodec, opening CUDA device 0 (glrec's CudaDevice: the primary
context), creating an nvImageCodec encoder, and its first and second 640x480 encodes; printed as medians and maxima.

    source .gpu/boot.sh && python3 benchmarks/gpu/nvjpeg_start_probe.py --procs 1,4,16
"""

from __future__ import annotations

import argparse
import itertools
import multiprocessing as mp
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))


def one(barrier, queue) -> None:  # type: ignore[no-untyped-def]
    barrier.wait()
    t = [time.perf_counter()]
    from glrec.encoders.nvjpeg.encoder import _Blank, _params, load_nvimgcodec

    nvimgcodec = load_nvimgcodec()
    t.append(time.perf_counter())
    from glrec.cuda.driver import CudaDevice

    device = CudaDevice.open(0)
    t.append(time.perf_counter())
    encoder = nvimgcodec.Encoder(device_id=0)
    t.append(time.perf_counter())
    blank = _Blank(device, (640, 480))
    params = _params(nvimgcodec, 90, "420")
    for _ in range(2):
        encoder.encode([nvimgcodec.as_image(blank)], "jpeg", params=params)
        t.append(time.perf_counter())
    blank.free()
    queue.put([b - a for a, b in itertools.pairwise(t)])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--procs", default="1,4,16")
    args = ap.parse_args()
    ctx = mp.get_context("spawn")
    names = ("import", "cuda", "encoder", "encode1", "encode2")
    for n in (int(x) for x in args.procs.split(",")):
        barrier, queue = ctx.Barrier(n), ctx.Queue()
        procs = [ctx.Process(target=one, args=(barrier, queue)) for _ in range(n)]
        for p in procs:
            p.start()
        got = [queue.get(timeout=120) for _ in procs]
        for p in procs:
            p.join()
        cols = "  ".join(
            f"{k} {statistics.median(g[i] for g in got):.3f}/{max(g[i] for g in got):.3f}" for i, k in enumerate(names)
        )
        total = max(sum(g) for g in got)
        print(f"procs={n:2d}  s median/max: {cols}  slowest total {total:.2f} s", flush=True)


if __name__ == "__main__":
    main()
