"""The JPEG encoders' own option (nvJPEG, the GL JPEG encoder, and the CPU encoder's mjpeg): the JPEG quality.

The table of nvJPEG and of the GL JPEG encoder, and a part of the CPU encoder's;
composed into the front door's keywords by :mod:`glrec.options`. The CPU
encoder refuses it for any other codec, naming the option to use.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from .._declare import flag, named, option
from .._values import _number
from .options import EncoderOptions

#: The JPEG quality when none is given.
DEFAULT_QUALITY = 90
#: FFmpeg's mjpeg quantiser is the MPEG-1 intra matrix times q/8 (one table for luma and chroma, the DC step
#: fixed at 8), libjpeg's is the JPEG Annex K table times scale/100. This ratio makes the geometric mean of the
#: 35 luma steps of the 6x6 low frequencies (DC left out) equal: 8/100 x 29.03 (Annex K) / 25.69 (MPEG-1).
#: tests/encoders/test_jpeg_quality.py recomputes it from both tables and measures size and PSNR against libjpeg.
_QSCALE_PER_SCALE = 0.0904


@dataclass(frozen=True)
class JpegOptions(EncoderOptions):
    """JPEG settings (codec ``mjpeg``: nvJPEG, the GL JPEG encoder or the CPU's mjpeg; refused for other codecs)."""

    OWNER: ClassVar[str] = "quality is JPEG quality (codec mjpeg)"

    quality: int | None = option(
        None, f"JPEG quality 1-100 on libjpeg's scale, for every JPEG encoder (codec mjpeg only; default "
        f"{DEFAULT_QUALITY}; the CPU encoder comes near it in FFmpeg's coarser steps); for h264/hevc/av1 use crf",
        _number("JPEG quality", 1, 100, integer=True, example="90"), flags=flag("quality"),
    )  # fmt: skip

    @property
    def jpeg_quality(self) -> int:
        return self.quality if self.quality is not None else DEFAULT_QUALITY


def libjpeg_scale(quality: int) -> float:
    """The percentage libjpeg scales its quantisation tables by at ``quality`` 1..100 (``jpeg_quality_scaling``)."""
    q = max(1, min(100, quality))
    return 5000 / q if q < 50 else 200 - 2 * q


def ffmpeg_qscale(quality: int) -> int:
    """FFmpeg's mjpeg q-scale (1 finest .. 31) whose tables come closest to libjpeg's at ``quality``.

    Closest by the geometric mean of the low-frequency luma steps (see :data:`_QSCALE_PER_SCALE`), so
    file sizes and PSNR come near libjpeg's at the same quality; FFmpeg's fixed DC step and its one table
    for chroma keep them from being equal, and from quality 92 up every quality is its finest step.
    """
    return max(1, min(31, round(libjpeg_scale(quality) * _QSCALE_PER_SCALE)))


def quality_problem(codec: str, quality: int | None) -> str | None:
    """Why ``quality`` cannot apply to ``codec`` (None if it can): it is JPEG's 1-100 scale only.

    imageio's ``quality`` (0-10) has no defined meaning for H.264/HEVC/AV1 encoders, so glrec
    refuses it there and names the option that sets their quality instead.
    """
    if quality is None or codec == "mjpeg":
        return None
    if codec == "gif":
        return (f"{named('quality')} {quality} is JPEG quality (codec mjpeg); a GIF has no quality setting, each frame "
                "is reduced to a palette of its own 256 colours: drop it")  # fmt: skip
    crf, qp, bitrate = named("crf"), named("qp"), named("bitrate")
    high, small = (24, 40) if codec == "vp9" else (18, 28)  # libvpx's scale runs to 63, x264's to 51
    others = bitrate if codec == "vp9" else f"{qp} or {bitrate}"  # libvpx has no constant quantiser
    return (f"{named('quality')} {quality} is JPEG quality (codec mjpeg); {codec} takes {crf} for its quality "
            f"(lower is better, e.g. {crf} {high} for high quality, {small} for small files), or {others}")  # fmt: skip
