"""Where each plane of a converted frame sits: the contract between convert, handoffs and encoders (a ground type)."""

from __future__ import annotations

from dataclasses import dataclass

#: Packed RGB layouts made by :class:`glrec.convert.RgbPacker`, with bytes per pixel:
#: rgb24 for nvJPEG (interleaved RGB), rgba for NVENC's ABGR input (R in the lowest byte).
PACKED_RGB: dict[str, int] = {"rgb24": 3, "rgba": 4}


def texel_bytes(row_bytes: int) -> int:
    """Bytes per texel of a packed plane texture whose rows are ``row_bytes`` long: 4, 2 or 1."""
    return 4 if row_bytes % 4 == 0 else 2 if row_bytes % 2 == 0 else 1


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
    def textures(self) -> tuple[tuple[int, int, int], ...]:
        """(width, height, components) of the 8-bit texture holding each plane, bytes tightly packed.

        A texel holds 4, 2 or 1 consecutive bytes of a row (rgba8, rg8, r8): the most
        that divide the row's length. Stores of whole 32-bit texels are much cheaper
        than per-byte stores, and a texture's rows stay exactly the plane's rows, so
        reading a texture back (``glGetTexImage``, a CUDA array copy) gives the plane's
        bytes as they are.
        """
        return tuple((w * c // texel_bytes(w * c), h, texel_bytes(w * c)) for w, h, c in self.planes)

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
