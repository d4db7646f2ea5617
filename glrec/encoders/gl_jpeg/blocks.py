"""The block structure of a GL JPEG (MCUs, restart segments, buffer bounds) and what a GL must allow for it.

Pure arithmetic on (size, subsampling, restart interval, batch) plus the checks
of :func:`check_limits`, which run before any GL object is made. The encoder
itself is :class:`glrec.encoders.gl_jpeg.stage.GlJpegStage`.
"""

from __future__ import annotations

import ctypes
import functools
import math
from dataclasses import dataclass

import moderngl

from ...errors import ConfigError
from . import tables

SUBSAMPLING = {"yuv420p": "420", "yuv444p": "444"}

#: The most blocks one restart segment may hold. One work group codes a segment and keeps its
#: coefficients and bits in shared memory: 63 blocks need 30.5 KiB, within the 32 KiB every GL 4.3
#: offers; 10 MCUs at 4:2:0, 21 at 4:4:4.
MAX_SEGMENT_BLOCKS = 64
#: Invocations per block in the segment pass (``shaders/jpeg_segment.comp``): each takes 2 rows, 2
#: columns and 16 coefficients. At least 4: at 4:2:0 a third of them fetch 16 texels each.
LANES = 4
#: Segments per tile: the first level of the two-level prefix sum of segment lengths.
TILE = 64


