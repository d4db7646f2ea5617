"""Pack stage: RGBA render target -> packed RGB rows top-down, for encoders that convert themselves.

nvJPEG takes interleaved RGB and does the JFIF RGB -> YCbCr conversion (BT.601,
full range) and chroma subsampling itself; NVENC's ABGR input likewise has the
encoder convert. Both still need the rows flipped to top-down, which this
compute shader does on the GPU. It is a convert stage like
:class:`~glrec.convert.yuv.Converter` (``layout``, ``planes``, ``run``, ``new_planes``,
``release``), so the host readback and both CUDA handoffs take either.

RGB24 is stored in an ``r8`` texture three times as wide as the frame because
GL image stores have no 3-byte format, and an ``r8`` texture is one the CUDA
interop can register as an image.
"""

from __future__ import annotations

import moderngl

from .. import glsl
from ..errors import ConfigError
from .compute import ComputePass
from .layout import PACKED_RGB, PlaneLayout


class RgbPacker:
    """Flip and pack RGBA into ``rgb24`` (3 bytes/pixel) or ``rgba`` (4 bytes/pixel)."""

    GROUP = 8  # must match local_size in pack_rgb.comp

    def __init__(self, ctx: moderngl.Context, size: tuple[int, int], pix_fmt: str) -> None:
        if pix_fmt not in PACKED_RGB:
            raise ConfigError(f"Unknown packed format {pix_fmt!r}. Valid: {', '.join(sorted(PACKED_RGB))}.")
        self.ctx = ctx
        self.channels = PACKED_RGB[pix_fmt]
        self.layout = PlaneLayout.for_format(pix_fmt, *size)
        max_size = int(ctx.info["GL_MAX_TEXTURE_SIZE"])
        if self.channels == 3 and 3 * size[0] > max_size:
            raise ConfigError(
                f"Width {size[0]} is too large for packed {pix_fmt} on this GPU (needs a texture "
                f"{size[0] * 3} texels wide, the limit is {max_size}); use a width of at most {max_size // 3}."
            )
        shader = glsl.compute(ctx, "pack_rgb.comp", {"CHANNELS": self.channels})
        shader["size"].value = size  # type: ignore[union-attr]
        self._pass = ComputePass(ctx, shader, self.GROUP, size)
        self.planes = self.new_planes()

    def new_planes(self) -> list[moderngl.Texture]:
        w, h = self.layout.width, self.layout.height
        if self.channels == 3:
            return [self.ctx.texture((3 * w, h), 1, dtype="f1")]
        return [self.ctx.texture((w, h), 4, dtype="f1")]

    def run(self, source: moderngl.Texture) -> None:
        """Pack ``source`` into :attr:`planes` (queued on the GPU; returns at once)."""
        self._pass.run(source, self.planes)

    def release(self) -> None:
        self._pass.release(self.planes)
        self.planes = []
