"""Sources: what frames come from before the render target, other than a scene.

:class:`VideoSource` turns a video file, image, image sequence, network stream
or camera into a GL texture per frame (FFmpeg through PyAV, or NVIDIA's
decoder). It is a Scene too: rendering it draws the picture for ``t``.
"""

from __future__ import annotations

from .inputs import InputSpec, classify, looks_like_input
from .video import VideoSource

__all__ = ["InputSpec", "VideoSource", "classify", "looks_like_input"]
