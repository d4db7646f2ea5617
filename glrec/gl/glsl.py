"""Load GLSL sources shipped with glrec and compile them with readable errors."""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

import moderngl

from ..errors import ShaderError

_STAGES = ("vertex_shader", "fragment_shader", "geometry_shader", "compute_shader")


@lru_cache(maxsize=1)
def shader_dir() -> Path:
    """The folder of GLSL sources: inside the installed package, or the source tree's ``shaders/``."""
    here = Path(__file__).resolve().parents[1]  # the glrec package (glrec/gl/glsl.py)
    for candidate in (here / "shaders", here.parent / "shaders"):
        if candidate.is_dir():
            return candidate
    raise ShaderError(f"glrec's shaders are missing (looked in {here / 'shaders'} and {here.parent / 'shaders'}).")


def source(name: str, defines: dict[str, object] | None = None) -> str:
    """Return the text of ``shaders/<name>``, with ``#define``s inserted after ``#version``."""
    text = (shader_dir() / name).read_text()
    if defines:
        lines = "".join(f"#define {k} {v}\n" for k, v in defines.items())
        first, _, rest = text.partition("\n")
        text = f"{first}\n{lines}{rest}"
    return text


def _stage_of(message: str) -> str:
    for stage in _STAGES:
        if stage in message:
            return stage.replace("_shader", "")
    return "link"


def program(ctx: moderngl.Context, vertex: str, fragment: str, *, origin: str) -> moderngl.Program:
    """Compile a vertex + fragment program; on failure raise ShaderError naming ``origin`` and the stage."""
    try:
        return ctx.program(vertex_shader=vertex, fragment_shader=fragment)
    except moderngl.Error as exc:
        msg = str(exc)
        raise ShaderError(f"{origin}: the {_stage_of(msg)} shader failed to compile:\n{_clean(msg)}") from None


def compute(ctx: moderngl.Context, name: str, defines: dict[str, object] | None = None) -> moderngl.ComputeShader:
    """Compile ``shaders/<name>`` as a compute shader."""
    try:
        return ctx.compute_shader(source(name, defines))
    except moderngl.Error as exc:
        raise ShaderError(f"{name}: the compute shader failed to compile:\n{_clean(str(exc))}") from None


def _clean(message: str) -> str:
    # moderngl underlines stage names with '====='; keep the driver's log lines only.
    return re.sub(r"\n=+\n", "\n", message).strip()
