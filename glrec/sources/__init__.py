"""Sources: what frames come from before the render target, other than a scene.

Two rooms and a capture: :mod:`.video` turns a video file, image, image
sequence, network stream or camera into a GL texture per frame
(:class:`VideoSource`, FFmpeg through PyAV or NVIDIA's decoder); :mod:`.frames`
takes the frames handed to :meth:`glrec.Recorder.write`; :mod:`.capture` copies
what another library drew in the recorder's GL context. What a source name
means (a scene, a shader, an input) is :func:`glrec.scenes.resolve.resolve_source`'s.
"""

from __future__ import annotations

from .video.media import InputSpec, classify, looks_like_input
from .video.source import VideoSource

__all__ = ["InputSpec", "VideoSource", "classify", "looks_like_input"]
