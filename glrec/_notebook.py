"""Showing a finished recording inline in Jupyter (:meth:`glrec.RecordResult._repr_html_`).

A video up to :data:`EMBED_LIMIT` bytes is embedded in the notebook as a
base64 ``data:`` URL in an HTML5 ``<video>``: the notebook then plays it
anywhere it is opened (GitHub, nbviewer, a colleague's machine, after the file
is gone), which is what one looks at an RL episode or a plot animation for.
A larger file is linked by its path relative to the kernel's working directory
(which is where Jupyter serves files from, for a notebook started there), so
the notebook stays small; it plays while the file is there. An animated GIF
is shown the same way in an ``<img>``. Outputs that
browsers cannot play (MJPEG, raw H.264/HEVC/AV1 streams, image sequences)
get the summary line and the path instead of a player.
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


def video_html(result: RecordResult, *, embed_limit: int | None = None) -> str:
    """An HTML5 ``<video>`` for ``result`` (embedded or linked, see the module docstring), or why not."""
    embed_limit = EMBED_LIMIT if embed_limit is None else embed_limit
    path = Path(result.path)
    summary = f"<div style='font-family:monospace;font-size:smaller'>{html.escape(result.summary())}</div>"
    mime, codecs = _PLAYABLE.get(path.suffix.lower(), ("", ()))
    if result.frames == 0 or not path.is_file():
        return f"<div>No video: {html.escape(str(path))} holds no frames.</div>{summary}"
    if not codecs or (result.codec and result.codec not in codecs):
        what = html.escape(f"{result.codec or path.suffix} in {path.name}")
        return f"<div>Browsers cannot play {what}; open it with a video player.</div>{summary}"
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
    return player + note + summary


def _relative(path: Path) -> str:
    try:
        rel = os.path.relpath(path.resolve(), Path.cwd())
    except ValueError:  # another drive (Windows)
        return path.resolve().as_uri()
    return Path(rel).as_posix()
