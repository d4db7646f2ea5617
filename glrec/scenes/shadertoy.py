"""User scenes written as one Shadertoy-style fragment shader file.

The file defines ``void mainImage(out vec4 fragColor, in vec2 fragCoord)`` and
may use ``iTime``, ``iTimeDelta``, ``iResolution``, ``iFrame`` and ``iMouse``
(always zero here). ``iFrame`` counts the frames this scene has rendered.
"""

from __future__ import annotations

from pathlib import Path

from .. import glsl
from ..errors import SceneError
from .base import ShaderScene


class ShadertoyScene(ShaderScene):
    """Render a Shadertoy ``mainImage`` shader from ``path``."""

    def __init__(self, path: str | Path) -> None:
        super().__init__()
        self.path = Path(path)
        if not self.path.is_file():
            raise SceneError(f"Shader file {str(self.path)!r} does not exist; check the path.")
        self.user_source = self.path.read_text()
        if "mainImage" not in self.user_source:
            raise SceneError(
                f"{self.path}: no mainImage() found. A shader scene defines "
                "'void mainImage(out vec4 fragColor, in vec2 fragCoord)' as on Shadertoy."
            )
        self.origin = str(self.path)
        self._frame = 0
        self._last_t: float | None = None

    def fragment_source(self) -> str:
        return glsl.source("shadertoy.frag").replace("//__USER_SOURCE__", self.user_source)

    def render(self, t: float) -> None:
        self._set("iResolution", (float(self.size[0]), float(self.size[1]), 1.0))
        self._set("iTime", float(t))
        self._set("iTimeDelta", float(t - self._last_t) if self._last_t is not None else 0.0)
        self._set("iFrame", self._frame)
        super().render(t)
        self._frame += 1
        self._last_t = t
