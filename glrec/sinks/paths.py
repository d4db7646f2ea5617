"""Output paths: refusing what must not be written, and image-sequence names."""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import OutputError, OutputExistsError


def has_frame_pattern(path: str | os.PathLike[str]) -> bool:
    """True for a name with one printf integer field, such as ``frame_%06d.jpg``."""
    try:
        frame_path(path, 0)
    except (TypeError, ValueError):
        return False
    return os.fspath(path).count("%") == 1


def frame_path(path: str | os.PathLike[str], index: int) -> str:
    """The file name of frame ``index`` in an image-sequence pattern."""
    return os.fspath(path) % index


def check_output_path(path: str | os.PathLike[str], overwrite: bool) -> Path:
    """Refuse a missing directory or an existing file (unless ``overwrite``)."""
    p = Path(path)
    if p.is_dir():
        raise OutputError(f"Output {str(p)!r} is a directory; give a file name such as {str(p / 'out.mp4')!r}.")
    parent = p.parent if str(p.parent) else Path(".")
    if not parent.is_dir():
        raise OutputError(f"Output directory {str(parent)!r} does not exist; create it first (mkdir -p {parent}).")
    if has_frame_pattern(p):
        p_first = Path(frame_path(p, 0))
        if p_first.exists() and not overwrite:
            raise OutputExistsError(
                f"Output {str(p_first)!r} (frame 0 of {str(p)!r}) exists; pass overwrite=True (--overwrite) "
                "to replace the sequence."
            )
        return p
    if p.exists() and not overwrite:
        raise OutputExistsError(f"Output {str(p)!r} exists; pass overwrite=True (--overwrite) to replace it.")
    return p
