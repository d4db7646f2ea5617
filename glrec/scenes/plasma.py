"""``plasma``: a full-screen procedural shader, cheap to render and busy to encode."""

from __future__ import annotations

from .base import ShaderScene


class Plasma(ShaderScene):
    """Animated sum-of-sines plasma."""

    fragment = "plasma.frag"
