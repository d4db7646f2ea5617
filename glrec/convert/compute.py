"""One compute pass over a frame: the render target sampled, output planes bound as images, dispatched."""

from __future__ import annotations

import moderngl

from .._gl import dispatch_compute


class ComputePass:
    """Runs ``shader`` over a ``grid`` of texels in groups of ``group`` x ``group``; owns the shader."""

    def __init__(
        self, ctx: moderngl.Context, shader: moderngl.ComputeShader, group: int, grid: tuple[int, int]
    ) -> None:
        self.ctx = ctx
        self.shader: moderngl.ComputeShader | None = shader
        self.groups = ((grid[0] + group - 1) // group, (grid[1] + group - 1) // group)

    def run(self, source: moderngl.Texture, planes: list[moderngl.Texture]) -> None:
        """Queue the pass on the GPU (returns at once)."""
        assert self.shader is not None, "released"
        source.use(0)
        for unit, tex in enumerate(planes):
            tex.bind_to_image(unit, read=False, write=True)
        dispatch_compute(self.shader.glo, *self.groups)  # releases the GIL (see dispatch_compute)
        # Later reads of the planes (pixel transfers, texture fetches) must see these writes.
        self.ctx.memory_barrier(moderngl.TEXTURE_UPDATE_BARRIER_BIT | moderngl.TEXTURE_FETCH_BARRIER_BIT)

    def release(self, planes: list[moderngl.Texture]) -> None:
        """Release ``planes`` and the shader; safe twice."""
        for t in planes:
            t.release()
        shader, self.shader = self.shader, None
        if shader is not None:
            shader.release()
