"""One compute pass over a frame: the render target sampled, output planes bound as images, dispatched."""

from __future__ import annotations

from collections.abc import Sequence

import moderngl

from ..gl.fences import dispatch_compute
from ..layout import PlaneLayout


class ComputeStage:
    """A convert stage that is one compute pass, writing the planes of ``layout``.

    Runs ``shader`` over a ``grid`` of invocations in groups of ``group`` x ``group``
    and owns it and its output textures, :attr:`planes`, of the sizes in ``textures``
    (default: ``layout.textures``). :class:`~glrec.convert.yuv.Converter` and
    :class:`~glrec.convert.pack.RgbPacker` are the two: each builds its shader and grid.
    """

    def __init__(
        self,
        ctx: moderngl.Context,
        layout: PlaneLayout,
        shader: moderngl.ComputeShader,
        group: int,
        grid: tuple[int, int],
        textures: Sequence[tuple[int, int, int]] | None = None,
    ) -> None:
        self.ctx = ctx
        self.layout = layout
        self._textures = list(layout.textures if textures is None else textures)
        self._shader: moderngl.ComputeShader | None = shader
        self._groups = ((grid[0] + group - 1) // group, (grid[1] + group - 1) // group)
        self.planes = self.new_planes()

    def new_planes(self) -> list[moderngl.Texture]:
        """Another set of output textures (the register handoff swaps a ring of them into :attr:`planes`)."""
        return [self.ctx.texture((w, h), c, dtype="f1") for w, h, c in self._textures]

    def run(self, source: moderngl.Texture) -> None:
        """Write ``source`` into :attr:`planes` (queued on the GPU; returns at once)."""
        assert self._shader is not None, "released"
        source.use(0)
        for unit, tex in enumerate(self.planes):
            tex.bind_to_image(unit, read=False, write=True)
        dispatch_compute(self._shader.glo, *self._groups)  # releases the GIL (see dispatch_compute)
        # Later reads of the planes (pixel transfers, texture fetches) must see these writes.
        self.ctx.memory_barrier(moderngl.TEXTURE_UPDATE_BARRIER_BIT | moderngl.TEXTURE_FETCH_BARRIER_BIT)

    def release(self) -> None:
        """Release the planes and the shader; safe twice."""
        planes, self.planes = self.planes, []
        for t in planes:
            t.release()
        shader, self._shader = self._shader, None
        if shader is not None:
            shader.release()
