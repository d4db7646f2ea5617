"""Handoff overhead per frame at 1920x1080, and render -> nvJPEG -> file throughput.

Run on an NVIDIA machine with CUDA-GL interop (a benchmark, not a test):

    python benchmarks/handoff.py [--frames 600] [--json out.json]

Every handoff variant renders ``plasma`` and converts it to NV12 on the GPU,
hands each frame to CUDA and has the consumer synchronise on it and release
it, as an encoder would. Overhead = (time per frame with the handoff) - (time
per frame of render + convert alone), both measured in this one run, side by
side. Variants: register with batched mapping (8 textures per map call),
register naive (map/copy/unmap per frame), shared (CUDA memory as GL buffer
storage, fenced, no map), and the PBO host readback for comparison.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

SIZE = (1920, 1080)


def _pipeline(kind: str, frames: int, batch: int = 8, pix_fmt: str = "nv12") -> float:
    """Seconds per frame for render + convert (+ the handoff ``kind``, consumer included)."""
    from glrec.colour import ColourSpec
    from glrec.convert import Converter
    from glrec.cuda.driver import CudaDevice
    from glrec.gl.context import create_cuda_context
    from glrec.gl.target import RenderTarget
    from glrec.interop import HostReadback
    from glrec.scenes import load_scene

    dev = CudaDevice.open(0)
    gl = create_cuda_context(0, dev.info.pci_bus_id)
    gl.active().__enter__()  # current for the whole run (glrec's contexts are current only while in use)
    ctx = gl.mgl
    target = RenderTarget(ctx, SIZE)
    scene = load_scene("plasma")
    scene.setup(ctx, SIZE)
    if pix_fmt == "rgb24":
        from glrec.convert.pack import RgbPacker

        conv = RgbPacker(ctx, SIZE, "rgb24")
    else:
        conv = Converter(ctx, SIZE, SIZE, pix_fmt, ColourSpec())
    if kind == "none":
        stage = None
    elif kind == "host":
        stage = HostReadback(ctx, conv, 3)
    elif kind == "shared":
        from glrec.interop.shared import SharedHandoff

        stage = SharedHandoff(ctx, conv, dev, depth=3, slots=8)
    else:
        from glrec.interop.register import RegisterHandoff

        stage = RegisterHandoff(conv, dev, batch=batch, pool_size=2 * batch + 2)

    def consume(done: list) -> None:
        for f in done:
            if hasattr(f, "synchronize"):
                f.synchronize()
                f.release()

    def run(n: int) -> float:
        ctx.finish()
        t0 = time.perf_counter()
        for i in range(n):
            target.use()
            scene.render(i / 60)
            conv.run(target.colour)
            if stage is not None:
                consume(stage.submit(i))
        if stage is not None:
            consume(stage.drain())
        ctx.finish()
        dev.synchronize()
        return (time.perf_counter() - t0) / n

    run(min(60, frames))  # warm-up: shader compilation, first maps, clocks
    per_frame = min(run(frames) for _ in range(3))
    if stage is not None:
        stage.release()
    conv.release()
    scene.close()
    target.release()
    gl.release()
    gl.active().__exit__(None, None, None)
    dev.release()
    return per_frame


class Batched:
    """An encoder fed ``batch`` frames per ``encode_batch`` call: :meth:`encode` queues, :meth:`flush` encodes the rest.

    What the benchmark measures as "``batch`` frames per nvImageCodec call" (the recorder encodes frame by frame).
    """

    def __init__(self, encoder: Any, batch: int) -> None:
        self.encoder, self.batch, self._held = encoder, max(1, batch), []
        self.name, self.codec = encoder.name, encoder.codec

    def encode(self, frame: Any) -> list[Any]:
        self._held.append(frame)
        return self.flush() if len(self._held) >= self.batch else []

    def flush(self) -> list[Any]:
        held, self._held = self._held, []
        return self.encoder.encode_batch(held) + self.encoder.flush()

    def request_keyframe(self) -> None:
        self.encoder.request_keyframe()

    def close(self) -> None:
        for frame in self._held:  # only after a failure: a clean finish flushed them
            frame.release()
        self._held = []
        self.encoder.close()


def _encode_only_fps(frames: int, batch: int) -> float:
    """nvJPEG alone: already-rendered 1080p RGB device frames, encoded ``batch`` per call."""
    import numpy as np

    from glrec.convert import PlaneLayout
    from glrec.cuda.driver import CudaDevice, call
    from glrec.cuda.pool import DeviceFrame, DevicePool
    from glrec.encoders.nvjpeg.encoder import NvJpegEncoder
    from glrec.options import VideoOptions

    dev = CudaDevice.open(0)
    layout = PlaneLayout.for_format("rgb24", *SIZE)
    pool = DevicePool(dev, layout.nbytes, 2 * batch)
    y, x = np.mgrid[0 : SIZE[1], 0 : SIZE[0]]
    img = np.stack([x % 256, y % 256, (x + y) % 256], -1).astype(np.uint8)  # smooth gradients, like plasma
    for slot in range(pool.count):
        call("cuMemcpyHtoD", pool.address(slot), img.ctypes.data, layout.nbytes)
    asked = VideoOptions.create(SIZE, 60, codec="mjpeg").request("nvjpeg", device=dev)
    enc = Batched(NvJpegEncoder(asked.facts, asked.options, dev), batch)

    def run(n: int) -> float:
        t0 = time.perf_counter()
        size = 0
        for i in range(n):
            for p in enc.encode(DeviceFrame(i, layout, pool, pool.acquire(), pending=False)):
                size += len(p.data)
        for p in enc.flush():
            size += len(p.data)
        return n / (time.perf_counter() - t0)

    run(2 * batch)
    fps = run(frames)
    enc.close()
    pool.release()
    dev.release()
    return fps


def _nvjpeg_fps(frames: int, handoff: str, suffix: str) -> float:
    """Frames per second of render -> pack -> handoff -> nvJPEG -> file, setup excluded, finish included."""
    import glrec

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"plasma{suffix}"
        rec = glrec.Recorder(path, size=SIZE, fps=60, encoder="nvjpeg", codec="mjpeg", handoff=handoff)
        for _ in range(30):  # warm-up frames: first maps, encoder buffers, file creation
            rec.render("plasma")
        t0 = time.perf_counter()
        for _ in range(frames):
            rec.render("plasma")
        result = rec.close()
        seconds = time.perf_counter() - t0
        assert result.frames == frames + 30, result
        return frames / seconds


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--frames", type=int, default=600)
    p.add_argument("--json", type=Path)
    args = p.parse_args()
    from glrec.cuda.driver import visible_devices

    gpu = visible_devices()[0].name
    out: dict[str, object] = {"gpu": gpu, "host": platform.node(), "size": "x".join(map(str, SIZE)),
                              "frames": args.frames}  # fmt: skip
    base = _pipeline("none", args.frames)
    out["render_convert_us"] = base * 1e6
    rows = [("register, batched (8 per map)", "register", 8), ("register, batched (16 per map)", "register", 16),
            ("register, naive (map/copy/unmap)", "register", 1),
            ("shared (no map)", "shared", 0), ("host PBO readback (for comparison)", "host", 0)]  # fmt: skip
    print(f"{gpu}, {SIZE[0]}x{SIZE[1]} NV12, plasma, {args.frames} frames, best of 3")
    print(f"  render + convert alone: {base * 1e6:8.1f} us/frame")
    for label, kind, batch in rows:
        t = _pipeline(kind, args.frames, batch or 8)
        key = f"{kind}{batch if kind == 'register' else ''}"
        out[f"{key}_us"] = t * 1e6
        out[f"{key}_overhead_us"] = (t - base) * 1e6
        print(f"  {label:<38} {t * 1e6:8.1f} us/frame, overhead {(t - base) * 1e6:7.1f} us/frame")
    for kind in ("register", "shared"):
        t = _pipeline(kind, args.frames, 8, "rgb24")
        out[f"rgb24_{kind}_fps"] = 1 / t
        print(f"  render + pack RGB + {kind} handoff, no encoder: {1 / t:8.0f} frames/s")
    for batch in (1, 8, 32):
        fps = _encode_only_fps(args.frames, batch)
        out[f"nvjpeg_only_batch{batch}_fps"] = fps
        print(f"  nvJPEG alone (frames already in CUDA memory), {batch:2d} per call: {fps:8.0f} frames/s")
    for handoff in ("register", "shared"):
        for suffix in (".mkv", "_%06d.jpg"):
            fps = _nvjpeg_fps(args.frames, handoff, suffix)
            out[f"nvjpeg_{handoff}_{suffix.strip('_%06d.')}_fps"] = fps
            print(f"  render -> nvJPEG -> {suffix:<10} via {handoff:<8}: {fps:8.0f} frames/s")
    if args.json:
        args.json.write_text(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
