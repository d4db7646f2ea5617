"""Stage-alone rows of the GPU backends that the generic rows cannot cover.

``stage:encode-nvjpeg``: nvJPEG alone (plus the Matroska sink), on frames
that are already in CUDA memory. The frames are the scene's own: rendered and
packed to RGB once beforehand on the host path, then uploaded into a device
pool, one distinct frame per slot; the timed loop hands slots to the encoder
as the recorder's handoff would. As in a recording (where GL and nvJPEG take
turns on the GL thread, :mod:`glrec.pipeline.turns`), the encoder runs on the
calling thread and the packets go to glrec's encode worker, which muxes them
meanwhile; ``mux`` is the worker's time. Without CUDA or nvImageCodec the row
is reported as skipped with the reason.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..errors import EncoderUnavailableError, GlrecError
from ..frame import HostFrame
from ..interop import HostReadback
from ..layout import PlaneLayout
from ..options import VideoOptions
from ..sinks import open_sink
from .common import describe_output, figures, scene_rig
from .meter import LoopMeter, StageClock
from .spec import RowResult, RowSpec, row

#: Device slots (distinct frames) the encode-alone row keeps; nvJPEG releases each after encoding.
POOL_SLOTS = 16


def _rendered_rgb(spec: RowSpec, count: int) -> list[HostFrame]:
    """``count`` frames of the scene packed to top-down RGB, as the nvJPEG backend's pack stage makes them."""
    from ..convert import RgbPacker

    frames: list[HostFrame] = []
    with scene_rig(spec) as rig:
        packer = RgbPacker(rig.ctx, spec.size, "rgb24")
        readback = HostReadback(rig.ctx, packer, 3)
        try:
            for i in range(count):
                rig.render(i, spec.fps)
                packer.run(rig.target.colour)
                frames += readback.submit(i)
            frames += readback.drain()
        finally:
            readback.release()
            packer.release()
    return frames


def _encode_in_turns(encoder: Any, sink: Any, frames: Iterable[Any], clock: StageClock) -> None:
    """Encode ``frames`` here, one call each (the nvJPEG row's turn batch), and mux on glrec's encode worker, as a
    recording's turns do; the worker flushes and closes the encoder and closes the sink, also after a failure."""
    from ..pipeline.worker import Encoded, EncodeWorker

    worker = EncodeWorker(encoder, sink)
    worker.time_stages({"mux": lambda: clock.wall("mux")})
    try:
        for frame in frames:
            with clock.wall("encode"):
                packets = encoder.encode(frame)
            worker.put(Encoded(packets, 1))
    finally:
        worker.finish()


@row("stage:encode-nvjpeg")
def nvjpeg_alone(spec: RowSpec) -> RowResult:
    from ..cuda.driver import CudaDevice, call
    from ..cuda.pool import DeviceFrame, DevicePool
    from ..encoders.nvjpeg.encoder import NvJpegEncoder

    options = VideoOptions.create(spec.size, spec.fps, codec="mjpeg", encoder="nvjpeg")
    try:
        device = CudaDevice.open(0)
    except (GlrecError, ImportError) as exc:
        raise EncoderUnavailableError(f"stage:encode-nvjpeg needs CUDA: {exc}") from exc
    try:
        asked = options.request("nvjpeg", device=device)
        encoder = NvJpegEncoder(asked.facts, asked.options, device)
        host = _rendered_rgb(spec, min(POOL_SLOTS, spec.frames))
        pool = DevicePool(device, host[0].data.nbytes, len(host))
        for slot, f in enumerate(host):
            data = f.data if f.data.flags.c_contiguous else f.data.copy()
            call("cuMemcpyHtoD", pool.address(slot), data.ctypes.data, data.nbytes)
        planes = PlaneLayout.for_format("rgb24", *spec.size)
        clock, meter = StageClock(), LoopMeter()
        # MJPEG into Matroska: the row times nvJPEG + mux whatever extension the run gave its outputs.
        output = spec.output.with_suffix(".mkv")
        sink = open_sink(output, options.facts, overwrite=True)
        meter.start()
        # Slots come back to the pool as nvJPEG finishes with each frame, as from the handoff.
        device_frames = (DeviceFrame(i, planes, pool, pool.acquire(), pending=False) for i in range(spec.frames))
        _encode_in_turns(encoder, sink, device_frames, clock)
        meter.stop()
        pool.release()
    finally:
        device.release()
    out = figures(spec, meter, clock)
    out["distinct_frames"] = len(host)
    out.update(describe_output(output))
    return out
