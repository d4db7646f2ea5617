"""Decoded pixel formats as the GPU sees them, and the YUV -> RGB maths for each stream.

A decoded picture is uploaded as it comes out of the decoder (its planes, at
their bit depth) and turned into RGB by a shader (``shaders/yuv_to_rgb.frag``),
so the host never runs a colour conversion. :class:`PlaneFormat` says how many
textures a format needs, what each holds, and which texture component feeds
which of the shader's four channels (Y/R, Cb/G, Cr/B, alpha). Formats outside
the table (palettes, packed 4:2:2, Bayer, ...) are converted once on the CPU
by FFmpeg's swscale into the nearest one that is in it.

The matrix and range come from the stream's own tags. Where the stream says
nothing, glrec assumes what FFmpeg assumes: BT.601 and limited range for YUV
(full range for the ``yuvj`` formats and for JPEG decoders), because that is
how FFmpeg itself converted RGB material it encoded without tags.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...errors import ConfigError

log = logging.getLogger("glrec")

# Luma weights (Kr, Kb) by FFmpeg AVColorSpace code (= H.273 matrix_coefficients).
_KR_KB: dict[int, tuple[str, float, float]] = {
    1: ("bt709", 0.2126, 0.0722),
    4: ("fcc", 0.30, 0.11),
    5: ("bt470bg", 0.299, 0.114),
    6: ("smpte170m", 0.299, 0.114),
    7: ("smpte240m", 0.212, 0.087),
    9: ("bt2020nc", 0.2627, 0.0593),
    10: ("bt2020c", 0.2627, 0.0593),  # constant-luminance decoded as non-constant: close, not exact
}
MATRIX_NAMES: dict[str, int] = {name: code for code, (name, _, _) in _KR_KB.items()} | {"bt601": 6}
UNSPECIFIED_MATRIX = 6  # FFmpeg's default (BT.601) when a stream carries no matrix

# One texture: (number of components, bytes per sample, horizontal and vertical subsampling).
Texture = tuple[int, int, int, int]


@dataclass(frozen=True)
class PlaneFormat:
    """How one pixel format becomes textures and shader channels.

    ``textures`` are the GL textures in plane order. ``picks`` says, for each
    shader channel (Y or R, Cb or G, Cr or B, alpha), which ``(texture,
    component)`` feeds it, or None for a constant (mid-grey chroma, opaque
    alpha). ``bits`` is the significant bits per sample; ``msb`` is True where
    they sit in the high bits of a 16-bit word (P010).
    """

    name: str
    textures: tuple[Texture, ...]
    picks: tuple[tuple[int, int] | None, ...]
    rgb: bool = False
    bits: int = 8
    msb: bool = False
    full_range: bool = False  # the format implies full range (yuvj*)

    def constants(self, neutral: tuple[float, float]) -> np.ndarray:
        """Values of the channels no texture feeds: ``neutral`` chroma (grey) and opaque alpha."""
        const = np.zeros(4, np.float32)
        for channel, pick in enumerate(self.picks):
            if pick is None:
                const[channel] = 1.0 if channel == 3 else (0.0 if self.rgb else neutral[channel - 1])
        return const

    def value_scale(self) -> float:
        """Factor from a normalised texture value to a code value over ``2**bits - 1``."""
        if self.textures[0][1] == 1:
            return 1.0
        top = (1 << self.bits) - 1
        return 65535.0 / (top << (16 - self.bits)) if self.msb else 65535.0 / top


def _planar_yuv(name: str, sub: tuple[int, int], bits: int, alpha: bool, full: bool = False) -> PlaneFormat:
    size = 1 if bits == 8 else 2
    tex = [(1, size, 1, 1), (1, size, *sub), (1, size, *sub)]
    picks: list[tuple[int, int] | None] = [(0, 0), (1, 0), (2, 0), (3, 0) if alpha else None]
    if alpha:
        tex.append((1, size, 1, 1))
    return PlaneFormat(name, tuple(tex), tuple(picks), bits=bits, full_range=full)


def _table() -> dict[str, PlaneFormat]:
    t: dict[str, PlaneFormat] = {}
    subs = {"420": (2, 2), "422": (2, 1), "444": (1, 1), "440": (1, 2), "411": (4, 1), "410": (4, 4)}
    for s, sub in subs.items():
        t[f"yuv{s}p"] = _planar_yuv(f"yuv{s}p", sub, 8, False)
        t[f"yuvj{s}p"] = _planar_yuv(f"yuvj{s}p", sub, 8, False, full=True)
        t[f"yuva{s}p"] = _planar_yuv(f"yuva{s}p", sub, 8, True)
        for bits in (9, 10, 12, 14, 16):
            t[f"yuv{s}p{bits}le"] = _planar_yuv(f"yuv{s}p{bits}le", sub, bits, False)
            t[f"yuva{s}p{bits}le"] = _planar_yuv(f"yuva{s}p{bits}le", sub, bits, True)
    t["nv12"] = PlaneFormat("nv12", ((1, 1, 1, 1), (2, 1, 2, 2)), ((0, 0), (1, 0), (1, 1), None))
    t["nv21"] = PlaneFormat("nv21", ((1, 1, 1, 1), (2, 1, 2, 2)), ((0, 0), (1, 1), (1, 0), None))
    t["nv16"] = PlaneFormat("nv16", ((1, 1, 1, 1), (2, 1, 2, 1)), ((0, 0), (1, 0), (1, 1), None))
    t["nv24"] = PlaneFormat("nv24", ((1, 1, 1, 1), (2, 1, 1, 1)), ((0, 0), (1, 0), (1, 1), None))
    for bits, name in ((10, "p010le"), (12, "p012le"), (16, "p016le")):
        t[name] = PlaneFormat(name, ((1, 2, 1, 1), (2, 2, 2, 2)), ((0, 0), (1, 0), (1, 1), None), bits=bits, msb=True)
    for bits, name in ((8, "gray"), (10, "gray10le"), (12, "gray12le"), (16, "gray16le")):
        t[name] = PlaneFormat(name, ((1, 1 if bits == 8 else 2, 1, 1),), ((0, 0), None, None, None), bits=bits)
    # Packed RGB: component order in memory, as FFmpeg names it.
    packed = {"rgb24": "rgb", "bgr24": "bgr", "rgba": "rgba", "bgra": "bgra", "argb": "argb", "abgr": "abgr",
              "rgb0": "rgb_", "bgr0": "bgr_", "0rgb": "_rgb", "0bgr": "_bgr"}  # fmt: skip
    for name, order in packed.items():
        picks = tuple((0, order.index(c)) if c in order else None for c in "rgba")
        t[name] = PlaneFormat(name, ((len(order), 1, 1, 1),), picks, rgb=True)
    t["rgb48le"] = PlaneFormat("rgb48le", ((3, 2, 1, 1),), ((0, 0), (0, 1), (0, 2), None), rgb=True, bits=16)
    t["rgba64le"] = PlaneFormat("rgba64le", ((4, 2, 1, 1),), ((0, 0), (0, 1), (0, 2), (0, 3)), rgb=True, bits=16)
    # Planar RGB is stored G, B, R (and A) in FFmpeg.
    for bits in (8, 10, 12, 16):
        suffix = "" if bits == 8 else f"{bits}le"
        size = 1 if bits == 8 else 2
        t[f"gbrp{suffix}"] = PlaneFormat(
            f"gbrp{suffix}", ((1, size, 1, 1),) * 3, ((2, 0), (0, 0), (1, 0), None), rgb=True, bits=bits
        )
        t[f"gbrap{suffix}"] = PlaneFormat(
            f"gbrap{suffix}", ((1, size, 1, 1),) * 4, ((2, 0), (0, 0), (1, 0), (3, 0)), rgb=True, bits=bits
        )
    return t


FORMATS: dict[str, PlaneFormat] = _table()


def cpu_fallback(fmt: object) -> str:
    """The table format swscale should convert an unlisted format ``fmt`` (an ``av.VideoFormat``) into."""
    comps = list(getattr(fmt, "components", ()))
    deep = any(c.bits > 8 for c in comps)
    alpha = any(c.is_alpha for c in comps)
    if getattr(fmt, "is_rgb", False) or getattr(fmt, "has_palette", False) or getattr(fmt, "is_bayer", False):
        return "rgba64le" if deep else "rgba"
    if alpha:
        return "yuva444p16le" if deep else "yuva444p"
    return "yuv444p16le" if deep else "yuv444p"


@dataclass(frozen=True)
class YuvToRgb:
    """The affine map from normalised code values to RGB: ``rgb = matrix @ ((code - offset) / scale)``."""

    matrix: np.ndarray  # 3x3, rows R, G, B
    offset: np.ndarray  # 3
    scale: np.ndarray  # 3
    name: str  # e.g. "bt709 limited"


def yuv_to_rgb(colorspace: int, full_range: bool, bits: int) -> YuvToRgb:
    """The conversion for an AVColorSpace code (2 = unspecified), range and bit depth.

    Limited range puts black at 16 and white at 235 (chroma 16..240) scaled by
    ``2**(bits-8)``; full range uses every code. Chroma is centred on ``2**(bits-1)``.
    """
    code = colorspace if colorspace in _KR_KB else UNSPECIFIED_MATRIX
    name, kr, kb = _KR_KB[code]
    kg = 1.0 - kr - kb
    m = np.array(
        [[1.0, 0.0, 2.0 * (1.0 - kr)],
         [1.0, -2.0 * (1.0 - kb) * kb / kg, -2.0 * (1.0 - kr) * kr / kg],
         [1.0, 2.0 * (1.0 - kb), 0.0]],
        np.float64,
    )  # fmt: skip
    top = float((1 << bits) - 1)
    unit = float(1 << (bits - 8))
    centre = (1 << (bits - 1)) / top
    if full_range:
        offset, scale = np.array([0.0, centre, centre]), np.array([1.0, 1.0, 1.0])
    else:
        offset = np.array([16.0 * unit / top, centre, centre])
        scale = np.array([219.0 * unit / top, 224.0 * unit / top, 224.0 * unit / top])
    return YuvToRgb(m, offset, scale, f"{name} {'full' if full_range else 'limited'}")


@dataclass(frozen=True)
class ColourChoice:
    """An input's ``matrix`` and ``range`` as the user gave them; None: the stream's tags decide."""

    matrix: int | None = None  # AVColorSpace code
    full: bool | None = None

    @classmethod
    def parse(cls, matrix: str | None, range: str | None) -> ColourChoice:
        """Check the names (``bt709``, ``bt601``, ``bt2020nc``, ...; ``limited``, ``full``)."""
        if matrix is not None and matrix not in MATRIX_NAMES:
            raise ConfigError(f"Unknown input matrix {matrix!r}. Valid: {', '.join(sorted(MATRIX_NAMES))}.")
        if range not in (None, "limited", "full"):
            raise ConfigError(f"Unknown input range {range!r}. Valid: full, limited.")
        return cls(None if matrix is None else MATRIX_NAMES[matrix], None if range is None else range == "full")

    def of(self, frame: Any, fmt: PlaneFormat) -> tuple[int, bool]:
        """The AVColorSpace code and full-range flag to convert ``frame`` (of format ``fmt``) with.

        The user's choice first, then the frame's tags, then the format's default range.
        """
        colorspace = self.matrix if self.matrix is not None else int(getattr(frame, "colorspace", 2) or 2)
        if self.full is not None:
            return colorspace, self.full
        tagged = int(getattr(frame, "color_range", 0) or 0)
        return colorspace, tagged == 2 if tagged else fmt.full_range
