"""Decode -> GL upload, stage by stage: where a video input's time goes (NVDEC on the GPU machine, FFmpeg anywhere).

    source .gpu/boot.sh && python3 benchmarks/nvdec_stages.py                 # GPU machine: every row
    python3 benchmarks/nvdec_stages.py --rows demux,source-cpu --frames 300   # any machine

The input is 1920x1080 H.264 (PyAV's libx264, preset veryfast, a moving pattern) unless --input
names a file. Each row runs in a fresh process and reports two rates: ``fps`` over the whole run,
from before the decoder is made to the last picture (what a short clip costs), and ``steady``,
over the pictures after the first ``--warmup`` (what the pipeline sustains). ``startup_s`` is the
time to the first picture. Rows:

  demux          PyAV demux + the Annex B bitstream filter glrec runs for NVDEC (packets/s)
  nvc-own        PyNvVideoCodec alone, its own C++ demuxer and decoder (CreateDemuxer/CreateDecoder):
                 one session's ceiling, no copies
  nvc-pyav       PyAV packets into PyNvVideoCodec's decoder, as glrec feeds it, no copies
  nvc-threaded   PyNvVideoCodec's ThreadedDecoder (decoding on its own C++ thread), batches of 8
  sessions-N     N nvc-own sessions decoding the file at once, one thread each: aggregate frames/s
                 (whether the GPU's several NVDEC engines add up; a single session uses one)
  worker         glrec's NvdecWorker (decode thread, copies into the pool) with a consumer that only
                 hands slots back: per picture, the worker's demux / decode / copy / wait times
  source         VideoSource(decoder="nvdec").update(t) per picture in a GL context on the GPU:
                 decode -> pool -> GL upload -> YUV->RGB; the GL side's per-picture times (CUDA event
                 wait, fence waits, unpack) and the GPU time of the upload+convert (GL timer queries)
  source-cpu     the same with decoder="cpu" (FFmpeg decode threads -> PBO ring -> GL)

Results: JSON in --out (default benchmarks/results/), and a table.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from transcode_overlay import pyav_input  # this script's folder is first on sys.path

ROOT = Path(__file__).resolve().parent.parent
ROWS = ["demux", "nvc-own", "nvc-pyav", "nvc-threaded", "sessions-2", "sessions-4", "worker", "source", "source-cpu"]
_DEVICES: list[Any] = []


class Clock:
    """Time of each picture after ``start``; rates over the run and after a warm-up."""

    def __init__(self, warmup: int) -> None:
        self.warmup = warmup
        self.start = time.perf_counter()
        self.stamps: list[float] = []

    def tick(self, n: int = 1) -> None:
        now = time.perf_counter()
        self.stamps.extend([now] * n)

    def figures(self) -> dict[str, Any]:
        n = len(self.stamps)
        out: dict[str, Any] = {"frames": n}
        if not n:
            return out
        total = self.stamps[-1] - self.start
        out |= {"seconds": total, "fps": n / total, "startup_s": self.stamps[0] - self.start}
        w = min(self.warmup, n // 4)
        if n - w > 1 and self.stamps[-1] > self.stamps[w]:
            out["steady"] = (n - 1 - w) / (self.stamps[-1] - self.stamps[w])
        return out


def _annexb(stream: Any) -> Any:
    import av

    name = {"h264": "h264_mp4toannexb", "hevc": "hevc_mp4toannexb"}.get(stream.codec_context.codec.canonical_name)
    return av.bitstream.BitStreamFilterContext(name, stream) if name else None


def row_demux(src: Path, warmup: int) -> dict[str, Any]:
    import av

    clock = Clock(warmup)
    with av.open(str(src)) as c:
        stream = c.streams.video[0]
        bsf = _annexb(stream)
        for packet in c.demux(stream):
            out = bsf.filter(packet if packet.size else None) if bsf is not None else [packet]
            clock.tick(sum(1 for p in out if p.size))
    return clock.figures()


def _nvc_decoder(nvc: Any, codec: Any) -> Any:
    """A decoder on a stream of its own, as glrec makes it (on stream 0 PyNvVideoCodec synchronises per picture)."""
    from glrec.cuda.driver import CudaDevice

    device = CudaDevice.open(0)
    _DEVICES.append(device)  # the stream lives as long as the process (each row is one)
    return nvc.CreateDecoder(gpuid=0, codec=codec, cudacontext=device.context_handle,
                             cudastream=device.stream_handle, usedevicememory=True)  # fmt: skip


def row_nvc_own(src: Path, warmup: int) -> dict[str, Any]:
    import PyNvVideoCodec as nvc

    clock = Clock(warmup)
    demuxer = nvc.CreateDemuxer(filename=str(src))
    decoder = _nvc_decoder(nvc, demuxer.GetNvCodecId())
    for packet in demuxer:
        clock.tick(len(decoder.Decode(packet)))
    clock.tick(len(decoder.Decode(nvc.PacketData())))  # end of stream: what the decoder still holds
    return clock.figures()


def row_nvc_pyav(src: Path, warmup: int) -> dict[str, Any]:
    import av
    import PyNvVideoCodec as nvc

    from glrec.sources.video.nvdec import NV_CODECS

    clock = Clock(warmup)
    with av.open(str(src)) as c:
        stream = c.streams.video[0]
        codec = getattr(nvc.cudaVideoCodec, NV_CODECS[stream.codec_context.codec.canonical_name])
        decoder = _nvc_decoder(nvc, codec)
        bsf = _annexb(stream)
        for packet in c.demux(stream):
            for p in bsf.filter(packet if packet.size else None) if bsf is not None else [packet]:
                if not p.size:
                    continue
                data = nvc.PacketData()
                data.bsl_data, data.bsl, data.pts = int(p.buffer_ptr), int(p.buffer_size), int(p.pts or 0)
                clock.tick(len(decoder.Decode(data)))
        end = nvc.PacketData()
        end.bsl_data, end.bsl, end.decode_flag = 0, 0, nvc.VideoPacketFlag.ENDOFSTREAM
        clock.tick(len(decoder.Decode(end)))
    return clock.figures()


def row_nvc_threaded(src: Path, warmup: int) -> dict[str, Any]:
    import PyNvVideoCodec as nvc

    from glrec.cuda.driver import CudaDevice

    clock = Clock(warmup)
    device = CudaDevice.open(0)
    _DEVICES.append(device)
    decoder = nvc.ThreadedDecoder(str(src), buffer_size=16, gpu_id=0, cuda_context=device.context_handle,
                                  cuda_stream=device.stream_handle, use_device_memory=True)  # fmt: skip
    while True:
        batch = decoder.get_batch_frames(8)
        if not batch:
            break
        clock.tick(len(batch))
    decoder.end()
    return clock.figures()


def row_sessions(src: Path, warmup: int, n: int) -> dict[str, Any]:
    import PyNvVideoCodec as nvc

    counts = [0] * n
    ready = threading.Barrier(n + 1)
    errors: list[str] = []

    def one(i: int) -> None:
        try:
            demuxer = nvc.CreateDemuxer(filename=str(src))
            decoder = _nvc_decoder(nvc, demuxer.GetNvCodecId())
        except Exception as exc:
            errors.append(f"{type(exc).__name__}: {exc}")
            ready.wait()
            return
        ready.wait()
        # A packet's bytes live in the demuxer until the next read: each is decoded as it comes.
        for packet in demuxer:
            counts[i] += len(decoder.Decode(packet))
        counts[i] += len(decoder.Decode(nvc.PacketData()))

    threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    ready.wait()
    started = time.perf_counter()
    for t in threads:
        t.join()
    seconds = time.perf_counter() - started
    # Sessions made before the clock starts; the rate includes each session's first sequence header.
    return {"frames": sum(counts), "seconds": seconds, "fps": sum(counts) / seconds, "steady": sum(counts) / seconds,
            "sessions": n, "per_session": counts, "errors": errors}  # fmt: skip


def _per_picture(times: Any) -> dict[str, float]:
    n = max(1, times.pictures)
    return {k: v / n * 1e6 for k, v in vars(times).items() if k != "pictures"}  # microseconds per picture


def row_worker(src: Path, warmup: int) -> dict[str, Any]:
    from glrec.sources.video.media import classify, open_container
    from glrec.sources.video.nvdec import NvdecWorker

    clock = Clock(warmup)
    spec = classify(src)
    worker = NvdecWorker(spec, open_container(spec), depth=8)
    worker.start()
    try:
        while (pic := worker.get(timeout=60)) is not None:
            worker.wait_ready(pic.frame)  # the slot is complete, as a reader would need it
            worker._discard(pic)
            clock.tick()
    finally:
        worker.stop()
    return clock.figures() | {"worker_us": _per_picture(worker.times), "startup_steps_s": worker.startup}


def row_source(src: Path, warmup: int, decoder: str) -> dict[str, Any]:
    from glrec.gl.context import create_context, create_cuda_context
    from glrec.sources import VideoSource

    clock = Clock(warmup)
    if decoder == "nvdec":
        from glrec.cuda.driver import device_info

        gl = create_cuda_context(0, device_info(0).pci_bus_id)
    else:
        gl = create_context()
    update_s, gpu_ns, timed = 0.0, 0, 0
    made = time.perf_counter()
    with gl, VideoSource(src, decoder=decoder) as source:  # type: ignore[arg-type]
        opened = time.perf_counter()
        source.setup(gl.mgl)
        steps = {"gl_context": made - clock.start, "open_to_first_picture": opened - made,
                 "setup": time.perf_counter() - opened}  # fmt: skip
        queries = [gl.mgl.query(time=True) for _ in range(8)]  # read 8 pictures later: no stall
        rate = float(source.rate or 30)
        n = 0
        while True:
            q = queries[n % len(queries)]
            if n >= len(queries):
                gpu_ns += q.elapsed
                timed += 1
            started = time.perf_counter()
            with q:
                pic = source.update(n / rate)
            update_s += time.perf_counter() - started
            if pic is None:
                break
            n += 1
            clock.tick()
        gl.mgl.finish()
        out = clock.figures() | {"update_us": update_s / max(1, n) * 1e6,
                                 "gpu_upload_convert_us": gpu_ns / max(1, timed) / 1e3}  # fmt: skip
        worker = source._worker
        if decoder == "nvdec" and worker is not None:
            out["worker_us"] = _per_picture(worker.times)
            out["upload_us"] = _per_picture(source._uploader.times)
            steps |= {f"worker_{k}": v for k, v in worker.startup.items()}
        out["startup_steps_s"] = steps
    return out


def run_row(name: str, src: Path, warmup: int) -> dict[str, Any]:
    if name == "demux":
        return row_demux(src, warmup)
    if name == "nvc-own":
        return row_nvc_own(src, warmup)
    if name == "nvc-pyav":
        return row_nvc_pyav(src, warmup)
    if name == "nvc-threaded":
        return row_nvc_threaded(src, warmup)
    if name.startswith("sessions-"):
        return row_sessions(src, warmup, int(name.split("-", 1)[1]))
    if name == "worker":
        return row_worker(src, warmup)
    if name in ("source", "source-cpu"):
        return row_source(src, warmup, "nvdec" if name == "source" else "cpu")
    raise SystemExit(f"unknown row {name!r}; rows: {', '.join(ROWS)}")


def _table(rows: dict[str, dict[str, Any]]) -> str:
    head = f"{'row':<14} {'frames':>6} {'fps':>8} {'steady':>8} {'startup_s':>9}"
    lines = [head + "  per picture (us); startup steps (s)"]
    for name, r in rows.items():
        if "error" in r:
            lines.append(f"{name:<14} {r['error'][:100]}")
            continue
        stages = {**r.get("worker_us", {}), **{f"gl.{k}": v for k, v in r.get("upload_us", {}).items()}}
        for key in ("update_us", "gpu_upload_convert_us"):
            if key in r:
                stages[key.removesuffix("_us")] = r[key]
        detail = " ".join(f"{k}={v:.0f}" for k, v in stages.items())
        if r.get("startup_steps_s"):
            detail += "; " + " ".join(f"{k}={v:.3f}" for k, v in r["startup_steps_s"].items())
        lines.append(f"{name:<14} {r.get('frames', 0):>6} {r.get('fps', 0):>8.1f} {r.get('steady', 0):>8.1f} "
                     f"{r.get('startup_s', 0):>9.3f}  {detail}")  # fmt: skip
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", default="1920x1080")
    ap.add_argument("--frames", type=int, default=1200)
    ap.add_argument("--warmup", type=int, default=60, help="pictures left out of the steady rate")
    ap.add_argument("--rows", default=",".join(ROWS))
    ap.add_argument("--input", type=Path, help="decode this file instead of making one")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    ap.add_argument("--row", help=argparse.SUPPRESS)  # child process: one row, JSON on the last line
    args = ap.parse_args()
    if args.row:
        print(json.dumps(run_row(args.row, args.input, args.warmup)))
        return
    rows = args.rows.split(",")
    results: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        src = args.input
        if src is None:
            src = Path(tmp) / "input.mp4"
            started = time.perf_counter()
            pyav_input(src, args.size, args.frames)  # the GPU machine has no ffmpeg command line
            print(f"input: {args.frames} frames {args.size} in {time.perf_counter() - started:.1f} s", file=sys.stderr)
        path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
        env = {**os.environ, "PYTHONPATH": path}
        for name in rows:
            cmd = [sys.executable, __file__, "--row", name, "--input", str(src), "--warmup", str(args.warmup)]
            proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
            lines = proc.stdout.strip().splitlines()
            if proc.returncode or not lines:
                results[name] = {"error": f"exit {proc.returncode}: {proc.stderr.strip()[-800:]}"}
            else:
                results[name] = json.loads(lines[-1])
            print(_table({name: results[name]}).splitlines()[-1], file=sys.stderr, flush=True)
    document = {
        "what": "decode -> GL upload stage by stage", "input": str(args.input or f"{args.size} x264 veryfast"),
        "frames": args.frames, "warmup": args.warmup,
        "machine": {"cpus": os.cpu_count(), "cpu": platform.processor() or platform.machine(),
                    "loadavg_at_end": os.getloadavg()},
        "rows": results,
    }  # fmt: skip
    args.out.mkdir(parents=True, exist_ok=True)
    out = args.out / f"{time.strftime('%Y-%m-%d')}_{os.cpu_count()}c_nvdec-stages_{args.size}.json"
    out.write_text(json.dumps(document, indent=1) + "\n")
    print(_table(results))
    print(f"saved {out}")


if __name__ == "__main__":
    main()
