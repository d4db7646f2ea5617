"""Where render -> nvJPEG -> file stops on an NVIDIA GPU: frames/s and per-stage times of each variant.

    source .gpu/boot.sh && python3 benchmarks/gpu_ceiling.py                  # about 2-4 minutes on an H200
    python3 benchmarks/gpu_ceiling.py --only pipe:recorder,pipe:phased-b8 --frames 300

Every variant runs in a fresh process at 1920x1080 (``--size``), scene plasma
(``--scene``), ``--frames`` frames after a warm-up, and reports frames/s and, per
stage, milliseconds per frame: GPU time of the GL stages from GL timer queries
(``gl:render``, ``gl:pack``, ``gl:write`` = the shared handoff's copy into CUDA
memory), wall time of the calls on the CPU (``cpu:submit`` = handoff incl. fence
waits, ``cpu:encode`` = nvImageCodec's encode call, ``cpu:copy`` = bitstream to
bytes, ``cpu:mux``, ``cpu:gate`` = waiting for the consumer in phased variants) and,
for the register handoff, CUDA events around its copies (``cuda:copy``).

The variants isolate one suspect each (see ``VARIANTS``): the GL side alone, nvJPEG
alone (batch sizes, backend, stream, bitstream copies, muxer), and the whole chain
as the Recorder builds it and restructured: frames per fence, phased GL/CUDA turns
(one switch per batch), frames in flight, one thread vs two, muxer on/off, and
several processes at once. The summary compares the chain with the serial bound
1 / (1/GL alone + 1/nvJPEG alone): far below it, the time goes to neither stage but
to how they meet (synchronisation, GL<->CUDA switching).

Results: a table on stdout and JSON in ``--json`` or ``$OUT/gpu_ceiling.json``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

# name: (what it isolates, runner, keyword arguments)
Runner = Callable[..., dict[str, Any]]
VARIANTS: dict[str, tuple[str, str, dict[str, Any]]] = {}


def variant(name: str, what: str, runner: str, **kwargs: Any) -> None:
    VARIANTS[name] = (what, runner, kwargs)


variant("gl:render", "GL alone: the scene, a fence per frame", "gl_side", stages=("render",))
variant("gl:render+pack", "GL alone: + RGB pack stage", "gl_side", stages=("render", "pack"))
variant("gl:shared", "GL alone: + shared handoff (batch 1, depth 3), frames released at once", "gl_side",
        stages=("render", "pack", "shared"))  # fmt: skip
variant("gl:shared-b8", "GL alone: shared handoff, one fence per 8 frames", "gl_side",
        stages=("render", "pack", "shared"), batch=8, depth=2)  # fmt: skip
variant("gl:register-b16", "GL alone: register handoff, map/unmap per 16 frames", "gl_side",
        stages=("render", "pack", "register"))  # fmt: skip
variant("nvjpeg:b1", "nvJPEG alone on frames in CUDA memory, one per call, bytes to host", "nvjpeg_alone")
variant("nvjpeg:b4", "nvJPEG alone, 4 images per call", "nvjpeg_alone", batch=4)
variant("nvjpeg:b8", "nvJPEG alone, 8 images per call", "nvjpeg_alone", batch=8)
variant("nvjpeg:no-copy", "nvJPEG alone, bitstream left in its CodeStream (no bytes copy)", "nvjpeg_alone", copy=False)
variant("nvjpeg:stream", "nvJPEG alone, glrec's CUDA stream passed to encode()", "nvjpeg_alone", stream=True)
variant("nvjpeg:gpu-only", "nvJPEG alone, backend GPU_ONLY", "nvjpeg_alone", backend="GPU_ONLY")
variant("nvjpeg:streams4", "nvJPEG alone, nvImageCodec option :num_cuda_streams=4, 4 per call", "nvjpeg_alone",
        batch=4, options=":num_cuda_streams=4")  # fmt: skip
variant("nvjpeg:mux", "nvJPEG alone + Matroska muxer", "nvjpeg_alone", mux=True)
variant(
    "nvjpeg:vmm", "nvJPEG alone on frames in VMM memory (cuMemCreate, exportable), no GL", "nvjpeg_alone", memory="vmm"
)
variant(
    "nvjpeg:vmm-gl",
    "nvJPEG alone on VMM memory imported as a GL buffer (the shared handoff's pool), GL idle",
    "nvjpeg_alone",
    memory="vmm-gl",
)
variant(
    "nvjpeg:gl-ctx",
    "nvJPEG alone on plain CUDA memory with an idle GL context on the GPU",
    "nvjpeg_alone",
    memory="gl-ctx",
)
variant(
    "nvjpeg:gl-busy",
    "nvJPEG alone on plain CUDA memory while another thread renders GL nonstop",
    "nvjpeg_alone",
    memory="gl-busy",
)
variant(
    "nvjpeg:gl-turns32",
    "one thread: GL renders 32 frames and waits, then nvJPEG encodes 32 (plain memory)",
    "nvjpeg_alone",
    memory="gl-turns",
)
variant("pipe:recorder", "glrec.Recorder(encoder=nvjpeg) -> .mkv, as users get it", "recorder", batch=None, phased=None)
variant("pipe:recorder-worker", "the Recorder, nvJPEG on the encode worker (no turns: before 2026-12-02)", "recorder",
        batch=None, phased=None, turns=False)  # fmt: skip
variant("pipe:recorder-chunk32", "the Recorder in turns, 32 frames per nvJPEG call", "recorder", batch=None,
        phased=None, chunk=32)  # fmt: skip
variant("pipe:recorder-gl", "glrec.Recorder(encoder=gl) -> .mkv: the GL JPEG encoder, no CUDA", "recorder",
        batch=None, phased=None, encoder="gl")  # fmt: skip
variant("pipe:recorder-turns-nomux", "the Recorder in turns with a sink that drops packets", "recorder",
        batch=None, phased=None, mux=False)  # fmt: skip
variant(
    "pipe:recorder-b1",
    "the Recorder, shared handoff fenced per frame (the default before 2026-12-01)",
    "recorder",
    batch=1,
    phased=False,
)
variant("pipe:recorder-nomux", "the Recorder with a sink that drops packets", "recorder", mux=False)
variant("pipe:recorder-register", "the Recorder with the register handoff", "recorder", handoff="register")
variant("pipe:recorder-b8", "the Recorder, shared handoff fenced per 8 frames", "recorder", batch=8)
variant("pipe:recorder-b8-phased", "the Recorder, per 8 frames, GL and CUDA taking turns", "recorder", batch=8,
        phased=True)  # fmt: skip
variant("pipe:recorder-b32-phased", "the Recorder, per 32 frames, GL and CUDA taking turns", "recorder", batch=32,
        phased=True)  # fmt: skip
variant("pipe:recorder-b64-phased", "the Recorder, per 64 frames, GL and CUDA taking turns", "recorder", batch=64,
        phased=True)  # fmt: skip
variant(
    "nvjpeg:fresh-images",
    "nvJPEG alone, each frame wrapped as an image anew (as_image per call)",
    "nvjpeg_alone",
    fresh=True,
)
variant("pipe:serial", "one thread: render, pack, hand off, encode each frame at once; no muxer", "pipeline",
        threads=False, mux=False)  # fmt: skip
variant("pipe:threads", "two threads (GL | encode), shared batch 1, no muxer", "pipeline", mux=False)
variant("pipe:depth8", "two threads, 8 frames in flight before GL waits", "pipeline", depth=8, mux=False)
variant("pipe:b8", "two threads, fenced per 8 frames", "pipeline", batch=8, depth=2, mux=False)
variant("pipe:phased-b8", "two threads, GL and CUDA taking turns per 8 frames", "pipeline", batch=8, phased=True,
        mux=False)  # fmt: skip
variant("pipe:phased-b32", "two threads, turns per 32 frames", "pipeline", batch=32, phased=True, mux=False)
variant("pipe:phased-b8-nvjpeg8", "turns per 8 frames, 8 images per nvJPEG call", "pipeline", batch=8, phased=True,
        mux=False, nvjpeg_batch=8)  # fmt: skip
for _n in (1, 2, 4, 8):
    variant(f"procs:{_n}x-recorder", f"{_n} processes of pipe:recorder at once (total frames/s)", "processes",
            inner="pipe:recorder", count=_n)  # fmt: skip
    variant(f"procs:{_n}x-recorder-gl", f"{_n} processes of pipe:recorder-gl at once (total frames/s)", "processes",
            inner="pipe:recorder-gl", count=_n)  # fmt: skip
variant("procs:4x-recorder-b8-phased", "4 processes of pipe:recorder-b8-phased at once", "processes",
        inner="pipe:recorder-b8-phased", count=4)  # fmt: skip
variant("pipe:recorder-gpulock", "the Recorder with gpu_lock=True: each GL + nvJPEG turn inside the GPU's lock",
        "recorder", batch=None, phased=None, gpu_lock=True)  # fmt: skip
variant("pipe:recorder-gpulock-b64", "the Recorder with gpu_lock=True, turns of 64 frames", "recorder", batch=64,
        phased=True, gpu_lock=True)  # fmt: skip
for _n in (1, 2, 4, 8):
    variant(f"procs:{_n}x-recorder-gpulock", f"{_n} processes of pipe:recorder-gpulock at once", "processes",
            inner="pipe:recorder-gpulock", count=_n)  # fmt: skip
    variant(f"procs:{_n}x-recorder-gpulock-b64", f"{_n} processes of pipe:recorder-gpulock-b64 at once", "processes",
            inner="pipe:recorder-gpulock-b64", count=_n)  # fmt: skip
    variant(f"procs:{_n}x-nvjpeg", f"{_n} processes of nvjpeg:b1 at once (CUDA only, no GL)", "processes",
            inner="nvjpeg:b1", count=_n)  # fmt: skip
    variant(f"procs:{_n}x-gl", f"{_n} processes of gl:render+pack at once (GL only, no CUDA)", "processes",
            inner="gl:render+pack", count=_n)  # fmt: skip


# -- measuring ---------------------------------------------------------------------------------


class Clocks:
    """Per-stage seconds: GL timer queries (GPU time) and wall clocks, summed over the timed frames."""

    def __init__(self, ctx: Any) -> None:
        from glrec.bench.meter import GLStageTimer, StageClock

        self.clock = StageClock()
        self.gl = GLStageTimer(ctx, self.clock, "query", depth=64) if ctx is not None else None

    def gpu(self, name: str) -> Any:
        assert self.gl is not None
        return self.gl.stage(f"gl:{name}")

    def wall(self, name: str) -> Any:
        return self.clock.wall(f"cpu:{name}")

    def result(self, frames: int) -> dict[str, float]:
        if self.gl is not None:
            self.gl.close()
        return {k: round(v, 4) for k, v in sorted(self.clock.per_frame_ms(frames).items())}


class NullSink:
    """A sink that counts packets and drops them (the muxer switched off)."""

    def __init__(self, path: str = "null") -> None:
        self.path = path
        self.packets = 0
        self.bytes_written = 0

    def write(self, packets: list[Any]) -> None:
        self.packets += len(packets)
        self.bytes_written += sum(len(p.data) for p in packets)

    def close(self) -> None:
        pass


def _gl_stages(stack: ExitStack, args: argparse.Namespace) -> tuple[Any, Any, Any, Any, Any]:
    """CUDA device, GL context on it, render target, scene and RGB pack stage, released by ``stack``."""
    from glrec.convert import RgbPacker
    from glrec.cuda.driver import CudaDevice
    from glrec.gl.context import create_cuda_context
    from glrec.gl.target import RenderTarget
    from glrec.scenes import load_scene

    device = CudaDevice.open(0)
    stack.callback(device.release)
    gl = create_cuda_context(0, device.info.pci_bus_id)
    stack.enter_context(gl)  # current from here on, released (after everything made in it) with the stack
    ctx = gl.mgl
    target = RenderTarget(ctx, args.size)
    stack.callback(target.release)
    scene = load_scene(args.scene)
    scene.setup(ctx, args.size)
    stack.callback(scene.close)
    packer = RgbPacker(ctx, args.size, "rgb24")
    stack.callback(packer.release)
    return device, gl, target, scene, packer


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


def _options(args: argparse.Namespace) -> Any:
    from glrec.options import VideoOptions

    return VideoOptions.create(args.size, 60, codec="mjpeg", encoder="nvjpeg")


def gl_side(args: argparse.Namespace, stages: tuple[str, ...], batch: int = 1, depth: int = 3) -> dict[str, Any]:
    from glrec.gl.fences import Fence

    with ExitStack() as stack:
        device, gl, target, scene, packer = _gl_stages(stack, args)
        ctx = gl.mgl
        handoff = None
        if "shared" in stages:
            from glrec.interop.shared import SharedHandoff

            handoff = SharedHandoff(ctx, packer, device, depth=depth, batch=batch, slots=(depth + 2) * batch + 4)
        elif "register" in stages:
            from glrec.interop.register import RegisterHandoff

            handoff = RegisterHandoff(packer, device, batch=16, pool_size=40)
        if handoff is not None:
            stack.callback(handoff.release)
        fences: list[Any] = []

        def frame(i: int, clocks: Clocks | None) -> None:
            with clocks.gpu("render") if clocks else _nothing():
                target.use()
                scene.render(i / 60)
            if "pack" in stages:
                with clocks.gpu("pack") if clocks else _nothing():
                    packer.run(target.colour)
            if handoff is None:
                fences.append(Fence())
                if len(fences) > 3:
                    fences.pop(0).wait()
                return
            timer = _nothing() if clocks is None else clocks.wall("submit")
            if clocks is not None and "shared" in stages:
                timer = _both(clocks, "submit", "write")
            with timer:
                done = handoff.submit(i)
            for f in done:
                f.synchronize()
                f.release()

        def finish() -> None:
            for f in handoff.drain() if handoff is not None else []:
                f.synchronize()
                f.release()
            while fences:
                fences.pop(0).wait()

        return _timed_loop(args, ctx, frame, finish)


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: Any) -> None:
        return None


def _timed_loop(args: argparse.Namespace, ctx: Any, frame: Callable[[int, Clocks | None], None],
                finish: Callable[[], None]) -> dict[str, Any]:  # fmt: skip
    """Warm up, then a clean timed run (frames/s), then a profiled run (stage times)."""
    for i in range(args.warmup):
        frame(i, None)
    finish()
    _wait_for_start()  # several processes: every one starts its timed frames at once
    w0, t0, c0 = time.time(), time.perf_counter(), time.process_time()
    for i in range(args.frames):
        frame(i, None)
    finish()
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    clocks = Clocks(ctx)
    t1 = time.perf_counter()
    for i in range(args.frames):
        frame(i, clocks)
    finish()
    profiled = time.perf_counter() - t1
    return {"fps": args.frames / seconds, "cpu_ms_per_frame": 1e3 * cpu / args.frames, "wall": (w0, w0 + seconds),
            "fps_profiled": args.frames / profiled, "stages_ms": clocks.result(args.frames)}  # fmt: skip


def _device_frames(args: argparse.Namespace, device: Any, count: int, stack: ExitStack | None = None,
                   memory: str = "plain") -> tuple[Any, list[Any]]:  # fmt: skip
    """``count`` distinct rendered frames packed to RGB, uploaded into a device pool: (pool, slots).

    ``memory``: ``plain`` (cuMemAlloc), ``vmm`` (exportable VMM memory, as the shared handoff allocates),
    ``vmm-gl`` (that memory imported as a GL buffer), ``gl-ctx``/``gl-busy`` (plain memory next to
    an idle / a busy GL context, which ``stack`` keeps alive).
    """
    from glrec.bench.gpu_stages import _rendered_rgb
    from glrec.bench.spec import RowSpec
    from glrec.cuda.driver import call
    from glrec.cuda.pool import DevicePool

    host = _rendered_rgb(RowSpec("x", scene=args.scene, size=args.size, fps=60.0), count)
    nbytes = host[0].data.nbytes
    if memory == "plain" or stack is None:
        pool = DevicePool(device, nbytes, len(host))
    else:
        pool = _special_pool(args, device, nbytes, len(host), stack, memory)
    device.bind()
    for slot, f in enumerate(host):
        data = f.data if f.data.flags.c_contiguous else f.data.copy()
        call("cuMemcpyHtoD", pool.address(slot), data.ctypes.data, data.nbytes)
    return pool, list(range(len(host)))


_TURNS: dict[str, Callable[[int], None]] = {}


def _special_pool(args: argparse.Namespace, device: Any, nbytes: int, count: int, stack: ExitStack,
                  memory: str) -> Any:  # fmt: skip
    import threading

    from glrec.cuda.pool import DevicePool
    from glrec.cuda.vmm import SharedBuffer
    from glrec.gl.context import create_cuda_context

    stride = (nbytes + 255) // 256 * 256
    if memory == "vmm":
        shared = SharedBuffer(None, device, stride * count)
        stack.callback(shared.release)
        return DevicePool(device, nbytes, count, base=shared.address, stride=stride)
    if memory == "gl-busy":
        stop = threading.Event()

        def render() -> None:
            from glrec.gl.fences import Fence
            from glrec.gl.target import RenderTarget
            from glrec.scenes import load_scene

            with create_cuda_context(0, device.info.pci_bus_id) as gl:
                target = RenderTarget(gl.mgl, args.size)
                scene = load_scene(args.scene)
                scene.setup(gl.mgl, args.size)
                i = 0
                while not stop.is_set():
                    target.use()
                    scene.render(i / 60)
                    Fence().wait()
                    i += 1
                scene.close()
                target.release()

        thread = threading.Thread(target=render, daemon=True)
        thread.start()
        stack.callback(thread.join)
        stack.callback(stop.set)
        return DevicePool(device, nbytes, count)
    gl = create_cuda_context(0, device.info.pci_bus_id)
    stack.enter_context(gl)
    if memory == "gl-turns":
        from glrec.gl.fences import Fence
        from glrec.gl.target import RenderTarget
        from glrec.scenes import load_scene

        target = RenderTarget(gl.mgl, args.size)
        stack.callback(target.release)
        scene = load_scene(args.scene)
        scene.setup(gl.mgl, args.size)
        stack.callback(scene.close)

        def render(frames: int) -> None:
            for i in range(frames):
                target.use()
                scene.render(i / 60)
            Fence().wait()

        _TURNS["render"] = render
    if memory in ("gl-ctx", "gl-turns"):
        return DevicePool(device, nbytes, count)
    shared = SharedBuffer(gl.mgl, device, stride * count)
    stack.callback(shared.release)
    return DevicePool(device, nbytes, count, base=shared.address, stride=stride)


def nvjpeg_alone(
    args: argparse.Namespace, batch: int = 1, copy: bool = True, stream: bool = False, mux: bool = False,
    backend: str | None = None, options: str | None = None, memory: str = "plain", fresh: bool = False,
) -> dict[str, Any]:  # fmt: skip
    from glrec.convert import PlaneLayout
    from glrec.cuda.driver import CudaDevice
    from glrec.cuda.pool import DeviceFrame
    from glrec.encoders.nvjpeg.encoder import _params, load_nvimgcodec
    from glrec.frame import Packet
    from glrec.sinks import open_sink

    nvimgcodec = load_nvimgcodec()
    device = CudaDevice.open(0)
    stack = ExitStack()
    try:
        pool, slots = _device_frames(args, device, 16, stack, memory)
        kwargs: dict[str, Any] = {"device_id": 0}
        if backend:
            kwargs["backends"] = [nvimgcodec.Backend(getattr(nvimgcodec.BackendKind, backend))]
        if options:
            kwargs["options"] = options
        encoder = nvimgcodec.Encoder(**kwargs)
        params = _params(nvimgcodec, 90, "420")
        layout = PlaneLayout.for_format("rgb24", *args.size)
        frames = [DeviceFrame(s, layout, pool, s, pending=False) for s in slots]  # kept alive with the images
        images = [nvimgcodec.as_image(f) for f in frames]
        extra = {"cuda_stream": device.stream_handle} if stream else {}
        with tempfile.TemporaryDirectory() as tmp:
            sink = open_sink(Path(tmp) / "n.mkv", _options(args)) if mux else NullSink()
            index = 0

            def frame(i: int, clocks: Clocks | None) -> None:
                nonlocal index
                if i % batch:
                    return
                if "render" in _TURNS and i % 32 == 0:
                    with clocks.wall("render") if clocks else _nothing():
                        _TURNS["render"](32)
                chunk = [images[(i + k) % len(images)] for k in range(batch)]
                if fresh:
                    chunk = [nvimgcodec.as_image(frames[(i + k) % len(frames)]) for k in range(batch)]
                with clocks.wall("encode") if clocks else _nothing():
                    streams = encoder.encode(chunk, "jpeg", params=params, **extra)
                with clocks.wall("copy") if clocks else _nothing():
                    data = [bytes(memoryview(s)) if copy else s for s in streams]
                if mux:
                    with clocks.wall("mux") if clocks else _nothing():
                        packets = [Packet(d, index + k, index + k, True) for k, d in enumerate(data)]
                        sink.write(packets)
                index += batch

            result = _timed_loop(args, None, frame, lambda: None)
            sink.close()
        pool.release()
        return result
    finally:
        stack.close()
        device.release()


def recorder(args: argparse.Namespace, mux: bool = True, handoff: str = "shared", batch: int | None = 1,
             phased: bool | None = False, encoder: str = "nvjpeg", turns: bool | None = None,
             chunk: int | None = None, gpu_lock: bool = False) -> dict[str, Any]:  # fmt: skip
    import glrec
    from glrec.interop import handoff as handoffs
    from glrec.pipeline import turns as turns_module
    from glrec.scenes import load_scene

    # The shared handoff's batch and phasing fixed (None: glrec's defaults, as users get them); likewise GL/CUDA
    # turns on the GL thread and the frames per encode call in them.
    handoffs.SHARED_BATCH, handoffs.SHARED_PHASED = batch, phased
    turns_module.TURNS, turns_module.CHUNK = turns, chunk
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for run in ("warmup", "clean", "profiled"):
            frames = args.warmup if run == "warmup" else args.frames
            kw: dict[str, Any] = {} if mux else {"sink": NullSink()}
            if encoder != "gl":
                kw["handoff"] = handoff
            if gpu_lock:
                kw["gpu_lock"] = True
            rec = glrec.Recorder(Path(tmp) / f"{run}.mkv", size=args.size, fps=60, encoder=encoder, codec="mjpeg",
                                 overwrite=True, **kw)  # fmt: skip
            if run == "clean":
                _wait_for_start()  # several processes: every one starts its timed frames at once
            with rec:
                with rec.ctx:  # glrec's context current for the script's own GL objects; ends before close
                    clocks = Clocks(rec.ctx) if run == "profiled" else None
                    scene = load_scene(args.scene)
                    scene.setup(rec.ctx, args.size)
                    if clocks is not None:
                        rec.time_stages(_recorder_timers(clocks))
                    w0, t0, c0 = time.time(), time.perf_counter(), time.process_time()
                    for _ in range(frames):
                        with rec.frame(), clocks.gpu("render") if clocks else _nothing():
                            scene.render(rec.time)
                    stages = clocks.result(frames) if clocks else {}  # the GL queries, read while current
                    scene.close()
                t1 = time.perf_counter()
                result = rec.close()
                seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
            if result.frames != frames:
                raise RuntimeError(f"the recorder wrote {result.frames} of {frames} frames")
            if run == "clean":
                # fps: first frame to the file finished, as users get it; loop_fps leaves out close (the trailer,
                # the last batch's encode), a fixed cost per recording, not per frame.
                out.update(fps=frames / seconds, loop_fps=frames / (t1 - t0), close_ms=1e3 * (t0 + seconds - t1),
                           cpu_ms_per_frame=1e3 * cpu / frames, plan=rec.plan.describe(), wall=(w0, w0 + seconds),
                           gpu_memory_mib=round(rec._session.device_bytes / 2**20, 1))  # fmt: skip
            elif run == "profiled":
                out.update(fps_profiled=frames / seconds, stages_ms=stages)
    return out


def _recorder_timers(c: Clocks) -> dict[str, Callable[[], Any]]:
    # The handoff by the wall clock only: its last frames are drained inside close(), after the GL queries
    # have been read (the hand-built variants time the copy's GPU work as gl:write).
    return {"convert": lambda: c.gpu("pack"), "handoff": lambda: c.wall("submit"),
            "encode": lambda: c.wall("encode"), "mux": lambda: c.wall("mux")}  # fmt: skip


@contextlib.contextmanager
def _both(clocks: Clocks, wall: str, gpu: str) -> Iterator[None]:
    """Wall time of a call and the GPU time of the GL commands it issues."""
    with clocks.wall(wall), clocks.gpu(gpu):
        yield


def pipeline(args: argparse.Namespace, threads: bool = True, mux: bool = True, batch: int = 1, depth: int = 3,
             phased: bool = False, nvjpeg_batch: int = 1) -> dict[str, Any]:  # fmt: skip
    from glrec.encoders.nvjpeg.encoder import NvJpegEncoder
    from glrec.interop.shared import SharedHandoff
    from glrec.pipeline.timing import timed
    from glrec.pipeline.worker import EncodeWorker
    from glrec.sinks import open_sink

    with ExitStack() as stack, tempfile.TemporaryDirectory() as tmp:
        device, gl, target, scene, packer = _gl_stages(stack, args)
        ctx = gl.mgl
        queue = max(8, 2 * batch)
        handoff = SharedHandoff(ctx, packer, device, depth=depth, batch=batch, phased=phased,
                                slots=(depth + 1) * batch + queue + nvjpeg_batch + 4)  # fmt: skip
        stack.callback(handoff.release)
        state: dict[str, Any] = {}

        def start(clocks: Clocks | None) -> None:
            asked = _options(args).request(device=device)
            encoder = Batched(NvJpegEncoder(asked.facts, asked.options, device), nvjpeg_batch)
            sink = open_sink(Path(tmp) / f"p{len(state)}.mkv", asked.facts) if mux else NullSink()
            timers = {"encode": lambda: clocks.wall("encode"), "mux": lambda: clocks.wall("mux")} if clocks else {}
            if threads:
                worker = EncodeWorker(encoder, sink, queue)
                worker.time_stages(timers)
                state["put"], state["end"] = worker.put, worker.finish
            else:
                enc, snk = timed("encode", encoder, timers), timed("mux", sink, timers)

                def put(f: Any) -> None:
                    snk.write(enc.encode(f))

                def end() -> None:
                    snk.write(enc.flush())
                    snk.close()
                    enc.close()

                state["put"], state["end"] = put, end

        def frame(i: int, clocks: Clocks | None) -> None:
            if "put" not in state:  # a new encoder (and worker) for each run of _timed_loop
                start(clocks)
            with clocks.wall("gate") if clocks else _nothing():
                handoff.before_frame()
            with clocks.gpu("render") if clocks else _nothing():
                target.use()
                scene.render(i / 60)
            with clocks.gpu("pack") if clocks else _nothing():
                packer.run(target.colour)
            with _both(clocks, "submit", "write") if clocks else _nothing():
                done = handoff.submit(i)
            for f in done:
                state["put"](f)

        def finish() -> None:
            for f in handoff.drain():
                state["put"](f)
            state.pop("end")()
            state.pop("put")

        return _timed_loop(args, ctx, frame, finish)


_START_AT = "GLREC_BENCH_START_AT"


def _wait_for_start() -> None:
    """Sleep until the wall time the parent of several processes set for their timed frames to begin."""
    at = os.environ.get(_START_AT)
    if at:
        time.sleep(max(0.0, float(at) - time.time()))


def processes(args: argparse.Namespace, inner: str, count: int) -> dict[str, Any]:
    """``count`` processes of ``inner`` whose timed recordings start at one wall time (after each one's set-up and
    warm-up): total frames over the span from the first start to the last finish, and the GPU's utilisation
    sampled by nvidia-smi meanwhile."""
    cmd = _child_command(inner, args)
    started = time.perf_counter()
    env = {**os.environ, _START_AT: str(time.time() + 6.0 + 0.5 * count)}
    smi = _utilisation_sampler()
    procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
             for _ in range(count)]  # fmt: skip
    results = []
    for p in procs:
        out, err = p.communicate(timeout=args.timeout)
        results.append(_parse(out, err, p.returncode))
    samples = _stop_sampler(smi)
    failed = [r["reason"] for r in results if r.get("status") != "ok"]
    if failed:
        raise RuntimeError(failed[0])
    begin, end = min(r["wall"][0] for r in results), max(r["wall"][1] for r in results)
    inside = [u for t, u in samples if begin <= t <= end]
    return {"fps": count * args.frames / (end - begin), "fps_each": [r["fps"] for r in results],
            "span_seconds": end - begin, "wall_seconds": time.perf_counter() - started,
            "gpu_utilisation_pct": round(sum(inside) / len(inside), 1) if inside else None,
            "note": f"{count} x {args.frames} frames, first start to last finish"}  # fmt: skip


def _utilisation_sampler() -> Any:
    try:
        query = ["nvidia-smi", "--query-gpu=timestamp,utilization.gpu", "--format=csv,noheader,nounits", "-lms", "100"]
        return subprocess.Popen(query, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    except OSError:
        return None


def _stop_sampler(smi: Any) -> list[tuple[float, float]]:
    """(wall time, utilisation %) samples of the sampler, stopped."""
    import datetime

    if smi is None:
        return []
    smi.terminate()
    out, _ = smi.communicate()
    samples = []
    for line in out.splitlines():
        try:
            stamp, util = (x.strip() for x in line.split(","))
            t = datetime.datetime.strptime(stamp, "%Y/%m/%d %H:%M:%S.%f").timestamp()
            samples.append((t, float(util)))
        except ValueError:
            continue
    return samples


# -- driver ------------------------------------------------------------------------------------


def _child_command(name: str, args: argparse.Namespace) -> list[str]:
    return [sys.executable, str(Path(__file__).resolve()), "--child", name, "--size", f"{args.size[0]}x{args.size[1]}",
            "--scene", args.scene, "--frames", str(args.frames), "--warmup", str(args.warmup)]  # fmt: skip


def _parse(out: str, err: str, code: int) -> dict[str, Any]:
    line = next((x for x in out.splitlines() if x.startswith("RESULT ")), None)
    if code != 0 or line is None:
        tail = (err or out).strip().splitlines()[-6:]
        return {"status": "failed", "reason": f"exit {code}: " + " | ".join(tail)}
    return {"status": "ok", **json.loads(line[len("RESULT ") :])}


def _child(name: str, args: argparse.Namespace) -> int:
    _, runner, kwargs = VARIANTS[name]
    result = globals()[runner](args, **kwargs)
    print("RESULT " + json.dumps(result))
    return 0


def _machine() -> dict[str, Any]:
    info: dict[str, Any] = {"cores": len(os.sched_getaffinity(0))}
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,clocks.sm,clocks.max.sm",
                              "--format=csv,noheader"], capture_output=True, text=True, timeout=20).stdout  # fmt: skip
        info["gpu"] = out.strip()
    except (OSError, subprocess.SubprocessError) as exc:
        info["gpu"] = f"nvidia-smi failed: {exc}"
    return info


def _summary(results: dict[str, dict[str, Any]]) -> list[str]:
    def fps(name: str) -> float | None:
        r = results.get(name, {})
        return r.get("fps") if r.get("status") == "ok" else None

    lines = []
    gl_alone, jpeg_alone, chain = fps("gl:shared"), fps("nvjpeg:b1"), fps("pipe:recorder")
    if gl_alone and jpeg_alone:
        serial = 1 / (1 / gl_alone + 1 / jpeg_alone)
        lines.append(f"GL side alone {gl_alone:.0f} fps, nvJPEG alone {jpeg_alone:.0f} fps: one after the other "
                     f"{serial:.0f} fps; with perfect overlap {min(gl_alone, jpeg_alone):.0f} fps")  # fmt: skip
        if chain:
            lines.append(f"the Recorder: {chain:.0f} fps = {chain / serial:.2f} of the serial bound; "
                         f"{1e3 / chain - 1e3 / serial:.2f} ms per frame go to neither stage")  # fmt: skip
    ok = {n: r["fps"] for n, r in results.items() if r.get("status") == "ok" and n.startswith("pipe:")}
    if ok:
        best = max(ok, key=lambda n: ok[n])
        lines.append(f"fastest chain: {best} {ok[best]:.0f} fps ({VARIANTS[best][0]})")
    return lines


def main() -> int:
    from glrec.bench.config import parse_list
    from glrec.options import parse_size

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", type=parse_size, default=(1920, 1080))
    ap.add_argument("--scene", default="plasma")
    ap.add_argument("--frames", type=int, default=600, help="timed frames per run (default 600)")
    ap.add_argument("--warmup", type=int, default=60)
    ap.add_argument("--only", type=parse_list, help="comma-separated variants (default all)")
    ap.add_argument("--timeout", type=float, default=90.0, help="seconds one variant may take (default 90)")
    ap.add_argument("--json", type=Path, help="write results here (default $OUT/gpu_ceiling.json)")
    ap.add_argument("--list", action="store_true", help="list the variants and exit")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return _child(args.child, args)
    if args.list:
        for name, (what, *_) in VARIANTS.items():
            print(f"{name:28} {what}")
        return 0
    names = list(args.only or VARIANTS)
    unknown = [n for n in names if n not in VARIANTS]
    if unknown:
        print(f"unknown variant(s) {unknown}; --list shows them", file=sys.stderr)
        return 2
    started = time.perf_counter()
    results: dict[str, dict[str, Any]] = {}
    for name in names:
        if VARIANTS[name][1] == "processes":
            try:
                results[name] = {"status": "ok", **processes(args, **VARIANTS[name][2])}
            except Exception as exc:
                results[name] = {"status": "failed", "reason": f"{type(exc).__name__}: {exc}"}
        else:
            try:
                p = subprocess.run(_child_command(name, args), capture_output=True, text=True, timeout=args.timeout)
                results[name] = _parse(p.stdout, p.stderr, p.returncode)
            except subprocess.TimeoutExpired:
                results[name] = {"status": "failed", "reason": f"timed out after {args.timeout:g} s"}
        r = results[name]
        what = f"{r['fps']:8.1f} fps" if r["status"] == "ok" else f"FAILED {r['reason'][:150]}"
        print(f"[{time.perf_counter() - started:5.0f} s] {name:28} {what}", file=sys.stderr, flush=True)
    base = results.get("pipe:recorder", {}).get("fps")
    print(f"\n{args.size[0]}x{args.size[1]} {args.scene}, {args.frames} frames per run; stage columns: ms per frame")
    keys = sorted({k for r in results.values() for k in r.get("stages_ms", {})})
    print(f"{'variant':28} {'fps':>8} {'x rec':>6} {'cpu ms/f':>8}  " + "  ".join(f"{k:>10}" for k in keys))
    for name, r in results.items():
        if r["status"] != "ok":
            print(f"{name:28} {'failed':>8}  {r['reason'][:100]}")
            continue
        ratio = f"{r['fps'] / base:6.2f}" if base else "     -"
        cpu = f"{r['cpu_ms_per_frame']:8.3f}" if "cpu_ms_per_frame" in r else "       -"
        stages = r.get("stages_ms", {})
        cells = "  ".join(f"{stages[k]:10.3f}" if k in stages else f"{'':>10}" for k in keys)
        print(f"{name:28} {r['fps']:8.1f} {ratio} {cpu}  {cells}")
    for line in _summary(results):
        print(line)
    doc = {"schema": "glrec-gpu-ceiling/1", "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "machine": _machine(),
           "size": list(args.size), "scene": args.scene, "frames": args.frames, "wall_seconds":
           time.perf_counter() - started, "variants": {n: {"what": VARIANTS[n][0], **r} for n, r in results.items()},
           "summary": _summary(results)}  # fmt: skip
    from results_file import write_results  # here: the tests load this file without benchmarks/ on the path

    write_results(doc, args.json, "gpu_ceiling.json")
    return 0 if all(r["status"] == "ok" for r in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
