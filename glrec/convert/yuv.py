"""Convert stage: RGBA render target -> planar YUV textures, flipped to top-down.

Runs as a GL compute shader (``shaders/convert_yuv.comp``) so the GPU does the
colour maths and the host only ever reads 1.5 bytes per pixel (4:2:0) instead
of 4. The output planes are textures whose texels hold up to four consecutive
bytes of a plane row (:attr:`PlaneLayout.textures`), which the host readback
reads through pixel-buffer objects and the CUDA handoff can register as images.
"""

from __future__ import annotations

import math

import moderngl

from ..colour import ColourSpec
from ..gl import glsl
from ..layout import PlaneLayout
from .compute import ComputeStage


def chroma_run(pix_fmt: str, pack_y: int, pack_c: int) -> int:
    """Chroma samples one shader invocation makes: its bytes fill whole texels of every plane.

    Twice the least such run: fewer, longer invocations measured 5-14 % cheaper on
    llvmpipe at 720p/1080p. The last run of a row may then reach past the row's end;
    the shader's stores there fall outside the images, where GL discards them.
    """
    sub_x = 1 if pix_fmt == "yuv444p" else 2
    bytes_per_sample = 2 if pix_fmt == "nv12" else 1
    return 2 * math.lcm(max(1, pack_y // sub_x), max(1, pack_c // bytes_per_sample))


class Converter(ComputeStage):
    """RGBA -> YUV planes: owns the compute shader and the output plane textures for one size and format."""

    GROUP = 8  # must match local_size in convert_yuv.comp

    def __init__(
        self,
        ctx: moderngl.Context,
        src_size: tuple[int, int],
        dst_size: tuple[int, int],
        pix_fmt: str,
        colour: ColourSpec,
    ) -> None:
        layout = PlaneLayout.for_format(pix_fmt, *dst_size)
        sub = 1 if pix_fmt == "yuv444p" else 2
        pack_y, pack_c = layout.textures[0][2], layout.textures[1][2]
        run = chroma_run(pix_fmt, pack_y, pack_c)
        defines: dict[str, object] = {
            "SUB_X": sub, "SUB_Y": sub, "INTERLEAVED": int(pix_fmt == "nv12"), "PACK_Y": pack_y, "PACK_C": pack_c,
            "RUN": run,
        }  # fmt: skip
        shader = glsl.compute(ctx, "convert_yuv.comp", defines)
        (kr, kg, kb), y_range, c_range = colour.rgb_to_yuv_matrix()
        uniforms = {
            "src_size": src_size,
            "dst_size": dst_size,
            "luma": (kr, kg, kb),
            "chroma_div": (2.0 * (1.0 - kb), 2.0 * (1.0 - kr)),
            "y_range": y_range,
            "c_range": c_range,
        }
        for name, value in uniforms.items():
            shader[name].value = value
        cw, ch = layout.planes[1][:2]  # chroma samples per row and rows
        super().__init__(ctx, layout, shader, self.GROUP, ((cw + run - 1) // run, ch))
