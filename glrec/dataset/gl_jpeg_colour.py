"""JPEG colour for datasets through the GL-compute JPEG encoder: encoded in the dataset's own GL context.

``[output] rgb = "jpg"``, ``rgb_encoder = "gl"``. The colour texture is encoded
by :class:`glrec.encoders.gl_jpeg.GlJpegStage` (4:2:0, BT.601 full range, as
the CPU encoder's files are described) and only the JPEG comes back to the
host; no CUDA, any GL 4.3 with compute shaders. Quality is ``jpeg_quality``
with libjpeg's table scaling (the CPU encoder maps it to FFmpeg's qscale), so
the bytes differ from the CPU encoder's; the lossless passes do not change.
"""

from __future__ import annotations

import logging
from typing import Any

from .encode import ColourImage
from .spec import OutputSpec

log = logging.getLogger("glrec")


class GlJpegColour:
    """A :class:`~glrec.dataset.encode.ColourEncoder` that encodes the colour texture on the GPU.

    The stage is made at the first image, in the GL context its texture belongs to, for that
    size; :meth:`close` releases it (the dataset worker calls it before releasing the context).
    """

    ext = "jpg"
    needs_array = False  # reads the texture, never image.array()
    host_only = False  # runs on the GL thread, before the next sample is drawn over the texture

    def __init__(self, output: OutputSpec) -> None:
        self.output = output
        self._stage: Any = None

    def encode(self, image: ColourImage) -> bytes:
        from ..encoders.gl_jpeg.stage import GlJpegStage

        texture: Any = image.texture
        if self._stage is None:
            self._stage = GlJpegStage(texture.ctx, tuple(texture.size), quality=self.output.jpeg_quality, depth=2)
            log.info("gl jpeg colour: %dx%d, quality %d", *texture.size, self.output.jpeg_quality)
        return self._stage.encode_now(texture)

    def close(self) -> None:
        """Release the GL stage; safe twice."""
        stage, self._stage = self._stage, None
        if stage is not None:
            stage.release()