@dataclass(frozen=True)
class JpegGeometry:
    """The block structure of a ``width`` x ``height`` JPEG with ``subsampling`` and ``restart`` MCUs per segment."""

    width: int
    height: int
    subsampling: str  # "420" or "444"
    restart: int

    @functools.cached_property
    def sub(self) -> int:
        return 2 if self.subsampling == "420" else 1

    @functools.cached_property
    def blocks_per_mcu(self) -> int:
        return self.sub * self.sub + 2

    @functools.cached_property
    def mcus_x(self) -> int:
        return -(-self.width // (8 * self.sub))

    @functools.cached_property
    def mcus_y(self) -> int:
        return -(-self.height // (8 * self.sub))

    @functools.cached_property
    def mcus(self) -> int:
        return self.mcus_x * self.mcus_y

    @functools.cached_property
    def segments(self) -> int:
        return -(-self.mcus // self.restart)

    @functools.cached_property
    def tiles(self) -> int:
        return -(-self.segments // TILE)

    @functools.cached_property
    def segment_blocks(self) -> int:
        return self.restart * self.blocks_per_mcu

    @functools.cached_property
    def segment_words(self) -> int:
        """Words of one segment's slot: its worst case (``BLOCK_BYTES_MAX`` a block) and the marker."""
        worst = self.segment_blocks * tables.BLOCK_BYTES_MAX + tables.SEGMENT_EXTRA_BYTES
        return -(-worst // 4)

    @functools.cached_property
    def bits_words(self) -> int:
        """Words of shared memory for one segment's unstuffed bits, padding included."""
        return -(-(self.segment_blocks * tables.BLOCK_BITS_MAX + 7) // 32)

    @functools.cached_property
    def shared_bytes(self) -> int:
        """Shared memory of the segment pass's work group (see ``shaders/jpeg_segment.comp``)."""
        nb = self.segment_blocks
        return 4 * (nb * 64 + self.bits_words + 2 * nb + LANES * nb + 2 * nb)

    @functools.cached_property
    def max_bytes(self) -> int:
        """The bound on the entropy-coded bytes of a frame (what the output buffers hold)."""
        return self.segments * self.segment_words * 4

    @functools.cached_property
    def blocks(self) -> int:
        return self.mcus * self.blocks_per_mcu


def geometry(size: tuple[int, int], pix_fmt: str, restart: int | None = None) -> JpegGeometry:
    """The geometry for ``size`` and ``pix_fmt`` (yuv420p / yuv444p).

    ``restart`` (MCUs per segment) defaults to the most that fit :data:`MAX_SEGMENT_BLOCKS`
    (10 MCUs at 4:2:0, 21 at 4:4:4), or one MCU row if that is shorter.
    """
    width, height = size
    if pix_fmt not in SUBSAMPLING:
        raise ConfigError(f"The GL JPEG encoder takes pix_fmt yuv420p or yuv444p, not {pix_fmt!r}.")
    if width < 1 or height < 1 or max(width, height) > 65535:
        raise ConfigError(f"JPEG sizes are 1..65535 pixels a side, not {width}x{height}.")
    sub = 2 if pix_fmt == "yuv420p" else 1
    per_mcu = sub * sub + 2
    most = MAX_SEGMENT_BLOCKS // per_mcu
    restart = min(-(-width // (8 * sub)), most) if restart is None else restart
    if not 1 <= restart <= most:
        raise ConfigError(
            f"restart interval {restart} must be 1..{most} MCUs at {pix_fmt} (at most {MAX_SEGMENT_BLOCKS} blocks "
            "per segment: one GPU work group codes a segment in its shared memory)."
        )
    return JpegGeometry(width, height, SUBSAMPLING[pix_fmt], restart)


def gl_integer(ctx: moderngl.Context, pname: int) -> int:
    """``glGetIntegerv(pname)`` for limits moderngl's ``info`` leaves out."""
    from ...gl.fences import gl_function

    value = ctypes.c_int(0)
    gl_function("glGetIntegerv", None, ctypes.c_uint, ctypes.POINTER(ctypes.c_int))(pname, ctypes.byref(value))
    return value.value


GL_MAX_COMPUTE_SHARED_MEMORY_SIZE = 0x8262
GL_MAX_COMPUTE_TEXTURE_IMAGE_UNITS = 0x91BC


def check_limits(ctx: moderngl.Context, geo: JpegGeometry, source_size: tuple[int, int], batch: int) -> None:
    """Refuse what this GL cannot hold (texture size, buffer size, shared memory), before any GL object is made."""
    max_tex = int(ctx.info["GL_MAX_TEXTURE_SIZE"])
    w, h = source_size
    if max(w, h) > max_tex:
        raise ConfigError(
            f"Size {w}x{h} exceeds this GPU's largest texture ({max_tex} pixels a side); "
            f"use a size of at most {max_tex}x{max_tex}."
        )
    max_ssbo = int(ctx.info.get("GL_MAX_SHADER_STORAGE_BLOCK_SIZE") or 0)
    frame = geo.max_bytes + 4  # a frame's segment slots, or its output region and length word
    if max_ssbo and frame > max_ssbo:
        side = int(math.sqrt(max_ssbo / frame) * min(geo.width, geo.height)) // 16 * 16
        # 4:2:0 holds half the samples of 4:4:4: worth suggesting only where 4:4:4 is what was asked for
        other = ", or yuv420p instead of yuv444p" if geo.subsampling == SUBSAMPLING["yuv444p"] else ""
        raise ConfigError(
            f"A {geo.width}x{geo.height} JPEG needs a {frame >> 20} MiB storage buffer (its worst case); this GL "
            f"allows {max_ssbo >> 20} MiB. Use a smaller size (about {side} pixels on the short side at this "
            f"aspect){other}."
        )
    if max_ssbo and batch * frame > max_ssbo:
        raise ConfigError(
            f"A batch of {batch} {geo.width}x{geo.height} JPEGs needs a {batch * frame >> 20} MiB storage buffer; "
            f"this GL allows {max_ssbo >> 20} MiB: use a batch of at most {max_ssbo // frame}."
        )
    shared = gl_integer(ctx, GL_MAX_COMPUTE_SHARED_MEMORY_SIZE)
    if shared and geo.shared_bytes > shared:
        raise ConfigError(
            f"The GL JPEG segment pass needs {geo.shared_bytes} bytes of shared memory at restart interval "
            f"{geo.restart}; this GL offers {shared}. Use a smaller restart interval."
        )
    groups = ctx.info["GL_MAX_COMPUTE_WORK_GROUP_COUNT"]
    if geo.segments > int(groups[0]) * int(groups[1]) or batch > int(groups[2]):
        raise ConfigError(
            f"{geo.width}x{geo.height} in batches of {batch} needs more work groups than this GL can dispatch; "
            "use a smaller size, batch or a larger restart interval."
        )
