"""Sources: what frames come from before the render target, other than a scene.

:class:`VideoSource` turns a video file, image, image sequence, network stream
or camera into a GL texture per frame (FFmpeg through PyAV, or NVIDIA's
decoder). It is a Scene too: rendering it draws the picture for ``t``.

Frames handed to :meth:`glrec.Recorder.write` are checked by :mod:`.frames`;
host arrays are uploaded by :mod:`.array` (a ring of pixel-unpack buffers) or,
where GL is software, handed to the CPU encoder by :mod:`.direct`; CUDA arrays
are copied on the device by :mod:`.cuda_array` and unpacked into the target by
:mod:`.unpack`. :class:`~.writer.FrameWriter` picks the source for each frame.
"""

from __future__ import annotations

from .media import InputSpec, classify, looks_like_input
from .video import VideoSource

__all__ = ["InputSpec", "VideoSource", "classify", "looks_like_input"]
