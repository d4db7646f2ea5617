"""JPEG colour for datasets through the GL-compute JPEG encoder: encoded in the dataset's own GL context.

``[output] rgb = "jpg"``, ``rgb_encoder = "gl"`` (the encoder registry's ``gl``
row). The colour texture is encoded by :class:`glrec.encoders.gl_jpeg.GlJpegStage`
(4:2:0, BT.601 full range, as the CPU encoder's files are described) and only
the JPEG comes back to the host; no CUDA, any GL 4.3 with compute shaders.
Quality is ``jpeg_quality`` with libjpeg's table scaling (the CPU encoder maps
it to FFmpeg's qscale), so the bytes differ from the CPU encoder's; the
lossless passes do not change.

Shards are encoded in batches (:class:`~glrec.dataset.files.encode.BatchColour`): each
sample's colour is copied on the GPU into one of ``batch`` slot textures, and a
full set is encoded in one dispatch and fenced once, read back while the next
samples draw. A frame's bytes do not depend on the batch (the stage's promise),
so shards are the same whatever the batch size, and the same as :meth:`encode`'s.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import moderngl

from ..spec.document import OutputSpec
from .encode import ColourImage

if TYPE_CHECKING:
    from ...scenes.layers import LayeredGBuffer

log = logging.getLogger("glrec")

#: Samples per dispatch when the worker encodes in batches: one fence per 8 samples, 8 x 1.2 MB of slot
#: textures at 640x480.
BATCH = 8


class GlJpegColour:
    """A :class:`~glrec.dataset.rendering.colour.LayerColour` that encodes the colour texture on the GPU.

    The stage is made at the first image, in the GL context its texture belongs to, for that
    size; :meth:`close` releases it (the dataset worker calls it before releasing the context).
    ``batch``: samples per dispatch in :meth:`queue` (default :data:`BATCH`).
    """

    ext = "jpg"
    needs_array = False  # reads the texture, never image.array()
    host_only = False  # runs on the GL thread, before the next sample is drawn over the texture

    def __init__(self, output: OutputSpec, batch: int = BATCH) -> None:
        self.output = output
        self.batch = max(1, batch)
        self._stage: Any = None
        self._slots: list[moderngl.Texture] = []
        self._slot_fbos: list[moderngl.Framebuffer] = []  # one around each slot, for queue's copy
        self._queued: list[int] = []  # sample indices copied into the slots, not yet dispatched

    def _open(self, ctx: moderngl.Context, size: tuple[int, int], batch: int) -> Any:
        from ...encoders.gl_jpeg.stage import GlJpegStage

        if self._stage is not None and self._stage.batch < batch:  # made by encode() for one image
            self._stage.release()
            self._stage = None
        if self._stage is None:
            q = self.output.jpeg_quality
            self._stage = GlJpegStage(ctx, size, quality=q, depth=2, batch=batch)
            log.info("gl jpeg colour: %dx%d, quality %d, %d per dispatch", *size, q, batch)
        return self._stage

    def encode(self, image: ColourImage) -> bytes:
        """One JPEG of ``image``'s texture, waited for (the per-sample path: render_sample, the stream)."""
        texture: Any = image.texture
        if self._queued:
            raise RuntimeError("encode() while samples are queued: flush() them first.")
        stage = self._open(texture.ctx, tuple(texture.size), 1 if not self._slots else self.batch)
        data: bytes = stage.encode_now(texture)
        return data

    def queue(self, fbo: moderngl.Framebuffer, index: int) -> list[tuple[int, bytes]]:
        """Copy ``fbo``'s colour (sample ``index``) into a slot; a full set of slots is dispatched.

        Returns the (index, JPEG) of samples whose batch finished meanwhile (oldest first).
        """
        self._slot(fbo.ctx, (fbo.width, fbo.height))
        # Framebuffer to framebuffer (a blit): copying into the texture itself (glCopyTexImage2D) would remake
        # it as unsized RGBA, which queue_layer's copy (glCopyImageSubData, RGBA8 only) then refuses.
        fbo.ctx.copy_framebuffer(self._slot_fbos[len(self._queued)], fbo)
        return self._queued_one(index)

    def queue_layer(self, gbuffer: LayeredGBuffer, layer: int, index: int) -> list[tuple[int, bytes]]:
        """:meth:`queue` of sample ``index`` from layer ``layer`` of a batch's colour target (copied on the GPU)."""
        gbuffer.copy_layer("rgb", layer, self._slot(gbuffer.ctx, gbuffer.size))
        return self._queued_one(index)

    def _slot(self, ctx: moderngl.Context, size: tuple[int, int]) -> moderngl.Texture:
        """The slot the next queued sample's colour goes into (the slots are made at the first)."""
        if not self._slots:
            self._open(ctx, size, self.batch)
            self._slots = [ctx.texture(size, 4) for _ in range(self.batch)]
            self._slot_fbos = [ctx.framebuffer([tex]) for tex in self._slots]
        return self._slots[len(self._queued)]

    def _queued_one(self, index: int) -> list[tuple[int, bytes]]:
        self._queued.append(index)
        if len(self._queued) < self.batch:
            return []
        return self._dispatch()

    def _dispatch(self) -> list[tuple[int, bytes]]:
        queued, self._queued = self._queued, []
        self._stage.run_batch(self._slots, len(queued))
        done: list[tuple[int, bytes]] = self._stage.submit_batch(queued)
        return done

    def flush(self) -> list[tuple[int, bytes]]:
        """Dispatch what is queued and wait for every sample in flight; returns their (index, JPEG)."""
        done = self._dispatch() if self._queued else []
        if self._stage is not None:
            done += self._stage.drain()
        return done

    def close(self) -> None:
        """Release the slots and the GL stage; safe twice."""
        slots, self._slots, self._queued = self._slots, [], []
        fbos, self._slot_fbos = self._slot_fbos, []
        for fbo in fbos:
            fbo.release()
        for tex in slots:
            tex.release()
        stage, self._stage = self._stage, None
        if stage is not None:
            stage.release()
