"""NVDEC input: NVIDIA's decoder writes pictures into CUDA memory that GL reads in place.

PyAV demuxes (so every input FFmpeg reads works, with the same options and
bounded waits), the packets are put into Annex B where the codec needs it,
and PyNvVideoCodec's low-level decoder (``CreateDecoder`` / ``Decode``)
decodes them into its device surfaces. The worker copies each picture, GPU to
GPU, into a free slot of a pool whose memory GL also sees as one buffer
(:mod:`glrec.cuda.vmm`: the shared handoff in reverse), records the slot's
CUDA event behind the copy and queues the slot without waiting for it, so the
thread goes straight on to the next packet while the GPU copies. On the GL
thread the event is waited for (long done, as a rule: decoding runs pictures
ahead), the planes are unpacked from that buffer into textures (a copy inside
GPU memory, no map, no host round trip) and converted to RGB like any other
picture (:mod:`glrec.sources.video.nvdec_gl`). A slot goes back to the pool once the
GL fence after its unpack has signalled.

Needs an NVIDIA GPU with NVDEC, ``pip install glrec[nvdec]`` (PyNvVideoCodec,
cuda-python) and the driver's ``GL_EXT_memory_object_fd``.
"""

from __future__ import annotations

import functools
import logging
from dataclasses import dataclass
from time import perf_counter
from typing import Any

import av
import moderngl
import numpy as np

from ...errors import ConfigError, CudaError, UnsupportedInputError
from .decode import DecodeWorker, Picture
from .formats import FORMATS, PlaneFormat
from .media import InputSpec, video_stream
from .nvdec_gl import NvdecUploader
from .nvdec_layout import caps_problem, plane_copies

log = logging.getLogger("glrec")

INSTALL_HINT = "pip install glrec[nvdec] (PyNvVideoCodec and cuda-python) on a machine with an NVIDIA GPU"
#: FFmpeg codec name -> PyNvVideoCodec ``cudaVideoCodec`` member.
NV_CODECS = {"h264": "H264", "hevc": "HEVC", "av1": "AV1", "vp9": "VP9", "vp8": "VP8", "mpeg2video": "MPEG2",
             "mpeg1video": "MPEG1", "mpeg4": "MPEG4", "vc1": "VC1", "mjpeg": "JPEG"}  # fmt: skip
# MP4/Matroska carry H.264/HEVC with length prefixes; NVDEC's parser wants start codes.
_ANNEXB = {"h264": "h264_mp4toannexb", "hevc": "hevc_mp4toannexb"}
# Codecs whose stream headers live only in the container's extradata: sent once, before the first packet.
_HEADER_IN_EXTRADATA = {"av1": 4, "mpeg4": 0, "vc1": 0}  # bytes of container framing to skip


def load_nvc() -> Any:
    """PyNvVideoCodec, or an UnsupportedInputError saying how to get it."""
    try:
        import PyNvVideoCodec as nvc
    except (ImportError, RuntimeError, OSError) as exc:  # it raises RuntimeError when a driver library is missing
        raise UnsupportedInputError(f"NVDEC decoding needs PyNvVideoCodec, which did not load ({exc}); "
                                    f"{INSTALL_HINT}, or use decoder='cpu'.") from None  # fmt: skip
    return nvc


@dataclass
class NvPicture:
    """A decoded picture in a pool slot: planes back to back, rows ``line_size`` bytes apart.

    ``ready`` is the CUDA event recorded after the copy that filled the slot; nothing may read the
    slot before it has completed (:meth:`NvdecWorker.wait_ready`).
    """

    slot: int
    fmt: PlaneFormat
    planes: list[Any]  # _Plane per texture
    offsets: list[int]  # bytes from the pool's base
    width: int
    height: int
    colorspace: int
    color_range: int
    ready: Any = None


@dataclass
class StageTimes:
    """Seconds the decode thread spent per stage, summed over the pictures it queued (for the benchmarks)."""

    demux: float = 0.0  # PyAV reading packets, and the Annex B bitstream filter
    decode: float = 0.0  # PyNvVideoCodec's Decode: parsing, NVDEC, its copy out of the decoder surface
    copy: float = 0.0  # queuing glrec's copies into the pool slot (the GPU runs them later)
    wait: float = 0.0  # waiting for room in the queue or a free slot: the consumer was behind
    pictures: int = 0


@dataclass(frozen=True)
class _Plane:
    width: int  # texels
    height: int
    line_size: int  # bytes


