"""Video input: a file, image, image sequence, network stream or camera as a GL texture per frame.

:class:`~.source.VideoSource` is the input (and a Scene: rendering it draws the
picture for ``t``); :mod:`.media` says what an input names and opens it,
:mod:`.decode` (FFmpeg) or :mod:`.nvdec` (NVIDIA) decodes on a worker thread,
:mod:`.timeline` picks the picture of each instant, :mod:`.upload` and
:mod:`.rgb` make it a texture, :mod:`.audio` copies its audio.
"""

from .source import FORMATS, VideoSource

__all__ = ["FORMATS", "VideoSource"]
