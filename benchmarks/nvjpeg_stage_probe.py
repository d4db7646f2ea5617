"""Probe: where glrec's nvJPEG stage loses against nvImageCodec alone (same frames, same run).

    source .gpu/boot.sh && python3 benchmarks/nvjpeg_stage_probe.py --frames 600

nvImageCodec alone (cached or fresh images, with glrec's stream), then glrec's NvJpegEncoder with the pool's
acquire/release, pending frames, 8 per call, and a cProfile of the glrec path.

``--rounds N`` instead measures the three rows that decide "glrec's stage against the library alone" in N
interleaved rounds (every other one in reverse order), on the same frames in one process: the library alone,
glrec's stage as ``stage:encode-nvjpeg`` runs it (glrec's encoder, the Matroska muxer on glrec's encode worker)
and the library with the same muxer on the same worker; each round's ratios to the library alone, and the medians.

    source .gpu/boot.sh && python3 benchmarks/nvjpeg_stage_probe.py --frames 2000 --rounds 6
"""

from __future__ import annotations

import argparse
import cProfile
import io
import itertools
import pstats
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


class _Idle:
    """An encoder that the worker never calls (packets arrive encoded); closed by the worker's finish()."""

    def flush(self) -> list:
        return []

    def close(self) -> None:
        pass


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--frames", type=int, default=600)
    ap.add_argument("--size", default="1920x1080")
    ap.add_argument("--rounds", type=int, default=0, help="interleaved rounds of the deciding rows (0: the probe)")
    a = ap.parse_args()
    w, h = map(int, a.size.split("x"))
    import numpy as np

    from glrec.cuda.driver import CudaDevice, call
    from glrec.cuda.pool import DeviceFrame, DevicePool
    from glrec.encoders.nvjpeg.encoder import NvJpegEncoder, _params, load_nvimgcodec
    from glrec.layout import PlaneLayout
    from glrec.options import VideoOptions

    nv = load_nvimgcodec()
    dev = CudaDevice.open(0)
    layout = PlaneLayout.for_format("rgb24", w, h)
    n = 16
    pool = DevicePool(dev, layout.nbytes, n)
    yy, xx = np.mgrid[0:h, 0:w]
    for s in range(n):
        img = np.stack([(xx + 7 * s) % 256, (yy + 3 * s) % 256, (xx + yy) % 256], -1).astype(np.uint8)
        call("cuMemcpyHtoD", pool.address(s), img.ctypes.data, img.nbytes)
    params = _params(nv, 90, "420")
    res = {}

    def timed(name, fn):
        for i in range(30):
            fn(i)
        dev.synchronize()
        t = time.perf_counter()
        for i in range(a.frames):
            fn(i)
        dev.synchronize()
        res[name] = a.frames / (time.perf_counter() - t)

    enc = nv.Encoder(device_id=0)
    frames = [DeviceFrame(s, layout, pool, s, pending=False) for s in range(n)]
    images = [nv.as_image(f) for f in frames]
    timed("A lib cached images", lambda i: bytes(memoryview(enc.encode([images[i % n]], "jpeg", params=params)[0])))
    timed(
        "B lib + stream",
        lambda i: bytes(
            memoryview(enc.encode([images[i % n]], "jpeg", params=params, cuda_stream=dev.stream_handle)[0])
        ),
    )
    timed(
        "C lib fresh as_image",
        lambda i: bytes(memoryview(enc.encode([nv.as_image(frames[i % n])], "jpeg", params=params)[0])),
    )
    timed("C2 lib single (not list)", lambda i: bytes(memoryview(enc.encode(images[i % n], "jpeg", params=params))))
    opts = VideoOptions.create((w, h), 60.0, codec="mjpeg", encoder="nvjpeg")
    asked = opts.request(device=dev)
    genc = NvJpegEncoder(asked.facts, asked.options, dev)

    def glrec_stage(i):
        slot = pool.acquire()
        f = DeviceFrame(i, layout, pool, slot, pending=False)
        return genc.encode(f)

    if a.rounds:
        _rounds(a, res, timed, enc, images, n, glrec_stage, opts, params)
        return
    timed("D glrec NvJpegEncoder.encode (pool acquire/release)", glrec_stage)

    def glrec_pending(i):
        slot = pool.acquire()
        call("cuEventRecord", pool.events[slot], dev.stream)
        f = DeviceFrame(i, layout, pool, slot, pending=True)
        return genc.encode(f)

    timed("E glrec, frames pending (event + CAI stream)", glrec_pending)
    batch = []

    def glrec_batch(i):
        slot = pool.acquire()
        batch.append(DeviceFrame(i, layout, pool, slot, pending=False))
        if len(batch) == 8:
            imgs = [nv.as_image(f) for f in batch]
            out = [bytes(memoryview(s)) for s in genc._encoder.encode(imgs, "jpeg", params=genc._params)]
            for f in batch:
                f.release()
            batch.clear()
            return out

    timed("F 8 per call", glrec_batch)

    # The Matroska sink as the Recorder runs it in turns: packets queued to glrec's encode worker, muxed there.
    import tempfile

    from glrec.pipeline.worker import Encoded, EncodeWorker
    from glrec.sinks import open_sink

    tmp = Path(tempfile.mkdtemp())
    for name, make in (
        ("G glrec encode, mux serial (stage:encode-nvjpeg today)", None),
        ("H glrec encode, mux on the encode worker (as the Recorder)", EncodeWorker),
    ):
        sink = open_sink(tmp / "g.mkv", opts.facts, overwrite=True)
        index = itertools.count()  # the warm-up's frames and the timed ones, one timeline
        if make is None:
            timed(name, lambda i, sink=sink, index=index: sink.write(glrec_stage(next(index))))
            sink.close()
        else:
            worker = make(_Idle(), sink, 8)
            timed(name, lambda i, worker=worker, index=index: worker.put(Encoded(glrec_stage(next(index)), 1)))
            worker.finish()
        print(name, "packets in the file:", sink.packets)
    pr = cProfile.Profile()
    pr.enable()
    for i in range(300):
        glrec_stage(i)
    pr.disable()
    s = io.StringIO()
    pstats.Stats(pr, stream=s).sort_stats("tottime").print_stats(14)
    print(s.getvalue()[-3500:])
    for k, v in res.items():
        print(f"{k:55s} {v:8.0f} fps  {1000 / v:.3f} ms")


