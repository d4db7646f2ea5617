"""Scenes: the Scene protocol, the built-ins, and loading user scenes.

A scene is named by a built-in name (``glrec.scenes.BUILTINS``), a Python file
with a class (``my_scene.py:MyScene``), or a Shadertoy program: a GLSL file
with ``mainImage`` (``my_shader.glsl``), a folder of passes (``image.glsl``,
``buffer_a.glsl``, ...) or Shadertoy's JSON export (``shader.json``).
"""

from .bars import Bars
from .base import Scene, ShaderScene
from .cube import Cube
from .load import BUILTINS, load_scene
from .particles import Particles
from .plasma import Plasma
from .shadertoy import ShadertoyScene
from .table import Table

__all__ = [
    "BUILTINS", "Bars", "Cube", "Particles", "Plasma", "Scene", "ShaderScene", "ShadertoyScene", "Table", "load_scene",
]  # fmt: skip
