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
from collections.abc import Sequence
from typing import Any

from ...errors import EncoderError, EncoderUnavailableError
from ...frame import Frame, Packet
from ...video_facts import VideoFacts
from ..encoder import device_frame
from ..jpeg_options import JpegOptions

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


class NvJpegEncoder:
    """Encode ``rgb24`` device frames to JPEG with nvJPEG; every packet is a keyframe.

    ``options.jpeg_quality`` (1-100, default 90) is the JPEG quality; the stream's
    ``pix_fmt`` picks 4:2:0 (``yuv420p``) or 4:4:4 (``yuv444p``) chroma. ``device``
    is the CUDA device the frames are on (anything with its ``ordinal``).

    >>> enc = NvJpegEncoder(facts, options, device)  # doctest: +SKIP
    >>> enc.encode(frame)[0].data[:2]  # doctest: +SKIP
    b'\\xff\\xd8'
    """

    name = "nvjpeg"
    codec = "mjpeg"
    input_format = "rgb24"

    def __init__(self, facts: VideoFacts, options: JpegOptions, device: Any, raw_output: bool = False) -> None:
        nvimgcodec = load_nvimgcodec()
        self.facts, self.options = facts, options
        if device is None:
            raise EncoderUnavailableError(f"nvJPEG reads CUDA device frames; it needs a CUDA device; {INSTALL_HINT}.")
        try:
            self._encoder = nvimgcodec.Encoder(device_id=device.ordinal)
        except Exception as exc:
            raise EncoderUnavailableError(f"nvImageCodec could not create an encoder: {exc}; {INSTALL_HINT}.") from exc
        self._nvimgcodec = nvimgcodec
        self._params = _params(nvimgcodec, options.jpeg_quality, "444" if facts.pix_fmt == "yuv444p" else "420")
        log.info("encoder: nvJPEG (nvImageCodec) quality %d, %s chroma", options.jpeg_quality, facts.pix_fmt)

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
            images = [self._nvimgcodec.as_image(f) for f in device_frames]
            streams = self._encoder.encode(images, "jpeg", params=self._params)
            out = []
            for f, stream in zip(device_frames, streams, strict=True):
                if stream is None:
                    raise EncoderError(f"nvJPEG could not encode frame {f.index} ({f.width}x{f.height} RGB).")
                data = bytes(memoryview(stream))
                size = int(getattr(stream, "size", 0) or 0)
                out.append(Packet(data[:size] if 0 < size < len(data) else data, f.index, f.index, True))
            return out
        finally:
            for f in device_frames:
                f.release()

    def close(self) -> None:
        self._encoder = None
