"""The GL JPEG encoder in the pipeline's three slots: convert (the GPU passes), handoff (the byte ring), encoder.

:class:`~glrec.encoders.gl_jpeg.GlJpegStage` does all the work on the GL
thread, so it fills the pipeline's *convert* slot (:class:`GlJpegConvert`: the
two compute passes per frame) and its *handoff* slot (:class:`GlJpegReadback`:
the fenced ring that returns finished JPEGs as ``jpeg`` host frames); the
*encoder* slot (:class:`GlJpegEncoder`, on the encode worker) only wraps each
frame's bytes in a :class:`~glrec.frame.Packet`. ``encoder="gl"`` with codec
``mjpeg`` picks it; ``auto`` never does (not yet measured on a GPU).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import moderngl
import numpy as np

from ..errors import ConfigError, EncoderError
from ..frame import Frame, HostFrame, Packet
from ..layout import PlaneLayout
from .gl_jpeg import SUBSAMPLING, GlJpegStage

if TYPE_CHECKING:
    from ..options import VideoOptions
    from .registry import EncodeRequest

#: Options of the video encoders that have no meaning for JPEG; given with encoder gl, they are refused.
#: (Other encoders' own tables, threads or tuning say, are refused by the registry, naming their owner.)
_NOT_JPEG = ("crf", "qp", "bitrate", "preset", "bframes")


def gl_jpeg_refuse(request: EncodeRequest) -> str | None:
    """What the GL JPEG encoder cannot honour in the request, known before any GL object exists."""
    video = request.video
    if video.codec != "mjpeg":
        return f"encoder gl makes JPEG; use codec mjpeg with a .mkv/.mov/.avi or .jpg output, not {video.codec}."
    if video.pix_fmt not in SUBSAMPLING:
        return f"encoder gl takes pix_fmt yuv420p or yuv444p, not {video.pix_fmt}."
    given = [name for name in _NOT_JPEG if getattr(video, name) is not None]
    if video.encoder_options:
        given.append("encoder_options (-x)")
    if given:
        return f"encoder gl sets the size of its JPEGs by quality only; drop {', '.join(given)}."
    return None


class GlJpegConvert:
    """The convert slot: queues the encoding of each rendered frame (see :class:`GlJpegStage`)."""

    def __init__(self, ctx: moderngl.Context, video: VideoOptions, depth: int) -> None:
        self.planes: list[moderngl.Texture] = []  # none: the JPEG bytes stay in the stage's buffers
        w, h = video.encoded_size  # pad=True: the stage repeats the texture's last column / row
        self.layout = PlaneLayout("jpeg", w, h, ())
        self.stage = GlJpegStage(ctx, (w, h), quality=video.jpeg_quality, pix_fmt=video.pix_fmt, depth=depth,
                                 source_size=video.size)  # fmt: skip

    def run(self, source: moderngl.Texture) -> None:
        self.stage.run(source)

    def new_planes(self) -> list[moderngl.Texture]:
        raise ConfigError("The GL JPEG stage has no planes to hand to a CUDA handoff; use handoff host.")

    def release(self) -> None:
        self.stage.release()


class GlJpegReadback:
    """The handoff slot: finished JPEGs as :class:`HostFrame` s of ``pix_fmt`` ``jpeg`` (``data``: the bytes)."""

    kind = "host"

    def __init__(self, convert: GlJpegConvert) -> None:
        self._convert = convert

    def _frames(self, done: list[tuple[int, bytes]]) -> list[HostFrame]:
        layout = self._convert.layout
        return [HostFrame(i, "jpeg", layout.width, layout.height, np.frombuffer(b, np.uint8)) for i, b in done]

    def submit(self, index: int) -> Sequence[Frame]:
        return self._frames(self._convert.stage.submit(index))

    def drain(self) -> Sequence[Frame]:
        return self._frames(self._convert.stage.drain())

    def release(self) -> None:
        """The convert slot owns the stage and releases it."""


class GlJpegEncoder:
    """The encoder slot: each ``jpeg`` frame becomes one keyframe packet, pts = its index."""

    name = "gl-jpeg"
    codec = "mjpeg"

    @classmethod
    def from_request(cls, request: EncodeRequest) -> GlJpegEncoder:
        return cls()

    def encode(self, frame: Frame) -> list[Packet]:
        if not isinstance(frame, HostFrame) or frame.pix_fmt != "jpeg":
            raise EncoderError(f"The GL JPEG encoder takes the JPEGs of its own GL stage, not {type(frame).__name__}.")
        return [Packet(frame.data.tobytes(), frame.index, frame.index, True)]

    def flush(self) -> list[Packet]:
        return []

    def request_keyframe(self) -> None:
        """Nothing to do: every JPEG is a keyframe."""

    def close(self) -> None:
        """Nothing to release: the GL stage belongs to the convert slot."""
