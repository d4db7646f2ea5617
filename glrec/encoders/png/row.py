"""The PNG encoder's row: lossless ``rgb24`` or ``rgba`` frames, from host or CUDA memory, into ``.png`` sequences."""

from __future__ import annotations

from collections.abc import Sequence

from ...video_facts import VideoFacts
from ..row import EncodeRequest, EncoderRow
from .options import PngOptions


def _packed(facts: VideoFacts) -> str:
    return facts.pix_fmt  # rgb24 or rgba: the GL pack stage's rows, and what written arrays are brought to


def refuse(request: EncodeRequest[PngOptions]) -> str | None:
    if request.facts.codec == "png" and request.options.encoder_options:
        keys = ", ".join(k for k, _ in request.options.encoder_options)
        return (
            f"The PNG encoder is glrec's own writer and takes no codec options ({keys} given); drop them "
            "(png_compression 0-9 sets its level)."
        )
    return None


def status(devices: Sequence[int], no_cuda: str | None) -> list[str]:
    """``glrec info``'s line: the deflate behind it."""
    from zlib_ng import zlib_ng

    return [f"png: glrec's writer, zlib-ng {zlib_ng.ZLIBNG_VERSION}, on every core"]


ROW = EncoderRow(
    "png", "the PNG encoder", ("png",), ("rgb24", "rgba"), ("host", "cuda"), "glrec.encoders.png.encoder:PngEncoder",
    options=PngOptions, convert=_packed, keeps_alpha=True, input_format=_packed, refuse=refuse, status=status,
    doctor="PNG encode",
    note="lossless RGB or RGBA, one PNG per frame (glrec's writer: zlib-ng on every core); CUDA frames are copied "
    "to the host once",
)  # fmt: skip
