"""glrec: render OpenGL scenes headless and record them to video.

>>> import glrec
>>> glrec.record("cube", "cube.mp4", size=(1280, 720), fps=30, seconds=3)  # doctest: +SKIP
>>> glrec.write_video("frames.mp4", frames, fps=30)  # numpy / PIL / CUDA frames  # doctest: +SKIP
>>> glrec.transcode("in.mp4", "out.mp4", overlay="vignette")  # a video input, drawn over  # doctest: +SKIP
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from . import _moved, errors
from .errors import *  # noqa: F403  # every error class; the list is glrec.errors.__all__

if TYPE_CHECKING:
    from ._api import record, write_video
    from ._transcode import transcode
    from .batch import BatchRecorder, BatchResult
    from .recorder import Recorder
    from .result import RecordResult
    from .scenes import Scene, load_scene
    from .sources import VideoSource

#: glrec's version (PEP 440), as ``glrec --version`` prints it.
__version__ = "0.1.0"

_moved.install()  # pre-0.2 module paths (glrec.leaks, glrec.interop.pool, ...) still import, with a warning

# Imported on first use (PEP 562): `import glrec` stays light, so the command line
# starts in a few milliseconds and handles a Ctrl-C during its imports itself;
# glrec.gym needs Gymnasium, an optional extra.
_LAZY = {"Recorder": "recorder", "RecordResult": "result", "record": "_api", "write_video": "_api",
         "transcode": "_transcode", "Scene": "scenes", "load_scene": "scenes", "VideoSource": "sources",
         "BatchRecorder": "batch", "BatchResult": "batch"}  # fmt: skip


def __getattr__(name: str) -> Any:
    if name == "gym":
        return importlib.import_module(".gym", __name__)
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'glrec' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


__all__ = [
    *errors.__all__,
    "BatchRecorder",
    "BatchResult",
    "RecordResult",
    "Recorder",
    "Scene",
    "VideoSource",
    "__version__",
    "load_scene",
    "record",
    "transcode",
    "write_video",
]
