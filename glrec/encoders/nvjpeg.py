"""nvJPEG encoder through nvImageCodec: one JPEG per frame, straight from CUDA memory.

For GPUs without NVENC (A100, H100, H200), where many datasets are rendered.
Frames arrive as interleaved RGB (``rgb24``, rows top-down) in a CUDA buffer;
nvJPEG converts RGB to YCbCr itself with the JFIF equations (BT.601 matrix,
full range), which is what glrec's ``mjpeg`` options require and what the
container is tagged with, and subsamples chroma to 4:2:0 (``yuv420p``) or keeps
4:4:4 (``yuv444p``). The JPEGs go to an image sequence or, as Motion-JPEG, into
``.mkv``/``.mov``/``.avi`` through the same PyAV sinks as the CPU path.

Needs ``pip install glrec[nvjpeg]`` (nvImageCodec) and the nvJPEG library
(CUDA toolkit or the ``nvidia-nvjpeg`` wheel).
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING, Any

from ..cuda.pool import DeviceFrame
from ..errors import EncoderError, EncoderUnavailableError
from ..frame import Frame, Packet
from . import device_frame
from .registry import NVJPEG_BATCH

if TYPE_CHECKING:
    from ..cuda.driver import CudaDevice
    from ..options import VideoOptions
    from .registry import EncodeRequest

log = logging.getLogger("glrec")

#: Frames encoded per nvImageCodec call (declared with the encoder's row, which the plan reads without
#: importing this module).
BATCH = NVJPEG_BATCH
INSTALL_HINT = "pip install glrec[nvjpeg] (nvImageCodec) and make the nvJPEG library visible (CUDA toolkit)"


def load_nvimgcodec() -> Any:
    """The ``nvidia.nvimgcodec`` module, or EncoderUnavailableError saying how to get it."""
    try:
        from nvidia import nvimgcodec
    except ImportError as exc:
        raise EncoderUnavailableError(f"nvImageCodec is not installed ({exc}); {INSTALL_HINT}.") from None
    return nvimgcodec


def _params(nvimgcodec: Any, quality: int, subsampling: str) -> Any:
    css = nvimgcodec.ChromaSubsampling.CSS_444 if subsampling == "444" else nvimgcodec.ChromaSubsampling.CSS_420
    try:  # nvImageCodec >= 0.6: quality is a (type, value) pair
        return nvimgcodec.EncodeParams(
            quality_type=nvimgcodec.QualityType.QUALITY, quality_value=float(quality), chroma_subsampling=css
        )
    except (AttributeError, TypeError):  # 0.5 takes quality directly
        return nvimgcodec.EncodeParams(quality=float(quality), chroma_subsampling=css)


class _Codecs:
    """nvImageCodec encoders kept for reuse, per CUDA device, each warmed at the sizes it has encoded.

    A new ``nvimgcodec.Encoder``'s first encode costs about 290 ms at 1080p on an H200 (the second 0.4 ms:
    benchmarks/results/2026-12-02_nvidia-h200_turns-probe.txt), inside the first frame of a recording that
    makes its own. So an encoder is warmed when a recording opens (one encode of a blank frame of its size),
    and given back when the recording closes, for the next one in the process to take as it is.
    """

    KEEP = 4  # idle encoders kept per device; more recordings at once make more and drop the extra on close

    def __init__(self) -> None:
        self._idle: dict[int, list[tuple[Any, set[tuple[Any, ...]]]]] = {}
        self._lock = threading.Lock()

    def take(self, nvimgcodec: Any, ordinal: int) -> tuple[Any, set[tuple[Any, ...]]]:
        """An idle encoder of device ``ordinal`` with the sizes it is warm for, or a new one."""
        with self._lock:
            idle = self._idle.get(ordinal)
            if idle:
                return idle.pop()
        try:
            return nvimgcodec.Encoder(device_id=ordinal), set()
        except Exception as exc:
            raise EncoderUnavailableError(f"nvImageCodec could not create an encoder: {exc}; {INSTALL_HINT}.") from exc

    def give_back(self, ordinal: int, encoder: Any, warm: set[tuple[Any, ...]]) -> None:
        with self._lock:
            idle = self._idle.setdefault(ordinal, [])
            if len(idle) < self.KEEP:
                idle.append((encoder, warm))


_CODECS = _Codecs()


class _Blank:
    """A zeroed ``height x width x 3`` device buffer as a CUDA array, for warming an encoder at a size."""

    def __init__(self, device: CudaDevice, size: tuple[int, int]) -> None:
        from ..cuda.driver import call

        width, height = size
        nbytes = width * height * 3
        device.bind()
        self.ptr = int(call("cuMemAlloc", nbytes))
        call("cuMemsetD8", self.ptr, 0, nbytes)
        self.__cuda_array_interface__ = {
            "shape": (height, width, 3), "strides": None, "typestr": "|u1", "data": (self.ptr, False), "version": 3,
            "stream": None,
        }  # fmt: skip

    def free(self) -> None:
        from ..cuda.driver import call

        ptr, self.ptr = self.ptr, 0
        if ptr:
            call("cuMemFree", ptr)


class NvJpegEncoder:
    """Encode ``rgb24`` device frames to JPEG with nvJPEG; every packet is a keyframe.

    ``options.jpeg_quality`` (1-100, default 90) is the JPEG quality;
    ``options.pix_fmt`` picks 4:2:0 (``yuv420p``) or 4:4:4 (``yuv444p``) chroma.

    >>> enc = NvJpegEncoder(options, device_ordinal=0)  # doctest: +SKIP
    >>> enc.encode(frame)[0].data[:2]  # doctest: +SKIP
    b'\\xff\\xd8'
    """

    name = "nvjpeg"
    codec = "mjpeg"
    input_format = "rgb24"

    def __init__(
        self, options: VideoOptions, device_ordinal: int, *, batch: int = BATCH, device: CudaDevice | None = None
    ) -> None:
        nvimgcodec = load_nvimgcodec()
        self.options = options
        self._ordinal = device_ordinal
        self._encoder, self._warm = _CODECS.take(nvimgcodec, device_ordinal)
        self._nvimgcodec = nvimgcodec
        self._batch: list[DeviceFrame] = []
        self._failed = False  # an encoder that raised is not handed to the next recording
        self.batch = max(1, batch)
        self._params = _params(nvimgcodec, options.jpeg_quality, "444" if options.pix_fmt == "yuv444p" else "420")
        if device is not None:
            self._warm_up(device, options.size)
        log.info("encoder: nvJPEG (nvImageCodec) quality %d, %s chroma", options.jpeg_quality, options.pix_fmt)

    def _warm_up(self, device: CudaDevice, size: tuple[int, int]) -> None:
        """Encode one blank frame of ``size`` now, so the first recorded frame does not pay the set-up."""
        key = (size, self.options.jpeg_quality, self.options.pix_fmt)
        if key in self._warm:
            return
        blank = _Blank(device, size)
        try:
            self._encoder.encode([self._nvimgcodec.as_image(blank)], "jpeg", params=self._params)
        except Exception as exc:
            raise EncoderUnavailableError(f"nvJPEG could not encode a {size[0]}x{size[1]} frame: {exc}") from exc
        finally:
            blank.free()
        self._warm.add(key)

    @classmethod
    def from_request(cls, request: EncodeRequest) -> NvJpegEncoder:
        """The encoder the plan chose (:mod:`glrec.encoders.registry`), on the plan's CUDA device."""
        assert request.device is not None
        return cls(request.video, request.device.ordinal, device=request.device)

    def encode(self, frame: Frame) -> list[Packet]:
        """Queue ``frame``; every ``batch`` frames (default :data:`BATCH`), encode them in one call."""
        self._batch.append(device_frame(frame, "nvJPEG"))
        return self._encode_batch() if len(self._batch) >= self.batch else []

    def request_keyframe(self) -> None:
        """Nothing to do: every JPEG is a keyframe."""

    def flush(self) -> list[Packet]:
        return self._encode_batch() if self._batch else []

    def _encode_batch(self) -> list[Packet]:
        frames, self._batch = self._batch, []
        try:
            for f in frames:
                f.synchronize()
            images = [self._nvimgcodec.as_image(f) for f in frames]
            streams = self._encoder.encode(images, "jpeg", params=self._params)
            out = []
            for f, stream in zip(frames, streams, strict=True):
                if stream is None:
                    raise EncoderError(f"nvJPEG could not encode frame {f.index} ({f.width}x{f.height} RGB).")
                data = bytes(memoryview(stream))
                size = int(getattr(stream, "size", 0) or 0)
                out.append(Packet(data[:size] if 0 < size < len(data) else data, f.index, f.index, True))
            return out
        except BaseException:
            self._failed = True
            raise
        finally:
            for f in frames:
                f.release()

    def close(self) -> None:
        """Release held frames and give the nvImageCodec encoder back for the next recording. Safe twice."""
        frames, self._batch = self._batch, []
        for f in frames:  # only after a failure: a clean finish flushed them
            f.release()
        encoder, self._encoder = self._encoder, None
        if encoder is not None and not self._failed:
            _CODECS.give_back(self._ordinal, encoder, self._warm)
