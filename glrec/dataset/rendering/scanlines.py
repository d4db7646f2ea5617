"""PNG passes filtered on the GPU: the id passes and 8-bit normals of a packed chunk as their PNGs' scanlines.

A shard worker deflates each PNG pass's filtered rows. Filtering them on the host (glrec's one filter, Up: each
byte minus the byte above it, 16-bit samples big-endian) read and wrote every byte once more: on the H200, with
16 workers bound by their CPU, leaving the filter out saved 0.8 ms of CPU a sample and wrote 1.11x the samples/s
(``benchmarks/dataset_workers.py --env GLREC_BENCH_WHAT_IF=no-row-filter``, 2026-12-05). With
``PassPacker(scanlines=True)`` the pack shader (``dataset_pack.comp``, ``ROWS``) writes those passes' pixels to a
scratch buffer that stays on the GPU, and ``dataset_rows.comp`` writes their scanlines where the host reads the
chunk; the host only deflates (:class:`~glrec.encoders.png.writer.ScanLines`). The scanlines are the bytes
:func:`~glrec.encoders.png.writer.png_rows` makes of the same pixels, so the files are unchanged.
"""

from __future__ import annotations

import moderngl

from ...gl import glsl
from ...gl.context import software_gl
from ...gl.fences import dispatch_compute

__all__ = ["ON_GPU", "ROW_PASSES", "RowsFilter", "on_gpu"]

#: Where a shard worker filters its PNG passes' rows: ``"auto"`` on the GPU where GL runs on one, on the host
#: under software GL (Mesa llvmpipe, where the shader runs on the same CPU, slower than NumPy: 2 workers on the
#: 2-core machine wrote 52 samples/s against 78-84 with the host filter); ``"gpu"`` or ``"host"`` always. A
#: benchmark switch too (``GLREC_BENCH_SCANLINES``); the files are the same bytes either way.
ON_GPU = "auto"

#: The packed passes a file holds as PNG whose rows the GPU can filter: ids (16 bit), normals (8-bit RGB).
ROW_PASSES = ("instance", "semantic", "normal")


def on_gpu(ctx: moderngl.Context) -> bool:
    """Whether a shard worker on ``ctx`` has its PNG passes filtered on the GPU (:data:`ON_GPU`)."""
    return ON_GPU == "gpu" or (ON_GPU == "auto" and not software_gl(ctx))


class RowsFilter:
    """``dataset_rows.comp`` for ``passes``: pass -> (byte offset of its pixels in the scratch buffer, byte offset
    of its scanlines in the packed output, bytes per pixel: 2 for 16-bit ids, 3 for RGB), for images of ``size``."""

    GROUP = 64  # the shader's local_size_x

    def __init__(self, ctx: moderngl.Context, size: tuple[int, int], passes: dict[str, tuple[int, int, int]]) -> None:
        self.ctx = ctx
        self.size = size
        self.passes = passes
        self._shader: moderngl.ComputeShader | None = glsl.compute(ctx, "dataset_rows.comp")

    @staticmethod
    def lines_nbytes(bpp: int, size: tuple[int, int]) -> int:
        """Bytes of the scanlines of an image of ``size`` and ``bpp`` bytes a pixel: a filter byte a row, then the
        row's bytes."""
        w, h = size
        return h * (1 + w * bpp)

    def run(self, n: int, stride: int, scratch_stride: int) -> None:
        """Filter ``n`` layers' passes, after the pack dispatch and with its bindings: the scratch buffer at 6
        (``scratch_stride`` bytes per layer), the output at 0 (``stride`` bytes per layer)."""
        shader = self._shader
        assert shader is not None, "released"
        self.ctx.memory_barrier(moderngl.SHADER_STORAGE_BARRIER_BIT)  # the pack shader's writes, read here
        w, h = self.size
        shader["rows"].value = h
        shader["stride"].value = stride // 4
        shader["scratch_stride"].value = scratch_stride // 4
        for at_in, at_out, bpp in self.passes.values():
            shader["row_bytes"].value = w * bpp
            shader["swap"].value = int(bpp == 2)
            shader["at_in"].value = at_in // 4
            shader["at_out"].value = at_out // 4
            words = (self.lines_nbytes(bpp, self.size) + 3) // 4
            dispatch_compute(shader.glo, (words + self.GROUP - 1) // self.GROUP, n)

    def release(self) -> None:
        shader, self._shader = self._shader, None
        if shader is not None:
            shader.release()
