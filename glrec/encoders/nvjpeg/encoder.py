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
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ...errors import EncoderError, EncoderUnavailableError
from ...frame import Frame, Packet
from ...video_facts import VideoFacts
from ..encoder import device_frame
from ..jpeg_options import JpegOptions

if TYPE_CHECKING:
    from ...cuda.driver import CudaDevice

log = logging.getLogger("glrec")

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
        from ...cuda.driver import call

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
        from ...cuda.driver import call

        ptr, self.ptr = self.ptr, 0
        if ptr:
            call("cuMemFree", ptr)


def _bitstream(stream: Any) -> bytes:
    """The JPEG bytes of an nvImageCodec code stream, copied once (its buffer may be longer than ``size``)."""
    view = memoryview(stream)
    size = int(getattr(stream, "size", 0) or 0)
    if view.ndim == 1 and view.itemsize == 1 and 0 < size < view.nbytes:
        view = view[:size]
    data = bytes(view)
    return data[:size] if 0 < size < len(data) else data


class _View:
    """A slot's CUDA array interface, fixed: the object behind a kept image, which outlives the frame it came from."""

    def __init__(self, interface: dict[str, Any]) -> None:
        self.__cuda_array_interface__ = dict(interface)


class NvJpegEncoder:
    """Encode ``rgb24`` device frames to JPEG with nvJPEG; every packet is a keyframe.

    ``options.jpeg_quality`` (1-100, default 90) is the JPEG quality; the stream's
    ``pix_fmt`` picks 4:2:0 (``yuv420p``) or 4:4:4 (``yuv444p``) chroma. ``device``
    is the CUDA device the frames are on; the encoder is warmed there at the
    stream's size when it opens (see :class:`_Codecs`).

    >>> enc = NvJpegEncoder(facts, options, device)  # doctest: +SKIP
    >>> enc.encode(frame)[0].data[:2]  # doctest: +SKIP
    b'\\xff\\xd8'
    """

    name = "nvjpeg"
    codec = "mjpeg"
    input_format = "rgb24"
    IMAGES_KEPT = 256  # slot views kept; more (several pools over a recording's life) start the cache afresh

    def __init__(self, facts: VideoFacts, options: JpegOptions, device: CudaDevice, raw_output: bool = False) -> None:
        nvimgcodec = load_nvimgcodec()
        if device is None:
            raise EncoderUnavailableError(f"nvJPEG reads CUDA device frames; it needs a CUDA device; {INSTALL_HINT}.")
        self.facts, self.options = facts, options
        self._ordinal = device.ordinal
        self._encoder, self._warm = _CODECS.take(nvimgcodec, device.ordinal)
        self._nvimgcodec = nvimgcodec
        self._failed = False  # an encoder that raised is not handed to the next recording
        self._images: dict[tuple[int, tuple[int, ...]], Any] = {}  # (address, shape) -> image, see _image
        self._params = _params(nvimgcodec, options.jpeg_quality, "444" if facts.pix_fmt == "yuv444p" else "420")
        self._warm_up(device, facts.size)
        log.info("encoder: nvJPEG (nvImageCodec) quality %d, %s chroma", options.jpeg_quality, facts.pix_fmt)

    def _warm_up(self, device: CudaDevice, size: tuple[int, int]) -> None:
        """Encode one blank frame of ``size`` now, so the first recorded frame does not pay the set-up."""
        key = (size, self.options.jpeg_quality, self.facts.pix_fmt)
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

    def _image(self, frame: Any) -> Any:
        """``frame`` as an nvImageCodec image; the images of a pool's slots are made once and reused.

        An image is a view (address, shape) of CUDA memory, made from the frame's CUDA array interface
        (about 17 us at 1080p on an H200, against 170 us for the encode). A glrec ``DeviceFrame``,
        synchronised, names no stream, so its slot's view is the same for every frame the slot holds.
        """
        from ...cuda.pool import DeviceFrame

        if type(frame) is not DeviceFrame:  # a caller's own CUDA array: its view may differ call to call
            return self._nvimgcodec.as_image(frame)
        key = (frame.ptr, frame.layout.host_shape)
        image = self._images.get(key)
        if image is None:
            if len(self._images) >= self.IMAGES_KEPT:
                self._images.clear()
            image = self._images[key] = self._nvimgcodec.as_image(_View(frame.__cuda_array_interface__))
        return image

    def encode(self, frame: Frame) -> list[Packet]:
        """One JPEG of ``frame``, now (one nvImageCodec call)."""
        return self.encode_batch([frame])

    def request_keyframe(self) -> None:
        """Nothing to do: every JPEG is a keyframe."""

    def flush(self) -> list[Packet]:
        """Nothing is held: every call encodes what it was given."""
        return []

    def encode_batch(self, frames: Sequence[Frame]) -> list[Packet]:
        """One JPEG of each frame, in one nvImageCodec call; packets in frame order, each frame released."""
        if not frames:
            return []
        device_frames = [device_frame(f, "nvJPEG") for f in frames]
        try:
            for f in device_frames:
                f.synchronize()
            images = [self._image(f) for f in device_frames]
            streams = self._encoder.encode(images, "jpeg", params=self._params)
            out = []
            for f, stream in zip(device_frames, streams, strict=True):
                if stream is None:
                    raise EncoderError(f"nvJPEG could not encode frame {f.index} ({f.width}x{f.height} RGB).")
                out.append(Packet(_bitstream(stream), f.index, f.index, True))
            return out
        except BaseException:
            self._failed = True
            raise
        finally:
            for f in device_frames:
                f.release()

    def close(self) -> None:
        """Give the nvImageCodec encoder back for the next recording in the process. Safe twice."""
        encoder, self._encoder = self._encoder, None
        if encoder is not None and not self._failed:
            _CODECS.give_back(self._ordinal, encoder, self._warm)
