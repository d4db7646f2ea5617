"""The built-in scenes by name, and loading a scene from what names it (a built-in, a Python file, a shader)."""

from __future__ import annotations

import inspect
import os
from collections.abc import Callable
from pathlib import Path

from .._userfile import import_user_file
from ..errors import SceneError
from .bars import Bars
from .base import Scene
from .cube import Cube
from .particles import Particles
from .plasma import Plasma
from .resolve import resolve_source
from .shadertoy import ShadertoyScene
from .table import Table

#: Built-in scenes by name, with a one-line description for ``glrec scenes``.
BUILTINS: dict[str, tuple[Callable[[], Scene], str]] = {
    "cube": (Cube, "a lit, rotating, depth-tested cube"),
    "plasma": (Plasma, "full-screen procedural plasma shader (cheap to render, busy to encode)"),
    "particles": (Particles, "20,000 instanced particles moving on the GPU"),
    "bars": (Bars, "colour bars, orientation marker and binary time code, for tests"),
    "table": (Table, "random coloured primitives on a table, with ground-truth passes (for datasets)"),
}


def load_scene(spec: str | os.PathLike[str] | Scene) -> Scene:
    """Return a Scene for a built-in name, ``file.py[:Name]``, a shader file, or a Scene object.

    >>> load_scene("cube")  # doctest: +ELLIPSIS
    <glrec.scenes.cube.Cube object at ...>
    """
    if isinstance(spec, os.PathLike):
        spec = os.fspath(spec)
    if not isinstance(spec, str):
        if not isinstance(spec, Scene):
            raise SceneError(f"{spec!r} is not a scene: a scene has setup(ctx, size), render(t) and close() methods.")
        return spec
    name = resolve_source(spec, tuple(BUILTINS))
    if name.kind == "builtin":
        return BUILTINS[spec][0]()
    if name.kind == "shader":
        assert name.path is not None
        return ShadertoyScene(name.path)
    if name.kind == "python":
        assert name.path is not None
        return _load_python_scene(name.path, name.attr)
    raise SceneError(
        f"Unknown scene {spec!r}. Use a built-in ({', '.join(sorted(BUILTINS))}), a Python file "
        "with a class (my_scene.py:MyScene), or a Shadertoy shader (my_shader.glsl, a folder with image.glsl, "
        "or an export .json)."
    )


def _load_python_scene(path: Path, name: str | None) -> Scene:
    if not path.is_file():
        raise SceneError(f"Scene file {str(path)!r} does not exist; check the path.")
    module = import_user_file(path, "glrec_user_scene_", SceneError, "scene file", keep_failed=True)
    if name is not None:
        if not hasattr(module, name):
            raise SceneError(
                f"{path} defines no {name!r}. Scenes it defines: {', '.join(_scene_names(module)) or 'none'}."
            )
        obj = getattr(module, name)
    else:
        names = _scene_names(module)
        if len(names) != 1:
            found = ", ".join(names) if names else "none"
            raise SceneError(
                f"{path} must define exactly one scene class to load it without a name (found: {found}); "
                f"name one as {path}:ClassName."
            )
        obj = getattr(module, names[0])
    scene = obj() if inspect.isclass(obj) else obj
    if not isinstance(scene, Scene):
        raise SceneError(f"{path}:{name or names[0]} is not a scene: it needs setup(ctx, size), render(t) and close().")
    return scene


def _scene_names(module: object) -> list[str]:
    return [
        n
        for n, obj in vars(module).items()
        if inspect.isclass(obj)
        and obj.__module__ == getattr(module, "__name__", None)
        and all(callable(getattr(obj, m, None)) for m in ("setup", "render", "close"))
    ]
