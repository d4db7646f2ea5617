"""Where a BatchRecorder step goes on the GPU machine: GL JPEG route, 64 x 256x256 torch CUDA batches into .mkv files.

    source .gpu/boot.sh; python3 benchmarks/gpu/vector_profile.py [--steps 600] [--workers N]

The sampling profiler of ``benchmarks/profile_recorder.py`` over every thread (the recorder's and the encode
workers'), plus the step's wall time split: the route (upload, dispatch, JPEG bytes back) against the queueing.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT))

from profile_recorder import Sampler  # noqa: E402
from vector_record import cuda_batches  # noqa: E402


def main() -> int:
    import torch

    import glrec
    from glrec.batch import gl_route

    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=600)
    ap.add_argument("--envs", type=int, default=64)
    ap.add_argument("--size", type=int, default=256)
    ap.add_argument("--workers", type=int, default=None)
    ap.add_argument("--top", type=int, default=14)
    ap.add_argument("--timing", action="store_true", help="time the step's parts instead of sampling stacks")
    ap.add_argument("--mapped", action="store_true", help="upload through a registered buffer mapped per step")
    ap.add_argument("--switch", type=float, default=None, help="sys.setswitchinterval (diagnosis: GIL hand-over)")
    args = ap.parse_args()
    if args.switch:
        sys.setswitchinterval(args.switch)
    parts: dict[str, float] = {}
    if args.mapped:
        import glrec.cuda.vmm

        glrec.cuda.vmm.EXTENSION = "GL_none_for_this_run"  # type: ignore[misc]
    if args.timing:
        from glrec.batch.layers import LayerUpload
        from glrec.batch.pool import EncodePool
        from glrec.cuda.dlpack import ImportedTensor
        from glrec.encoders.gl_jpeg.stage import GlJpegStage
        from glrec.gl.context import GLContext

        timed_parts = [(LayerUpload, "put"), (LayerUpload, "stage"), (LayerUpload, "fill"), (LayerUpload, "settle"),
                       (EncodePool, "put_frames"), (GlJpegStage, "run_batch"), (GlJpegStage, "submit_batch"),
                       (GLContext, "_activate"), (GLContext, "_deactivate"), (ImportedTensor, "release")]  # fmt: skip
        for owner, name in timed_parts:

            def wrap(fn, key=f"{owner.__name__}.{name}"):  # type: ignore[no-untyped-def]
                def inner(*a, **k):  # type: ignore[no-untyped-def]
                    t = time.perf_counter()
                    try:
                        return fn(*a, **k)
                    finally:
                        parts[key] = parts.get(key, 0.0) + time.perf_counter() - t

                return inner

            setattr(owner, name, wrap(getattr(owner, name)))
    route_s = [0.0]
    real = gl_route.GlJpegRoute.frames

    def timed(self, batch, active, step):  # type: ignore[no-untyped-def]
        t = time.perf_counter()
        try:
            return real(self, batch, active, step)
        finally:
            route_s[0] += time.perf_counter() - t

    gl_route.GlJpegRoute.frames = timed  # type: ignore[method-assign]
    render = cuda_batches(args.envs, args.size)
    frames = [render(s) for s in range(8)]
    torch.cuda.synchronize()
    with tempfile.TemporaryDirectory() as tmp:
        rec = glrec.BatchRecorder(f"{tmp}/env{{env:02d}}.mkv", fps=60, encoder="gl", codec="mjpeg",
                                  workers=args.workers)  # fmt: skip
        rec.write(frames[0])
        sampler = Sampler(0.0005)
        if not args.timing:
            sampler.start()
        route_s[0] = 0.0
        parts.clear()
        t0 = time.perf_counter()
        for step in range(1, args.steps + 1):
            rec.write(frames[step % 8])
        result = rec.close()
        wall = time.perf_counter() - t0
        sampler.stop.set()
        if not args.timing:
            sampler.join()
    n = args.envs * args.steps
    print(
        f"{n / wall:.0f} env-frames/s; route {1e3 * route_s[0] / args.steps:.2f} ms of "
        f"{1e3 * wall / args.steps:.2f} ms a step; {result.summary()}"
    )
    for key, seconds in parts.items():
        print(f"  {key}: {1e3 * seconds / args.steps:.3f} ms a step")
    groups: dict[str, tuple[Counter[str], Counter[str]]] = {}
    for name, own in sampler.own.items():  # the encode workers as one
        key = "glrec-batch-encode-*" if name.startswith("glrec-batch-encode") else name
        g = groups.setdefault(key, (Counter(), Counter()))
        g[0].update(own)
        g[1].update(sampler.cum[name])
    for name, (own, cum) in sorted(groups.items(), key=lambda kv: -sum(kv[1][0].values()))[:3]:
        total = sum(own.values())
        print(f"\n== thread {name}: {total / max(1, sampler.samples):.2f} stacks per sample; top own (cum)")
        for where, k in own.most_common(args.top):
            print(f"  {100 * k / total:5.1f} % ({100 * cum[where] / total:5.1f} %)  {where}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
