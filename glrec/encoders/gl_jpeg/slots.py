"""The GL JPEG encoder in the pipeline's three slots: convert (the GPU passes), readback (the byte ring), encoder.

:class:`~glrec.encoders.gl_jpeg.stage.GlJpegStage` does all the work on the GL
thread, so it fills the pipeline's *convert* slot (:class:`GlJpegConvert`: the
two compute passes) and its *handoff* slot (:class:`GlJpegReadback`: the fenced
ring that returns finished JPEGs as :class:`~glrec.frame.EncodedFrame` s); the
*encoder* slot (:class:`GlJpegEncoder`, on the encode worker) only wraps each
frame's bytes in a :class:`~glrec.frame.Packet`.

Each frame is encoded as it is rendered: gathering a recording's frames into
the layers of an array texture and encoding them in one pass pair per batch was
measured slower on an H200 (1,538 against 2,309 frames/s at 1080p,
benchmarks/gpu_ceiling.py ``pipe:recorder-gl``, 2026-12-02): the copy into the
layers costs more than the dispatches it saves. Batches pay where frames arrive
together (:meth:`GlJpegStage.encode_batch`: vectorised environments, datasets).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import moderngl

from ...errors import ConfigError, EncoderError
from ...frame import EncodedFrame, Frame, Packet
from ...layout import PlaneLayout
from ...video_facts import VideoFacts
from ..encoder import encode_each
from ..jpeg_options import JpegOptions
from ..row import EncodeRequest
from .stage import SUBSAMPLING, GlJpegStage


def gl_jpeg_refuse(request: EncodeRequest[JpegOptions]) -> str | None:
    """What the GL JPEG encoder cannot honour, known before any GL object exists (others' options: the registry)."""
    facts = request.facts
    if facts.codec != "mjpeg":
        return f"encoder gl makes JPEG; use codec mjpeg with a .mkv/.mov/.avi or .jpg output, not {facts.codec}."
    if facts.pix_fmt not in SUBSAMPLING:
        return f"encoder gl takes pix_fmt yuv420p or yuv444p, not {facts.pix_fmt}."
    if request.options.encoder_options:
        return "encoder gl sets the size of its JPEGs by quality only; drop encoder_options (-x)."
    return None


class GlJpegConvert:
    """The convert slot: queues the encoding of each rendered frame (see :class:`GlJpegStage`)."""

    def __init__(self, ctx: moderngl.Context, facts: VideoFacts, options: JpegOptions, depth: int) -> None:
        self.planes: list[moderngl.Texture] = []  # none: the JPEG bytes stay in the stage's buffers
        w, h = facts.encoded_size  # pad=True: the stage repeats the texture's last column / row
        self.layout = PlaneLayout("jpeg", w, h, ())
        self.stage = GlJpegStage(ctx, (w, h), quality=options.jpeg_quality, pix_fmt=facts.pix_fmt, depth=depth,
                                 source_size=facts.size)  # fmt: skip

    def run(self, source: moderngl.Texture) -> None:
        self.stage.run(source)

    def new_planes(self) -> list[moderngl.Texture]:
        raise ConfigError("The GL JPEG stage has no planes to hand to a CUDA handoff; use handoff host.")

    def release(self) -> None:
        self.stage.release()


class GlJpegReadback:
    """The handoff slot: finished JPEGs as :class:`~glrec.frame.EncodedFrame` s (``data``: the bytes)."""

    kind = "host"

    def __init__(self, convert: GlJpegConvert) -> None:
        self._convert = convert

    @property
    def device_bytes(self) -> int:
        """The GPU memory of the stage's buffers."""
        return self._convert.stage.nbytes

    def before_frame(self) -> None:
        """Nothing to wait for: :meth:`submit` keeps the ring's next output free."""

    def _frames(self, done: list[tuple[int, bytes]]) -> list[EncodedFrame]:
        layout = self._convert.layout
        return [EncodedFrame(i, "mjpeg", layout.width, layout.height, b) for i, b in done]

    def submit(self, index: int) -> Sequence[Frame]:
        return self._frames(self._convert.stage.submit(index))

    def drain(self) -> Sequence[Frame]:
        return self._frames(self._convert.stage.drain())

    def release(self) -> None:
        """The convert slot owns the stage and releases it."""


class GlJpegEncoder:
    """The encoder slot: each JPEG the GL stage made becomes one keyframe packet, pts = its index."""

    name = "gl (GL-compute JPEG)"  # the summary's words: the option value a user types (--encoder gl), then what it is
    codec = "mjpeg"

    def __init__(self, facts: VideoFacts, options: JpegOptions, device: Any = None, raw_output: bool = False) -> None:
        """Nothing to open: the GL stage (the convert slot) encodes."""

    def encode(self, frame: Frame) -> list[Packet]:
        if not isinstance(frame, EncodedFrame) or frame.codec != "mjpeg":
            raise EncoderError(f"The GL JPEG encoder takes the JPEGs of its own GL stage, not {type(frame).__name__}.")
        return [Packet(frame.data, frame.index, frame.index, True)]

    def encode_batch(self, frames: Sequence[Frame]) -> list[Packet]:
        """Each frame in turn (the GL stage encodes frame by frame)."""
        return encode_each(self, frames)

    def flush(self) -> list[Packet]:
        return []

    def request_keyframe(self) -> None:
        """Nothing to do: every JPEG is a keyframe."""

    def close(self) -> None:
        """Nothing to release: the GL stage belongs to the convert slot."""


def open_slots(
    ctx: moderngl.Context, request: EncodeRequest[JpegOptions], depth: int
) -> tuple[GlJpegConvert, GlJpegReadback]:
    """The convert and readback slots for ``request``, with a ring of ``depth`` outputs."""
    convert = GlJpegConvert(ctx, request.facts, request.options, depth)
    return convert, GlJpegReadback(convert)
