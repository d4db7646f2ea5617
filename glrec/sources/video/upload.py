"""Host pictures -> plane textures through a ring of pixel-unpack buffers.

Each picture's planes are copied once, as the decoder laid them out (rows
with their padding), into the next PBO of the ring; the texture uploads then
read from that PBO (``glTextureSubImage2D`` with ``GL_PIXEL_UNPACK_BUFFER``
bound and ``GL_UNPACK_ROW_LENGTH`` set to the plane's stride), which returns
at once and lets the GPU do the transfer while the next picture is decoded
and the last one rendered. A fence after the uploads guards the PBO: it is
written again only once the GPU has read it, so the write never stalls on a
transfer in flight and never overwrites one.
"""

from __future__ import annotations

from typing import Any

import moderngl
import numpy as np

from ...errors import ConfigError
from ...gl.context import software_gl
from ..pixel_unpack import FenceRing, unpacking
from .formats import FORMATS, PlaneFormat

_GL_FORMAT = {1: 0x1903, 2: 0x8227, 3: 0x1907, 4: 0x1908}  # RED, RG, RGB, RGBA
_GL_TYPE = {1: 0x1401, 2: 0x1403}  # UNSIGNED_BYTE, UNSIGNED_SHORT
_DTYPE = {1: "f1", 2: "nu2"}  # 8-bit and 16-bit normalised textures


def row_layout(stride: int, pixel_bytes: int) -> tuple[int, int] | None:
    """(GL_UNPACK_ROW_LENGTH, GL_UNPACK_ALIGNMENT) that make GL step ``stride`` bytes per row, or None."""
    if stride % pixel_bytes == 0:
        return stride // pixel_bytes, 1
    length = stride // pixel_bytes
    for align in (8, 4, 2):
        if stride % align == 0 and -(-length * pixel_bytes // align) * align == stride:
            return length, align
    return None


def unpack(buffer: int, textures: list[moderngl.Texture], planes: list[Any], offsets: list[int],
           fmt: PlaneFormat) -> None:  # fmt: skip
    """Fill ``textures`` from the GL buffer named ``buffer``: plane i at ``offsets[i]``, rows ``line_size`` apart.

    With ``buffer`` 0 the offsets are addresses in client memory.

    ``planes`` have ``width``, ``height`` (in texels) and ``line_size`` (bytes per row), like PyAV's planes.
    """
    with unpacking(buffer) as sub:
        for tex, plane, offset, (comps, nbytes, _, _) in zip(textures, planes, offsets, fmt.textures, strict=True):
            layout = row_layout(plane.line_size, comps * nbytes)
            if layout is None:
                raise ConfigError(
                    f"A decoded {fmt.name} plane has a row stride of {plane.line_size} bytes, which GL cannot "
                    "step through; please report this input."
                )
            sub(tex.glo, plane.width, plane.height, _GL_FORMAT[comps], _GL_TYPE[nbytes], offset, *layout)


class PlaneTextures:
    """The textures one picture geometry needs (made again when the format or size changes)."""

    def __init__(self, ctx: moderngl.Context, fmt: PlaneFormat, sizes: list[tuple[int, int]], linear: bool) -> None:
        self.fmt = fmt
        self.sizes = sizes
        self.textures: list[moderngl.Texture] = []
        for (comps, nbytes, _, _), size in zip(fmt.textures, sizes, strict=True):
            tex = ctx.texture(size, comps, dtype=_DTYPE[nbytes])
            mode = moderngl.LINEAR if linear else moderngl.NEAREST
            tex.filter = (mode, mode)
            tex.repeat_x = tex.repeat_y = False
            self.textures.append(tex)

    def release(self) -> None:
        textures, self.textures = self.textures, []
        for t in textures:
            t.release()


class PlaneUploader:
    """What an uploader shows the RGB pass (:mod:`glrec.sources.video.rgb`): its last picture's plane textures."""

    _planes: PlaneTextures | None = None

    @property
    def planes(self) -> list[moderngl.Texture]:
        return self._planes.textures if self._planes is not None else []

    @property
    def sizes(self) -> list[tuple[int, int]]:
        return self._planes.sizes if self._planes is not None else []


class PboUploader(PlaneUploader):
    """Upload ``av.VideoFrame`` planes to :attr:`planes` through ``ring`` PBOs (at least 2).

    ``chroma_filter`` "nearest" gives each pixel the chroma sample it was coded
    with, so a picture decoded and encoded again by glrec (whose encoder
    averages each 2x2 block) keeps its chroma exactly; "linear" interpolates
    it, smoother where the picture is shown enlarged or filtered.

    ``pbo`` (default: on hardware GL) uploads through the PBO ring. On a
    software rasteriser (Mesa llvmpipe) a PBO is one more CPU copy with no DMA
    to overlap, measured 1.5-2x slower at 1080p than handing GL the decoder's
    own memory, which is what ``pbo=False`` does (same row-stride handling).
    """

    def __init__(self, ctx: moderngl.Context, ring: int = 3, chroma_filter: str = "nearest",
                 pbo: bool | None = None) -> None:  # fmt: skip
        if ring < 2:
            raise ConfigError(f"upload ring {ring} must be at least 2 so uploads overlap decoding.")
        self.ctx = ctx
        if pbo is None:
            pbo = not software_gl(ctx)
        self.use_pbo = pbo
        self._pbos: list[moderngl.Buffer | None] = [None] * ring
        self._ring = FenceRing(ring)
        # Two sets of plane textures used in turn: a picture is uploaded into the set the last draw is
        # not reading, so the upload does not wait for that draw to finish (it does on Mesa llvmpipe).
        self._sets: list[PlaneTextures | None] = [None, None]
        self._set = 0
        self._linear = chroma_filter == "linear"

    def upload(self, frame: Any) -> PlaneFormat:
        """Queue the upload of ``frame`` (a decoded ``av.VideoFrame`` in a table format); returns its format."""
        fmt = FORMATS[frame.format.name]
        planes = list(frame.planes)
        sizes = [(p.width, p.height) for p in planes]
        self._set = 1 - self._set
        current = self._sets[self._set]
        if current is None or current.fmt != fmt or current.sizes != sizes:
            if current is not None:
                current.release()
            current = self._sets[self._set] = PlaneTextures(self.ctx, fmt, sizes, self._linear)
        self._planes = current
        if not self.use_pbo:
            # GL copies from client memory before the call returns: the frame need not outlive it.
            arrays = [np.frombuffer(memoryview(p), np.uint8) for p in planes]
            unpack(0, self.planes, planes, [a.ctypes.data for a in arrays], fmt)
            return fmt
        slot = self._ring.next_free()
        total = sum(p.buffer_size for p in planes)
        pbo = self._pbos[slot]
        if pbo is None or pbo.size < total:
            if pbo is not None:
                pbo.release()
            pbo = self._pbos[slot] = self.ctx.buffer(reserve=total, dynamic=True)
        offsets = []
        at = 0
        for p in planes:
            pbo.write(memoryview(p), offset=at)
            offsets.append(at)
            at += p.buffer_size
        unpack(pbo.glo, self.planes, planes, offsets, fmt)
        self._ring.guard(slot)
        return fmt

    def release(self) -> None:
        """Release the PBOs and plane textures. Safe twice."""
        self._ring.release()
        for i, pbo in enumerate(self._pbos):
            if pbo is not None:
                pbo.release()
                self._pbos[i] = None
        self._planes = None
        for i, planes in enumerate(self._sets):
            if planes is not None:
                planes.release()
                self._sets[i] = None
