"""Showing a finished recording inline in Jupyter (:meth:`glrec.RecordResult._repr_html_`).

A video up to :data:`EMBED_LIMIT` bytes is embedded in the notebook as a
base64 ``data:`` URL in an HTML5 ``<video>``: the notebook then plays it
anywhere it is opened (GitHub, nbviewer, a colleague's machine, after the file
is gone), which is what one looks at an RL episode or a plot animation for.
A larger file is linked by its path relative to the kernel's working directory
(which is where Jupyter serves files from, for a notebook started there), so
the notebook stays small; it plays while the file is there. An animated GIF
is shown the same way in an ``<img>``, and an image sequence (``f_%06d.png``,
``f_%06d.jpg``) by its first frame. Outputs that browsers cannot play (MJPEG in
a container, raw H.264/HEVC/AV1 streams) get the summary line and the path
instead of a player.
"""

from __future__ import annotations

import base64
import html
import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .result import RecordResult

#: Largest file embedded in the notebook (base64 makes it a third larger there).
EMBED_LIMIT = 16 * 2**20
_MP4 = ("video/mp4", ("h264", "hevc"))
#: Files browsers show: the MIME type a data URL names, and the codecs they play in it (HEVC: Safari, and
#: Chrome/Edge with hardware support). An ``image/`` type is shown in an ``<img>`` (an animated GIF).
_PLAYABLE = {
    ".mp4": _MP4,
    ".mov": _MP4,
    ".m4v": _MP4,
    ".webm": ("video/webm", ("vp9",)),
    ".gif": ("image/gif", ("gif",)),
}
#: Image sequences, shown by their first frame.
_PICTURES = {".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg"}


def video_html(result: RecordResult, *, embed_limit: int | None = None) -> str:
    """An HTML5 ``<video>`` for ``result`` (embedded or linked, see the module docstring), or why not."""
    embed_limit = EMBED_LIMIT if embed_limit is None else embed_limit
    path = Path(result.path)
    summary = f"<div style='font-family:monospace;font-size:smaller'>{html.escape(result.summary())}</div>"
    mime, codecs = _PLAYABLE.get(path.suffix.lower(), ("", ()))
    first = _first_of_sequence(path)
    if first is not None and result.frames and first.is_file():  # a sequence: its first frame, as a picture
        note = f"<div style='font-size:smaller'>The first of {result.frames} frames ({html.escape(path.name)}).</div>"
        return _shown(first, _PICTURES[path.suffix.lower()], embed_limit) + note + summary
    if result.frames == 0 or not path.is_file():
        return f"<div>No video: {html.escape(str(path))} holds no frames.</div>{summary}"
    if not codecs or (result.codec and result.codec not in codecs):
        what = html.escape(f"{result.codec or path.suffix} in {path.name}")
        return f"<div>Browsers cannot play {what}; open it with a video player.</div>{summary}"
    return _shown(path, mime, embed_limit) + summary


def _first_of_sequence(path: Path) -> Path | None:
    """Frame 0's file of an image sequence ``path`` (a printf pattern), or None for any other output."""
    if path.suffix.lower() not in _PICTURES or "%" not in path.name:
        return None
    try:
        return Path(os.fspath(path) % 0)
    except (TypeError, ValueError):
        return None


def _shown(path: Path, mime: str, embed_limit: int) -> str:
    """A player for ``path`` (an ``<img>`` for an ``image/`` type), embedded up to ``embed_limit`` bytes."""
    size = path.stat().st_size
    if size <= embed_limit:
        data = base64.b64encode(path.read_bytes()).decode("ascii")
        src = f"data:{mime};base64,{data}"
        note = ""
    else:
        src = html.escape(_relative(path), quote=True)
        note = (f"<div style='font-size:smaller'>Linked, not embedded ({size / 2**20:.0f} MB &gt; "
                f"{embed_limit / 2**20:.0f} MB): it plays while the file is there.</div>")  # fmt: skip
    player = (f'<img style="max-width:100%" src="{src}">' if mime.startswith("image/")
              else f'<video controls loop muted playsinline style="max-width:100%" src="{src}"></video>')  # fmt: skip
    return player + note


def _relative(path: Path) -> str:
    try:
        rel = os.path.relpath(path.resolve(), Path.cwd())
    except ValueError:  # another drive (Windows)
        return path.resolve().as_uri()
    return Path(rel).as_posix()
