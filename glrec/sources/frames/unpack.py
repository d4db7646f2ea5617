"""A strided frame in a GL buffer -> the RGBA8 render target, on the GPU (``shaders/unpack_frame.comp``).

The CUDA source copies each frame into a GL buffer as compactly as its
strides allow (:func:`copy_plan`) and this pass reads it from there: any row,
pixel and channel strides (negative too), uint8/uint16/float16/float32,
grey/RGB/RGBA, rows flipped into GL's bottom-up order. Float frames are
checked on the GPU as they are converted; :meth:`UnpackPass.run` raises
before the frame is recorded when one holds NaN or values outside [0, 1].
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import moderngl
import numpy as np

from ...errors import ConfigError
from ...gl import glsl
from ...gl.fences import dispatch_compute
from .written import FLOAT_TOLERANCE

_DTYPE_CODE = {"uint8": 0, "uint16": 1, "float16": 2, "float32": 3}
_GROUP = 8  # local_size in unpack_frame.comp


@dataclass(frozen=True)
class CopyPlan:
    """How to copy a strided frame into a staging buffer, and where the shader then finds each element.

    The copy reads ``rows`` runs of ``row_bytes`` bytes, ``src_pitch`` apart, starting
    ``src_offset`` bytes from element [0, 0, 0] (never after it), and writes them back to
    back. In the buffer, element [y, x, c] is at ``origin + y*strides[0] + x*strides[1] +
    c*strides[2]``.
    """

    src_offset: int
    rows: int
    row_bytes: int
    src_pitch: int
    origin: int
    strides: tuple[int, int, int]

    @property
    def nbytes(self) -> int:
        return self.rows * self.row_bytes


def copy_plan(shape: tuple[int, int, int], strides: tuple[int, int, int], itemsize: int) -> CopyPlan:
    """The smallest plain copy of a ``shape`` frame with byte ``strides`` (any sign) that keeps every element.

    Rows that do not overlap (the usual case, crops included) are copied as a 2-D
    copy of just their pixels; otherwise (transposed views, broadcast rows) the
    whole byte span is copied as one run with the strides as they are.
    """
    h, w, c = shape
    rs, ps, cs = strides
    lo_in = min(0, (w - 1) * ps) + min(0, (c - 1) * cs)
    hi_in = max(0, (w - 1) * ps) + max(0, (c - 1) * cs) + itemsize
    extent = hi_in - lo_in
    if h == 1 or abs(rs) >= extent:
        first = 0 if rs >= 0 else h - 1  # the row at the lowest address is copied first
        return CopyPlan(
            src_offset=first * rs + lo_in, rows=h, row_bytes=extent, src_pitch=abs(rs) if h > 1 else extent,
            origin=first * extent - lo_in, strides=(extent if rs >= 0 else -extent, ps, cs),
        )  # fmt: skip
    lo = lo_in + min(0, (h - 1) * rs)
    hi = hi_in + max(0, (h - 1) * rs)
    return CopyPlan(src_offset=lo, rows=1, row_bytes=hi - lo, src_pitch=hi - lo, origin=-lo, strides=strides)


class UnpackPass:
    """Runs ``unpack_frame.comp``: one compiled variant per dtype, made on first use."""

    def __init__(self, ctx: moderngl.Context) -> None:
        self.ctx = ctx
        self._shaders: dict[str, moderngl.ComputeShader] = {}
        self._flags: moderngl.Buffer | None = ctx.buffer(reserve=4)

    def run(
        self, buffer: moderngl.Buffer, plan: CopyPlan, shape: tuple[int, int, int], dtype: np.dtype, target: Any
    ) -> None:
        """Unpack the frame ``plan`` put in ``buffer`` into the RGBA8 texture ``target`` (rows flipped)."""
        h, w, c = shape
        shader = self._shader(dtype.name)
        values = {"size": (w, h), "origin": plan.origin, "stride": plan.strides, "channels": c,
                  "tolerance": FLOAT_TOLERANCE}  # fmt: skip
        for name, value in values.items():
            uniform = shader.get(name, None)  # a variant may have optimised one away (tolerance for uint)
            if uniform is not None:
                uniform.value = value  # type: ignore[union-attr]
        checked = dtype.kind == "f"
        assert self._flags is not None, "released"
        if checked:
            self._flags.write(b"\0\0\0\0")
        buffer.bind_to_storage_buffer(0)
        self._flags.bind_to_storage_buffer(1)
        target.bind_to_image(0, read=False, write=True)
        dispatch_compute(shader.glo, (w + _GROUP - 1) // _GROUP, (h + _GROUP - 1) // _GROUP)
        self.ctx.memory_barrier(moderngl.ALL_BARRIER_BITS)
        if checked:
            # Reading the flags waits for this pass only (microseconds on a GPU); uint frames skip it.
            _raise_for_flags(int(np.frombuffer(self._flags.read(), np.uint32)[0]))

    def _shader(self, dtype: str) -> moderngl.ComputeShader:
        shader = self._shaders.get(dtype)
        if shader is None:
            shader = self._shaders[dtype] = glsl.compute(self.ctx, "unpack_frame.comp", {"DTYPE": _DTYPE_CODE[dtype]})
        return shader

    def release(self) -> None:
        """Release the shaders and the flag buffer. Safe twice."""
        shaders, self._shaders = self._shaders, {}
        for shader in shaders.values():
            shader.release()
        flags, self._flags = self._flags, None
        if flags is not None:
            flags.release()


def _raise_for_flags(flags: int) -> None:
    if flags & 1:
        raise ConfigError(
            "The float frame holds NaN or infinite values; frames must be finite values in [0, 1]. "
            "Replace them first (e.g. torch.nan_to_num)."
        )
    if flags & 6:
        side = " and ".join(s for bit, s in ((2, "below 0"), (4, "above 1")) if flags & bit)
        raise ConfigError(
            f"The float frame has values {side}; float frames are in [0, 1] (divide 0..255 values by 255)."
        )
