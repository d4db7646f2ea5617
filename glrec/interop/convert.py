"""Convert stage: RGBA render target -> planar YUV textures, flipped to top-down.

Runs as a GL compute shader (``shaders/convert_yuv.comp``) so the GPU does the
colour maths and the host only ever reads 1.5 bytes per pixel (4:2:0) instead
of 4. The output planes are textures, which the host readback reads through
pixel-buffer objects and the CUDA handoff can register as images.
"""

from __future__ import annotations

from dataclasses import dataclass

import moderngl

from .. import glsl
from .._gl import dispatch_compute
from ..colour import ColourSpec

#: Packed RGB layouts made by :class:`glrec.interop.pack.RgbPacker`, with bytes per pixel:
#: rgb24 for nvJPEG (interleaved RGB), rgba for NVENC's ABGR input (R in the lowest byte).
PACKED_RGB: dict[str, int] = {"rgb24": 3, "rgba": 4}


@dataclass(frozen=True)
class PlaneLayout:
    """Where each plane of a converted frame sits in a packed host buffer."""

    pix_fmt: str
    width: int
    height: int
    # (width, height, components) per plane texture
    planes: tuple[tuple[int, int, int], ...]

    @property
    def nbytes(self) -> int:
        return sum(w * h * c for w, h, c in self.planes)

    @property
    def offsets(self) -> tuple[int, ...]:
        out, at = [], 0
        for w, h, c in self.planes:
            out.append(at)
            at += w * h * c
        return tuple(out)

    @property
    def host_shape(self) -> tuple[int, ...]:
        """The numpy shape PyAV's ``from_ndarray`` expects for this pixel format."""
        if self.pix_fmt == "yuv444p":
            return (3, self.height, self.width)
        if self.pix_fmt in PACKED_RGB:
            return (self.height, self.width, PACKED_RGB[self.pix_fmt])
        return (self.height * 3 // 2, self.width)

    @classmethod
    def for_format(cls, pix_fmt: str, width: int, height: int) -> PlaneLayout:
        if pix_fmt in PACKED_RGB:
            return cls(pix_fmt, width, height, ((width, height, PACKED_RGB[pix_fmt]),))
        if pix_fmt == "yuv444p":
            return cls(pix_fmt, width, height, ((width, height, 1),) * 3)
        cw, ch = width // 2, height // 2
        if pix_fmt == "nv12":
            return cls(pix_fmt, width, height, ((width, height, 1), (cw, ch, 2)))
        return cls(pix_fmt, width, height, ((width, height, 1), (cw, ch, 1), (cw, ch, 1)))


class Converter:
    """Owns the compute shader and the output plane textures for one size and format."""

    GROUP = 8  # must match local_size in convert_yuv.comp

    def __init__(
        self,
        ctx: moderngl.Context,
        src_size: tuple[int, int],
        dst_size: tuple[int, int],
        pix_fmt: str,
        colour: ColourSpec,
    ) -> None:
        self.ctx = ctx
        self.layout = PlaneLayout.for_format(pix_fmt, *dst_size)
        sub = 1 if pix_fmt == "yuv444p" else 2
        self._shader = glsl.compute(
            ctx, "convert_yuv.comp", {"SUB_X": sub, "SUB_Y": sub, "INTERLEAVED": int(pix_fmt == "nv12")}
        )
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
            self._shader[name].value = value  # type: ignore[union-attr]
        self.planes = self.new_planes()
        cw, ch = self.layout.planes[1][:2]
        self._groups = ((cw + self.GROUP - 1) // self.GROUP, (ch + self.GROUP - 1) // self.GROUP)

    def new_planes(self) -> list[moderngl.Texture]:
        """Another set of output textures (the register handoff swaps a ring of them into :attr:`planes`)."""
        return [self.ctx.texture((w, h), c, dtype="f1") for w, h, c in self.layout.planes]

    def run(self, source: moderngl.Texture) -> None:
        """Convert ``source`` into :attr:`planes` (queued on the GPU; returns at once)."""
        source.use(0)
        for unit, tex in enumerate(self.planes):
            tex.bind_to_image(unit, read=False, write=True)
        dispatch_compute(self._shader.glo, *self._groups)  # releases the GIL (see dispatch_compute)
        # Later reads of the planes (pixel transfers, texture fetches) must see these writes.
        self.ctx.memory_barrier(moderngl.TEXTURE_UPDATE_BARRIER_BIT | moderngl.TEXTURE_FETCH_BARRIER_BIT)

    def release(self) -> None:
        planes, self.planes = self.planes, []
        for t in planes:
            t.release()
        shader, self._shader = self._shader, None  # type: ignore[assignment]
        if shader is not None:
            shader.release()
