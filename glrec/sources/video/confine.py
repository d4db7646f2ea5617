"""Opening a file that a downloaded file names (a Shadertoy export's media): that one file, nothing it names.

An HLS playlist, DASH manifest or concat list inside an export's folder may
name ``../``, absolute or ``file://`` paths, and FFmpeg opens whatever they
name: the recording would show any video the user can read. So an input named
by an untrusted file is opened with

- an ``io_open`` callback through which every open of this container passes
  (PyAV sends the input itself and each file a demuxer opens through it): the
  named file is opened, anything else is refused and remembered for the error;
- ``protocol_whitelist=file``: no network, ``data:``, ``subfile:`` or ``concat:``;
- ``format_whitelist``: every demuxer of this FFmpeg except those whose job is
  to read other files or to run something (playlists, file lists, scripts),
  so a playlist is refused before it reads anything.

``--trust-export`` (``trusted=True``) lifts all three, for an export the user trusts.
"""

from __future__ import annotations

import os
from functools import lru_cache
from typing import IO, Any

import av

from ...errors import UnsupportedInputError

#: Demuxers that read the files or URLs their input names, or run or generate something: not for a
#: downloaded file's media. (A demuxer missing here still opens nothing else: io_open refuses it.)
_REFUSED = frozenset({"hls", "applehttp", "dash", "concat", "imf", "sdp", "rtsp", "rtp", "lavfi", "avisynth",
                      "vapoursynth", "dvdvideo", "bluray", "tee"})  # fmt: skip
#: First bytes of the formats a downloaded file may not use, and what to call them in the error.
_SIGNATURES = (("#EXTM3U", "an HLS playlist"), ("ffconcat version", "an FFmpeg concat list"),
               ("<MPD", "a DASH manifest"), ("<CompositionPlaylist", "an IMF composition playlist"))  # fmt: skip


@lru_cache(maxsize=1)
def _format_whitelist() -> str:
    names = set()
    for entry in av.formats_available:
        parts = entry.split(",")
        if not _REFUSED.intersection(parts):
            names.update(parts)
    return ",".join(sorted(names))


class Confined:
    """The ``av.open`` arguments that read ``path`` alone (see the module docstring)."""

    def __init__(self, path: str) -> None:
        self.path = os.path.abspath(path)
        self.refused: list[str] = []
        self._files: list[IO[bytes]] = []

    def options(self) -> dict[str, str]:
        return {"protocol_whitelist": "file", "format_whitelist": _format_whitelist()}

    def io_open(self, url: str, flags: int, options: dict[str, Any]) -> IO[bytes]:
        name = url.removeprefix("file:")
        if (flags & 2) == 0 and os.path.abspath(name) == self.path:  # AVIO_FLAG_WRITE is 2: reading only
            f = open(self.path, "rb")  # noqa: SIM115 - closed by FFmpeg (io_close) or by close()
            self._files.append(f)
            return f
        self.refused.append(url)
        raise PermissionError(f"{url!r} is not the file named")

    def close(self) -> None:
        """Close the files opened (FFmpeg leaves the input's own to the caller when io_open is custom)."""
        files, self._files = self._files, []
        for f in files:
            f.close()

    def error(self, label: str) -> UnsupportedInputError | None:
        """Why opening failed, when it was this confinement that refused (None otherwise)."""
        what = self._playlist_kind()
        if self.refused:
            kind = f"{what}, which names" if what else "a file that names"
            reason = f"is {kind} another file ({self.refused[0]!r})"
        elif what:
            reason = f"is {what}, which names other files"
        else:
            return None
        return UnsupportedInputError(
            f"{label!r} {reason}; media named by a downloaded Shadertoy export are read as single files only. "
            "Bind the video itself, or load the export with --trust-export (trusted=True) if you trust it."
        )

    def _playlist_kind(self) -> str | None:
        try:
            with open(self.path, "rb") as f:
                head = f.read(4096).decode("utf-8", "replace").lstrip("\ufeff \t\r\n")
        except OSError:
            return None
        for signature, what in _SIGNATURES:
            if head.startswith(signature) or (signature.startswith("<") and signature in head):
                return what
        return None
