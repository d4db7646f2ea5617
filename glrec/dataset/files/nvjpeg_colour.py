"""JPEG colour for datasets through nvJPEG: the colour texture is packed on the GPU and encoded in CUDA memory.

``[output] rgb = "jpg"``, ``rgb_encoder = "nvjpeg"``. The colour target is
flipped and packed to RGB by the pack stage (:class:`glrec.convert.RgbPacker`),
handed to CUDA without a host copy (the shared handoff where GL can import CUDA
memory, else the register handoff) and encoded by nvImageCodec; only the JPEG
comes back to the host. nvJPEG converts RGB to YCbCr with the JFIF equations
(BT.601, full range) and subsamples chroma to 4:2:0, as the CPU encoder's
files are described; the bytes differ from FFmpeg's encoder (another JPEG
encoder), the lossless passes do not change.

Shards are encoded in batches (:class:`~glrec.dataset.files.encode.BatchColour`): each
sample's colour is packed and handed to CUDA as it is drawn, and every ``batch``
samples nvImageCodec encodes the held frames in one call, so the GL and CUDA
contexts take turns once per batch, not per sample; a frame's bytes do not
depend on the batch.

Needs an NVIDIA GPU whose GL context is the one the dataset renders in, CUDA
(``pip install glrec[cuda]``) and nvImageCodec (``pip install glrec[nvjpeg]``).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from ...errors import EncoderError, EncoderUnavailableError
from ..spec.document import OutputSpec
from .encode import ColourImage

if TYPE_CHECKING:
    from ...scenes.layers import LayeredGBuffer

log = logging.getLogger("glrec")

#: Samples per nvImageCodec call when a shard is encoded in batches (frames held in CUDA memory meanwhile).
BATCH = 16


def cuda_device_of_current_context() -> int:
    """The CUDA ordinal the current GL context renders on (``cuGLGetDevices``), or 0 where the driver cannot say."""
    from ...cuda.driver import call
    from ...gl.devices import verify_gl_device

    answers = {i: verify_gl_device(i) for i in range(call("cuDeviceGetCount"))}
    for ordinal, on_it in answers.items():
        if on_it:
            return ordinal
    if any(v is False for v in answers.values()) and all(v is not None for v in answers.values()):
        raise EncoderUnavailableError(
            "The dataset's GL context does not run on any visible CUDA device, so nvJPEG cannot read its "
            'colour; render on an NVIDIA EGL device (--device) or use rgb_encoder = "cpu".'
        )
    log.info("nvjpeg colour: the driver cannot say which CUDA device runs the GL context; using CUDA 0")
    return 0


class NvJpegColour:
    """A :class:`~glrec.dataset.rendering.colour.LayerColour` that reads the colour texture on the GPU.

    Its GPU stages are made at the first image, in the GL context that image's
    texture belongs to; :meth:`close` releases them (the dataset worker calls it
    before releasing the context).
    """

    ext = "jpg"
    needs_array = False  # reads the texture, never image.array()
    host_only = False  # runs on the GL thread, before the next sample is drawn over the texture

    def __init__(self, output: OutputSpec, batch: int = BATCH) -> None:
        from ...encoders.nvjpeg.encoder import load_nvimgcodec

        load_nvimgcodec()  # fail now, with the install hint, rather than at the first sample
        self.output = output
        self.batch = max(1, batch)
        self._stages: list[Any] = []  # packer, handoff, encoder, device: released in reverse
        self._count = 0
        self._held: list[Any] = []  # frames handed to CUDA, not encoded yet (batches)
        self._scratch: Any = None  # the texture a batch's colour layer is copied into (queue_layer)

    def _open(self, texture: Any) -> None:
        from ...convert import RgbPacker
        from ...cuda.driver import CudaDevice
        from ...encoders.nvjpeg.encoder import NvJpegEncoder
        from ...interop.handoff import cuda_handoff_kind, open_handoff
        from ...options import VideoOptions

        ctx = texture.ctx
        size = tuple(texture.size)
        device = CudaDevice.open(cuda_device_of_current_context())
        self._stages.append(device)
        packer = RgbPacker(ctx, size, "rgb24")
        self._stages.append(packer)
        kind = cuda_handoff_kind("auto", ctx)
        held = self.batch + 1  # a batch's frames are held until the one encode call
        self._stages.append(open_handoff(kind, ctx, packer, device, depth=1, consumer_slots=held, live=True))
        options = VideoOptions.create(size, 30, codec="mjpeg", encoder="nvjpeg", quality=self.output.jpeg_quality)
        asked = options.request(device=device)
        self._stages.append(NvJpegEncoder(asked.facts, asked.options, device))
        log.info("nvjpeg colour: %dx%d, quality %d, CUDA %s handoff", *size, self.output.jpeg_quality, kind)

    def encode(self, image: ColourImage) -> bytes:
        """One JPEG of ``image``'s texture (the per-sample path: render_sample, the stream)."""
        _, packer, handoff, encoder = self._ready(image.texture)
        packer.run(image.texture)
        frames = [*handoff.submit(self._count), *handoff.drain()]
        self._count += 1
        packets = [p for f in frames for p in encoder.encode(f)] + encoder.flush()
        if len(packets) != 1:
            raise EncoderError(f"nvJPEG returned {len(packets)} images for one colour image.")
        return packets[0].data

    def _ready(self, texture: Any) -> list[Any]:
        if not self._stages:
            try:
                self._open(texture)
            except BaseException:
                self.close()
                raise
        return self._stages

    def queue(self, fbo: Any, index: int) -> list[tuple[int, bytes]]:
        """Pack sample ``index``'s colour and hand it to CUDA; every ``batch`` samples, encode the held ones."""
        return self._hand_over(fbo.color_attachments[0], index)

    def queue_layer(self, gbuffer: LayeredGBuffer, layer: int, index: int) -> list[tuple[int, bytes]]:
        """:meth:`queue` of sample ``index`` from layer ``layer`` of a batch's colour target: copied on the GPU
        into a texture of this encoder's, which its pack stage reads as it reads a framebuffer's."""
        if self._scratch is None:
            self._scratch = gbuffer.ctx.texture(gbuffer.size, 4)
        gbuffer.copy_layer("rgb", layer, self._scratch)
        return self._hand_over(self._scratch, index)

    def _hand_over(self, texture: Any, index: int) -> list[tuple[int, bytes]]:
        _, packer, handoff, _ = self._ready(texture)
        packer.run(texture)
        self._held += handoff.submit(index)
        return self._encode_held() if len(self._held) >= self.batch else []

    def flush(self) -> list[tuple[int, bytes]]:
        """Encode every sample handed over; returns their (index, JPEG)."""
        if not self._stages:
            return []
        self._held += self._stages[2].drain()
        return self._encode_held()

    def _encode_held(self) -> list[tuple[int, bytes]]:
        frames, self._held = self._held, []
        if not frames:
            return []
        packets = self._stages[3].encode_batch(frames)  # one nvImageCodec call; releases the frames
        return [(p.pts, p.data) for p in packets]

    def close(self) -> None:
        """Release the encoder, handoff, pack stage and CUDA device; safe twice."""
        held, self._held = self._held, []
        for frame in held:
            frame.release()
        scratch, self._scratch = self._scratch, None
        if scratch is not None:
            scratch.release()
        stages, self._stages = self._stages, []
        for stage in reversed(stages):
            close = getattr(stage, "close", None) or stage.release
            close()
