"""The GL JPEG encoder in the pipeline's three slots: convert (the GPU passes), readback (the byte ring), encoder.

:class:`~glrec.encoders.gl_jpeg.stage.GlJpegStage` does all the work on the GL
thread, so it fills the pipeline's *convert* slot (:class:`GlJpegConvert`: the
two compute passes) and its *handoff* slot (:class:`GlJpegReadback`: the fenced
ring that returns finished JPEGs as :class:`~glrec.frame.EncodedFrame` s); the
*encoder* slot (:class:`GlJpegEncoder`, on the encode worker) only wraps each
frame's bytes in a :class:`~glrec.frame.Packet`.

A recording that is not live encodes in batches: each rendered frame is copied
into the next layer of an array texture (a copy on the GPU), and every
``batch`` frames the two passes run once over all the layers, with one fence:
two dispatches, two barriers and one fence per batch instead of per frame.
The batch is as large as :data:`BATCH_BYTES` of the stage's worst-case buffers
allow (:func:`recording_batch`). Live recordings encode each frame at once.
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from typing import Any

import moderngl

from ...errors import ConfigError, EncoderError
from ...frame import EncodedFrame, Frame, Packet
from ...gl.fences import gl_function
from ...layout import PlaneLayout
from ...video_facts import VideoFacts
from ..encoder import encode_each
from ..jpeg_options import JpegOptions
from ..row import EncodeRequest
from .blocks import geometry
from .stage import SUBSAMPLING, GlJpegStage

#: Frames per batch of a recording at most, and the most memory the stage's batch buffers (the segment slots
#: and a ring of ``depth`` outputs, each sized for the worst case) may take; None / an int: fixed, for
#: measurements (benchmarks/gpu_ceiling.py, ``pipe:recorder-gl``).
BATCH_MAX = 16
BATCH_BYTES = 512 << 20
BATCH: int | None = None
_GL_TEXTURE_2D, _GL_TEXTURE_2D_ARRAY = 0x0DE1, 0x8C1A


def recording_batch(facts: VideoFacts, depth: int) -> int:
    """Frames per batch for a recording of ``facts`` with a ring of ``depth`` outputs (1 when live).

    >>> from glrec.options import VideoOptions
    >>> recording_batch(VideoOptions.create((1920, 1080), 30.0, codec="mjpeg").facts, 3)
    6
    >>> recording_batch(VideoOptions.create((256, 256), 30.0, codec="mjpeg").facts, 3)
    16
    """
    if BATCH is not None:
        return BATCH
    if facts.live:
        return 1
    worst = geometry(facts.encoded_size, facts.pix_fmt).max_bytes * (depth + 1)
    return max(1, min(BATCH_MAX, BATCH_BYTES // worst))


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
    """The convert slot: queues the encoding of each rendered frame, or gathers it into the batch (see above)."""

    def __init__(self, ctx: moderngl.Context, facts: VideoFacts, options: JpegOptions, depth: int) -> None:
        self.planes: list[moderngl.Texture] = []  # none: the JPEG bytes stay in the stage's buffers
        self.ctx = ctx
        w, h = facts.encoded_size  # pad=True: the stage repeats the texture's last column / row
        self.layout = PlaneLayout("jpeg", w, h, ())
        self.source_size = facts.size
        self.batch = recording_batch(facts, depth)
        self.stage = GlJpegStage(ctx, (w, h), quality=options.jpeg_quality, pix_fmt=facts.pix_fmt, depth=depth,
                                 source_size=facts.size, batch=self.batch)  # fmt: skip
        self.layers: moderngl.TextureArray | None = None  # made at the first frame, in its texture's format
        self.gathered = 0  # frames copied into the layers since the last batch ran

    def run(self, source: moderngl.Texture) -> None:
        if self.batch == 1:
            self.stage.run(source)
            return
        if self.layers is None:
            w, h = self.source_size
            self.layers = self.ctx.texture_array((w, h, self.batch), source.components, dtype=source.dtype)
        copy = gl_function("glCopyImageSubData", None, *([ctypes.c_uint, ctypes.c_uint] + [ctypes.c_int] * 4) * 2,
                           ctypes.c_int, ctypes.c_int, ctypes.c_int)  # fmt: skip
        w, h = self.source_size
        copy(source.glo, _GL_TEXTURE_2D, 0, 0, 0, 0, self.layers.glo, _GL_TEXTURE_2D_ARRAY, 0, 0, 0, self.gathered,
             w, h, 1)  # fmt: skip
        self.gathered += 1

    def run_gathered(self) -> None:
        """Run the passes over the frames gathered so far (a whole batch, or what is left at the end)."""
        assert self.layers is not None
        self.ctx.memory_barrier(moderngl.TEXTURE_FETCH_BARRIER_BIT)
        self.stage.run_batch(self.layers, self.gathered)
        self.gathered = 0

    def new_planes(self) -> list[moderngl.Texture]:
        raise ConfigError("The GL JPEG stage has no planes to hand to a CUDA handoff; use handoff host.")

    def release(self) -> None:
        self.stage.release()
        layers, self.layers = self.layers, None
        if layers is not None:
            layers.release()


class GlJpegReadback:
    """The handoff slot: finished JPEGs as :class:`~glrec.frame.EncodedFrame` s (``data``: the bytes)."""

    kind = "host"

    def __init__(self, convert: GlJpegConvert) -> None:
        self._convert = convert
        self._indices: list[int] = []  # the frames gathered into the convert slot's batch

    @property
    def device_bytes(self) -> int:
        """The GPU memory of the stage's buffers and of the batch's layers."""
        layers = self._convert.layers
        extra = layers.width * layers.height * layers.layers * layers.components if layers is not None else 0
        return self._convert.stage.nbytes + extra

    def before_frame(self) -> None:
        """Nothing to wait for: :meth:`submit` keeps the ring's next output free."""

    def _frames(self, done: list[tuple[int, bytes]]) -> list[EncodedFrame]:
        layout = self._convert.layout
        return [EncodedFrame(i, "mjpeg", layout.width, layout.height, b) for i, b in done]

    def submit(self, index: int) -> Sequence[Frame]:
        convert = self._convert
        if convert.batch == 1:
            return self._frames(convert.stage.submit(index))
        self._indices.append(index)
        return self._run_batch() if len(self._indices) == convert.batch else []

    def _run_batch(self) -> list[EncodedFrame]:
        indices, self._indices = self._indices, []
        self._convert.run_gathered()
        return self._frames(self._convert.stage.submit_batch(indices))

    def drain(self) -> Sequence[Frame]:
        done = self._run_batch() if self._indices else []
        return done + self._frames(self._convert.stage.drain())

    def release(self) -> None:
        """The convert slot owns the stage and releases it."""


class GlJpegEncoder:
    """The encoder slot: each JPEG the GL stage made becomes one keyframe packet, pts = its index."""

    name = "gl-jpeg"
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
