"""The render target: a framebuffer with an RGBA8 colour texture and a depth buffer, where sources draw."""

from __future__ import annotations

import moderngl

from ..errors import ConfigError


class RenderTarget:
    """One framebuffer the scene draws into.

    The colour attachment is an RGBA8 texture so the convert stage (and the
    CUDA handoff) can read it as an image; depth is a renderbuffer because
    nothing downstream reads it.
    """

    def __init__(self, ctx: moderngl.Context, size: tuple[int, int]) -> None:
        max_size = int(ctx.info["GL_MAX_TEXTURE_SIZE"])
        if max(size) > max_size:
            raise ConfigError(
                f"Size {size[0]}x{size[1]} exceeds this GPU's largest texture ({max_size} pixels a side); "
                f"use a size of at most {max_size}x{max_size}."
            )
        self.size = size
        self.colour = ctx.texture(size, 4, dtype="f1")
        self.depth = ctx.depth_renderbuffer(size)
        self.fbo = ctx.framebuffer(color_attachments=[self.colour], depth_attachment=self.depth)

    def use(self) -> None:
        self.fbo.use()
        self.fbo.viewport = (0, 0, *self.size)

    def release(self) -> None:
        fbo = getattr(self, "fbo", None)
        if fbo is not None and fbo.ctx.fbo is fbo:
            # moderngl re-binds its "current" framebuffer when it makes the next one; if that
            # is this deleted object, GL raises INVALID_OPERATION. Unbind it first.
            fbo.ctx.detect_framebuffer(0).use()
        for name in ("fbo", "depth", "colour"):
            obj = getattr(self, name, None)
            if obj is not None:
                obj.release()
                setattr(self, name, None)