def _nv_format(name: str, bits: int) -> PlaneFormat:
    """Our plane format for a PyNvVideoCodec output surface format (NV12, P016, YUV444, ...)."""
    if name == "NV12":
        return FORMATS["nv12"]
    if name == "NV16":
        return FORMATS["nv16"]
    if name == "YUV444":
        return FORMATS["yuv444p"]
    msb = {"P016": ((1, 2, 1, 1), (2, 2, 2, 2)), "P216": ((1, 2, 1, 1), (2, 2, 2, 1))}
    if name in msb:
        return PlaneFormat(f"{name.lower()}-{bits}", msb[name], ((0, 0), (1, 0), (1, 1), None), bits=bits, msb=True)
    if name == "YUV444_16Bit":
        return PlaneFormat(f"yuv444-16-{bits}", ((1, 2, 1, 1),) * 3, ((0, 0), (1, 0), (2, 0), None), bits=bits,
                           msb=True)  # fmt: skip
    raise UnsupportedInputError(f"NVDEC returned surfaces in {name}, which glrec has no layout for; use decoder='cpu'.")


class NvdecWorker(DecodeWorker):
    """Demux with PyAV and decode with NVDEC on a thread; pictures are :class:`NvPicture` slots."""

    def __init__(self, spec: InputSpec, container: Any, *, depth: int = 4, retries: int = 3, cuda_device: int = 0,
                 live: bool | None = None, chroma_filter: str = "nearest") -> None:  # fmt: skip
        super().__init__(spec, container, depth=depth, retries=retries, live=live)
        if chroma_filter not in ("nearest", "linear"):
            raise ConfigError(f"Unknown chroma_filter {chroma_filter!r}. Valid: linear, nearest.")
        self.chroma_filter = chroma_filter
        self.times = StageTimes()
        #: Seconds each step of making the worker took (import, cuda, caps, pool, decoder): for the benchmarks.
        self.startup: dict[str, float] = {}
        from ...cuda.driver import CudaDevice
        from ...cuda.pool import DevicePool
        from ...cuda.vmm import SharedBuffer

        step = perf_counter()
        self.nvc = load_nvc()
        step = self._step("import", step)
        stream = video_stream(container, spec)
        ctx = stream.codec_context
        codec = ctx.codec.canonical_name  # the codec, not FFmpeg's decoder for it (libdav1d decodes av1)
        if codec not in NV_CODECS:
            raise UnsupportedInputError(
                f"{spec.label!r} is {codec}, which NVDEC does not decode; NVDEC takes "
                f"{', '.join(sorted(NV_CODECS))}. Use decoder='cpu'."
            )
        self.codec = codec
        self.width, self.height = ctx.width, ctx.height
        self.bits = max((c.bits for c in ctx.format.components), default=8) if ctx.format else 8
        self.colorspace, self.color_range = int(ctx.colorspace or 2), int(ctx.color_range or 0)
        self.device = CudaDevice.open(cuda_device)
        step = self._step("cuda", step)
        self._counted = False
        self._packets_in = 0
        self._memory: Any = None
        self.pool: Any = None
        try:
            self._check_caps(ctx)
            step = self._step("caps", step)
            # Worst case per slot: 4:4:4 at 16 bits, each plane 256-byte aligned for GL's buffer offsets.
            self.slot_bytes = (self.width * self.height * 6 + 4 * 256 + 255) // 256 * 256
            count = self.depth + 4  # queued + the one shown + fences in flight
            # CUDA side now (decoding starts before GL is at hand); the GL buffer comes with the uploader.
            self._memory = SharedBuffer(None, self.device, self.slot_bytes * count)
            self.pool = DevicePool(self.device, self.slot_bytes, count, base=self._memory.address,
                                   stride=self.slot_bytes)  # fmt: skip
            step = self._step("pool", step)
            self.decoder = self.nvc.CreateDecoder(
                gpuid=self.device.ordinal, codec=getattr(self.nvc.cudaVideoCodec, NV_CODECS[codec]),
                cudacontext=self.device.context_handle, cudastream=self.device.stream_handle, usedevicememory=True,
            )  # fmt: skip
            self._step("decoder", step)
        except BaseException:
            self._closed()
            raise

    def _step(self, name: str, since: float) -> float:
        now = perf_counter()
        self.startup[name] = now - since
        return now

    def _check_caps(self, ctx: Any) -> None:
        nvc = self.nvc
        name = ctx.format.name if ctx.format else "yuv420p"
        sub = "Monochrome" if name.startswith("gray") else next((k for k in ("444", "422") if k in name), "420")
        try:
            caps = _decoder_caps(nvc, self.device.ordinal, NV_CODECS[self.codec], sub, self.bits)
        except Exception as exc:  # caps are advice: when the query fails, the decoder has the last word
            log.debug("GetDecoderCaps failed: %s", exc)
            return
        log.debug("NVDEC caps for %s %s %d-bit: %s", self.codec, sub, self.bits, caps)
        problem = caps_problem(caps, f"{self.codec} {sub} at {self.bits} bits", (self.width, self.height))
        if problem is not None:
            raise UnsupportedInputError(f"{problem}; use decoder='cpu'.")

    # -- the GL side -----------------------------------------------------------------------------

    def uploader(self, ctx: moderngl.Context) -> NvdecUploader:
        return NvdecUploader(ctx, self, linear=self.chroma_filter == "linear")

    def wait_ready(self, pic: NvPicture) -> None:
        """Block until the copy that filled ``pic``'s slot has completed (any thread; cheap once it has)."""
        from ...cuda.driver import call

        if pic.ready is not None:
            self.device.bind()
            call("cuEventSynchronize", pic.ready)

    def host_planes(self, pic: NvPicture) -> list[np.ndarray]:
        """Copies of ``pic``'s planes in host memory, ``(rows, texels, components)`` each (tests, diagnostics)."""
        from ...cuda.driver import call

        self.wait_ready(pic)
        out = []
        for plane, offset, (comps, nbytes, _, _) in zip(pic.planes, pic.offsets, pic.fmt.textures, strict=True):
            data = np.empty((plane.height, plane.line_size), np.uint8)
            call("cuMemcpyDtoH", data.ctypes.data, self.pool.base + offset, data.nbytes)
            out.append(data.view(np.uint16 if nbytes == 2 else np.uint8).reshape(plane.height, plane.width, comps))
        return out

    # -- the worker thread -----------------------------------------------------------------------

    def _decode_all(self) -> None:
        container = self._container
        assert container is not None
        stream = video_stream(container, self.spec)
        tb = stream.time_base
        bsf = av.bitstream.BitStreamFilterContext(_ANNEXB[self.codec], stream) if self.codec in _ANNEXB else None
        header = None
        if self.codec in _HEADER_IN_EXTRADATA and stream.codec_context.extradata:
            header = bytes(stream.codec_context.extradata[_HEADER_IN_EXTRADATA[self.codec] :])
        self.device.bind()
        packets = container.demux(stream)
        times = self.times
        while True:
            started = perf_counter()
            packet = next(packets, None)
            if packet is None or self._stop:
                break
            out = bsf.filter(packet if packet.size else None) if bsf is not None else ([packet] if packet.size else [])
            times.demux += perf_counter() - started
            for p in out:
                if header is not None:
                    p = av.Packet(header + bytes(p))  # the stream's headers, once, ahead of its first picture
                    p.pts = packet.pts
                    header = None
                self._decode(p, tb)
        if not self._stop:
            self._decode(None, tb)  # end of stream: the decoder returns the pictures it still holds

    def _decode(self, packet: Any, tb: Any) -> None:
        data = self.nvc.PacketData()
        if packet is not None:
            data.bsl_data = int(packet.buffer_ptr)  # the packet stays alive (referenced here) through Decode
            data.bsl = int(packet.buffer_size)
            if packet.pts is None:
                self._counted = True  # a stream without timestamps: pictures are timed by the frame rate
            data.pts = int(packet.pts) if packet.pts is not None else self._packets_in
            self._packets_in += 1
        else:
            data.bsl_data, data.bsl = 0, 0
            data.decode_flag = self.nvc.VideoPacketFlag.ENDOFSTREAM
        started = perf_counter()
        frames = self.decoder.Decode(data)
        self.times.decode += perf_counter() - started
        for frame in frames:
            if self._stop:
                return
            self._take_frame(frame, tb)

    def _take_frame(self, frame: Any, tb: Any) -> None:
        from ...cuda.driver import call, driver

        started = perf_counter()
        if not self._wait_for_room():
            return
        fmt_name = str(frame.format).rsplit(".", 1)[-1]
        fmt = _nv_format(fmt_name, self.bits)
        slot = self._acquire_slot()
        if slot is None:
            return
        copying = perf_counter()
        self.times.wait += copying - started
        cu = driver()
        base = self.pool.address(slot)
        # The decoder finishes each picture (surface copy, post-processing) on its own stream events:
        # order glrec's stream after them before copying (the API PyNvVideoCodec offers for this).
        if hasattr(self.decoder, "WaitOnCUStream"):
            self.decoder.WaitOnCUStream(self.device.stream_handle)
        offsets, planes, at = [], [], 0
        try:
            cais = [view.__cuda_array_interface__ for view in frame.cuda()]
            for plane in plane_copies(cais, fmt.textures, (self.width, self.height)):
                copy = cu.CUDA_MEMCPY2D()
                copy.srcMemoryType = cu.CUmemorytype.CU_MEMORYTYPE_DEVICE
                copy.srcDevice = plane.src
                copy.srcPitch = plane.pitch
                copy.dstMemoryType = cu.CUmemorytype.CU_MEMORYTYPE_DEVICE
                copy.dstDevice = base + at
                copy.dstPitch = plane.row_bytes
                copy.WidthInBytes = plane.row_bytes
                copy.Height = plane.rows
                call("cuMemcpy2DAsync", copy, self.device.stream)
                offsets.append(base - self.pool.base + at)
                planes.append(_Plane(plane.texels, plane.rows, plane.row_bytes))
                at += (plane.row_bytes * plane.rows + 255) // 256 * 256
        except BaseException:
            self.pool.give_back(slot)
            raise
        # No wait here: the event marks when the slot is complete, and readers wait for it (wait_ready).
        # PyNvVideoCodec refills its own output buffers on this same stream, so they are not
        # overwritten before these copies have read them.
        ready = self.pool.events[slot]
        call("cuEventRecord", ready, self.device.stream)
        width, height = planes[0].width, planes[0].height
        pic = NvPicture(slot, fmt, planes, offsets, width, height, self.colorspace, self.color_range, ready)
        self.times.copy += perf_counter() - copying
        self.times.pictures += 1
        pts = frame.getPTS()
        self._put(pic, float(pts * tb) if tb is not None and not self._counted else None, None)

    def _acquire_slot(self) -> int | None:
        # Live: when every slot is held the picture is dropped rather than waited for.
        while not self._stop:
            try:
                return int(self.pool.acquire(timeout=0.0 if self.live else 0.2))
            except CudaError:
                if self.live:
                    self.dropped += 1
                    return None
        return None

    def _discard(self, pic: Picture) -> None:
        self.pool.give_back(pic.frame.slot)

    def _discard_payload(self, payload: Any) -> None:
        self.pool.give_back(payload.slot)

    def _closed(self) -> None:
        device = getattr(self, "device", None)
        if device is not None:
            try:  # copies still queued read the decoder's buffers and write the pool: let them end first
                device.synchronize()
            except CudaError as exc:
                log.debug("NVDEC: synchronising before release failed: %s", exc)
        decoder = getattr(self, "decoder", None)
        self.decoder = None
        del decoder  # PyNvVideoCodec frees its session when the object goes
        pool, self.pool = self.pool, None
        if pool is not None:
            pool.release()
        memory, self._memory = self._memory, None
        if memory is not None:
            memory.release()
        if device is not None:
            device.release()


@functools.lru_cache(maxsize=64)
def _decoder_caps(nvc: Any, ordinal: int, codec: str, chroma: str, bits: int) -> Any:
    """PyNvVideoCodec's capability answer, asked once per process and stream kind.

    The query makes and destroys a CUDA context of its own (tenths of a second), and a looped or
    rewound input opens a new worker each time; the answer does not change while the process runs.
    """
    return nvc.GetDecoderCaps(gpuid=ordinal, codec=getattr(nvc.cudaVideoCodec, codec),
                              chromaformat=nvc.cudaVideoChromaFormat.__members__[chroma], bitdepth=bits)  # fmt: skip


def nvdec_problem() -> str | None:
    """Why NVDEC input cannot run here (None when it might): PyNvVideoCodec or CUDA missing."""
    try:
        load_nvc()
        from ...cuda.driver import cuda_problem

        return cuda_problem()
    except UnsupportedInputError as exc:
        return str(exc)


__all__ = ["NV_CODECS", "NvPicture", "NvdecUploader", "NvdecWorker", "StageTimes", "nvdec_problem"]
