"""Pack stage: RGBA render target -> packed RGB rows top-down, for encoders that convert themselves.

nvJPEG takes interleaved RGB and does the JFIF RGB -> YCbCr conversion (BT.601,
full range) and chroma subsampling itself; NVENC's ABGR input likewise has the
encoder convert. Both still need the rows flipped to top-down, which this
compute shader does on the GPU. It is a convert stage like
:class:`~glrec.convert.yuv.Converter` (both are a
:class:`~glrec.convert.compute.ComputeStage`), so the host readback and both
CUDA handoffs take either.

GL image stores have no 3-byte format, so RGB24 rows are stored as bytes in a
texture whose texels hold 4, 2 or 1 consecutive bytes of a row (``rgba8``,
``rg8``, ``r8``; :attr:`PlaneLayout.textures`): the row's bytes exactly, in a
format the CUDA interop can register as an image.
"""

from __future__ import annotations

import moderngl

from ..errors import ConfigError
from ..gl import glsl
from ..layout import PACKED_RGB, PlaneLayout
from .compute import ComputeStage


class RgbPacker(ComputeStage):
    """Flip and pack RGBA into ``rgb24`` (3 bytes/pixel) or ``rgba`` (4 bytes/pixel).

    ``rgba``'s alpha is opaque (NVENC's ABGR has no use for it) unless ``keep_alpha`` (PNG with alpha): then
    it is the render target's own.
    """

    GROUP = 8  # must match local_size in pack_rgb.comp

    def __init__(self, ctx: moderngl.Context, size: tuple[int, int], pix_fmt: str, *, keep_alpha: bool = False) -> None:
        if pix_fmt not in PACKED_RGB:
            raise ConfigError(f"Unknown packed format {pix_fmt!r}. Valid: {', '.join(sorted(PACKED_RGB))}.")
        self.channels = PACKED_RGB[pix_fmt]
        layout = PlaneLayout.for_format(pix_fmt, *size)
        max_size = int(ctx.info["GL_MAX_TEXTURE_SIZE"])
        tex_w, _, pack = layout.textures[0]
        if tex_w > max_size:
            raise ConfigError(
                f"Width {size[0]} is too large for packed {pix_fmt} on this GPU (needs a texture "
                f"{tex_w} texels wide, the limit is {max_size}); use a width of at most {max_size * pack // 3}."
            )
        shader = glsl.compute(
            ctx, "pack_rgb.comp", {"CHANNELS": self.channels, "PACK": pack, "KEEP_ALPHA": int(keep_alpha)}
        )
        shader["size"].value = size
        # CHANNELS 3: one invocation per PACK pixels (three whole texels); 4: one per pixel.
        per = pack if self.channels == 3 else 1
        super().__init__(ctx, layout, shader, self.GROUP, ((size[0] + per - 1) // per, size[1]))
