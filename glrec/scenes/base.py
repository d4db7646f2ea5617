"""The Scene protocol and a base class for full-screen fragment-shader scenes."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import moderngl

from ..errors import SceneError
from ..gl import glsl


@runtime_checkable
class Scene(Protocol):
    """What glrec renders.

    ``setup(ctx, size)`` is called once with the moderngl context and the
    render size ``(width, height)``; create GL objects there. ``render(t)``
    draws the frame at time ``t`` seconds into the framebuffer glrec has bound
    (do not bind another one, or bind it back); the output must depend only on
    ``t`` so recordings are reproducible. ``close()`` releases what ``setup``
    made and is safe to call twice.

    >>> class Clear:
    ...     def setup(self, ctx, size): self.ctx = ctx
    ...     def render(self, t): self.ctx.clear(t % 1.0, 0.0, 0.0)
    ...     def close(self): pass

    Scenes may also write ground-truth passes for datasets and take parameters
    (``passes``, ``parameters``, ``randomise``, ``classes``, ``annotations``); that
    optional contract is described in :mod:`glrec.scenes.passes`.
    """

    def setup(self, ctx: moderngl.Context, size: tuple[int, int]) -> None:
        """Make the scene's GL objects in ``ctx`` (a moderngl context); called once.

        ``size`` is the frame's ``(width, height)``.
        """

    def render(self, t: float) -> None:
        """Draw the frame at ``t`` seconds into the framebuffer bound now; the picture must depend on ``t`` alone."""

    def close(self) -> None:
        """Release what ``setup`` made; safe to call twice."""


class ShaderScene:
    """A scene that is one fragment shader over the whole frame.

    The fragment shader gets ``uv`` (0..1, bottom-up), and the uniforms
    ``time`` and ``resolution`` when it declares them.
    """

    fragment: str = ""  # file name under shaders/
    origin: str = ""

    def __init__(self) -> None:
        self._prog: moderngl.Program | None = None
        self._vao: moderngl.VertexArray | None = None
        self.size = (0, 0)

    def fragment_source(self) -> str:
        """The fragment shader's GLSL source (by default the file ``fragment`` names under ``shaders/``)."""
        return glsl.source(self.fragment)

    def setup(self, ctx: moderngl.Context, size: tuple[int, int]) -> None:
        """Compile the shader (a failure raises ShaderError with the driver's log) for frames of ``size``."""
        self.ctx = ctx
        self.size = size
        self._prog = glsl.program(
            ctx, glsl.source("fullscreen.vert"), self.fragment_source(), origin=self.origin or self.fragment
        )
        self._vao = ctx.vertex_array(self._prog, [])
        self._set("resolution", (float(size[0]), float(size[1])))

    def _set(self, name: str, value: object) -> None:
        assert self._prog is not None
        if name in self._prog:
            self._prog[name].value = value  # type: ignore[union-attr]

    def render(self, t: float) -> None:
        """Draw the full-screen shader with ``time`` = ``t`` into the framebuffer bound now."""
        assert self._vao is not None, "call setup() first"
        self._set("time", float(t))
        self._vao.render(moderngl.TRIANGLES, vertices=3)

    def close(self) -> None:
        """Release the program and vertex array; safe to call twice."""
        vao, self._vao = self._vao, None
        prog, self._prog = self._prog, None
        if vao is not None:
            vao.release()
        if prog is not None:
            prog.release()


def close_scene(scene: Scene) -> None:
    """Close a scene at a recording's end; a failure there is the scene's, named as such (the file is finished)."""
    try:
        scene.close()
    except Exception as exc:
        raise SceneError(f"Closing scene {type(scene).__name__} failed: {type(exc).__name__}: {exc}") from exc