def _rounds(a, res, timed, enc, images, n, glrec_stage, opts, params) -> None:  # type: ignore[no-untyped-def]
    """The library alone, glrec's stage and the library with glrec's muxer on its worker, interleaved."""
    import statistics
    import tempfile

    from glrec.frame import Packet
    from glrec.pipeline.worker import Encoded, EncodeWorker
    from glrec.sinks import open_sink

    tmp = Path(tempfile.mkdtemp())

    def on_worker(encode):  # type: ignore[no-untyped-def]
        def run(name: str) -> None:
            sink = open_sink(tmp / "r.mkv", opts.facts, overwrite=True)
            worker = EncodeWorker(_Idle(), sink, 8)
            index = itertools.count()
            timed(name, lambda i: worker.put(Encoded(encode(next(index)), 1)))
            worker.finish()
            assert sink.packets == a.frames + 30, (name, sink.packets)

        return run

    def lib_bytes(i):  # type: ignore[no-untyped-def]
        return bytes(memoryview(enc.encode([images[i % n]], "jpeg", params=params)[0]))

    def lib_packets(i):  # type: ignore[no-untyped-def]
        return [Packet(lib_bytes(i), i, i, True)]

    rows = {
        "library alone (nvjpeg:b1)": lambda name: timed(name, lib_bytes),
        "glrec's stage (stage:encode-nvjpeg)": on_worker(glrec_stage),
        "library + the muxer on glrec's worker": on_worker(lib_packets),
    }
    got: dict[str, list[float]] = {k: [] for k in rows}
    names = list(rows)
    for r in range(a.rounds):
        for name in names if r % 2 == 0 else reversed(names):
            rows[name](name)
            got[name].append(res[name])
        lib = got[names[0]][-1]
        print(
            f"round {r}: " + "  ".join(f"{k} {v[-1]:.0f} fps ({v[-1] / lib:.2f})" for k, v in got.items()), flush=True
        )
    ratios = {k: statistics.median(x / y for x, y in zip(v, got[names[0]], strict=True)) for k, v in got.items()}
    for k, v in got.items():
        print(f"{k:40s} median {statistics.median(v):7.0f} fps, {min(v):.0f}-{max(v):.0f}; "
              f"median of the rounds' ratios to the library alone {ratios[k]:.2f}")  # fmt: skip


if __name__ == "__main__":
    main()
