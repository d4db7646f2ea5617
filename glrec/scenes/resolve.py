"""One answer to "what does this name mean?" for every command that takes a scene or a video input.

``record``, ``transcode``, ``stream`` and ``serve`` are given one word: a built-in
scene (``cube``), a Python scene (``my_scene.py[:Class]``), a Shadertoy shader (a
``.glsl``/``.frag``/``.fs`` file, a folder with an ``image`` pass, an export
``.json``), or a video input (a file, an image or image sequence, a URL, a
camera). :func:`resolve_source` decides which, in that order, from the name alone
(nothing is opened); the suffix tables it reads are the ones the loaders use.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from .shadertoy_load import EXPORT_SUFFIXES, SHADER_SUFFIXES

SourceKind = Literal["builtin", "python", "shader", "input", "unknown"]


@dataclass(frozen=True)
class SourceName:
    """What a source name means: its ``kind``, the text as given, and the path and class where they apply."""

    kind: SourceKind
    text: str
    path: Path | None = None
    attr: str | None = None  # the class of ``file.py:Class``

    @property
    def is_scene(self) -> bool:
        return self.kind in ("builtin", "python", "shader")


def has_image_pass(folder: Path) -> bool:
    """True for a folder holding a Shadertoy ``image`` pass (``image.glsl``, ``Image.frag``, ...)."""
    return any((folder / f"{stem}{suffix}").is_file() for stem in ("image", "Image") for suffix in SHADER_SUFFIXES)


def resolve_source(spec: str | os.PathLike[str], builtins: tuple[str, ...] = ()) -> SourceName:
    """Classify ``spec``: a built-in name (one of ``builtins``), a Python scene, a shader, or a video input."""
    text = os.fspath(spec)
    if text in builtins:
        return SourceName("builtin", text)
    if "://" not in text:
        path_text, _, attr = text.partition(":")
        path = Path(path_text)
        suffix = path.suffix.lower()
        if suffix == ".py":
            return SourceName("python", text, path, attr or None)
        if suffix in (*SHADER_SUFFIXES, *EXPORT_SUFFIXES):
            return SourceName("shader", text, Path(text))
        if Path(text).is_dir() and has_image_pass(Path(text)):
            return SourceName("shader", text, Path(text))
    from ..sources.video.media import looks_like_input  # PyAV only for a name that may be a video input

    if looks_like_input(text):
        return SourceName("input", text, None if "://" in text else Path(text))
    return SourceName("unknown", text)


__all__ = ["SourceKind", "SourceName", "has_image_pass", "resolve_source"]
